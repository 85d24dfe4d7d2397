"""Conversation state in Redis: one hash per (team, channel, thread), updated atomically.

A Lua script merges a follow-up's fields, bumps the version, appends who changed what and
refreshes the TTL in one step, returning the previous values it replaced, so two people typing
at once in a thread never lose an update and each reply can say what changed.
"""

from __future__ import annotations

import json
import time

from redis.asyncio import Redis

from bot import keys
from bot.conversation import Conversation, Stage, Update
from engine.request import Draft

# KEYS[1] conversation hash, KEYS[2] log list. ARGV[1] ttl seconds, ARGV[2] log entry (JSON),
# ARGV[3..] field/value pairs; the value "null" deletes the field.
MERGE = """
local previous = {}
for i = 3, #ARGV, 2 do
  local name, value = ARGV[i], ARGV[i + 1]
  local old = redis.call('HGET', KEYS[1], name)
  if old then previous[name] = old end
  if value == 'null' then
    redis.call('HDEL', KEYS[1], name)
  else
    redis.call('HSET', KEYS[1], name, value)
  end
end
local version = redis.call('HINCRBY', KEYS[1], '_version', 1)
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], -200, -1)
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return {cjson.encode(previous), redis.call('HGETALL', KEYS[1])}
"""

# KEYS[1] conversation hash. ARGV[1] the new answer's version, ARGV[2] ttl, ARGV[3..] field/value
# pairs. Sets them only if no newer answer is live; returns {1 or 0, the replaced values}.
# Bookkeeping, not a change to what the thread asks: no version bump, no log entry.
SWAP_CARD = """
local live = tonumber(redis.call('HGET', KEYS[1], '_card_v') or '0') or 0
if redis.call('EXISTS', KEYS[1]) == 0 or live > tonumber(ARGV[1]) then
  return {0, cjson.encode({})}
end
local previous = {}
for i = 3, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if old then previous[ARGV[i]] = old end
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1, cjson.encode(previous)}
"""


def _decode(raw: dict[str, str], team: str, channel: str, thread_ts: str) -> Conversation:
    """A hash as the bot stores it: request inputs as JSON per field, bookkeeping under _names."""
    meta = {k: v for k, v in raw.items() if k.startswith("_")}
    inputs = {k: json.loads(v) for k, v in raw.items() if not k.startswith("_")}
    return Conversation(team=team, channel=channel, thread_ts=thread_ts, inputs=Draft(inputs),
                        meta=meta)


class ConversationStore:
    def __init__(self, redis: Redis, *, ttl_seconds: int) -> None:
        self.redis = redis
        self.ttl = ttl_seconds
        self._merge = redis.register_script(MERGE)
        self._swap = redis.register_script(SWAP_CARD)

    async def get(self, team: str, channel: str, thread_ts: str) -> Conversation | None:
        raw = await self.redis.hgetall(keys.conversation(team, channel, thread_ts))
        if not raw:
            return None
        return _decode(raw, team, channel, thread_ts)

    async def update(self, team: str, channel: str, thread_ts: str, *, user: str,
                     change: Draft | None = None, stage: Stage | None = None,
                     meta: dict[str, str] | None = None, note: str = "") -> Update:
        """Merge a change (a None value deletes that input), the stage and other bookkeeping
        atomically; log who changed what."""
        change = change or Draft()
        args: list[str] = []
        for name, value in change.values.items():
            args += [name, "null" if value is None else json.dumps(value)]
        for name, value in {**(meta or {}), **({"_stage": stage} if stage else {})}.items():
            args += [name, str(value)]
        entry = json.dumps({"at": round(time.time(), 3), "user": user,
                            "set": sorted(change.values), "note": note})
        previous_raw, flat = await self._merge(
            keys=[keys.conversation(team, channel, thread_ts),
                  keys.conversation_log(team, channel, thread_ts)],
            args=[str(self.ttl), entry, *args])
        replaced = json.loads(previous_raw or "{}") if previous_raw not in ("[]", "") else {}
        previous = {k: json.loads(v) for k, v in replaced.items() if not k.startswith("_")}
        raw = dict(zip(flat[::2], flat[1::2], strict=True))
        return Update(conversation=_decode(raw, team, channel, thread_ts),
                      previous=Draft(previous),
                      previous_meta={k: v for k, v in replaced.items() if k.startswith("_")})

    async def swap_card(self, team: str, channel: str, thread_ts: str, *, version: int,
                        meta: dict[str, str]) -> dict[str, str] | None:
        """Make an answer the thread's live one, unless a newer one already is (None then); the
        values it replaced say which answer it supersedes."""
        args: list[str] = []
        for name, value in meta.items():
            args += [name, str(value)]
        done, replaced = await self._swap(keys=[keys.conversation(team, channel, thread_ts)],
                                          args=[str(version), str(self.ttl), *args])
        if not int(done):
            return None
        previous = json.loads(replaced or "{}")
        return previous if isinstance(previous, dict) else {}

    async def claim(self, key: str, *, ttl_seconds: int = 3600) -> bool:
        """True the first time a key is claimed (SET NX EX): dedupe of events and clicks."""
        return bool(await self.redis.set(key, "1", nx=True, ex=ttl_seconds))
