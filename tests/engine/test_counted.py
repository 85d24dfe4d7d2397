"""Counts read as English counts them (issue 25's answers: "1 user", "8 GPUs", never "1 users"
or "GPU(s)"), and Chinese, which has no plural, carries no English plural marks either."""

from __future__ import annotations

import re
from datetime import date

import pytest

import engine
from engine.i18n import COUNTED, counted, language
from present.terminal import render

TODAY = date(2026, 12, 2)
# one of each count a noun can take: a single user, card, server, price and rack, and several
ASKED = ("qwen3-32b inference gpu=4090 gpus=8", "qwen3-32b inference gpu=4090 gpus=8 users=1",
         "llama-3.1-8b inference gpu=4090 gpus=1 users=20", "largest lora gpu=4090 gpus=2",
         "llama-3.1-70b full-finetune gpu=a100-80gb gpus=16", "qwen2.5-7b inference users=1",
         "qwen3-32b inference gpu=4090 gpus=8 requests=1", "13B full-finetune months=1",
         "7B full-finetune tokens=1B days=1")
NOUNS = "|".join(sorted({other.split(" ", 1)[1] for _one, other in COUNTED.values()}))
ONE_PLURAL = re.compile(rf"(?<![\d.,])1 ({NOUNS})\b")  # "1 users", not "11 users" or "0.1 GPUs"
HEDGED = re.compile(r"[A-Za-z]\(s\)")


@pytest.mark.parametrize("noun", sorted(COUNTED))
def test_counted_inflects(noun: str) -> None:
    assert counted(1, noun).split(" ", 1)[1] == COUNTED[noun][0].split(" ", 1)[1]
    assert counted(2, noun).split(" ", 1)[1] == COUNTED[noun][1].split(" ", 1)[1]
    assert counted(12000, noun).startswith(("12,000 ", "12000 "))
    with language("zh"):
        assert counted(1, noun).replace("1", "{n:,}", 1) == counted(3, noun).replace(
            "3", "{n:,}", 1)  # no plural in Chinese: one form for every count


@pytest.mark.parametrize("text", ASKED)
def test_no_hedged_or_wrong_plurals(text: str) -> None:
    ans = engine.ask(text, today=TODAY)
    english = render(ans, bom=True)
    assert not HEDGED.findall(english), HEDGED.findall(english)
    assert not ONE_PLURAL.findall(english), [line for line in english.splitlines()
                                             if ONE_PLURAL.search(line)]
    with language("zh"):
        chinese = render(engine.ask(text, today=TODAY), bom=True)
    assert not HEDGED.findall(chinese)
