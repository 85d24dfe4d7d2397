"""Who the bot is in Slack (its user id, bot id, workspace), learned from auth.test away from any
request's path.

Bolt's single-workspace authorization calls auth.test before the first listener runs and again
on every request until one succeeds: with slack.com unreachable every signed request waited for
its retries (~2.4 s) and was answered 500, so a slash command missed Slack's 3 s. Here Bolt is
given `Identity.authorize`, which answers from the configured token and the ids learned by
`learn_forever` (at start-up, in the background, retried with a back-off and refreshed hourly),
kept in this process and in Redis for the next one. The request path never calls Slack; a Redis
read capped at `CACHE_READ_S` is its only wait, and only until the ids are known here.

The server waits for the first try (at most START_WAIT_S) before it takes requests. A process
that has tried and never learned them (Slack unreachable since it started, nothing cached) still
acknowledges every request: `unreachable` is True and a slash command is answered in its ack that
the bot cannot reach Slack yet (bot.listeners.commands), which needs no Web API.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_sdk.web.async_client import AsyncWebClient

from bot import keys

log = logging.getLogger(__name__)

START_WAIT_S = 5.0  # start-up waits this long for the first auth.test, then serves regardless
AUTH_TEST_TIMEOUT_S = 2.0  # one try, no retries of its own: learn_forever retries, backing off
CACHE_READ_S = 0.2  # before an ack: a slow Redis costs at most this, then the ids are unknown
CACHE_RECHECK_S = 5.0  # while unknown, Redis's copy is read again at most this often
CACHE_TTL_S = 30 * 86400  # ids change only when the app is reinstalled elsewhere
REFRESH_S = 3600.0  # a learned identity is checked again this often (a rotated token shows)
RETRY_S = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)  # back-off while auth.test fails
FIELDS = ("team_id", "user_id", "bot_id", "enterprise_id", "team", "url")


class Identity(AsyncAuthorize):
    """The bot's ids, learned from auth.test with `client`'s token (`token`); called by Bolt as
    its `authorize` (a request's AuthorizeResult, from what is known here)."""

    def __init__(self, redis: Redis, client: AsyncWebClient, token: str) -> None:
        self.redis = redis
        # a client of its own: one quick try per auth.test, so the first try has ended (learned,
        # or Slack known to be away) well within START_WAIT_S whatever Slack does
        self.client = AsyncWebClient(token=token, base_url=client.base_url, ssl=client.ssl,
                                     proxy=client.proxy, timeout=round(AUTH_TEST_TIMEOUT_S),
                                     retry_handlers=[])
        self.token = token
        self.ids: dict[str, str] | None = None  # auth.test's answer, FIELDS only
        self.learned_at = 0.0  # monotonic time of the last successful auth.test (0: never)
        self._task: asyncio.Task[None] | None = None
        self._cache_read_at: float | None = None  # monotonic time of the last read of Redis's copy
        self.failures = 0  # auth.test tries that failed since the last success
        self._first_try = asyncio.Event()

    @property
    def known(self) -> bool:
        return self.ids is not None

    @property
    def unreachable(self) -> bool:
        """Slack was asked and has not answered, and no earlier answer is kept anywhere."""
        return self.ids is None and self.failures > 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.learn_forever())

    async def started(self, timeout_s: float = START_WAIT_S) -> None:
        """Start learning and wait for the first try (or `timeout_s`): a fresh process's first
        requests then find the ids known, or Slack known to be away."""
        self.start()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._first_try.wait(), timeout_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def learn_forever(self) -> None:
        """auth.test until it answers, then again every REFRESH_S; each success is kept."""
        await self.load_cached()
        while True:
            learned = await self.learn()
            self.failures = 0 if learned else self.failures + 1
            self._first_try.set()
            await asyncio.sleep(REFRESH_S if learned
                                else RETRY_S[min(self.failures, len(RETRY_S)) - 1])

    async def learn(self) -> bool:
        """One auth.test: True when it answered (the ids are kept here and in Redis)."""
        try:
            answer = await self.client.auth_test()
        except Exception as err:  # unreachable, refused, a revoked token: tried again later
            log.warning("auth.test failed (%s): the bot's ids are %s", type(err).__name__,
                        "kept from before" if self.known else "not known yet")
            return False
        ids = {name: str(answer.get(name) or "") for name in FIELDS}
        if not ids["user_id"]:
            return False
        self.ids, self.learned_at = ids, time.monotonic()
        with contextlib.suppress(RedisError, OSError, TimeoutError):
            await asyncio.wait_for(self.redis.set(keys.bot_identity(self.token_digest()),
                                                  json.dumps(ids), ex=CACHE_TTL_S), 2.0)
        return True

    async def load_cached(self) -> None:
        """The ids an earlier process learned with the same token (Redis), if any."""
        if self.known:
            return
        self._cache_read_at = time.monotonic()
        with contextlib.suppress(RedisError, OSError, TimeoutError, ValueError, TypeError):
            raw = await asyncio.wait_for(self.redis.get(keys.bot_identity(self.token_digest())),
                                         CACHE_READ_S)
            ids = json.loads(raw) if raw else None
            if isinstance(ids, dict) and ids.get("user_id") and not self.known:
                self.ids = {name: str(ids.get(name) or "") for name in FIELDS}

    def token_digest(self) -> str:
        """The cache key's part naming the token (never the token itself)."""
        return hashlib.sha256(self.token.encode()).hexdigest()[:16]

    async def __call__(self, *, context: Any, enterprise_id: str | None, team_id: str | None,
                       user_id: str | None, actor_enterprise_id: str | None = None,
                       actor_team_id: str | None = None,
                       actor_user_id: str | None = None) -> AuthorizeResult:
        """Bolt's `authorize`: never Slack. Until the ids are known here, Redis's copy is read
        (capped, at most every CACHE_RECHECK_S); without either, the token alone (listeners see
        `known` False, and `unreachable` once Slack has failed to answer)."""
        if not self.known and (self._cache_read_at is None
                               or time.monotonic() - self._cache_read_at > CACHE_RECHECK_S):
            await self.load_cached()
        ids: dict[str, Any] = self.ids or {}
        return AuthorizeResult(
            enterprise_id=ids.get("enterprise_id") or enterprise_id,
            team_id=ids.get("team_id") or team_id, team=ids.get("team") or None,
            url=ids.get("url") or None, bot_user_id=ids.get("user_id") or None,
            bot_id=ids.get("bot_id") or None, bot_token=self.token, user_id=user_id)
