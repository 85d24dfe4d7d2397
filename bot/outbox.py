"""Acknowledged means recorded: a job a recording Redis did not confirm in time is held in the
process's outbox and resubmitted with the same keys until Redis answers, so it lands exactly
once; held jobs are journaled on disk too, so a process killed while Redis was slow leaves them
to the next one. Gave up on (Redis full): the person is told, never silently (bot.jobs records)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import Gauge
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError

from bot import keys
from bot.job import JOBS, GiveUp, Job, Refused, Submitted, out_of_memory
from bot.jobscripts import SUBMIT, member_keys

log = logging.getLogger(__name__)

OUTBOX_HELD = Gauge("gpusize_jobs_outbox_held",
                    "acknowledged jobs held in this process until Redis records them")
RECORDED_TTL_S = 3600  # a job's own dedupe key: resubmitting it from the outbox is idempotent
OUTBOX_MAX_JOBS = 1000  # jobs held in one process while Redis is slow: bounded memory (~2 KiB each)
OUTBOX_TIMEOUT_S = 5.0  # a resubmission has no ack waiting on it: give a slow Redis time
CLOSE_FLUSH_S = 5.0  # on stopping, the last try to record what is held, before people are told
JOURNAL_MAX_AGE_S = RECORDED_TTL_S  # a journaled job older than its own dedupe key: not resent

Dedupe = list[tuple[str, int]]  # Redis keys set with the job, each with its TTL (s)
Record = Callable[[Job, Dedupe, float], Awaitable[Submitted]]  # one try, with a timeout (s)


@dataclass
class Held:
    """A job Redis has not confirmed: resubmitted with the same keys until it answers."""

    job: Job
    dedupe: Dedupe
    since: float
    refused: Refused | None


class Outbox:
    """The jobs this process acknowledged and Redis has not confirmed, resubmitted by `record`
    in the background, and their journal (one file per job under `journal`)."""

    def __init__(self, record: Record, journal: Path | None) -> None:
        self.record = record
        self.journal = journal
        self.never_recorded: GiveUp | None = None  # tells whose journaled job was given up on
        self.held: dict[str, Held] = {}
        self._task: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self.held)

    async def hold(self, job: Job, dedupe: Dedupe, refused: Refused | None) -> bool:
        """Hold `job` until Redis records it; False when the outbox is full (not taken)."""
        if len(self.held) >= OUTBOX_MAX_JOBS:
            JOBS.labels("refused_outbox_full").inc()
            return False
        self.held[job.id] = Held(job, dedupe, time.monotonic(), refused)
        OUTBOX_HELD.set(len(self.held))
        self._ensure_task()
        await self._journal_write(job, dedupe)
        return True

    def _ensure_task(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._forever(), name="jobs-outbox")

    async def _forever(self) -> None:
        pause = 0.2
        while self.held:
            await asyncio.sleep(pause)
            await self.flush()
            pause = min(pause * 2, 2.0)
        OUTBOX_HELD.set(0)

    async def flush(self) -> int:
        """Resubmit every held job once; returns how many are still held. A held job is kept
        until Redis answers (recorded, a duplicate of its own earlier landing, or an OOM
        refusal): giving up while Redis might still apply an earlier attempt could tell the
        person "not recorded" and answer them after all."""
        for held in list(self.held.values()):
            outcome = await self.record(held.job, held.dedupe, OUTBOX_TIMEOUT_S)
            if outcome in (Submitted.HELD, Submitted.UNRECORDED):
                continue  # still no answer: next round
            self.held.pop(held.job.id, None)
            if outcome in (Submitted.QUEUED, Submitted.DUPLICATE):
                JOBS.labels("outbox_recorded").inc()
            else:
                await self._give_up(held)
            await self._journal_forget(held.job.id)
        OUTBOX_HELD.set(len(self.held))
        return len(self.held)

    async def close(self) -> int:
        """On stopping: one last try to record what was acknowledged while Redis was slow; the
        people whose jobs are still held are told. Returns how many were never recorded."""
        if not self.held:
            return 0
        if self._task is not None:
            self._task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), CLOSE_FLUSH_S)
        unrecorded = len(self.held)
        for held in list(self.held.values()):  # never silently: they are told
            await self._give_up(held)
            # told "not recorded": the next process on a kept journal (a compose volume, a
            # restarted container in the same pod) must not answer them after all
            await self._journal_forget(held.job.id)
        self.held.clear()
        return unrecorded

    async def _give_up(self, held: Held) -> None:
        JOBS.labels("outbox_refused").inc()
        log.error("job %s: never recorded; the person is told", held.job.id)
        with contextlib.suppress(Exception):
            if held.refused is not None:
                await held.refused()
            elif self.never_recorded is not None:  # restored from the journal: no closure
                await self.never_recorded(held.job)

    # -- the journal: the outbox on disk, for a process killed while Redis was slow -----------

    def _journal_path(self, job_id: str) -> Path | None:
        if self.journal is None or not job_id.isalnum():
            return None
        return self.journal / f"{job_id}.json"

    async def _journal_write(self, job: Job, dedupe: Dedupe) -> None:
        path = self._journal_path(job.id)
        if path is None:
            return
        data = json.dumps({"job": job.encode(), "dedupe": dedupe, "at": time.time()})

        def write() -> None:  # written whole, then renamed: a crash leaves no half file
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_suffix(".part")
            with open(part, "w", encoding="utf-8") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(part, path)

        try:
            await asyncio.to_thread(write)
        except OSError as err:  # the in-process outbox still holds it
            log.warning("job %s: not journaled (%s)", job.id, type(err).__name__)

    async def _journal_forget(self, job_id: str) -> None:
        path = self._journal_path(job_id)
        if path is not None:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(path.unlink, missing_ok=True)

    def restore(self) -> int:
        """Put the jobs a killed process held (journaled, not yet recorded) back in the outbox:
        resubmitted with their own keys, they land once however often they are sent."""
        if self.journal is None:
            return 0
        try:
            journaled = sorted(self.journal.glob("*.json")) if self.journal.is_dir() else []
        except OSError as err:  # a cache volume the pod cannot read: the bot still starts
            log.warning("outbox journal unreadable (%s): nothing restored", type(err).__name__)
            return 0
        restored = 0
        for path in journaled[:OUTBOX_MAX_JOBS]:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                job = Job.decode(data["job"])
                fresh = time.time() - float(data["at"]) < JOURNAL_MAX_AGE_S
                dedupe = [(str(k), int(ttl)) for k, ttl in data["dedupe"]]
            except (OSError, ValueError, KeyError, TypeError):
                fresh = False
            if not fresh or job.id in self.held:
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            self.held[job.id] = Held(job, dedupe, time.monotonic(), None)
            restored += 1
        if restored:
            JOBS.labels("journal_restored").inc(restored)
            log.warning("%d acknowledged jobs restored from the outbox journal", restored)
            OUTBOX_HELD.set(len(self.held))
            self._ensure_task()
        return restored


class Recorder:
    """Records jobs in the stream (or a member's backlog) with their dedupe keys, in one script;
    what Redis does not confirm in time is held in the outbox and resubmitted."""

    def __init__(self, redis: Redis, *, share: int, backlog: int, journal: Path | None) -> None:
        self.share = share
        self.backlog = backlog
        self._submit = redis.register_script(SUBMIT)
        # held jobs, on disk too under `journal`: a restarted process resubmits them
        self.outbox = Outbox(self.record, journal)

    async def submit(self, job: Job, *, dedupe: Dedupe | None = None,
                     timeout_s: float,
                     refused: Refused | None = None) -> Submitted:
        """Record `job` (with its dedupe keys, atomically) before Slack gets the ack.

        Acknowledged means recorded: a recording Redis did not confirm in time (it may or may not
        have landed) is HELD in this process's outbox and resubmitted with the same keys until
        Redis answers, so it lands exactly once; `refused` is called if it never does. An OOM
        refusal is REFUSED (nothing was stored), never assumed to have landed."""
        dedupe = [*(dedupe or []), (keys.job_recorded(job.id), RECORDED_TTL_S)]
        outcome = await self.record(job, dedupe, timeout_s)
        if outcome is Submitted.HELD and not await self.outbox.hold(job, dedupe, refused):
            return Submitted.REFUSED
        return outcome

    async def record(self, job: Job, dedupe: Dedupe, timeout_s: float) -> Submitted:
        try:
            added = await asyncio.wait_for(self._submit(
                keys=[*member_keys(job.owner), *(k for k, _ttl in dedupe)],
                args=[job.encode(), self.share, self.backlog, job.owner,
                      *(str(ttl) for _k, ttl in dedupe)]), timeout_s)
        except (RedisConnectionError, ConnectionRefusedError):
            # nothing reached Redis: run it in this process (answering beats silence)
            JOBS.labels("unrecorded").inc()
            return Submitted.UNRECORDED
        except ResponseError as err:
            if out_of_memory(err):  # maxmemory, noeviction: a refusal, nothing stored
                JOBS.labels("refused_oom").inc()
                return Submitted.REFUSED
            log.warning("job %s: recording refused (%s); held", job.id, str(err)[:80])
            JOBS.labels("held").inc()
            return Submitted.HELD
        except (TimeoutError, RedisError, OSError) as err:
            # sent but unanswered (a slow Redis): it may or may not land, so it is held and
            # resubmitted with the same keys (a second landing is refused as a duplicate)
            log.warning("job %s: recording unconfirmed (%s); held", job.id, type(err).__name__)
            JOBS.labels("held").inc()
            return Submitted.HELD
        if added is None:
            JOBS.labels("duplicate").inc()
            return Submitted.DUPLICATE
        if added == "busy":
            JOBS.labels("refused_busy").inc()
            return Submitted.BUSY
        JOBS.labels("queued" if added != "waiting" else "queued_backlog").inc()
        return Submitted.QUEUED
