"""Phrases into the grammar's tokens: the machinery both languages' phrase tables share.

A phrase table (engine/zh_input.py for Chinese, engine/en_input.py for English) is an ordered list
of rows; each row is a pattern and what it becomes: `key=value` for the one key table in
engine/parse.py, a method name, a word the grammar reads (a quant, a card), or nothing (question
words and filler). Rows run in order over the text; what a row emits is set aside, so no later row
reads it again, and so are the key=value tokens the user typed, before any row runs. Numbers and
their units are read by engine/numbers.py for every language alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import cache
from typing import NamedTuple

from engine import catalog, numbers

Emit = Callable[[re.Match[str], list[str]], "str | None"]


class Phrase(NamedTuple):
    """One row of a phrase table. `emit` gets the match and the tokens emitted so far and returns
    the tokens to put in its place ("" drops the words), or None to leave the match as it is."""

    regex: str  # compiled on first use: a command with no phrase in it never pays for them
    emit: Emit
    example: str = ""  # a phrasing this row reads, for "did you mean" lines

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.regex)


@cache
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex, re.IGNORECASE)


def words(regex: str, out: str, example: str = "") -> Phrase:
    """Words that always become `out` (a method name, a bare token, or "" to drop them)."""
    return Phrase(regex, lambda m, _kept: out, example)


def keyed(regex: str, key: str, read: Callable[[re.Match[str]], str | None],
          example: str = "") -> Phrase:
    """A phrase with a value: `key=read(match)`; a None value leaves the words as they are."""
    def emit(m: re.Match[str], _kept: list[str]) -> str | None:
        got = read(m)
        return None if got is None else f"{key}={got}"
    return Phrase(regex, emit, example)


def number(m: re.Match[str]) -> str | None:
    """The value of the match's `n` (number) and `u` (scale word) groups."""
    return numbers.value(m.group("n"), m.groupdict().get("u"))


# A bare length the way teams write a window ("40 users, 16k, first token under 2 s"; "qlora
# 70b, 8k, on one A100"): a power-of-two count of thousands with no word of its own is the
# context (a training run takes it as its sequence length, as it does context=). Last in each
# table, so money, people, rows and the rest claim their numbers first.
BARE_LENGTH = keyed(
    # "for 32k", "under 64k": an amount of money, left for the asker to say what it is
    r"(?<![\w$¥￥.,/=:-])(?<!for )(?<!under )(?<!within )(?<!spend )(?<!cost )(?<!costs )(?<!pay )"
    r"(?<!budget )(?<!price )(?P<n>2|4|8|16|32|64|128|256|512)\s*(?P<u>[kK])(?![\w.%])"
    r"(?!\s*(?:budget|usd|cny|rmb|yuan|dollars?|bucks|requests?|users?|people|tokens?|samples?|"
    r"rows|examples?|steps?|qps|rps|a\s+day|/day|per\b|元|块|条|人|个|次|张|卡|台|万|美元|刀))",
    "context", number, "40 users, 16k")


# -- set aside ----------------------------------------------------------------------------------

# a set-aside token stands in the text as private-use characters, no digit or letter in them for
# a later row to read: open, the token's index in hex digits U+E100-U+E10F, close
_OPEN, _CLOSE, _BASE = "\ue000", "\ue001", 0xE100
_MARK = _OPEN + "([\ue100-\ue10f]+)" + _CLOSE


def _index(i: int) -> str:
    return "".join(chr(_BASE + int(d, 16)) for d in f"{i:x}")


def _unindex(text: str) -> int:
    return int("".join(f"{ord(c) - _BASE:x}" for c in text), 16)
# key=value as typed (ASCII key); the value ends at a space or at Chinese text
OPTION = r"(?<![A-Za-z0-9_=])[A-Za-z_][A-Za-z0-9_]*=[^\s\u3400-\u9fff，。；、]*"


def has_cjk(text: str) -> bool:
    """Chinese in the text (CJK ideographs)."""
    return any("\u3400" <= c <= "\u9fff" for c in text)


