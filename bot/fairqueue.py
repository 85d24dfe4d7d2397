"""The jobs a process has read from the stream and not yet started, taken in turns: round-robin
across members (bot.jobs caps how many of one member's and how many in all run at once), so
one member's burst never makes another's job wait behind all of it."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bot.job import Job


@dataclass
class Entry:
    stream_id: str
    job: Job
    claimed: bool  # taken over from another consumer: it may have run before
    memo: dict[str, str] | None = None  # kept across deferrals (loaded once per process)
    attempt: int = 1
    deferrals: int = 0


class FairQueue:
    """Entries waiting to start, one queue per member, and the members' turns."""

    def __init__(self) -> None:
        self._queued: dict[str, collections.deque[Entry]] = {}
        self._turns: collections.deque[str] = collections.deque()  # owners with queued jobs

    def __len__(self) -> int:
        return sum(len(q) for q in self._queued.values())

    def __iter__(self) -> Iterator[Entry]:
        return (e for q in self._queued.values() for e in q)

    def __contains__(self, stream_id: object) -> bool:
        return any(e.stream_id == stream_id for e in self)

    def add(self, entry: Entry) -> None:
        queue = self._queued.setdefault(entry.job.owner, collections.deque())
        if not queue and entry.job.owner not in self._turns:
            self._turns.append(entry.job.owner)
        queue.append(entry)

    def next(self, full: Callable[[str], bool]) -> Entry | None:
        """The next member's next entry, skipping members whose share is `full` (running their
        most); None when every member with an entry waiting is full, or none waits."""
        passes = len(self._turns)
        while self._turns and passes > 0:
            owner = self._turns.popleft()
            queue = self._queued.get(owner)
            if not queue:
                self._queued.pop(owner, None)
                passes = len(self._turns)
                continue
            if full(owner):
                self._turns.append(owner)
                passes -= 1
                continue
            entry = queue.popleft()
            if queue:
                self._turns.append(owner)
            else:
                self._queued.pop(owner, None)
            return entry
        return None

    def clear(self) -> None:
        self._queued.clear()
        self._turns.clear()
