"""Acknowledged work is never lost and is answered once.

Every piece of work a listener acknowledges (a sizing command, a thread reply or mention, a
button press) is first recorded as a job in a Redis stream, in one Lua script that also sets the
request's dedupe keys: a retried or replayed request is dropped only when its job is durably
there. A recording Redis does not confirm in time is held in the process's outbox and
resubmitted with the same keys until it does. A consumer task in each bot process reads the
stream through a consumer group, runs jobs fairly (round-robin across users, at most `per_user`
each and `max_in_flight` in all) and XACKs each when done. A job held by a process that died or
stopped is taken over by any other one (XAUTOCLAIM) once it has been idle for `claim_idle_s`; a
live process keeps the claims it holds fresh (XCLAIM JUSTID) so a long job is never taken from
under it.

At least once, answered once: a job may run again after a crash, so each Slack side effect and
each conversation-store write inside a job is memoized per (job id, step) in a Redis hash
(`once`, `slot`): a re-run replays what the first run did instead of doing it again. A post
(`posted_once`) first records its intent in that hash and carries the job id and step in its
message metadata; a re-run that finds an intent without a result looks for the marked message in
the channel or thread before posting, so a crash between Slack's reply and the memo write posts
nothing twice. When the intent cannot be recorded (Redis gone) nothing is posted: the job is
deferred, its slot freed, and run again later. A finished job leaves a done-marker (set with its
XACK, one transaction) so a replayed entry of it is acknowledged without running again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from prometheus_client import Gauge, Histogram
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from bot import keys
from bot.fairqueue import Entry, FairQueue
from bot.job import JOBS, GiveUp, Handler, Job, Refused, Submitted
from bot.jobscripts import FINISH, LEASE, REPAIR, member_keys
from bot.once import CURRENT, MEMO_TTL_S, JobContext
from bot.outbox import Dedupe, Recorder

log = logging.getLogger(__name__)

JOBS_IN_FLIGHT = Gauge("gpusize_jobs_in_flight", "jobs running in this process")
JOB_WAIT_SECONDS = Histogram("gpusize_job_wait_seconds", "from the ack to the job's start",
                             buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
                                      30))
DONE_TTL_S = 86400  # a finished job's marker: a replay of its entry within a day is not re-run
MEMBER_SHARE = 4  # a member's jobs in the stream at once; the rest wait in their backlog
MEMBER_BACKLOG = 200  # a member's jobs waiting beyond that; past it a request is refused (BUSY)
DEAD_LETTERS_KEPT = 1000  # entries set aside (unreadable, or given up), newest kept
MAX_DEFERRALS = 40  # a job deferred (Redis gone, Slack rate limit) more often is given up
DEFER_MAX_S = 30.0  # the longest pause between two tries of a deferred job
DEAD_CONSUMER_IDLE_MS = 3_600_000
MAX_ATTEMPTS = 3  # a job that took its process down three times is dropped with an apology
SUBMIT_TIMEOUT_S = 0.5  # before an ack: what Redis has not confirmed by then is held, not lost


class Jobs:
    def __init__(self, redis: Redis, *, claim_idle_s: float = 15, max_in_flight: int = 8,
                 per_user: int = 2, read_ahead: int = 64, share: int = MEMBER_SHARE,
                 backlog: int = MEMBER_BACKLOG, journal: Path | None = None) -> None:
        self.redis = redis
        self.claim_idle_s = claim_idle_s
        self.max_in_flight = max_in_flight
        self.per_user = per_user
        self.read_ahead = max(read_ahead, max_in_flight)
        self.share = max(1, share)
        self.backlog = max(1, backlog)
        self.handlers: dict[str, Handler] = {}
        self.give_up: GiveUp | None = None
        self.recorder = Recorder(redis, share=self.share, backlog=self.backlog, journal=journal)
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.stream = keys.jobs_stream()
        self._finish_script = redis.register_script(FINISH)
        self._repair = redis.register_script(REPAIR)
        self._lease = redis.register_script(LEASE)
        self._running_entries: dict[str, Entry] = {}  # stream id -> the entry its task runs
        self._queued = FairQueue()  # read from the stream, waiting for a slot
        self._running: dict[str, asyncio.Task[None]] = {}  # stream id -> task
        self._running_by: collections.Counter[str] = collections.Counter()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._cleanup: set[asyncio.Task[None]] = set()
        self._stopping = False
        self._claims = 0
        self._deferred: dict[str, Entry] = {}  # stream id -> a job waiting to run again

    def handle(self, kind: str, handler: Handler) -> None:
        self.handlers[kind] = handler

    @property
    def never_recorded(self) -> GiveUp | None:
        """Tells whose journaled job (restored after a restart, no closure) was given up on."""
        return self.recorder.outbox.never_recorded

    @never_recorded.setter
    def never_recorded(self, tell: GiveUp | None) -> None:
        self.recorder.outbox.never_recorded = tell

    # -- the listener side: record before the ack ----------------------------------------------

    async def submit(self, job: Job, *, dedupe: Dedupe | None = None,
                     timeout_s: float = SUBMIT_TIMEOUT_S,
                     refused: Refused | None = None) -> Submitted:
        """Record `job` before Slack gets the ack (bot.outbox: acknowledged means recorded)."""
        return await self.recorder.submit(job, dedupe=dedupe, timeout_s=timeout_s,
                                          refused=refused)

    async def flush_outbox(self) -> int:
        """Resubmit every held job once; returns how many are still held (bot.outbox)."""
        return await self.recorder.outbox.flush()

    async def run_here(self, job: Job) -> None:
        """Run a job that could not be recorded (Redis refused the connection), in this process:
        no memo, no intents (they would need the Redis that is gone)."""
        await self._execute(job, attempt=1, memo={}, durable=False)

    # -- the consumer side -----------------------------------------------------------------------

    async def start(self) -> None:
        self._stopping = False
        self.recorder.outbox.restore()
        self._tasks = [asyncio.create_task(self._read_forever(), name="jobs-reader"),
                       asyncio.create_task(self._heartbeat_forever(), name="jobs-heartbeat")]

    async def _ensure_group(self) -> None:
        try:
            await self.redis.xgroup_create(self.stream, keys.JOBS_GROUP, id="0", mkstream=True)
        except ResponseError as err:
            if "BUSYGROUP" not in str(err):
                raise

    async def _read_forever(self) -> None:
        last_claim = 0.0
        grouped = False
        while not self._stopping:
            try:
                if not grouped:
                    await self._ensure_group()
                    grouped = True
                if time.monotonic() - last_claim >= min(self.claim_idle_s / 2, 5):
                    last_claim = time.monotonic()
                    await self._claim_idle()
                room = self.read_ahead - self._held_count()
                if room <= 0:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), 0.5)
                    continue
                # the client's socket timeout is 1 s: block for less
                got = await self.redis.xreadgroup(keys.JOBS_GROUP, self.name, {self.stream: ">"},
                                                  count=room, block=400)
                for _stream, entries in got or []:
                    for stream_id, fields in entries:
                        self._accept(stream_id, fields, claimed=False)
                self._dispatch()
            except asyncio.CancelledError:
                raise
            except ResponseError as err:
                if "NOGROUP" in str(err):  # the stream was deleted (FLUSHALL): make it again
                    grouped = False
                else:
                    log.warning("job reader: %s", err)
                await asyncio.sleep(0.5)
            except (RedisError, OSError) as err:
                log.warning("job reader: Redis unavailable (%s)", type(err).__name__)
                await asyncio.sleep(0.5)
            except Exception:
                log.exception("job reader failed; reading on")
                await asyncio.sleep(0.5)

    async def _forget_dead_consumers(self) -> None:
        """Consumers of processes long gone, holding nothing: removed (killed processes never
        remove their own)."""
        for consumer in await self.redis.xinfo_consumers(self.stream, keys.JOBS_GROUP):
            if (consumer["name"] != self.name and int(consumer["pending"]) == 0
                    and int(consumer["idle"]) > DEAD_CONSUMER_IDLE_MS):
                await self.redis.xgroup_delconsumer(self.stream, keys.JOBS_GROUP,
                                                    consumer["name"])

    async def _repair_backlogs(self) -> None:
        """Members with a backlog: entries of theirs gone from the stream without finishing
        stop counting against their share, and their next jobs are let in."""
        for owner in await self.redis.srandmember(keys.jobs_backlogged(), 50) or []:
            await self._repair(keys=member_keys(owner), args=[self.share, owner])

    async def _claim_idle(self) -> None:
        """Take over jobs a dead or stopped process held for longer than claim_idle_s."""
        self._claims += 1
        if self._claims % 100 == 1:
            await self._forget_dead_consumers()
        await self._repair_backlogs()
        start = "0-0"
        for _page in range(10):
            room = self.read_ahead - self._held_count()
            if room <= 0:
                return
            reply = await self.redis.xautoclaim(self.stream, keys.JOBS_GROUP, self.name,
                                                min_idle_time=int(self.claim_idle_s * 1000),
                                                start_id=start, count=room)
            start, entries = reply[0], reply[1]
            for stream_id, fields in entries:
                if fields is None:  # deleted while pending
                    await self.redis.xack(self.stream, keys.JOBS_GROUP, stream_id)
                    continue
                JOBS.labels("taken_over").inc()
                log.info("job %s taken over by %s", stream_id, self.name)
                self._accept(stream_id, fields, claimed=True)
            if start in ("0-0", b"0-0"):
                break
        self._dispatch()

    def _accept(self, stream_id: str, fields: dict[str, str], *, claimed: bool) -> None:
        if stream_id in self._running or stream_id in self._deferred or stream_id in self._queued:
            return
        try:
            job = Job.decode(fields["job"])
            if not (isinstance(job.kind, str) and isinstance(job.payload, dict)
                    and isinstance(job.owner, str) and isinstance(job.id, str)):
                raise TypeError("not a job")
        except Exception as err:  # a poison entry never stalls the ones behind it
            log.error("job %s unreadable (%s); set aside", stream_id, type(err).__name__)
            self._in_background(self._dead_letter(stream_id, fields, "unreadable"))
            return
        self._queued.add(Entry(stream_id, job, claimed))

    def _in_background(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._cleanup.add(task)
        task.add_done_callback(self._cleanup.discard)

    def _held_count(self) -> int:
        return len(self._running) + len(self._deferred) + len(self._queued)

    def _held_ids(self) -> list[str]:
        return [*self._running, *self._deferred,
                *(e.stream_id for e in self._queued)]

    def _dispatch(self) -> None:
        """Start queued jobs round-robin across owners, within both caps."""
        if self._stopping:
            return
        while len(self._running) < self.max_in_flight:
            entry = self._queued.next(lambda owner: self._running_by[owner] >= self.per_user)
            if entry is None:
                return
            self._start(entry)

    def _start(self, entry: Entry) -> None:
        self._running_by[entry.job.owner] += 1
        task = asyncio.create_task(self._run(entry), name=f"job-{entry.stream_id}")
        self._running[entry.stream_id] = task
        self._running_entries[entry.stream_id] = entry
        JOBS_IN_FLIGHT.set(len(self._running))

        def done(_task: asyncio.Task[None]) -> None:
            self._running.pop(entry.stream_id, None)
            self._running_entries.pop(entry.stream_id, None)
            self._running_by[entry.job.owner] -= 1
            if self._running_by[entry.job.owner] <= 0:
                del self._running_by[entry.job.owner]
            JOBS_IN_FLIGHT.set(len(self._running))
            self._wake.set()
            self._dispatch()

        task.add_done_callback(done)

    async def _run(self, entry: Entry) -> None:
        job = entry.job
        if entry.memo is None:
            # a replayed entry of a finished job is acknowledged, not run; a taken-over (or
            # replayed) one replays what its earlier run did and counts its attempts
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    pipe.exists(keys.job_done(job.id))
                    await self._lease(keys=[keys.job_lease(job.id)],
                                      args=[self.name, self._lease_ms()], client=pipe)
                    if entry.claimed:
                        pipe.hincrby(keys.job_memo(job.id), "_attempts", 1)
                        pipe.expire(keys.job_memo(job.id), MEMO_TTL_S)
                    pipe.hgetall(keys.job_memo(job.id))
                    got = await pipe.execute()
            except (RedisError, OSError):
                if not self._stopping:  # a stale connection after a restart, or Redis gone
                    self._defer(entry, 0.5)
                return  # else left pending: taken over once Redis answers
            if not got[1]:
                self._leased_elsewhere(entry)
                return
            if got[0]:
                JOBS.labels("replayed_done").inc()
                log.info("job %s already done: its replayed entry %s is dropped", job.id,
                         entry.stream_id)
                await self._finish(entry, done=False)
                return
            entry.memo = got[-1]
            entry.attempt = 1 + int(got[2]) if entry.claimed else 1
            JOB_WAIT_SECONDS.observe(max(0.0, time.time() - job.queued_at))
        elif not await self._still_leased(entry):  # a deferred job's second run
            return
        if entry.attempt > MAX_ATTEMPTS or entry.deferrals > MAX_DEFERRALS:
            JOBS.labels("given_up").inc()
            log.error("job %s (%s) given up after %d attempts, %d deferrals", entry.stream_id,
                      job.kind, entry.attempt - 1, entry.deferrals)
            if self.give_up is not None:
                with contextlib.suppress(Exception):
                    await self.give_up(job)
            with contextlib.suppress(RedisError, OSError):
                await self.redis.xadd(keys.jobs_dead(), {
                    "entry": entry.stream_id, "reason": "given up", "job": job.encode(),
                    "at": str(time.time())}, maxlen=DEAD_LETTERS_KEPT, approximate=True)
            await self._finish(entry)
            return
        defer_s = await self._execute(job, attempt=entry.attempt, memo=entry.memo)
        if defer_s is not None and not self._stopping:
            self._defer(entry, defer_s)
            return
        if defer_s is None:
            await self._finish(entry)
        # stopping with a deferred job: left pending for whoever runs next

    def _lease_ms(self) -> int:
        return max(1000, int(self.claim_idle_s * 1000))

    def _leased_elsewhere(self, entry: Entry) -> None:
        """Another live process is running this job (it took a claim while this one's heartbeat
        lagged): left to it; its XACK removes the entry, and if it dies the entry is taken over
        again once the lease lapses."""
        JOBS.labels("leased_elsewhere").inc()
        log.info("job %s is running elsewhere: not run here", entry.stream_id)

    async def _still_leased(self, entry: Entry) -> bool:
        try:
            held = await self._lease(keys=[keys.job_lease(entry.job.id)],
                                     args=[self.name, self._lease_ms()])
        except (RedisError, OSError):
            if not self._stopping:
                self._defer(entry, 0.5)
            return False
        if not held:
            self._leased_elsewhere(entry)
        return bool(held)

    def _defer(self, entry: Entry, seconds: float) -> None:
        """Run `entry` again after `seconds` (backing off), holding no job slot meanwhile."""
        entry.deferrals += 1
        delay = min(DEFER_MAX_S, max(seconds, 0.25 * 2 ** min(entry.deferrals, 7)))
        JOBS.labels("deferred").inc()
        log.info("job %s deferred %.1f s (%d)", entry.stream_id, delay, entry.deferrals)
        self._deferred[entry.stream_id] = entry

        def again() -> None:
            if self._deferred.pop(entry.stream_id, None) is None or self._stopping:
                return
            self._queued.add(entry)
            self._dispatch()

        asyncio.get_running_loop().call_later(delay, again)

    async def _execute(self, job: Job, *, attempt: int, memo: dict[str, str],
                       durable: bool = True) -> float | None:
        """Run the job's handler; returns how long to wait before running it again when it was
        deferred (None: done, one way or another)."""
        handler = self.handlers.get(job.kind)
        if handler is None:
            log.error("job %s: no handler for %r", job.id, job.kind)
            JOBS.labels("unknown").inc()
            return None
        ctx = JobContext(self.redis, job.id, attempt, memo, durable=durable, owner=job.owner)
        token = CURRENT.set(ctx)
        try:
            await handler(job.payload)
            if ctx.defer_s is None:
                JOBS.labels("done").inc()
        except asyncio.CancelledError:
            raise
        except Exception:  # handlers apologise themselves; this is the last line
            if ctx.defer_s is None:
                JOBS.labels("failed").inc()
                log.exception("job %s (%s) failed", job.id, job.kind)
        finally:
            CURRENT.reset(token)
        return ctx.defer_s

    async def _finish(self, entry: Entry, *, done: bool = True) -> None:
        """Done: acknowledged, removed from the stream, its memo dropped, its done-marker set
        (a replay of the entry is then never run again) and the member's next waiting job let
        into the stream, in one script."""
        owner = entry.job.owner
        for _try in range(3):
            try:
                await self._finish_script(
                    keys=[*member_keys(owner), keys.job_memo(entry.job.id),
                          keys.job_done(entry.job.id), keys.job_lease(entry.job.id)],
                    args=[keys.JOBS_GROUP, entry.stream_id, self.share, owner,
                          str(DONE_TTL_S) if done else ""])
                return
            except (RedisError, OSError):
                await asyncio.sleep(0.5)
        log.warning("job %s done but not acknowledged: it may be re-run (memoized)",
                    entry.stream_id)

    async def _dead_letter(self, stream_id: str, fields: Any, reason: str) -> None:
        """Set an entry aside (`jobs_dead`, the newest DEAD_LETTERS_KEPT kept) and remove it."""
        raw = fields.get("job") if isinstance(fields, dict) else None
        JOBS.labels("dead_letter").inc()
        with contextlib.suppress(RedisError, OSError):
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.xadd(keys.jobs_dead(), {"entry": stream_id, "reason": reason,
                                             "job": str(raw)[:65536], "at": str(time.time())},
                          maxlen=DEAD_LETTERS_KEPT, approximate=True)
                pipe.xack(self.stream, keys.JOBS_GROUP, stream_id)
                pipe.xdel(self.stream, stream_id)
                await pipe.execute()

    async def _heartbeat_forever(self) -> None:
        """Keep the claims on every job this process holds fresh, so nobody takes them over, and
        the leases of those it runs."""
        while True:
            await asyncio.sleep(max(0.2, self.claim_idle_s / 3))
            held = list(self._running) if self._stopping else self._held_ids()
            if not held:
                continue
            leased = [*self._running_entries.values(), *self._deferred.values()]
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    pipe.xclaim(self.stream, keys.JOBS_GROUP, self.name, 0, held, justid=True)
                    for entry in leased:  # and the leases of the jobs it runs
                        await self._lease(keys=[keys.job_lease(entry.job.id)],
                                          args=[self.name, self._lease_ms()], client=pipe)
                    await pipe.execute()
            except (RedisError, OSError) as err:
                log.warning("job heartbeat failed (%s)", type(err).__name__)

    # -- stopping --------------------------------------------------------------------------------

    async def stop(self, *, grace_s: float) -> dict[str, int]:
        """Take no new job, finish those running within `grace_s`; whatever is left stays
        pending in the stream for another process (or this one restarted) to take over."""
        self._stopping = True
        reader = self._tasks[0] if self._tasks else None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        left_queued = len(self._queued) + len(self._deferred)
        self._queued.clear()
        self._deferred.clear()  # pending in the stream: whoever runs next takes them over
        running = list(self._running.values())
        finished = len(running)
        if running:
            _done, pending = await asyncio.wait(running, timeout=grace_s)
            finished -= len(pending)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2)
        for task in self._tasks[1:]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(RedisError, OSError):
            # leave the group tidy, but never drop a pending job with the consumer
            if not await self.redis.xpending_range(self.stream, keys.JOBS_GROUP, min="-",
                                                   max="+", count=1, consumername=self.name):
                await self.redis.xgroup_delconsumer(self.stream, keys.JOBS_GROUP, self.name)
        unrecorded = await self.recorder.outbox.close()
        summary = {"finished": finished, "left_running": len(running) - finished,
                   "left_queued": left_queued, "unrecorded": unrecorded}
        log.info("jobs drained: %s", json.dumps(summary))
        return summary