def rewritten(word: str) -> bool:
    """A word that stands for a token already set aside."""
    return word.startswith(_OPEN) and bool(_compiled(_MARK).fullmatch(word))


class Rewrite:
    """A text being rewritten by phrase tables, with the tokens set aside so far."""

    def __init__(self, text: str) -> None:
        text = re.sub("[\ue000-\uf8ff]", " ", unicodedata.normalize("NFKC", text))
        self.kept: list[str] = []
        self.text = _compiled(OPTION).sub(lambda m: self.keep(m.group(0)), text)

    def keep(self, tokens: str) -> str:
        out = []
        for token in tokens.split():
            self.kept.append(token)
            out.append(_OPEN + _index(len(self.kept) - 1) + _CLOSE)
        return " " + " ".join(out) + " "

    def run(self, table: Iterable[Phrase]) -> Rewrite:
        for row in table:
            self.text, count = row.pattern.subn(lambda m, row=row: self._replace(row, m), self.text)
            if count:
                self.squeeze()
        return self

    def squeeze(self) -> None:
        r"""Whitespace runs to one space: a run a row leaves behind would let every `\s*` in a
        later row scan it from each position (quadratic; issue 26)."""
        self.text = _compiled(r"\s{2,}").sub(" ", self.text)

    def _replace(self, row: Phrase, m: re.Match[str]) -> str:
        out = row.emit(m, self.kept)
        return m.group(0) if out is None else self.keep(out)

    def result(self) -> str:
        text = _compiled(_MARK).sub(lambda m: self.kept[_unindex(m.group(1))], self.text)
        return " ".join(text.split())


# -- what both languages name -------------------------------------------------------------------

# a card as people write it: 4090, RTX 4090, 4090D, H800, A100-80G, A800 80G, 910B, 魔改4090
CARD = (r"(?P<card>(?:魔改|昇腾|rtx\s?|geforce\s?)?[a-z]{0,6}-?\d{2,4}[a-z]{0,4}"
        r"(?:-[a-z0-9]+)?(?:魔改)?)(?:\s*-?\s*(?P<mem>\d{2,3})\s*gb?(?![a-z]))?")
# a server ("一台", "a server", "a node") holds this many cards unless the text says
SERVER_GPUS = catalog.GPUS_PER_SERVER


def card_name(card: str, mem: str | None = None) -> str | None:
    """The catalog name of a card as written (with its memory when given), or None."""
    card = card.strip()
    tries = [f"{card}-{mem}gb", f"{card}-{mem}g", f"{card} {mem}g"] if mem else []
    plural = [card[:-1]] if card.lower().endswith("s") else []  # two h100s
    for text in (*tries, card, *plural):
        spec = catalog.find_gpu(text)
        if spec is not None:
            return spec.name
    return None


def cards(count: int | None, m: re.Match[str], *, known: bool = False) -> str | None:
    """`gpus=N gpu=CARD` for a count and the match's card; with known=True the card must be in
    the catalog (8x7B is a model, not eight cards), else an unknown card is left to the key
    table, whose error lists the cards."""
    card = m.groupdict().get("card")
    name = card_name(card, m.groupdict().get("mem")) if card else None
    if card and name is None and known:
        return None
    out = f"gpus={count}" if count else ""
    if card:
        out += f" gpu={name or card.replace(' ', '')}"
    return out


def distill(model: str, size: str) -> str:
    """`deepseek-r1` + `32B` -> deepseek-r1-distill-qwen-32b: the catalog's distill of that size.
    With none, a name that fails as an unknown model with the nearest distill suggested."""
    size = size.lower()
    named = catalog.find_model(f"{model}-{size}") if size else None
    if named is not None and "distill" in named.name:
        return named.name  # r1 32b: the catalog knows the distill by that name
    base = catalog.find_model(model)
    stem = (base.name if base else model).lower()
    for name in catalog.models():
        if name.startswith(stem + "-distill") and name.endswith("-" + size):
            return name
    return f"{stem}-distill-{size}"
