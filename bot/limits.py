"""Rate limits shared by every replica: a fixed-window counter per (what, who) in Redis.

One person must not be able to starve the others (chart clicks, new Hub repo ids, quotes):
`allow` counts an attempt and says whether it is within the limit. Without Redis it allows:
answering beats refusing, and the other protections (bounded queues, caps) still hold.

An attempt is counted once: one that names itself (`attempt`: a message's ts, a request's digest)
or runs inside a job (the job's id) gets its first verdict again when it is counted again, so a
job re-run after a crash, a deferral or a replay does not use up the person's limit twice.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError

from bot import keys
from bot.once import current_job_id

ALLOW_WAIT_S = 0.5  # a slow Redis allows (see above) rather than hold Slack's 3 s ack

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


def minutes(verdict: Verdict) -> int:
    """The wait a refusal names, in whole minutes (at least one)."""
    return max(1, -(-verdict.retry_after_s // 60))


async def allow(redis: Redis, *, limit: Limit, team: str, subject: str,
                attempt: str = "") -> Verdict:
    """Count one attempt of `limit` by `subject` (a user id, or "workspace") in `team`, once
    per `attempt` (default: the running job, if any)."""
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
    return Verdict(allowed=used <= limit.count, used=used,
                   retry_after_s=max(0, int(ttl)) if used > limit.count else 0)
