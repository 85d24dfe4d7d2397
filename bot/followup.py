"""Typed follow-ups in a thread ("what about qlora?", "budget 300k", "8k context", "gpu=h20
gpus=8") into the same Fields the grammar produces, so one parser serves the CLI and Slack.

Chat in a thread is mostly people talking to each other: a message with nothing the bot
understands yields None and gets no reply. A recognised key with a bad value is an error.
"""

from __future__ import annotations

import re

from engine import catalog
from engine.parse import METHODS, Fields, ParseError, parse_fields
from engine.zh_input import to_grammar

# "budget 300k", "context of 8k", "20 users", "8 gpus", "rank 32" -> key=value
PHRASES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bbudget\s*(?:of|is|to|=|:)?\s*([$¥￥]?[\d.]+[kmw]?(?:cny|usd|rmb)?)"), "budget"),
    (re.compile(r"\b(?:context|ctx)\s*(?:of|is|to|=|:)?\s*(\d[\d.]*k?)\b"), "context"),
    (re.compile(r"\b(\d[\d.]*k?)\s*(?:context|ctx|tokens? of context)\b"), "context"),
    (re.compile(r"\b(\d+)\s*(?:concurrent\s*)?(?:users|streams|sessions)\b"), "users"),
    (re.compile(r"\b(?:users|concurrency)\s*(?:of|is|to|=|:)?\s*(\d+)\b"), "users"),
    (re.compile(r"\b(\d+)\s*(?:x\s*)?(?:gpus|cards)\b"), "gpus"),
    (re.compile(r"\b(?:seq|sequence length|seq len)\s*(?:of|is|to|=|:)?\s*(\d[\d.]*k?)\b"), "seq"),
    (re.compile(r"\b(?:lora\s+)?rank\s*(?:of|is|to|=|:)?\s*(\d+)\b"), "rank"),
    (re.compile(r"\b(\d+)\s*h(?:ours)?\s*(?:a|per)\s*month\b"), "hours"),
    (re.compile(r"\bhours\s*(?:of|is|to|=|:)?\s*(\d+)\b"), "hours"),
    (re.compile(r"\bin\s+(usd|cny|rmb|dollars|yuan)\b"), "currency"),
)
CURRENCY_WORDS = {"dollars": "usd", "yuan": "cny", "rmb": "cny"}
TOKEN = re.compile(r"[^\s,;!?()]+")


def parse_followup(text: str) -> Fields | None:
    """Fields a thread message asks to change, or None when it asks nothing of the bot."""
    text = re.sub(r"<@[A-Z0-9]+>", " ", text)  # drop mentions of the bot
    low = to_grammar(text).lower().strip()  # Chinese phrasings and full-width characters too
    if not low:
        return None
    pieces: list[str] = []
    for pattern, key in PHRASES:
        for match in pattern.finditer(low):
            value = CURRENCY_WORDS.get(match.group(1), match.group(1))
            pieces.append(f"{key}={value}")
        low = pattern.sub(" ", low)
    for word in TOKEN.findall(low):
        word = word.strip(".:")
        if "=" in word or word in METHODS:
            pieces.append(word)
        elif catalog.find_gpu(word) is not None and not (word.isdigit() and len(word) < 4):
            pieces.append(f"gpu={word}")
        elif catalog.find_model(word) is not None or re.fullmatch(r"\d+(\.\d+)?b", word):
            pieces.append(word)
    if not pieces:
        return None
    fields = parse_fields(" ".join(_model_first(pieces)), require_model=False)
    if fields.model is None and fields.method is None and not fields.options:
        return None
    return fields


def _model_first(pieces: list[str]) -> list[str]:
    # the grammar reads a bare non-method word as MODEL only at the start
    models = [p for p in pieces if "=" not in p and p not in METHODS]
    return models[:1] + [p for p in pieces if p not in models[:1]]


__all__ = ["ParseError", "parse_followup"]
