"""The Lua scripts of the job queue (bot.jobs, bot.outbox): each runs as one step in Redis, so
a job's recording, its finish and its member's fair share never half happen."""

from __future__ import annotations

from bot import keys


def member_keys(owner: str) -> list[str]:
    """KEYS[1..4] of every script below: the stream and `owner`'s place in the fair share."""
    return [keys.jobs_stream(), keys.job_active(owner), keys.job_backlog(owner),
            keys.jobs_backlogged()]


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
