"""Typed thread replies into the grammar's Draft (engine.parse.read_reply)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.parse import ParseError, read_reply


@pytest.mark.parametrize(("text", "method", "options"), [
    ("lora", "lora", {}),
    ("what about qlora?", "qlora", {}),
    ("budget 300k", None, {"budget": 300_000}),
    ("context=8k users=20", None, {"context": 8192, "users": 20}),
    ("gpu=h20 gpus=8", None, {"gpu": "h20", "gpus": 8}),
    ("8k context please", None, {"context": 8192}),
    ("<@U1> 20 users and serve", "inference", {"users": 20}),
    ("try 4090 with 4 cards", None, {"gpu": "rtx-4090", "gpus": 4}),
    ("show it in usd", None, {"currency": "USD"}),
])
def test_follow_ups(text: str, method: str | None, options: dict) -> None:
    draft = read_reply(text)
    assert draft is not None and draft.method == method
    got = {k: (v["amount"] if k == "budget" else v) for k, v in draft.options.items()}
    assert got == options


def test_other_models() -> None:
    assert read_reply("how about llama-3.1-70b?").model == "llama-3.1-70b"


@pytest.mark.parametrize("text", ["thanks!", "looks good to me", "", "   ", "let's discuss"])
def test_chatter_is_not_for_the_bot(text: str) -> None:
    assert read_reply(text) is None


def test_bad_values_are_errors() -> None:
    with pytest.raises(ParseError):
        read_reply("seq=abc")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_anything_else(text: str) -> None:
    with contextlib.suppress(ParseError):
        read_reply(text)
