"""Fair queues (issue 26, item 5): one member's backlog past the read-ahead does not hold up
another member; chatter in a thread costs no job; Slack's Retry-After is waited out without
holding a job slot; a poison entry is set aside and the jobs behind it run; a member's backlog
is capped. Real bot processes and a real Redis, except the last (the queue's scripts alone)."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from redis.asyncio import Redis

from bot import keys
from bot.fairqueue import Entry
from bot.job import Job, Submitted
from bot.jobs import Jobs
from tests.bot.test_jobs import answers_by_channel, settle, wait_until
from tests.harness import RedisServer, SlackStub

ROOT = "1700000000.000001"


def test_one_members_backlog_does_not_hold_up_another(make_bot: Any, slack: SlackStub,
                                                      redis_server: RedisServer) -> None:
    # the per-member thread limit lifted: the flood is the queue's to hold, not the limit's
    bot = make_bot(GPUSIZE_TEST_ANSWER_DELAY_S="0.15", THREAD_LIMIT_PER_HOUR="1000")
    flood = [f"C0FLOOD{n:03d}" for n in range(90)]  # past the 64-job read-ahead
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda c: bot.command("7B inference", channel=c,
                                                    user="U0FLOODER")[0], flood))
    assert codes == [200] * len(flood)
    backlog = redis_server.command("LLEN", keys.job_backlog("T0TEAM:U0FLOODER"))
    assert backlog > 0  # recorded, waiting its turn outside the stream
    start = time.monotonic()
    bot.command("7B inference", channel="C0OTHER", user="U0OTHER")
    wait_until(lambda: answers_by_channel(slack)["C0OTHER"] == 1, timeout=60)
    waited = time.monotonic() - start
    flood_left = len(flood) - sum(answers_by_channel(slack)[c] for c in flood)
    assert flood_left >= 30, (waited, flood_left)  # answered long before the flood drained
    wait_until(lambda: len(set(answers_by_channel(slack)) & set(flood)) == len(flood),
               timeout=120)
    settle(slack)
    assert all(answers_by_channel(slack)[c] == 1 for c in flood)  # none lost in the backlog
    assert redis_server.command("XLEN", "gpusize:v1:jobs") == 0
    assert redis_server.command("EXISTS", keys.job_backlog("T0TEAM:U0FLOODER")) == 0


def test_chatter_in_a_thread_costs_no_job(bot: Any, slack: SlackStub,
                                          redis_server: RedisServer) -> None:
    bot.command("13B lora")
    slack.wait_for("chat.postMessage", timeout=30)
    redis_server.wait_for_conversation(ROOT, field="_answer_ts")
    before = len(redis_server.command("KEYS", "gpusize:v1:jobrec:*"))
    for n, text in enumerate(["thanks!", "nice, sharing with the team", "lol", "ok 👍"] * 10):
        assert bot.event({"type": "message", "channel": "C0CHAN", "user": "U0TALK",
                          "text": text, "ts": f"17000006{n:02d}.1", "thread_ts": ROOT},
                         event_id=f"EvChat{n}")[0] == 200
    assert len(redis_server.command("KEYS", "gpusize:v1:jobrec:*")) == before  # no job
    bot.event({"type": "message", "channel": "C0CHAN", "user": "U0TALK", "text": "users=7",
               "ts": "1700000700.1", "thread_ts": ROOT}, event_id="EvAsk")
    wait_until(lambda: any("concurrent users: 7" in (c.body.get("text") or "")
                           for c in slack.of("chat.postMessage")), timeout=30)
    assert len(redis_server.command("KEYS", "gpusize:v1:jobrec:*")) == before + 1


def test_a_rate_limited_answer_holds_no_job_slot(make_bot: Any, slack: SlackStub) -> None:
    bot = make_bot(JOB_MAX_IN_FLIGHT="1", JOB_MAX_PER_USER="1")
    bot.command("7B inference", channel="C0WARM")
    slack.wait_for("chat.postMessage", timeout=30)
    slack.retry_after = "4"
    slack.fail_next.append({"status": 429, "body": {"ok": False, "error": "ratelimited"}})
    limited_at = time.monotonic()
    bot.command("7B inference", channel="C0LIMITED", user="U0LIMITED")
    slack.wait_for("chat.postMessage", 2, timeout=30)  # the 429
    bot.command("7B inference", channel="C0FREE", user="U0FREE")
    wait_until(lambda: answers_by_channel(slack)["C0FREE"] == 1, timeout=30)
    free_at = time.monotonic()
    wait_until(lambda: answers_by_channel(slack)["C0LIMITED"] == 2, timeout=30)  # 429, then it
    limited_done = time.monotonic()
    settle(slack)
    assert free_at - limited_at < 3.5  # not queued behind the 4 s wait (one slot in all)
    assert limited_done - limited_at >= 3.9  # Retry-After honoured
    assert answers_by_channel(slack)["C0LIMITED"] == 2 and answers_by_channel(slack)["C0FREE"] == 1


def test_a_poison_entry_is_set_aside_and_the_next_job_runs(bot: Any, slack: SlackStub,
                                                           redis_server: RedisServer) -> None:
    redis_server.command("XADD", "gpusize:v1:jobs", "*", "job", "{not json")
    redis_server.command("XADD", "gpusize:v1:jobs", "*", "job", '{"kind": 1, "payload": []}')
    redis_server.command("XADD", "gpusize:v1:jobs", "*", "other", "field")
    bot.command("7B inference", channel="C0AFTER")
    wait_until(lambda: answers_by_channel(slack)["C0AFTER"] == 1, timeout=30)
    wait_until(lambda: redis_server.command("XLEN", "gpusize:v1:jobs") == 0)
    assert redis_server.command("XLEN", keys.jobs_dead()) == 3


def test_a_members_backlog_is_capped_and_drains_in_order(redis_url: str) -> None:
    async def run() -> tuple[list[Submitted], list[list[str]], list[int]]:
        redis = Redis.from_url(redis_url, decode_responses=True)
        jobs = Jobs(redis, share=1, backlog=2)
        outcomes = [await jobs.submit(Job(kind="k", payload={"n": n}, owner="T:U"))
                    for n in range(4)]
        outcomes.append(await jobs.submit(Job(kind="k", payload={"n": 9}, owner="T:V")))
        in_stream, waiting = [], []
        for _round in range(3):  # finish U's entry in the stream: the next of U's comes in
            entries = await redis.xrange(keys.jobs_stream())
            in_stream.append([str(Job.decode(f["job"]).payload["n"]) for _id, f in entries])
            waiting.append(await redis.llen(keys.job_backlog("T:U")))
            mine = next((stream_id, Job.decode(f["job"])) for stream_id, f in entries
                        if Job.decode(f["job"]).owner == "T:U")
            await jobs._finish(Entry(mine[0], mine[1], claimed=False))
        await redis.aclose()
        return outcomes, in_stream, waiting

    outcomes, in_stream, waiting = asyncio.run(run())
    assert outcomes == [Submitted.QUEUED, Submitted.QUEUED, Submitted.QUEUED, Submitted.BUSY,
                        Submitted.QUEUED]
    # one of U's in the stream at a time, V's beside it; U's backlog enters in order
    assert in_stream == [["0", "9"], ["9", "1"], ["9", "2"]] and waiting == [2, 1, 0]
