"""A thread's conversation: what it asked so far (a Draft) and the stage it is at.

The stage is decided in one place, `next_stage`, from the thread's inputs and the question just
answered; the dialog never writes a stage by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass
class Conversation:
    team: str
    channel: str
    thread_ts: str
    inputs: Draft = field(default_factory=Draft)  # model, method and options as the thread set them
    # _stage, _version, _created_by; the live answer: _answer_ts, _card_v (the version its
    # buttons carry), _card (its blocks, to retire it), _result (its recommendation in numbers);
    # _root (question | card | mention: what the thread's first message is), the open question:
    # _question_ts, _question (method | budget)
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def stage(self) -> Stage:
        return Stage(self.meta.get("_stage", Stage.DONE))

    @property
    def version(self) -> int:
        return int(self.meta.get("_version", 0))

    @property
    def card_version(self) -> int | None:
        """The version the thread's live answer was made for (None: no answer yet)."""
        value = self.meta.get("_card_v", "")
        return int(value) if value.isdigit() else None


@dataclass
class Update:
    conversation: Conversation
    previous: Draft  # the inputs this update replaced (absent: were not set)
    # the bookkeeping it replaced: swapping in a new answer's ts returns the one it supersedes
    previous_meta: dict[str, str] = field(default_factory=dict)

    def changes(self, change: Draft) -> list[tuple[str, Any, Any]]:
        """(field, before, after) for each field of `change` this update really changed."""
        return change.changes_from(self.previous)
