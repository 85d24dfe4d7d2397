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
import contextvars
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client import Counter, Gauge, Histogram
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, RedisError, ResponseError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from bot import keys

log = logging.getLogger(__name__)
T = TypeVar("T")
Handler = Callable[[dict[str, Any]], Awaitable[None]]
GiveUp = Callable[["Job"], Awaitable[None]]

JOBS = Counter("gpusize_jobs_total", "jobs by outcome", ["outcome"])
JOBS_IN_FLIGHT = Gauge("gpusize_jobs_in_flight", "jobs running in this process")
OUTBOX_HELD = Gauge("gpusize_jobs_outbox_held",
                    "acknowledged jobs held in this process until Redis records them")
JOB_WAIT_SECONDS = Histogram("gpusize_job_wait_seconds", "from the ack to the job's start",
                             buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
                                      30))
MEMO_TTL_S = 86400  # a job's memo outlives any retry of it; deleted as soon as it is done
DONE_TTL_S = 86400  # a finished job's marker: a replay of its entry within a day is not re-run
MARK_EVENT = "gpusize_job"  # message metadata event type: which job and step posted a message
MEMBER_SHARE = 4  # a member's jobs in the stream at once; the rest wait in their backlog
MEMBER_BACKLOG = 200  # a member's jobs waiting beyond that; past it a request is refused (BUSY)
DEAD_LETTERS_KEPT = 1000  # entries set aside (unreadable, or given up), newest kept
MAX_INLINE_WAIT_S = 2.0  # outside a job (before an ack), a 429 is waited out only this long
MAX_DEFERRALS = 40  # a job deferred (Redis gone, Slack rate limit) more often is given up
DEFER_MAX_S = 30.0  # the longest pause between two tries of a deferred job
DEAD_CONSUMER_IDLE_MS = 3_600_000
MAX_ATTEMPTS = 3  # a job that took its process down three times is dropped with an apology
RECORDED_TTL_S = 3600  # a job's own dedupe key: resubmitting it from the outbox is idempotent
OUTBOX_MAX_JOBS = 1000  # jobs held in one process while Redis is slow: bounded memory (~2 KiB each)
SUBMIT_TIMEOUT_S = 0.5  # before an ack: what Redis has not confirmed by then is held, not lost
OUTBOX_TIMEOUT_S = 5.0  # a resubmission has no ack waiting on it: give a slow Redis time
JOURNAL_MAX_AGE_S = RECORDED_TTL_S  # a journaled job older than its own dedupe key: not resent

# Fair share across processes: at most `share` jobs of one member are in the stream at a time
# (the set of their entry ids); the rest wait, recorded, in the member's backlog (a list) and
# enter the stream one by one as theirs finish. The stream (and each process's read-ahead) so
# holds a few jobs of every member with work, never one member's whole backlog.
# KEYS[1] the stream, KEYS[2] the member's entries in it (set), KEYS[3] the member's backlog
# (list), KEYS[4] members with a backlog (set).
PROMOTE = """
local function promote(share, owner)
  while redis.call('SCARD', KEYS[2]) < share do
    local job = redis.call('LINDEX', KEYS[3], 0)
    if not job then break end
    local added = redis.pcall('XADD', KEYS[1], '*', 'job', job)
    if type(added) == 'table' and added.err then break end  -- full: it stays in the backlog
    redis.call('LPOP', KEYS[3])
    redis.pcall('SADD', KEYS[2], added)
  end
  if redis.call('LLEN', KEYS[3]) == 0 then redis.call('SREM', KEYS[4], owner) end
end
"""

# KEYS[5..] dedupe keys. ARGV[1] the job (JSON), ARGV[2] share, ARGV[3] backlog cap, ARGV[4] the
# member, ARGV[5..] each dedupe key's TTL. Nothing is set unless everything is new: a retry is
# dropped only when its job is in. The first write is a SET: under maxmemory it fails first.
SUBMIT = """
for i = 5, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return false end
end
local waiting = redis.call('LLEN', KEYS[3])
if waiting >= tonumber(ARGV[3]) then return 'busy' end
for i = 5, #KEYS do
  redis.call('SET', KEYS[i], '1', 'EX', ARGV[i])
end
if waiting == 0 and redis.call('SCARD', KEYS[2]) < tonumber(ARGV[2]) then
  local id = redis.call('XADD', KEYS[1], '*', 'job', ARGV[1])
  redis.call('SADD', KEYS[2], id)
  return id
end
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[4])
return 'waiting'
"""

