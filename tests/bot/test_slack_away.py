"""Slack's Web API unreachable (issue 26): a signed slash command is acknowledged within Slack's
3 s whatever Slack's state (authorization never calls auth.test on a request's path), and its
answer comes once Slack is back (a job that cannot reach Slack is deferred, not lost). A process
that has never reached Slack says so in the ack. Over signed HTTP, the stand-in stopped."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import harness
from tests.harness import Bot, RedisServer

pytestmark = pytest.mark.slow  # each test starts the bot as a process


class SwitchableSlack:
    """The Slack stand-in on a fixed port that can be taken down and brought back."""

    def __init__(self) -> None:
        self.stub = harness.SlackStub(port=harness.free_port())
        self.server: Any = None

    def up(self) -> None:
        self.server = harness.serve_stub(self.stub)

    def down(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


@pytest.fixture
def switchable() -> Iterator[SwitchableSlack]:
    slack = SwitchableSlack()
    yield slack
    slack.down()


def start_bot(redis_url: str, slack_url: str, log: Path) -> Bot:
    return Bot(env={"SLACK_BOT_TOKEN": harness.TOKEN, "SLACK_SIGNING_SECRET": harness.SECRET,
                    "REDIS_URL": redis_url, "SLACK_API_URL": slack_url},
               port=harness.free_port(), log=log).start()


def wait_for_identity(redis: RedisServer, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if redis.command("KEYS", "gpusize:v1:identity:*"):
            return
        time.sleep(0.05)
    raise AssertionError("the bot never learned its ids")


def timed(send: Any) -> tuple[int, str, float]:
    start = time.monotonic()
    code, body = send()
    return code, body, time.monotonic() - start


def test_a_command_while_slack_is_unreachable_is_acked_then_answered_once_slack_is_back(
        switchable: SwitchableSlack, redis_server: RedisServer, redis_url: str,
        tmp_path: Path) -> None:
    switchable.up()
    bot = start_bot(redis_url, switchable.stub.url, tmp_path / "bot.log")
    try:
        wait_for_identity(redis_server)
        switchable.down()
        acks = [timed(lambda: bot.command("13B lora", user="U0AWAY")),
                timed(lambda: bot.command("7B qlora", user="U0AWAY2",
                                          response_url=switchable.stub.response_url("away")))]
        for code, body, took in acks:
            assert code == 200 and took < 3.0, (code, body, took)
            assert "reach Slack" not in body  # the ids were learned: recorded as usual
        switchable.stub.clear()
        switchable.up()
        # the deferred jobs run again (first after about 5 s) and post once each
        posted = switchable.stub.wait_for("chat.postMessage", 2, timeout=40)
        time.sleep(2)  # nothing more comes: each answer once
        posted = switchable.stub.of("chat.postMessage") + switchable.stub.of("response_url")
        for size in ("13B", "7B"):
            assert len([c for c in posted if c.body.get("text", "").startswith(size)]) == 1, \
                posted
    finally:
        bot.stop()


def test_a_process_that_never_reached_slack_acks_and_says_so(
        switchable: SwitchableSlack, redis_url: str, tmp_path: Path) -> None:
    # nothing listens on this port, and no earlier process left the bot's ids in Redis
    bot = start_bot(redis_url, switchable.stub.url, tmp_path / "bot.log")
    try:
        code, body, took = timed(lambda: bot.command("13B lora"))
        assert code == 200 and took < 3.0, (code, body, took)
        ack = json.loads(body)
        assert ack.get("response_type", "ephemeral") == "ephemeral"
        assert "reach Slack" in ack["text"]
        assert not any(k.startswith("gpusize:v1:jobrec") for k in _keys(redis_url))
    finally:
        bot.stop()


def test_a_new_process_uses_the_ids_an_earlier_one_learned(
        switchable: SwitchableSlack, redis_server: RedisServer, redis_url: str,
        tmp_path: Path) -> None:
    switchable.up()
    first = start_bot(redis_url, switchable.stub.url, tmp_path / "first.log")
    wait_for_identity(redis_server)
    first.stop()
    switchable.down()
    second = start_bot(redis_url, switchable.stub.url, tmp_path / "second.log")
    try:
        code, body, took = timed(lambda: second.command("13B lora"))
        assert code == 200 and took < 3.0 and "reach Slack" not in body, (code, body, took)
        switchable.up()
        switchable.stub.wait_for("chat.postMessage", timeout=40)
    finally:
        second.stop()


def _keys(redis_url: str) -> list[str]:
    import redis

    return list(redis.Redis.from_url(redis_url, decode_responses=True).keys("*"))
