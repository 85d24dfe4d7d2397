"""Answered once across crashes (issue 26, item 4), with real bot processes, a real Redis and the
Slack stand-in (which keeps what is posted and reads it back through conversations.history and
.replies, metadata included, as Slack does): a bot killed after Slack accepted a post but before
the bot heard back, Redis killed and restarted from its AOF with answers in flight, and a
finished job's stream entry replayed."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from redis.asyncio import Redis

from bot import keys
from bot.fairqueue import Entry
from bot.job import Job
from bot.jobs import Jobs
from tests.bot.test_jobs import answers_by_channel, settle, wait_until
from tests.harness import TEAM, RedisServer, SlackStub

IN_FLIGHT = {"GPUSIZE_TEST_ANSWER_DELAY_S": "1", "JOB_CLAIM_IDLE_S": "1"}
STREAM = "gpusize:v1:jobs"


def posted_in(slack: SlackStub, channel: str) -> list[dict[str, Any]]:
    """Messages Slack holds in `channel` (top level), whether or not the bot heard back."""
    with slack.lock:
        return [m for m in slack.messages if m["channel"] == channel and not m["thread_ts"]]


def test_a_kill_after_slack_took_the_post_posts_nothing_twice(
        make_bot: Any, slack: SlackStub, redis_server: RedisServer) -> None:
    first = make_bot(**IN_FLIGHT)
    slack.delay_s = 1.5  # Slack takes the post; its reply is still on the way when the bot dies
    first.command("13B lora", channel="C0WINDOW")
    slack.wait_for("chat.postMessage", timeout=30)
    first.kill()
    slack.delay_s = 0
    wait_until(lambda: len(posted_in(slack, "C0WINDOW")) == 1)  # Slack did post it
    make_bot(JOB_CLAIM_IDLE_S="1")
    stored = wait_until_stored(redis_server, "C0WINDOW")
    settle(slack)
    assert len(posted_in(slack, "C0WINDOW")) == 1  # the re-run found it instead of re-posting
    assert answers_by_channel(slack)["C0WINDOW"] == 1
    assert stored["_answer_ts"] == posted_in(slack, "C0WINDOW")[0]["ts"]
    assert slack.of("conversations.history")  # it looked before posting
    assert redis_server.command("XLEN", STREAM) == 0


def wait_until_stored(redis: RedisServer, channel: str) -> dict[str, str]:
    found: dict[str, str] = {}

    def stored() -> bool:
        for key in redis.command("KEYS", f"gpusize:v1:conv:{TEAM}:{channel}:*"):
            found.update(redis.command("HGETALL", key))
        return "_answer_ts" in found

    wait_until(stored, timeout=60)
    return found


def test_redis_killed_and_restarted_from_its_aof_answers_each_once(
        make_bot: Any, slack: SlackStub, own_redis: RedisServer) -> None:
    bot = make_bot(REDIS_URL=own_redis.url, **IN_FLIGHT)
    channels = [f"C0AOF{n}" for n in range(8)]
    for n, channel in enumerate(channels):
        assert bot.command("13B lora", channel=channel, user=f"U0AOF{n}")[0] == 200
    slack.wait_for("chat.postMessage", timeout=30)
    assert own_redis.process is not None
    own_redis.process.kill()  # mid-work: posts made, memos and XACKs not yet written
    own_redis.process.wait()
    own_redis.process = None
    time.sleep(1.5)
    own_redis.start(appendonly=True)
    wait_until(lambda: len(answers_by_channel(slack)) == len(channels), timeout=90)
    settle(slack, 2.0)
    assert {c: len(posted_in(slack, c)) for c in channels} == dict.fromkeys(channels, 1)
    wait_until(lambda: own_redis.command("XLEN", STREAM) == 0, timeout=30)


def test_a_replayed_finished_entry_is_not_run_again(make_bot: Any, slack: SlackStub,
                                                    redis_server: RedisServer) -> None:
    bot = make_bot(GPUSIZE_TEST_ANSWER_DELAY_S="1")
    bot.command("13B lora", channel="C0REPLAYED")
    entry: list[Any] = []

    def recorded() -> bool:
        entry[:] = redis_server.command("XRANGE", STREAM, "-", "+")
        return bool(entry)

    wait_until(recorded, timeout=10)
    fields = entry[0][1]
    assert json.loads(fields["job"])["kind"] == "command"
    wait_until(lambda: answers_by_channel(slack)["C0REPLAYED"] == 1, timeout=30)
    wait_until(lambda: redis_server.command("XLEN", STREAM) == 0)
    redis_server.command("XADD", STREAM, "*", "job", fields["job"])  # the finished entry, again
    wait_until(lambda: redis_server.command("XLEN", STREAM) == 0)
    settle(slack)
    assert answers_by_channel(slack)["C0REPLAYED"] == 1


def test_a_job_taken_over_from_a_live_process_is_not_run_twice(redis_url: str) -> None:
    """A claim taken while the running process's heartbeat lagged (a stalled loop, a Redis
    restart longer than the claim period): the job's lease keeps the second from running it."""
    async def run() -> tuple[int, int]:
        redis = Redis.from_url(redis_url, decode_responses=True)
        first, second = Jobs(redis, claim_idle_s=5), Jobs(redis, claim_idle_s=5)
        runs: list[str] = []
        release = asyncio.Event()

        async def handler(_payload: dict[str, Any]) -> None:
            runs.append("ran")
            await release.wait()

        first.handle("k", handler)
        second.handle("k", handler)
        await first.submit(Job(kind="k", payload={}, owner="T:U"))
        await first.start()
        while not runs:
            await asyncio.sleep(0.01)
        _next, taken, *_ = await redis.xautoclaim(STREAM, keys.JOBS_GROUP, second.name,
                                                  min_idle_time=0, start_id="0-0")
        stream_id, fields = taken[0]
        taken_over = asyncio.create_task(second._run(Entry(stream_id, Job.decode(fields["job"]),
                                                           claimed=True)))
        await asyncio.sleep(0.5)
        ran_while_running = len(runs)
        release.set()
        await taken_over
        for _wait in range(200):
            if not await redis.xlen(STREAM):
                break
            await asyncio.sleep(0.02)
        left = await redis.xlen(STREAM)
        await first.stop(grace_s=1)
        await redis.aclose()
        return ran_while_running, left

    ran, left = asyncio.run(run())
    assert ran == 1 and left == 0  # run once, by its first process, and finished
