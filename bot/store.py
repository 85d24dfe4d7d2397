"""Conversation state in Redis: one hash per (team, channel, thread), updated atomically.

A Lua script merges a follow-up's fields, bumps the version, appends who changed what and
refreshes the TTL in one step, returning the previous values it replaced, so two people typing
at once in a thread never lose an update and each reply can say what changed.
"""

from __future__ import annotations

import json
import time
from enum import StrEnum
from typing import Any

from redis.asyncio import Redis

from bot import keys, once
from bot.conversation import (
    FIELDS,
    Conversation,
    Stage,
    ThreadRecord,
    Update,
    from_fields,
    is_record_field,
    to_fields,
)
from engine.request import Draft

# Inside a job (bot.jobs) each script also records its result in the job's memo hash, in the same
# atomic step, and a re-run of the job gets that result back instead of applying the change twice:
# MEMO_HIT at the start, MEMO_PUT before returning. KEYS[memo] the memo hash (absent outside a
# job), ARGV[memo] its field.
MEMO_HIT = """
local memo_key, memo_field = KEYS[%(k)d], ARGV[%(a)d]
if memo_key then
  local seen = redis.call('HGET', memo_key, memo_field)
  if seen then return cjson.decode(seen) end
end
"""


def _named(script: str) -> str:
    """A script with the thread record's field names in (`%(version)s`: bot.conversation)."""
    return script % FIELDS


MEMO_PUT = """
if memo_key then
  redis.call('HSET', memo_key, memo_field, cjson.encode(result))
  redis.call('EXPIRE', memo_key, 86400)
end
return result
"""

# KEYS[1] conversation hash, KEYS[2] log list, KEYS[3] memo. ARGV[1] ttl seconds, ARGV[2] log entry
# (JSON), ARGV[3] memo field, ARGV[4] n, ARGV[5..4+n] fields to delete, then field/value pairs.
MERGE = MEMO_HIT % {"k": 3, "a": 3} + _named("""
local previous = {}
local deletes = tonumber(ARGV[4])
for i = 5, 4 + deletes do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if old then previous[ARGV[i]] = old end
  redis.call('HDEL', KEYS[1], ARGV[i])
end
for i = 5 + deletes, #ARGV, 2 do
  local name, value = ARGV[i], ARGV[i + 1]
  local old = redis.call('HGET', KEYS[1], name)
  if old then previous[name] = old end
  redis.call('HSET', KEYS[1], name, value)
end
local version = redis.call('HINCRBY', KEYS[1], '%(version)s', 1)
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], -200, -1)
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
local result = {cjson.encode(previous), redis.call('HGETALL', KEYS[1])}
""") + MEMO_PUT

# KEYS[1] conversation hash, KEYS[2] memo. ARGV[1] the new answer's version, ARGV[2] ttl, ARGV[3]
# memo field, ARGV[4] the live answer's ts it expects ("" for any), ARGV[5..] field/value pairs.
# Sets them only if no newer answer is live (else {0}) and the live answer is the expected one
# (else {2}); returns {1, the replaced values}. Bookkeeping, not a change to what the thread
# asks: no version bump, no log entry.
SWAP_CARD = MEMO_HIT % {"k": 2, "a": 3} + _named("""
local result
local live = tonumber(redis.call('HGET', KEYS[1], '%(card_version)s') or '0') or 0
if redis.call('EXISTS', KEYS[1]) == 0 or live > tonumber(ARGV[1]) then
  result = {0, cjson.encode({})}
elseif ARGV[4] ~= '' and redis.call('HGET', KEYS[1], '%(answer_ts)s') ~= ARGV[4] then
  result = {2, cjson.encode({})}
else
  local previous = {}
  for i = 5, #ARGV, 2 do
    local old = redis.call('HGET', KEYS[1], ARGV[i])
    if old then previous[ARGV[i]] = old end
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  result = {1, cjson.encode(previous)}
end
""") + MEMO_PUT

# KEYS[1] conversation hash, KEYS[2] memo. ARGV[1] memo field. What a job read, so that its
# re-run takes the same path through the dialog as the first run did.
READ = MEMO_HIT % {"k": 2, "a": 1} + """
local result = redis.call('HGETALL', KEYS[1])
""" + MEMO_PUT


class Swap(StrEnum):
    """How `ConversationStore.swap_card` went."""

    SWAPPED = "swapped"  # the answer is the thread's live one now
    NEWER_LIVE = "newer-live"  # a newer answer is already live: nothing changed
    MOVED = "moved"  # the live answer is not the one expected: nothing changed


