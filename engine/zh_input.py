"""Chinese phrasings into the grammar's tokens, before parsing.

`13B 全参微调 预算15万` -> `13B full-finetune budget=150000CNY`; the buying guides' own words:
methods (全参微调 / 全量微调 / 全参数微调, LoRA, QLoRA, 推理 / 部署, 预训练), budgets (15万,
1.2百万, 120万, 1.2亿, 元 / RMB / CNY), cards and counts (4张4090, 两张卡, 单卡, 双卡, 8卡A800,
4×4090), and 显存 (memory: the question itself, so it is dropped). Text without Chinese or the ×
sign comes back only NFKC-normalised (full-width digits and letters to ASCII).
"""

from __future__ import annotations

import re
import unicodedata

from engine.methods import METHODS as METHOD_TABLE

# method phrasings from engine/methods.py, longest first so 全参微调 wins over 全参
METHODS = tuple(sorted(((word, m.name) for m in METHOD_TABLE.values() for word in m.zh_aliases),
                       key=lambda pair: -len(pair[0])))
NUMERALS = {"一": 1, "单": 1, "两": 2, "二": 2, "双": 2, "三": 3, "四": 4, "五": 5, "六": 6,
            "七": 7, "八": 8, "九": 9, "十": 10, "十六": 16, "三十二": 32}
UNITS = {"万": 1e4, "w": 1e4, "十万": 1e5, "百万": 1e6, "千万": 1e7, "亿": 1e8}
FILLER = ("请问", "需要", "多少", "怎么", "什么", "配置", "服务器", "选型", "方案", "模型", "显存",
          "大概", "大约", "左右", "以内", "的", "用", "跑", "做", "吗", "呢", "和", "与", "在",
          "上", "下", "卡型")
PUNCTUATION = "，。、？！：；（）“”《》?!,;"
CHINESE = re.compile(r"[\u3400-\u9fff×]")


def _count(word: str) -> int | None:
    return int(word) if word.isdigit() else NUMERALS.get(word)


def _budget(match: re.Match[str]) -> str:
    amount = float(match.group("amount")) * UNITS.get(match.group("unit") or "", 1)
    return f" budget={amount:.0f}cny "


def to_grammar(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    if not CHINESE.search(text):
        return text
    for mark in PUNCTUATION:
        text = text.replace(mark, " ")
    # budgets: 预算15万, 预算=1.2百万元, 15万预算, 120万元
    number = r"(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>十万|百万|千万|万|亿|w)?\s*(?:元|块|rmb|cny|人民币)?"
    text = re.sub(r"预算\s*[=:]?\s*" + number, _budget, text, flags=re.I)
    text = re.sub(number + r"\s*(?:的)?预算", _budget, text, flags=re.I)
    text = re.sub(r"(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>十万|百万|千万|万|亿)\s*(?:元|块|rmb|cny|人民币)?",
                  _budget, text, flags=re.I)
    # counts and cards: 4张4090, 两张卡, 8卡A800, 单卡4090, 4×4090, 4x 4090
    counted = r"(?P<n>\d+|十六|三十二|[一单两二双三四五六七八九十])"
    text = re.sub(counted + r"\s*[张块个]\s*(?:卡)?\s*(?P<card>[A-Za-z]*\d+[A-Za-z0-9-]*)?",
                  lambda m: _cards(m), text)
    text = re.sub(counted + r"\s*卡\s*(?P<card>[A-Za-z]*\d+[A-Za-z0-9-]*)?", lambda m: _cards(m), text)
    text = re.sub(r"(?P<n>\d+)\s*[×x]\s*(?P<card>[A-Za-z]*\d+[A-Za-z0-9-]*)", lambda m: _cards(m), text)
    text = re.sub(r"(?P<card>[A-Za-z]*\d{3,}[A-Za-z0-9-]*)\s*卡", r" gpu=\g<card> ", text)
    for word, method in METHODS:
        text = text.replace(word, f" {method} ")
    text = re.sub(r"(?i)(q?lora)\s*微调", r" \1 ", text)
    text = text.replace("微调", " full-finetune ") if "lora" not in text.lower() else text.replace(
        "微调", " ")
    for word in FILLER:
        text = text.replace(word, " ")
    # words the rules above did not know stay, but apart from ASCII ones (换成QLoRA -> 换成 QLoRA)
    text = re.sub(r"([\u3400-\u9fff])([A-Za-z0-9])", r"\1 \2", text)
    text = re.sub(r"([A-Za-z0-9])([\u3400-\u9fff])", r"\1 \2", text)
    return " ".join(text.split())


def _cards(m: re.Match[str]) -> str:
    n = _count(m.group("n"))
    card = m.group("card")
    out = f" gpus={n} " if n else " "
    return out + (f"gpu={card} " if card else "")