# KEYS[5] the job's memo, KEYS[6] its done-marker, KEYS[7] its lease. ARGV[1] the group, ARGV[2] the entry id,
# ARGV[3] share, ARGV[4] the member, ARGV[5] the done-marker's TTL ('' for an entry dropped
# unrun). Acknowledged, removed, memo dropped, done-marker set, the member's next job let in.
FINISH = PROMOTE + """
local acked = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[5], KEYS[7])
promote(tonumber(ARGV[3]), ARGV[4])
if ARGV[5] ~= '' then redis.pcall('SET', KEYS[6], '1', 'EX', ARGV[5]) end
return acked
"""

# KEYS[1] a job's lease. ARGV[1] this process, ARGV[2] its life (ms). 1: this process runs the
# job (taken, or still its own, for another life); 0: another live process is running it (a
# claim taken while its heartbeat lagged). Full (OOM): run without one.
LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.pcall('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

# ARGV[1] share, ARGV[2] the member: entries gone from the stream without FINISH (dead-lettered
# unreadable ones, a flushed stream) no longer count against the member's share.
REPAIR = PROMOTE + """
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if #redis.call('XRANGE', KEYS[1], id, id) == 0 then redis.call('SREM', KEYS[2], id) end
end
promote(tonumber(ARGV[1]), ARGV[2])
return redis.call('LLEN', KEYS[3])
"""


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


@dataclass
class Held:
    """A job Redis has not confirmed: resubmitted with the same keys until it answers."""

    job: Job
    dedupe: list[tuple[str, int]]
    since: float
    refused: Refused | None


# -- memoized steps --------------------------------------------------------------------------------


class JobDeferred(RedisError):
    """Raised inside a job that must stop now and run again later (its intent could not be
    recorded, or Slack asked it to wait): nothing more is posted in this run. A RedisError, so
    handlers treat it as the store being down; their apology is not posted either."""


@dataclass
class JobContext:
    """The job running in this task: its memo (loaded at start on a re-run) and step counter."""

    redis: Redis
    job_id: str
    attempt: int
    memo: dict[str, str] = field(default_factory=dict)
    steps: int = 0
    durable: bool = True  # recorded in the stream (False: run here because Redis was gone)
    owner: str = ""  # whose job it is ("team:user"): the answer workers take turns by it
    defer_s: float | None = None  # set: stop, and run the job again after this long

    @property
    def memo_key(self) -> str:
        return keys.job_memo(self.job_id)

    def next_step(self, what: str) -> str:
        self.steps += 1
        return f"{self.steps}:{what}"

    def defer(self, seconds: float, why: str) -> JobDeferred:
        """Stop this run; the job runs again after `seconds` (the longest asked for wins)."""
        self.defer_s = max(self.defer_s or 0.0, seconds)
        return JobDeferred(why)

    def check_deferred(self) -> None:
        if self.defer_s is not None:
            raise JobDeferred("deferred")

    async def remember(self, step: str, result: Any) -> None:
        """Memoize a step's result; retried briefly (a re-run without it looks in Slack)."""
        encoded = json.dumps(result)
        self.memo[step] = encoded
        await self._write(step, encoded, tries=3)

    async def record_intent(self, step: str) -> None:
        """Before a post: record that it is about to happen, or post nothing (deferred)."""
        field = intent_field(step)
        self.memo[field] = str(time.time())
        try:
            await self._write(field, self.memo[field], tries=1, raise_=True)
        except (RedisError, OSError) as err:
            del self.memo[field]
            if out_of_memory(err):  # full: post without it (answering beats a loop of refusals)
                log.warning("job %s: intent of %s not recorded (Redis full)", self.job_id, step)
                return
            raise self.defer(1.0, "intent not recorded") from err

    async def _write(self, field: str, value: str, *, tries: int, raise_: bool = False) -> None:
        for n in range(tries):
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    pipe.hset(self.memo_key, field, value)
                    pipe.expire(self.memo_key, MEMO_TTL_S)
                    await pipe.execute()
                return
            except (RedisError, OSError):
                if raise_ and n == tries - 1:
                    raise
                if n < tries - 1:
                    await asyncio.sleep(0.2 * (n + 1))
        log.warning("job %s: step %s not memoized (Redis)", self.job_id, field)


def intent_field(step: str) -> str:
    return f"{step}?"


def marker_of(message: dict[str, Any]) -> tuple[str, str] | None:
    """(job id, step) of a message the bot posted inside a job, from its metadata."""
    meta = message.get("metadata") or {}
    payload = meta.get("event_payload") or {}
    if meta.get("event_type") != MARK_EVENT or not isinstance(payload, dict):
        return None
    return str(payload.get("job", "")), str(payload.get("step", ""))


CURRENT: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar("job", default=None)


@dataclass(frozen=True)
class Slot:
    """Where a conversation-store script records its result inside a job (bot.store): the memo
    hash and field, and the result a previous run recorded there, if any."""

    key: str
    field: str
    cached: str | None


def current_owner() -> str:
    """Whose job is running in this task ("" outside a job)."""
    ctx = CURRENT.get()
    return ctx.owner if ctx is not None else ""


def slot(what: str) -> Slot | None:
    """The memo slot of the next store step of the running job (None outside a job)."""
    ctx = CURRENT.get()
    if ctx is None:
        return None
    step = ctx.next_step(what)
    return Slot(key=ctx.memo_key, field=step, cached=ctx.memo.get(step))


async def once(what: str, call: Callable[[], Awaitable[T]]) -> T:
    """Run a side effect (a Slack call) once per job step: a re-run of the job gets what the
    first run got (a message ts, or None) without calling Slack again. The result must be JSON.
    (A crash between the call and its memo repeats it: use `posted_once` for posts.)"""
    ctx = CURRENT.get()
    if ctx is None or not ctx.durable:
        return await call()
    step = ctx.next_step(what)
    if step in ctx.memo:
        JOBS.labels("replayed_step").inc()
        return json.loads(ctx.memo[step])
    ctx.check_deferred()
    result = await call()
    await ctx.remember(step, result)
    return result


Marker = dict[str, Any]  # chat.postMessage metadata naming the job and step


async def posted_once(what: str, post: Callable[[Marker | None], Awaitable[str]],
                      find: Callable[[Marker], Awaitable[str | None]]) -> str:
    """A post made once per job step, crash or not: its intent is recorded before Slack is
    called (or nothing is posted: the job is deferred) and the message carries the job and step
    in its metadata (`post(marker)`); a re-run that finds the intent but no result asks
    `find(marker)` for the message's ts before posting again."""
    ctx = CURRENT.get()
    if ctx is None or not ctx.durable:
        return await post(None)
    step = ctx.next_step(what)
    if step in ctx.memo:
        JOBS.labels("replayed_step").inc()
        return str(json.loads(ctx.memo[step]))
    ctx.check_deferred()
    marker = {"event_type": MARK_EVENT, "event_payload": {"job": ctx.job_id, "step": step}}
    if intent_field(step) in ctx.memo:  # an earlier run was about to post: did it?
        found = await find(marker)
        if found is not None:
            JOBS.labels("found_posted").inc()
            await ctx.remember(step, found)
            return found
    else:
        await ctx.record_intent(step)
    result = await post(marker)
    await ctx.remember(step, result)
    return result


class RateLimits(AsyncRateLimitErrorRetryHandler):
    """Slack's 429 and its Retry-After. Inside a job the wait never holds a job slot: the job is
    deferred for Retry-After (its done steps memoized) and this run stops. Outside a job (before
    an ack) a wait up to MAX_INLINE_WAIT_S is waited out; a longer one is not retried."""

    async def _can_retry_async(self, *, state: RetryState, request: HttpRequest,
                               response: HttpResponse | None = None,
                               error: Exception | None = None) -> bool:
        if response is None or response.status_code != 429:
            return False
        wait = retry_after_s(response)
        ctx = CURRENT.get()
        if ctx is not None and ctx.durable:
            ctx.defer(wait, "rate limited")
            JOBS.labels("rate_limited").inc()
            return False
        return wait <= MAX_INLINE_WAIT_S


def retry_after_s(response: HttpResponse) -> float:
    for name, values in response.headers.items():
        if name.lower() == "retry-after":
            with contextlib.suppress(ValueError, IndexError, TypeError):
                return max(0.0, float(values[0] if isinstance(values, list) else values))
    return 1.0


# -- the queue ---------------------------------------------------------------------------------------


@dataclass
class Entry:
    stream_id: str
    job: Job
    claimed: bool  # taken over from another consumer: it may have run before
    memo: dict[str, str] | None = None  # kept across deferrals (loaded once per process)
    attempt: int = 1
    deferrals: int = 0


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
        self.never_recorded: GiveUp | None = None  # tells whose journaled job was given up on
        self.journal = journal  # held jobs on disk too: a restarted process resubmits them
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.stream = keys.jobs_stream()
        self._submit = redis.register_script(SUBMIT)
        self._finish_script = redis.register_script(FINISH)
        self._repair = redis.register_script(REPAIR)
        self._lease = redis.register_script(LEASE)
        self._running_entries: dict[str, Entry] = {}  # stream id -> the entry its task runs
        self._queued: dict[str, collections.deque[Entry]] = {}
        self._turns: collections.deque[str] = collections.deque()  # owners with queued jobs
        self._running: dict[str, asyncio.Task[None]] = {}  # stream id -> task
        self._running_by: collections.Counter[str] = collections.Counter()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._cleanup: set[asyncio.Task[None]] = set()
        self._stopping = False
        self._claims = 0
        self._outbox: dict[str, Held] = {}
        self._outbox_task: asyncio.Task[None] | None = None
        self._deferred: dict[str, Entry] = {}  # stream id -> a job waiting to run again

    def handle(self, kind: str, handler: Handler) -> None:
        self.handlers[kind] = handler

    # -- the listener side: record before the ack ----------------------------------------------

    async def submit(self, job: Job, *, dedupe: list[tuple[str, int]] | None = None,
                     timeout_s: float = SUBMIT_TIMEOUT_S,
                     refused: Refused | None = None) -> Submitted:
        """Record `job` (with its dedupe keys, atomically) before Slack gets the ack.

        Acknowledged means recorded: a recording Redis did not confirm in time (it may or may not
        have landed) is HELD in this process's outbox and resubmitted with the same keys until
        Redis answers, so it lands exactly once; `refused` is called if it never does. An OOM
        refusal is REFUSED (nothing was stored), never assumed to have landed."""
        dedupe = [*(dedupe or []), (keys.job_recorded(job.id), RECORDED_TTL_S)]
        outcome = await self._record(job, dedupe, timeout_s)
        if outcome is Submitted.HELD:
            if len(self._outbox) >= OUTBOX_MAX_JOBS:
                JOBS.labels("refused_outbox_full").inc()
                return Submitted.REFUSED
            self._outbox[job.id] = Held(job, dedupe, time.monotonic(), refused)
            OUTBOX_HELD.set(len(self._outbox))
            self._ensure_outbox()
            await self._journal_write(job, dedupe)
        return outcome

    async def _record(self, job: Job, dedupe: list[tuple[str, int]],
                      timeout_s: float) -> Submitted:
        try:
            added = await asyncio.wait_for(self._submit(
                keys=[*self._member_keys(job.owner), *(k for k, _ttl in dedupe)],
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

    def _member_keys(self, owner: str) -> list[str]:
        return [self.stream, keys.job_active(owner), keys.job_backlog(owner),
                keys.jobs_backlogged()]

    # -- the outbox: jobs acknowledged while Redis was slow -------------------------------------

    def _ensure_outbox(self) -> None:
        if self._outbox_task is None or self._outbox_task.done():
            self._outbox_task = asyncio.create_task(self._outbox_forever(), name="jobs-outbox")

    async def _outbox_forever(self) -> None:
        pause = 0.2
        while self._outbox:
            await asyncio.sleep(pause)
            await self.flush_outbox()
            pause = min(pause * 2, 2.0)
        OUTBOX_HELD.set(0)

    async def flush_outbox(self) -> int:
        """Resubmit every held job once; returns how many are still held. A held job is kept
        until Redis answers (recorded, a duplicate of its own earlier landing, or an OOM
        refusal): giving up while Redis might still apply an earlier attempt could tell the
        person "not recorded" and answer them after all."""
        for held in list(self._outbox.values()):
            outcome = await self._record(held.job, held.dedupe, OUTBOX_TIMEOUT_S)
            if outcome in (Submitted.HELD, Submitted.UNRECORDED):
                continue  # still no answer: next round
            self._outbox.pop(held.job.id, None)
            if outcome in (Submitted.QUEUED, Submitted.DUPLICATE):
                JOBS.labels("outbox_recorded").inc()
            else:
                await self._give_up_held(held)
            await self._journal_forget(held.job.id)
        OUTBOX_HELD.set(len(self._outbox))
        return len(self._outbox)

    async def _give_up_held(self, held: Held) -> None:
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

    async def _journal_write(self, job: Job, dedupe: list[tuple[str, int]]) -> None:
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

    def _journal_restore(self) -> int:
        """Put the jobs a killed process held (journaled, not yet recorded) back in the outbox:
        resubmitted with their own keys, they land once however often they are sent."""
        if self.journal is None or not self.journal.is_dir():
            return 0
        restored = 0
        for path in sorted(self.journal.glob("*.json"))[:OUTBOX_MAX_JOBS]:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                job = Job.decode(data["job"])
                fresh = time.time() - float(data["at"]) < JOURNAL_MAX_AGE_S
                dedupe = [(str(k), int(ttl)) for k, ttl in data["dedupe"]]
            except (OSError, ValueError, KeyError, TypeError):
                fresh = False
            if not fresh or job.id in self._outbox:
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            self._outbox[job.id] = Held(job, dedupe, time.monotonic(), None)
            restored += 1
        if restored:
            JOBS.labels("journal_restored").inc(restored)
            log.warning("%d acknowledged jobs restored from the outbox journal", restored)
            OUTBOX_HELD.set(len(self._outbox))
            self._ensure_outbox()
        return restored

    async def run_here(self, job: Job) -> None:
        """Run a job that could not be recorded (Redis refused the connection), in this process:
        no memo, no intents (they would need the Redis that is gone)."""
        await self._execute(job, attempt=1, memo={}, durable=False)

    # -- the consumer side -----------------------------------------------------------------------

    async def start(self) -> None:
        self._stopping = False
        self._journal_restore()
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
            await self._repair(keys=self._member_keys(owner), args=[self.share, owner])

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
        if stream_id in self._running or stream_id in self._deferred or any(
                e.stream_id == stream_id for q in self._queued.values() for e in q):
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
        queue = self._queued.setdefault(job.owner, collections.deque())
        if not queue and job.owner not in self._turns:
            self._turns.append(job.owner)
        queue.append(Entry(stream_id, job, claimed))

    def _in_background(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._cleanup.add(task)
        task.add_done_callback(self._cleanup.discard)

    def _held_count(self) -> int:
        return len(self._running) + len(self._deferred) + sum(
            len(q) for q in self._queued.values())

    def _held_ids(self) -> list[str]:
        return [*self._running, *self._deferred,
                *(e.stream_id for q in self._queued.values() for e in q)]

    def _dispatch(self) -> None:
        """Start queued jobs round-robin across owners, within both caps."""
        if self._stopping:
            return
        passes = len(self._turns)
        while self._turns and passes > 0 and len(self._running) < self.max_in_flight:
            owner = self._turns.popleft()
            queue = self._queued.get(owner)
            if not queue:
                self._queued.pop(owner, None)
                passes = len(self._turns)
                continue
            if self._running_by[owner] >= self.per_user:
                self._turns.append(owner)
                passes -= 1
                continue
            entry = queue.popleft()
            if queue:
                self._turns.append(owner)
            else:
                self._queued.pop(owner, None)
            passes = len(self._turns)
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
            queue = self._queued.setdefault(entry.job.owner, collections.deque())
            if not queue and entry.job.owner not in self._turns:
                self._turns.append(entry.job.owner)
            queue.append(entry)
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
                    keys=[*self._member_keys(owner), keys.job_memo(entry.job.id),
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
        left_queued = sum(len(q) for q in self._queued.values()) + len(self._deferred)
        self._queued.clear()
        self._deferred.clear()  # pending in the stream: whoever runs next takes them over
        self._turns.clear()
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
        unrecorded = 0
        if self._outbox:  # one last try to record what was acknowledged while Redis was slow
            if self._outbox_task is not None:
                self._outbox_task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.flush_outbox(), 5)
            unrecorded = len(self._outbox)
            for held in list(self._outbox.values()):  # never silently: they are told
                await self._give_up_held(held)
            self._outbox.clear()
        summary = {"finished": finished, "left_running": len(running) - finished,
                   "left_queued": left_queued, "unrecorded": unrecorded}
        log.info("jobs drained: %s", json.dumps(summary))
        return summary
