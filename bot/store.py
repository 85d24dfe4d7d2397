"""Conversation state in Redis: one hash per (team, channel, thread), updated atomically.

A Lua script merges a follow-up's fields, bumps the version, appends who changed what and
refreshes the TTL in one step, returning the previous values it replaced, so two people typing
at once in a thread never lose an update and each reply can say what changed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from bot import keys

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

# Fields that are bookkeeping, not request inputs.
META = ("_stage", "_version", "_answer_ts", "_created_by")


@dataclass
class Conversation:
    team: str
    channel: str
    thread_ts: str
    inputs: dict[str, Any] = field(default_factory=dict)  # model, method and options
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def stage(self) -> str:
        return self.meta.get("_stage", "done")

    @property
    def version(self) -> int:
        return int(self.meta.get("_version", 0))


@dataclass
class Update:
    conversation: Conversation
    previous: dict[str, Any]  # the inputs this update replaced (absent: were not set)


def _decode(raw: dict[str, str], team: str, channel: str, thread_ts: str) -> Conversation:
    conv = Conversation(team=team, channel=channel, thread_ts=thread_ts)
    for name, value in raw.items():
        if name.startswith("_"):
            conv.meta[name] = value
        else:
            conv.inputs[name] = json.loads(value)
    return conv


class ConversationStore:
    def __init__(self, redis: Redis, *, ttl_seconds: int) -> None:
        self.redis = redis
        self.ttl = ttl_seconds
        self._merge = redis.register_script(MERGE)

    async def get(self, team: str, channel: str, thread_ts: str) -> Conversation | None:
        raw = await self.redis.hgetall(keys.conversation(team, channel, thread_ts))
        if not raw:
            return None
        return _decode(raw, team, channel, thread_ts)

    async def update(self, team: str, channel: str, thread_ts: str, *, user: str,
                     inputs: dict[str, Any] | None = None, meta: dict[str, str] | None = None,
                     note: str = "") -> Update:
        """Merge inputs (None deletes one) and meta atomically; log who changed what."""
        args: list[str] = []
        for name, value in (inputs or {}).items():
            args += [name, "null" if value is None else json.dumps(value)]
        for name, value in (meta or {}).items():
            args += [name, value]
        entry = json.dumps({"at": round(time.time(), 3), "user": user,
                            "set": sorted((inputs or {}).keys()), "note": note})
        previous_raw, flat = await self._merge(
            keys=[keys.conversation(team, channel, thread_ts),
                  keys.conversation_log(team, channel, thread_ts)],
            args=[str(self.ttl), entry, *args])
        previous = {k: json.loads(v) for k, v in json.loads(previous_raw or "{}").items()
                    if not k.startswith("_")} if previous_raw not in ("[]", "") else {}
        raw = dict(zip(flat[::2], flat[1::2], strict=True))
        return Update(conversation=_decode(raw, team, channel, thread_ts), previous=previous)

    async def log(self, team: str, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        items = await self.redis.lrange(keys.conversation_log(team, channel, thread_ts), 0, -1)
        return [json.loads(i) for i in items]

    async def claim(self, key: str, *, ttl_seconds: int = 3600) -> bool:
        """True the first time a key is claimed (SET NX EX): dedupe of events and clicks."""
        return bool(await self.redis.set(key, "1", nx=True, ex=ttl_seconds))
