"""Rate limits shared by every replica: a fixed-window counter per (what, who) in Redis.

One person must not be able to starve the others (chart clicks, new Hub repo ids, quotes):
`allow` counts an attempt and says whether it is within the limit. Without Redis it allows:
answering beats refusing, and the other protections (bounded queues, caps) still hold.

An attempt is counted once: one that names itself (`attempt`: a message's ts, a request's digest)
or runs inside a job (the job's id) gets its first verdict again when it is counted again, so a
job re-run after a crash, a deferral or a replay does not use up the person's limit twice.

A refusal is remembered in the process until its window ends (`refused_here`): a fixed window
refuses every attempt until then, so a member's burst past the limit (500 commands from a
script) is refused from memory, without a Redis round-trip or reading the command, and costs
the others' acks next to nothing. Inside a job Redis is always asked (a re-run must get its
first verdict back, which may have been an allowance).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError

from bot import keys
from bot.once import current_job_id

ALLOW_WAIT_S = 0.5  # a slow Redis allows (see above) rather than hold Slack's 3 s ack
REFUSALS_KEPT = 10_000  # refusals remembered in one process (bounded memory: oldest go first)

# KEYS[1] counter, KEYS[2] (optional) the attempt's own key. ARGV[1] window seconds. The first
# attempt in a window starts its expiry; an attempt counted before gets its count back.
COUNT = """
if KEYS[2] then
  local before = redis.call('GET', KEYS[2])
  if before then return {tonumber(before), redis.call('TTL', KEYS[1])} end
end
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
if KEYS[2] then redis.call('SET', KEYS[2], n, 'EX', ARGV[1]) end
return {n, redis.call('TTL', KEYS[1])}
"""


@dataclass(frozen=True)
class Limit:
    """At most `count` attempts of `name` per `window_s` seconds for one subject."""

    name: str
    count: int
    window_s: int


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    used: int
    retry_after_s: int


# (limit, team, subject) -> (monotonic end of the refused window, the count Redis said)
_refused: OrderedDict[tuple[str, str, str], tuple[float, int]] = OrderedDict()


def refused_here(limit: Limit, team: str, subject: str) -> Verdict | None:
    """The refusal Redis gave `subject` for `limit` in a window that has not ended, from this
    process's memory (None: ask Redis). Never inside a job (see the module's note)."""
    if current_job_id():
        return None
    key = (limit.name, team, subject)
    found = _refused.get(key)
    if found is None:
        return None
    left = found[0] - time.monotonic()
    if left <= 0:
        del _refused[key]
        return None
    return Verdict(allowed=False, used=found[1], retry_after_s=math.ceil(left))


def forget_refusals() -> None:
    """Drop this process's memory of refusals: Redis's counters were cleared (a FLUSHALL, an
    admin's reset), so the next attempt asks Redis again."""
    _refused.clear()


def _remember_refusal(limit: Limit, team: str, subject: str, verdict: Verdict) -> None:
    if verdict.allowed or verdict.retry_after_s <= 0:
        return
    key = (limit.name, team, subject)
    _refused[key] = (time.monotonic() + verdict.retry_after_s, verdict.used)
    _refused.move_to_end(key)
    while len(_refused) > REFUSALS_KEPT:
        _refused.popitem(last=False)


def minutes(verdict: Verdict) -> int:
    """The wait a refusal names, in whole minutes (at least one)."""
    return max(1, -(-verdict.retry_after_s // 60))


async def allow(redis: Redis, *, limit: Limit, team: str, subject: str,
                attempt: str = "") -> Verdict:
    """Count one attempt of `limit` by `subject` (a user id, or "workspace") in `team`, once
    per `attempt` (default: the running job, if any). A refusal remembered here is returned
    without asking Redis (`refused_here`)."""
    remembered = refused_here(limit, team, subject)
    if remembered is not None:
        return remembered
    attempt = attempt or (f"job:{job_id}" if (job_id := current_job_id()) else "")
    counter = keys.rate(limit.name, team, subject)
    keys_ = [counter, keys.rate_attempt(limit.name, team, subject, attempt)] if attempt else [
        counter]
    try:  # capped: it runs before an ack, beside the recording of the job
        used, ttl = await asyncio.wait_for(redis.eval(
            COUNT, len(keys_), *keys_, str(limit.window_s)), ALLOW_WAIT_S)
    except (RedisError, OSError, TimeoutError):
        return Verdict(allowed=True, used=0, retry_after_s=0)
    used = int(used)
    verdict = Verdict(allowed=used <= limit.count, used=used,
                      retry_after_s=max(0, int(ttl)) if used > limit.count else 0)
    _remember_refusal(limit, team, subject, verdict)
    return verdict