def _memo_list(value: object) -> list:
    """A script's reply, or its memo (JSON): Lua's cjson writes an empty list as {}."""
    if isinstance(value, str):
        value = json.loads(value)
    return list(value) if isinstance(value, list) else []


def _decode(raw: dict[str, str], team: str, channel: str, thread_ts: str) -> Conversation:
    """A hash as the bot stores it: request inputs as JSON per field, beside the record."""
    inputs = {k: json.loads(v) for k, v in raw.items() if not is_record_field(k)}
    return Conversation(team=team, channel=channel, thread_ts=thread_ts, inputs=Draft(inputs),
                        record=from_fields(raw))


class ConversationStore:
    def __init__(self, redis: Redis, *, ttl_seconds: int) -> None:
        self.redis = redis
        self.ttl = ttl_seconds
        self._merge = redis.register_script(MERGE)
        self._swap = redis.register_script(SWAP_CARD)
        self._read = redis.register_script(READ)

    async def get(self, team: str, channel: str, thread_ts: str) -> Conversation | None:
        key = keys.conversation(team, channel, thread_ts)
        slot = once.slot("get")
        if slot is None:
            raw = await self.redis.hgetall(key)
        else:
            flat = _memo_list(slot.cached) if slot.cached is not None \
                else await self._read(keys=[key, slot.key], args=[slot.field])
            raw = dict(zip(flat[::2], flat[1::2], strict=True))
        if not raw:
            return None
        return _decode(raw, team, channel, thread_ts)

    async def update(self, team: str, channel: str, thread_ts: str, *, user: str,
                     change: Draft | None = None, stage: Stage | None = None,
                     record: dict[str, Any] | None = None, note: str = "") -> Update:
        """Merge a change (a None value deletes that input), the stage and other record fields
        (`ThreadRecord` names; None deletes) atomically; log who changed what."""
        change = change or Draft()
        fields: dict[str, str | None] = {
            name: None if value is None else json.dumps(value)
            for name, value in change.values.items()}
        fields |= to_fields(**(record or {}), **({"stage": stage} if stage else {}))
        deletes = [name for name, value in fields.items() if value is None]
        pairs = [part for name, value in fields.items() if value is not None
                 for part in (name, value)]
        entry = json.dumps({"at": round(time.time(), 3), "user": user,
                            "set": sorted(change.values), "note": note})
        slot = once.slot("update")
        if slot is not None and slot.cached is not None:
            previous_raw, flat = _memo_list(slot.cached)
        else:
            previous_raw, flat = await self._merge(
                keys=[keys.conversation(team, channel, thread_ts),
                      keys.conversation_log(team, channel, thread_ts),
                      *([slot.key] if slot else [])],
                args=[str(self.ttl), entry, slot.field if slot else "", str(len(deletes)),
                      *deletes, *pairs])
        flat = _memo_list(flat)
        replaced = json.loads(previous_raw or "{}") if previous_raw not in ("[]", "") else {}
        previous = {k: json.loads(v) for k, v in replaced.items() if not is_record_field(k)}
        raw = dict(zip(flat[::2], flat[1::2], strict=True))
        return Update(conversation=_decode(raw, team, channel, thread_ts),
                      previous=Draft(previous))

    async def swap_card(self, team: str, channel: str, thread_ts: str, *, version: int,
                        record: dict[str, Any], expect_ts: str = ""
                        ) -> tuple[Swap, ThreadRecord]:
        """Make an answer (its `record` fields) the thread's live one, unless a newer one already
        is (NEWER_LIVE). With `expect_ts`, only if that is still the live answer (else MOVED:
        another answer landed since it was read). SWAPPED comes with the values it replaced,
        which say which answer it supersedes."""
        args: list[str] = []
        for name, value in to_fields(**record).items():
            if value is not None:
                args += [name, value]
        slot = once.slot("swap")
        if slot is not None and slot.cached is not None:
            done, replaced = _memo_list(slot.cached)
        else:
            done, replaced = await self._swap(
                keys=[keys.conversation(team, channel, thread_ts), *([slot.key] if slot else [])],
                args=[str(version), str(self.ttl), slot.field if slot else "", expect_ts,
                      *args])
        if int(done) == 2:
            return Swap.MOVED, ThreadRecord()
        if not int(done):
            return Swap.NEWER_LIVE, ThreadRecord()
        previous = json.loads(replaced or "{}")
        return Swap.SWAPPED, from_fields(previous if isinstance(previous, dict) else {})

    async def claim(self, key: str, *, ttl_seconds: int = 3600) -> bool:
        """True the first time a key is claimed (SET NX EX): dedupe of events and clicks."""
        return bool(await self.redis.set(key, "1", nx=True, ex=ttl_seconds))
