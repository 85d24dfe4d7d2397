"""create_app(settings, client, redis): the Bolt app, built in a factory so nothing talks to
Slack or Redis at import time."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import RedisError
from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot import keys, listeners
from bot.dialog import Dialog
from bot.digest import Digests
from bot.language import Languages
from bot.pricestore import PriceStore
from bot.replies import Replies
from bot.settings import Settings
from bot.store import ConversationStore
from engine import hub

log = logging.getLogger("gpusize.bot")


def web_client(settings: Settings) -> AsyncWebClient:
    client = AsyncWebClient(token=settings.slack_bot_token.get_secret_value(),
                            base_url=settings.slack_api_url,
                            timeout=max(1, round(settings.slack_timeout_s)))
    # slack_sdk installs only the connection-error handler by default: honour 429 Retry-After
    client.retry_handlers = [AsyncConnectionErrorRetryHandler(max_retry_count=2),
                             AsyncRateLimitErrorRetryHandler(max_retry_count=2),
                             AsyncServerErrorRetryHandler(max_retry_count=2)]
    return client


def redis_client(settings: Settings) -> Redis:
    # Short timeouts: a slow or absent Redis must never hold an acknowledgement past Slack's 3 s.
    # A blocking pool: under overload, work waits for a connection instead of failing at once
    # (redis-py's default pool refuses the 101st concurrent connection).
    pool = BlockingConnectionPool.from_url(settings.redis_url, decode_responses=True,
                                           socket_timeout=1, socket_connect_timeout=1,
                                           max_connections=64, timeout=2)
    return Redis(connection_pool=pool)


def create_app(settings: Settings, client: AsyncWebClient, redis: Redis) -> AsyncApp:
    store = ConversationStore(redis, ttl_seconds=int(settings.conversation_ttl_days * 86400))
    prices = PriceStore(redis)
    dialog = Dialog(Replies(client), store, prices, hub=hub.lookup)
    digests = Digests(redis, client, prices)
    languages = Languages(redis, client)
    app = AsyncApp(signing_secret=settings.slack_signing_secret.get_secret_value(),
                   client=client, process_before_response=False)

    @app.middleware
    async def drop_duplicate_events(body: dict[str, Any], next: Any) -> BoltResponse | None:
        # Slack resends an unacknowledged event up to 3 times (X-Slack-Retry-Num), sometimes
        # while the first delivery is still being handled: claim each event id once.
        event_id = body.get("event_id")
        if body.get("type") == "event_callback" and event_id:
            try:
                first = await asyncio.wait_for(store.claim(keys.event_seen(event_id)), 0.5)
            except (RedisError, OSError, TimeoutError):
                first = True  # without Redis, answering twice beats not answering
            if not first:
                return BoltResponse(status=200, body="")
        return await next()

    listeners.register(app, dialog, digests, languages)
    return app
