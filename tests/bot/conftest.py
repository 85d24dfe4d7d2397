"""Fixtures over the real parts in tests/harness.py: a throwaway redis-server per session (flushed
per test), a Slack Web API stand-in per test, and bots started as real processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot import limits
from tests.harness import (
    REDIS_SERVER,
    SECRET,
    TOKEN,
    Bot,
    RedisServer,
    SlackStub,
    free_port,
    serve_stub,
)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    if REDIS_SERVER is None:
        pytest.fail("redis-server is not installed: see README (apt-get install redis-server)")
    server = RedisServer(port=free_port(), directory=tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    redis_server.command("FLUSHALL")
    limits.forget_refusals()  # the in-process memory of Redis's refusals goes with them
    return redis_server.url


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of the test's own, append-only as deployed: to stop, restart, block or fill."""
    server = RedisServer(port=free_port(), directory=tmp_path / "redis")
    server.directory.mkdir()
    server.start(appendonly=True)
    limits.forget_refusals()
    yield server
    server.stop()


@pytest.fixture
def slack() -> Iterator[SlackStub]:
    stub = SlackStub(port=free_port())
    server = serve_stub(stub)
    yield stub
    server.shutdown()
    server.server_close()


@pytest.fixture
def make_bot(redis_url: str, slack: SlackStub, tmp_path: Path) -> Iterator[Any]:
    bots: list[Bot] = []

    def make(**env: str) -> Bot:
        bot = Bot(env={"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET,
                       "REDIS_URL": redis_url, "SLACK_API_URL": slack.url, **env},
                  port=free_port(), log=tmp_path / f"bot{len(bots)}.log")
        bots.append(bot)
        return bot.start()

    yield make
    for bot in bots:
        bot.stop()


@pytest.fixture
def bot(make_bot: Any) -> Bot:
    return make_bot()
