"""A job: the work a listener records before its ack and a consumer runs (bot.jobs), what
recording it can come to, and the counter of jobs by outcome every part of the queue adds to."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from prometheus_client import Counter
from redis.exceptions import OutOfMemoryError, ResponseError

Handler = Callable[[dict[str, Any]], Awaitable[None]]
GiveUp = Callable[["Job"], Awaitable[None]]

JOBS = Counter("gpusize_jobs_total", "jobs by outcome", ["outcome"])


@dataclass
class Job:
    kind: str  # which handler runs it
    payload: dict[str, Any]
    owner: str  # whose job it is, for fair share: "team:user"
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    queued_at: float = field(default_factory=time.time)

    def encode(self) -> str:
        return json.dumps({"kind": self.kind, "payload": self.payload, "owner": self.owner,
                           "id": self.id, "at": self.queued_at}, ensure_ascii=False)

    @staticmethod
    def decode(raw: str) -> Job:
        data = json.loads(raw)
        return Job(kind=data["kind"], payload=data["payload"], owner=data.get("owner", ""),
                   id=data["id"], queued_at=float(data.get("at", time.time())))


class Submitted(Enum):
    QUEUED = "queued"  # durably recorded: ack, a consumer will run it
    DUPLICATE = "duplicate"  # a retry or replay of a job already recorded: ack, do nothing
    UNRECORDED = "unrecorded"  # Redis refused the connection: ack and run it here, best effort
    HELD = "held"  # Redis did not confirm in time: held in this process's outbox and resubmitted
    #                (idempotently) until it does; ack and tell the person it is delayed
    REFUSED = "refused"  # Redis is full (OOM) or the outbox is: not taken; tell the person
    BUSY = "busy"  # the member already has MEMBER_BACKLOG jobs waiting: not taken; tell them


Refused = Callable[[], Awaitable[None]]  # tells the person a held job was given up on


def out_of_memory(err: BaseException) -> bool:
    """Redis at maxmemory with noeviction refuses writes with an OOM error: nothing was stored."""
    return isinstance(err, OutOfMemoryError) or (
        isinstance(err, ResponseError) and "maxmemory" in str(err))
