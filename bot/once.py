"""Answered once: a job may run again after a crash, so each Slack side effect and each
conversation-store write inside a job is memoized per (job id, step) in a Redis hash; a post
records its intent first and carries its job and step in the message's metadata, so a re-run
finds what an earlier run posted instead of posting it twice (bot.jobs runs the jobs)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
from redis.asyncio import Redis
from redis.exceptions import RedisError

from bot import keys
from bot.job import JOBS, out_of_memory

log = logging.getLogger(__name__)
T = TypeVar("T")

MEMO_TTL_S = 86400  # a job's memo outlives any retry of it; deleted as soon as it is done
MARK_EVENT = "gpusize_job"  # message metadata event type: which job and step posted a message
SLACK_AWAY_RETRY_S = 5.0  # Slack unreachable inside a job: run it again (backing off) this late


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


def current_job_id() -> str:
    """The running job's id, the same in each of its runs ("" outside a job)."""
    ctx = CURRENT.get()
    return ctx.job_id if ctx is not None and ctx.durable else ""


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
    try:
        result = await call()
    except aiohttp.ClientConnectorError as err:  # no connection made: nothing reached Slack
        raise slack_away(ctx, err) from err
    await ctx.remember(step, result)
    return result


def slack_away(ctx: JobContext, err: BaseException) -> JobDeferred:
    """Slack could not be reached from inside a job: the job is run again later, its done steps
    memoized, instead of its answer being lost (an acknowledged request is answered)."""
    JOBS.labels("slack_unreachable").inc()
    log.info("job %s: Slack unreachable (%s), deferred", ctx.job_id, type(err).__name__)
    return ctx.defer(SLACK_AWAY_RETRY_S, "slack unreachable")


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
    try:
        if intent_field(step) in ctx.memo:  # an earlier run was about to post: did it?
            found = await find(marker)
            if found is not None:
                JOBS.labels("found_posted").inc()
                await ctx.remember(step, found)
                return found
        else:
            await ctx.record_intent(step)
        result = await post(marker)
    except (aiohttp.ClientConnectionError, TimeoutError) as err:
        # unreachable, or cut off before Slack answered: its intent is recorded, so the re-run
        # looks for the post in Slack before posting again
        raise slack_away(ctx, err) from err
    await ctx.remember(step, result)
    return result
