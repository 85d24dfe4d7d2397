"""A thread's conversation: what it asked so far (a Draft), the stage it is at, and its record.

The stage is decided in one place, `next_stage`, from the thread's inputs and the question just
answered; the dialog never writes a stage by hand.

`ThreadRecord` is the thread's bookkeeping beside its inputs (who started it, its live answer, its
open question), typed, with `None` for none. It is the only place that spells the record's Redis
field names (`FIELDS`): bot/store.py stores and reads a record through `to_fields` and
`from_fields` and never names a field itself. Adding a field: a dataclass field with its default
and one `FIELDS` entry (a new name, so threads stored before the change read it as its default).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from engine.request import Draft


class Stage(StrEnum):
    METHOD = "method"  # waiting for the method (buttons, or a typed reply)
    BUDGET = "budget"  # waiting for a budget, or "no budget"
    DONE = "done"  # answered; replies change the request and answer again


def next_stage(inputs: Draft, *, answered: Stage | None = None) -> Stage:
    """The thread's stage once `inputs` are stored. `answered` is the question a button just
    answered: choosing the method by button asks for a budget next; a typed reply with a method,
    or a complete command, is answered at once."""
    if inputs.method is None:
        return Stage.METHOD
    if answered is Stage.METHOD and "budget" not in inputs.values:
        return Stage.BUDGET
    return Stage.DONE


class Root(StrEnum):
    """What the thread's first message is."""

    QUESTION = "question"  # the method question of an incomplete /gpusize: becomes the verdict
    CARD = "card"  # the answer card of a complete /gpusize
    MENTION = "mention"  # someone's @gpusize message: answers come in its thread


class Question(StrEnum):
    """The question open in the thread (stage METHOD or BUDGET)."""

    METHOD = "method"
    BUDGET = "budget"


@dataclass(frozen=True)
class ThreadRecord:
    stage: Stage = Stage.DONE
    version: int = 0  # bumped by every stored change of the inputs (the store's merge)
    created_by: str | None = None  # who started the thread (a Slack user id)
    root: Root | None = None
    # the live answer: where it is, the thread version its buttons carry, its blocks without
    # buttons (to retire it when a newer one lands), its recommendation in numbers
    answer_ts: str | None = None
    card_version: int | None = None
    card: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    # the open question: where it was asked and which
    question_ts: str | None = None
    question: Question | None = None
    # the language the thread started in: its cards stay in it, whoever replies in what
    lang: str | None = None


# The Redis hash field of each record field. Inputs are stored under their own names (no leading
# underscore), so a record field's name always starts with one. Stored threads use these names:
# renaming one loses open threads unless keys.PREFIX moves with it.
FIELDS: dict[str, str] = {
    "stage": "_stage", "version": "_version", "created_by": "_created_by", "root": "_root",
    "answer_ts": "_answer_ts", "card_version": "_card_v", "card": "_card", "result": "_result",
    "question_ts": "_question_ts", "question": "_question", "lang": "_lang",
}
assert set(FIELDS) == {f.name for f in fields(ThreadRecord)}
assert all(name.startswith("_") for name in FIELDS.values())


def is_record_field(name: str) -> bool:
    """A hash field of the record rather than an input (bookkeeping fields start with "_")."""
    return name.startswith("_")


def _json(value: str) -> dict[str, Any] | None:
    try:
        decoded = json.loads(value)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


def _int(value: str) -> int | None:
    return int(value) if value.isdigit() else None


_DECODE: dict[str, Any] = {
    "stage": Stage, "version": lambda v: _int(v) or 0, "root": Root, "card_version": _int,
    "card": _json, "result": _json, "question": Question,
}


def from_fields(raw: Mapping[str, str]) -> ThreadRecord:
    """The record in a stored hash (inputs are ignored); a field that is absent or unreadable is
    its default."""
    values: dict[str, Any] = {}
    for name, stored in FIELDS.items():
        value = raw.get(stored)
        if value is None or value == "":
            continue
        try:
            values[name] = _DECODE.get(name, str)(value)
        except ValueError:
            continue
    return ThreadRecord(**values)


def to_fields(**changes: Any) -> dict[str, str | None]:
    """Record fields as hash fields to store: None deletes the field (none)."""
    unknown = set(changes) - set(FIELDS)
    if unknown:
        raise TypeError(f"not a thread record field: {', '.join(sorted(unknown))}")
    out: dict[str, str | None] = {}
    for name, value in changes.items():
        if value is None:
            out[FIELDS[name]] = None
        elif isinstance(value, dict):
            out[FIELDS[name]] = json.dumps(value, ensure_ascii=False)
        else:
            out[FIELDS[name]] = str(value)
    return out


@dataclass
class Conversation:
    team: str
    channel: str
    thread_ts: str
    inputs: Draft = field(default_factory=Draft)  # model, method and options as the thread set them
    record: ThreadRecord = field(default_factory=ThreadRecord)

    @property
    def stage(self) -> Stage:
        return self.record.stage

    @property
    def version(self) -> int:
        return self.record.version

    @property
    def card_version(self) -> int | None:
        """The version the thread's live answer was made for (None: no answer yet)."""
        return self.record.card_version


@dataclass
class Update:
    conversation: Conversation
    previous: Draft  # the inputs this update replaced (absent: were not set)

    def changes(self, change: Draft) -> list[tuple[str, Any, Any]]:
        """(field, before, after) for each field of `change` this update really changed."""
        return change.changes_from(self.previous)
