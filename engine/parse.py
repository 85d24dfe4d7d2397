"""The grammar's front door: `parse` (a question into a Request), `parse_fields` (a message
into a Draft, for threads to merge) and `read_reply` (a thread follow-up, or None for chatter).

Every message is read as a sentence by engine/reader.py: the slots are found wherever they are,
in Chinese, English or both, and `key=value` is the exact form that wins over prose. The key
table, its converters and build_request live in engine/keys.py and are re-exported here, so
callers keep one import. Every failure is a ParseError with a one-line message.
"""

from __future__ import annotations

from engine.i18n import _
from engine.keys import (
    BITS,
    IMPLAUSIBLE_BUDGET,
    KEY_ALIASES,
    KEYS,
    MODES,
    SIZE_RE,
    VALIDATION_PROBLEMS,
    ParseError,
    build_request,
    check_method_options,
    parse_money,
    parse_option,
    validation_problem,
)
from engine.reader import check_model_asked, read, summary
from engine.request import Draft, Request

__all__ = ["BITS", "IMPLAUSIBLE_BUDGET", "KEYS", "KEY_ALIASES", "MODES", "SIZE_RE",
           "VALIDATION_PROBLEMS", "ParseError", "build_request", "check_method_options", "parse",
           "parse_fields", "parse_money", "parse_option", "read_reply", "validation_problem"]


def parse_fields(text: str, *, require_model: bool = True) -> Draft:
    """Read a message into a Draft without applying defaults (Slack threads merge these).
    A model is read wherever it is named; with `require_model`, a message with none (and no
    cards to ask "what runs on these" of) is a ParseError that says what was read and skipped."""
    reading = read(text)
    values = reading.values
    box = values.get("gpu") and values.get("gpus")
    if require_model:
        check_model_asked(reading)
    if require_model and "model" not in values and reading.skipped and not box:
        raise ParseError(_("missing MODEL: start with a size like 13B, a name like llama-3.1-8b, "
                           "or a Hugging Face repo id ({read}).").format(
                               read=summary(reading.read, reading.skipped)),
                         token=reading.skipped[0])
    return Draft(values)


def parse(text: str) -> Request:
    """A question into a Request, or a ParseError with one clear line."""
    return build_request(parse_fields(text))


def read_reply(text: str) -> Draft | None:
    """What a thread reply asks to change, or None when it asks nothing of the bot (people talk
    in threads too): the same reader, assuming nothing. A recognised key with a bad value is a
    ParseError; two readings of a slot are an Ambiguous (a ParseError)."""
    values = {k: v for k, v in read(text, reply=True).values.items() if k != "asked_in"}
    return Draft(values) if values else None
