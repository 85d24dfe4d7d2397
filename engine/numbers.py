"""Number words and units, one table for every language the grammar reads.

A phrase like "300 thousand", "1.5 million", "15万", "两千", "1万亿" or "３２k" becomes the value
the key table reads (engine/parse.py KEYS): scale words multiply into a plain number, while the
k/m/b/t suffixes stay, because their meaning is the key's (8k context = 8192 tokens, 300k budget
= 300,000). Chinese numerals (一 ... 九, 十, 百, 千, 两, 单, 双) read as digits.
"""

from __future__ import annotations

import re

# Chinese digits; 单 and 双 count things (单卡, 双卡), 两 is "two of"
CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "单": 1, "二": 2, "两": 2, "双": 2, "三": 3, "四": 4,
             "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
CN_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
# scale words after a number: multiplied out into the value
CN_SCALES = {"万亿": 10**12, "千亿": 10**11, "百亿": 10**10, "十亿": 10**9, "亿": 10**8,
             "千万": 10**7, "百万": 10**6, "十万": 10**5, "万": 10**4, "千": 10**3, "w": 10**4}
# English words become the grammar's own suffixes, which each key reads
EN_SCALES = {"thousand": "k", "grand": "k", "k": "k", "million": "m", "mil": "m", "mn": "m",
             "m": "m", "billion": "b", "bn": "b", "b": "b", "trillion": "t", "t": "t"}
EN_WORDS = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16,
            "twenty": 20, "thirty-two": 32, "sixty-four": 64, "hundred": 100}

CN_NUMERAL = "[零〇一二两三四五六七八九十百千]+"
# regex pieces for phrase tables: a number, then an optional scale (longest scales first)
# a number starts where no digit (or numeral) stands before it: a pattern never retries from
# inside a long run of digits, which would cost the square of its length (issue 26); nor a
# letter: the digits of H800 or A100 are a name's. It ends where the digits end, so that no
# pattern backs off into taking part of one (序列10天: not seq=1)
NUMBER = (r"(?<![\da-zA-Z.,])\d+(?:,\d{3})*(?:\.\d+)?(?![\d,])|"
          r"(?<![零〇一二两三四五六七八九十百千])" + CN_NUMERAL + "(?![零〇一二两三四五六七八九十百千])")
CN_SCALE = "|".join(sorted(CN_SCALES, key=len, reverse=True))
EN_SCALE = r"thousand|grand|million|mil|mn|billion|bn|trillion"
EN_NUMBER_WORD = "|".join(sorted((w for w in EN_WORDS if len(w) > 2), key=len, reverse=True))


def chinese_int(text: str) -> int | None:
    """一 -> 1, 十六 -> 16, 三十二 -> 32, 两千 -> 2000, 一百二十 -> 120; None when not a numeral."""
    if not text or any(c not in CN_DIGITS and c not in CN_SMALL_UNITS for c in text):
        return None
    if len(text) == 1 and text in CN_DIGITS:
        return CN_DIGITS[text]
    total, digit = 0, None
    for c in text:
        if c in CN_DIGITS and CN_DIGITS[c] == 0:
            digit = None  # 一百零五: the zero only holds a place
        elif c in CN_DIGITS:
            if digit is not None:
                return None  # 三四: two digits in a row is not a number
            digit = CN_DIGITS[c]
        else:
            total += (1 if digit is None else digit) * CN_SMALL_UNITS[c]
            digit = None
    return total + (digit or 0)


def to_number(text: str) -> float | None:
    """A number as written: 300, 1,200, 1.5, 两, 三十二, three, a."""
    text = text.strip().lower()
    if re.fullmatch(r"\d+(?:,\d{3})*(?:\.\d+)?", text):
        return float(text.replace(",", ""))
    if text in EN_WORDS:
        return float(EN_WORDS[text])
    n = chinese_int(text)
    return None if n is None else float(n)


def plain(number: float) -> str:
    """150000.00000000003 -> 150000, 1.20 -> 1.2: as a key=value token writes it (15 significant
    digits: 1.2 x 10^4 is 12000, not float's 12000.000000000002)."""
    text = f"{number:.15g}"
    if "e" in text:  # past 10^15: every digit, so the key table judges the size itself
        text = f"{number:.0f}"
    return text


def value(number: str, scale: str | None = None) -> str | None:
    """The grammar value of a number and its scale word: ("15", "万") -> "150000",
    ("300", "thousand") -> "300k", ("1.5", "M") -> "1.5m", ("两", None) -> "2"."""
    n = to_number(number)
    if n is None:
        return None
    scale = (scale or "").strip()
    low = scale.lower()
    if not scale:
        return plain(n)
    if scale in CN_SCALES or low == "w":
        return plain(n * CN_SCALES[low if low == "w" else scale])
    if low in EN_SCALES:
        return plain(n) + EN_SCALES[low]
    return None
