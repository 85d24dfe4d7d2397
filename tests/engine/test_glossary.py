"""The zh catalog says each thing with one term, the one docs/GLOSSARY.md gives (余量 is the
headroom kept free, never the memory left free; 购置 not 购买; 全参微调 not 全量微调)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.engine.test_i18n import po_entries

GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "GLOSSARY.md"
# not English to translate: code, {placeholders}, key=value words (offload=optimizer|all)
NOT_PROSE = re.compile(r"`[^`]*`|\{[^{}]*\}|\b\w+=[\w|.,-]*")


class Term(NamedTuple):
    zh: str
    also: tuple[str, ...]
    english: str
    pattern: re.Pattern[str]
    never: tuple[str, ...]


def _prose(msgid: str) -> str:
    return NOT_PROSE.sub(" ", msgid)


def _cells(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


def terms() -> list[Term]:
    out = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith("| 中文"):
            continue
        zh, also, english, regex, never, _where = _cells(line)
        words = lambda cell: tuple(w.split(" (")[0].strip() for w in cell.split(",") if w.strip())  # noqa: E731
        out.append(Term(zh, words(also), english, re.compile(regex.strip("`")), words(never)))
    return out


TERMS = terms()
ENTRIES = {msgid: msgstr for msgid, msgstr in po_entries().items() if msgstr}


def test_the_glossary_has_the_teams_terms() -> None:
    names = {t.zh for t in TERMS}
    assert {"显存", "全参微调", "推理部署", "余量", "空闲", "租用", "购置", "回本"} <= names
    assert len(TERMS) >= 25


@pytest.mark.parametrize("term", TERMS, ids=lambda t: t.zh)
def test_msgids_saying_the_term_use_the_chinese_term(term: Term) -> None:
    missing = [(msgid, msgstr) for msgid, msgstr in ENTRIES.items()
               if term.pattern.search(_prose(msgid))
               and not any(word in msgstr for word in (term.zh, *term.also))]
    assert missing == [], f"{term.english} should read {term.zh}"


@pytest.mark.parametrize("term", [t for t in TERMS if t.never], ids=lambda t: t.zh)
def test_never_words_do_not_stand_in(term: Term) -> None:
    others = {t.zh: t for t in TERMS}
    longer = [w for t in TERMS for w in (t.zh, *t.also)]
    wrong = []
    for msgid, msgstr in ENTRIES.items():
        for word in term.never:
            text = msgstr
            for other in longer:  # 内存 inside 主机内存 is that term, not this word
                if word in other and word != other:
                    text = text.replace(other, " ")
            if word not in text:
                continue
            if word in others:
                # another row's term: only as often as that row's English is in the msgid
                allowed = len(others[word].pattern.findall(_prose(msgid)))
                if term.pattern.search(_prose(msgid)) and text.count(word) > allowed:
                    wrong.append((word, msgid, msgstr))
            else:
                wrong.append((word, msgid, msgstr))
    assert wrong == []


def test_free_and_headroom_are_told_apart() -> None:
    frees = {k: v for k, v in ENTRIES.items() if "{free" in k}
    assert len(frees) >= 2
    for msgid, msgstr in frees.items():
        assert "空闲" in msgstr, msgid
        assert msgstr.count("余量") <= msgid.count("headroom"), msgid
