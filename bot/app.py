"""create_bot(settings, client, redis): the Bolt app and its job queue, built in a factory so
nothing talks to Slack or Redis at import time. Event dedupe is in bot.listeners.events (atomic
with recording the job)."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from redis.asyncio import Redis
from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot import connections, listeners
from bot.cards import Cards
from bot.details import Details
from bot.dialog import Dialog
from bot.digest import Digests
from bot.home import Home
from bot.identity import Identity
from bot.intake import Intake
from bot.job import Job
from bot.jobs import Jobs
from bot.language import Languages
from bot.limits import Limit
from bot.parts import Parts
from bot.presses import Presses
from bot.pricestore import PriceStore
from bot.ratelimits import RateLimits
from bot.replies import Replies
from bot.settings import Settings
from bot.store import ConversationStore
from bot.words import NOT_RECORDED
from engine import hub
from engine.config import cache_root
from engine.i18n import _, language

log = logging.getLogger(__name__)


def web_client(settings: Settings) -> AsyncWebClient:
    client = AsyncWebClient(token=settings.slack_bot_token.get_secret_value(),
                            base_url=settings.slack_api_url,
                            timeout=max(1, round(settings.slack_timeout_s)))
    # slack_sdk installs only the connection-error handler by default: honour 429 Retry-After
    # (inside a job by deferring it, never by sleeping in a job slot: bot.ratelimits.RateLimits)
    client.retry_handlers = [AsyncConnectionErrorRetryHandler(max_retry_count=2),
                             RateLimits(max_retry_count=2),
                             AsyncServerErrorRetryHandler(max_retry_count=2)]
    return client


def tokenless(client: AsyncWebClient) -> AsyncWebClient:
    """`client`'s settings without its token, for Bolt: each request's client gets the token
    from `authorize` (bot.identity), and Bolt warns that a token beside it is ignored."""
    return AsyncWebClient(base_url=client.base_url, timeout=client.timeout, ssl=client.ssl,
                          proxy=client.proxy, retry_handlers=client.retry_handlers)


def redis_client(settings: Settings) -> Redis:
    """The bot's Redis, whatever REDIS_URL names: bot.connections decides how to reach it."""
    return connections.redis_client(
        settings.redis_url,
        password=settings.redis_password.get_secret_value() if settings.redis_password else None,
        sentinel_password=(settings.redis_sentinel_password.get_secret_value()
                           if settings.redis_sentinel_password else None),
        ca_file=settings.redis_ca_file)


def outbox_journal(redis_url: str) -> Path:
    """Where this host keeps the jobs it acknowledged but Redis has not confirmed: the cache
    volume (it outlives a killed container in its pod), one folder per Redis."""
    return cache_root() / "outbox" / hashlib.sha256(redis_url.encode()).hexdigest()[:16]


def asker_of(job: Job) -> tuple[str, str, str]:
    """(channel, user, thread ts) of whoever a job answers, whatever its kind's payload."""
    p = job.payload
    channel, user = p.get("channel"), p.get("user")
    if isinstance(channel, dict):  # a button press: the payload's own shape
        channel, user = channel.get("id"), (user or {}).get("id")
    command = p.get("command")
    if isinstance(command, dict):  # a sub-command
        channel, user = command.get("channel_id"), command.get("user_id")
    return str(channel or ""), str(user or ""), str(p.get("thread_ts") or "")


def create_bot(settings: Settings, client: AsyncWebClient,
               redis: Redis) -> tuple[AsyncApp, Jobs, Identity]:
    """The Bolt app, the job queue its listeners record work in and the bot's identity in Slack
    (start and stop both with the server: bot.server's lifespan)."""
    store = ConversationStore(redis, ttl_seconds=int(settings.conversation_ttl_days * 86400))
    prices = PriceStore(redis)
    replies = Replies(client)
    intake = Intake(redis, hub=hub.lookup)
    cards = Cards(prices, intake)
    dialog = Dialog(replies, store, intake, cards)
    details = Details(replies, store, cards, chart_cache_s=settings.chart_cache_s)
    digests = Digests(redis, client, prices)
    languages = Languages(redis, client)
    home = Home(redis, client, replies, prices, digests, languages)
    dialog.remember = home.remember
    jobs = Jobs(redis, claim_idle_s=settings.job_claim_idle_s,
                max_in_flight=settings.job_max_in_flight, per_user=settings.job_max_per_user,
                journal=outbox_journal(settings.redis_url))

    async def give_up(job: Job) -> None:
        """A job that took its process down three times: the asker hears, once."""
        channel, user, thread_ts = asker_of(job)
        if channel and user:
            await replies.apologise(channel, user, thread_ts or None, store_down=False)

    async def never_recorded(job: Job) -> None:
        """A journaled job a restarted process could not get recorded: said in its language."""
        channel, user, thread_ts = asker_of(job)
        if channel and user:
            with language(str(job.payload.get("lang") or "en")):
                await replies.private(channel, user, _(NOT_RECORDED), thread_ts)

    jobs.give_up = give_up
    jobs.never_recorded = never_recorded
    # authorization from the token and the ids learned in the background, never auth.test on a
    # request's path (Slack unreachable made every request wait ~2.4 s and answered it 500)
    identity = Identity(redis, client, settings.slack_bot_token.get_secret_value())
    app = AsyncApp(signing_secret=settings.slack_signing_secret.get_secret_value(),
                   client=tokenless(client), authorize=identity, process_before_response=False)
    listeners.register(app, Parts(
        replies=replies, store=store, prices=prices, intake=intake, cards=cards, dialog=dialog,
        details=details, presses=Presses(replies, store, dialog, details), digests=digests,
        languages=languages, jobs=jobs, home=home, identity=identity,
        chart_limit=Limit("chart", settings.chart_limit_per_minute, 60),
        thread_limit=Limit("thread", settings.thread_limit_per_hour, 3600)))
    return app, jobs, identity
