"""Languages: English source strings, translated through gettext message catalogs.

Strings are marked with `_()` (and `{{ _("...") }}` in templates); the catalogs are ordinary
gettext .po files under engine/locale/<lang>/LC_MESSAGES/gpusize.po, read directly (no compiled
.mo to keep in sync). The language is a context variable, so the CLI, each Slack request and each
answer worker set it once and every layer below follows.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from engine import config

LANGUAGES = ("en", "zh")
_lang: contextvars.ContextVar[str] = contextvars.ContextVar("lang", default="en")


def current() -> str:
    return _lang.get()


def set_language(lang: str) -> None:
    _lang.set(lang if lang in LANGUAGES else "en")


@contextlib.contextmanager
def language(lang: str) -> Iterator[None]:
    token = _lang.set(lang if lang in LANGUAGES else "en")
    try:
        yield
    finally:
        _lang.reset(token)


def from_locale(locale: str | None) -> str:
    """`zh-CN`, `zh_CN.UTF-8`, `zh_TW` -> zh; anything else -> en."""
    return "zh" if locale and locale.lower().replace("-", "_").startswith("zh") else "en"


_SLACK_MARKUP = re.compile(r"<[^<>]*>")  # mentions and links: not the asker's own words
_HAN = (("\u3400", "\u4dbf"), ("\u4e00", "\u9fff"), ("\uf900", "\ufaff"))  # CJK ideographs


# Han characters that only write an amount ("80万", "1.2亿元", "3千块"): an English sentence
# with a budget written the Chinese way is still English
_AMOUNT = re.compile(r"\d[\d,.]*\s*(?:[万千亿]+\s*)?(?:元|块|人民币)?")


def language_of_text(text: str) -> str | None:
    """"zh" when a question is written in Chinese (any Han character outside mentions, links and
    amounts like 80万), else None: the asker's choice or locale decides. A Chinese question gets
    a Chinese answer whoever asks it; English says nothing, since Chinese teams type English
    commands too."""
    words = _SLACK_MARKUP.sub(" ", text or "") if "<" in (text or "") else text or ""
    words = _AMOUNT.sub(" ", words)
    return "zh" if any(lo <= c <= hi for c in words for lo, hi in _HAN) else None


def from_environment() -> str:
    """The language of the locale the CLI runs in (engine/config.py reads it)."""
    return from_locale(config.locale())


def _unquote(chunk: str) -> str:
    return ast.literal_eval(chunk)


@cache
def catalog(lang: str) -> dict[str, str]:
    """msgid -> msgstr of a .po file (untranslated and fuzzy entries left out)."""
    if lang == "en":
        return {}
    try:
        path = Path(__file__).resolve().parent / "locale" / lang / "LC_MESSAGES" / "gpusize.po"
        text = path.read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        return {}  # no catalog installed: English
    out: dict[str, str] = {}
    for entry in re.split(r"\n\s*\n", text):
        if "#, fuzzy" in entry:
            continue
        fields: dict[str, list[str]] = {}
        key = None
        for line in entry.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"(msgid|msgstr)\s+(\".*\")$", line)
            if m:
                key = m.group(1)
                fields[key] = [_unquote(m.group(2))]
            elif line.startswith('"') and key:
                fields[key].append(_unquote(line))
        msgid, msgstr = "".join(fields.get("msgid", [])), "".join(fields.get("msgstr", []))
        if msgid and msgstr:
            out[msgid] = msgstr
    return out


def _(message: str) -> str:
    """Translate a source string into the current language (itself when untranslated)."""
    lang = _lang.get()
    if lang == "en":
        return message
    return catalog(lang).get(message, message)


def N_(message: str) -> str:
    """Mark a string for the catalog without translating it yet (translated where shown)."""
    return message


def plural(count: float, one: str, other: str) -> str:
    """`one` for a count of 1, else `other` (each marked with N_ and holding {n}), translated and
    filled: "1 user", "2 users". Chinese has no plural, so both translate alike."""
    return _(one if count == 1 else other).format(n=count)


# Nouns the answers count: "{n} noun" and "{n} nouns", each a msgid (Chinese: one measure word).
COUNTED = {
    "user": (N_("{n:,} user"), N_("{n:,} users")),
    "GPU": (N_("{n:,} GPU"), N_("{n:,} GPUs")),
    "sequence": (N_("{n:,} sequence"), N_("{n:,} sequences")),
    "step": (N_("{n:,} step"), N_("{n:,} steps")),
    "server": (N_("{n:,} server"), N_("{n:,} servers")),
    "price": (N_("{n:,} price"), N_("{n:,} prices")),
    "rent price": (N_("{n:,} rent price"), N_("{n:,} rent prices")),
    "purchase price": (N_("{n:,} purchase price"), N_("{n:,} purchase prices")),
    "rack": (N_("{n:,} rack"), N_("{n:,} racks")),
    "request": (N_("{n:,.0f} request"), N_("{n:,.0f} requests")),
    "month": (N_("{n:,} month"), N_("{n:,} months")),
    "day": (N_("{n:g} day"), N_("{n:g} days")),
}


def counted(count: int, noun: str) -> str:
    """"1 user", "2 users", "1 GPU": a count with its noun (a key of COUNTED), inflected."""
    one, other = COUNTED[noun]
    return plural(count, one, other)


def seconds(value: float) -> str:
    """Seconds with one decimal; a time under 0.05 s reads "<0.1", never "0.0", which a reader
    takes for instant or for a bug."""
    return "<0.1" if 0 < value < 0.05 else f"{value:.1f}"


def money(amount: float | None, currency: str, lang: str | None = None) -> str:
    """150k CNY / 1.20M CNY in English; ¥15万 / ¥1.2亿 / $2万 in Chinese."""
    if amount is None:
        return _("n/a")
    lang = lang or _lang.get()
    if lang == "zh":
        symbol = "¥" if currency == "CNY" else "$" if currency == "USD" else currency + " "
        if abs(amount) >= 1e8:
            return f"{symbol}{amount / 1e8:.2f}".rstrip("0").rstrip(".") + "亿"
        if abs(amount) >= 1e4:
            return f"{symbol}{amount / 1e4:.1f}".rstrip("0").rstrip(".") + "万"
        return f"{symbol}{amount:,.0f}"
    if abs(amount) >= 1e6:
        return f"{amount / 1e6:,.2f}M {currency}"
    if abs(amount) >= 1e4:
        return f"{amount / 1e3:,.0f}k {currency}"
    return f"{amount:,.0f} {currency}"
