"""HTTP mode: Starlette + uvicorn. POST /slack/events for everything Slack sends; GET /healthz
(process up) and GET /readyz (the answer workers work; Redis's state reported, never failed on)
for load balancers and Kubernetes; /metrics on a port of its own (METRICS_PORT). The lifespan
runs the job consumer (bot.jobs) and drains it on SIGTERM. bot.edge bounds what an
unauthenticated request or connection costs before Bolt sees it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import signal
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bot import feeds, workers
from bot import observability as obs
from bot.app import create_bot, redis_client, web_client
from bot.digest import Digests
from bot.edge import SlackEdge, edge_protocol
from bot.intake import Intake
from bot.pricestore import PriceStore
from bot.settings import Settings, load_settings

log = logging.getLogger(__name__)
SCHEDULER_TICK_S = 30
H11_MAX_HEADER_BYTES = 16 * 1024  # Slack's headers are well under 2 KiB
GIL_SWITCH_S = 0.0005
GRACEFUL_HTTP_S = 5  # acks take milliseconds; the answers drain in the lifespan after this


async def scheduler(settings: Settings, redis: Redis, client: Any) -> None:
    """In-process trigger for the single-process case: due digests every tick, feeds on their
    interval. Safe beside other replicas and `gpusize digest run`: posting is once per period."""
    prices = PriceStore(redis)
    digests = Digests(redis, client, prices)
    while True:
        try:
            await feeds.refresh_due(prices, settings.feed_urls,
                                    interval_s=settings.feed_interval_minutes * 60)
            posted = await digests.run_due(datetime.now(UTC))
            if posted:
                obs.DIGESTS.inc(len(posted))
                log.info("digests posted: %s", ", ".join(posted))
        except (RedisError, OSError) as err:
            obs.REDIS_ERRORS.labels("scheduler").inc()
            log.warning("scheduler tick failed: %s", type(err).__name__)
        except Exception:
            log.exception("scheduler tick failed")
        await asyncio.sleep(SCHEDULER_TICK_S)


def create_asgi(settings: Settings, redis: Redis | None = None) -> Starlette:
    redis = redis or redis_client(settings)
    client = web_client(settings)
    app, jobs, identity = create_bot(settings, client, redis)
    handler = AsyncSlackRequestHandler(app)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        task = (asyncio.create_task(scheduler(settings, redis, client))
                if settings.digest_scheduler else None)
        await identity.started()  # the bot's ids, before the first request (or Slack is away)
        await jobs.start()
        yield
        # SIGTERM (uvicorn has stopped taking requests): finish running jobs within the grace
        # period, leave the rest pending for another replica or this one restarted
        if task:
            task.cancel()
        await identity.stop()
        await jobs.stop(grace_s=settings.shutdown_grace_s)
        workers.shutdown()

    async def events(request: Request) -> Response:
        obs.new_request_id(request.headers.get("x-request-id"))
        ctype = request.headers.get("content-type", "")
        kind = "event" if "json" in ctype else "form"  # commands and actions are form posts
        start = time.perf_counter()
        response = await handler.handle(request)
        obs.REQUEST_SECONDS.labels(kind).observe(time.perf_counter() - start)
        return response

    async def healthz(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def readyz(_: Request) -> JSONResponse:
        # Only what is this pod's own takes it out of the Service. Redis is shared: were its
        # outage a 503, every pod would leave at once, though each still answers one-shot
        # questions and tells people their thread cannot go on. It is reported, not failed.
        try:
            await asyncio.wait_for(redis.ping(), timeout=1)
            redis_state = "ok"
        except (TimeoutError, RedisError, OSError):
            obs.REDIS_ERRORS.labels("readyz").inc()
            redis_state = "unreachable"
        if not await workers.ready(timeout_s=5):  # a broken pool that cannot be rebuilt
            return JSONResponse({"ready": False, "workers": "down", "redis": redis_state},
                                status_code=503)
        return JSONResponse({"ready": True, "redis": redis_state})

    return Starlette(routes=[Route("/slack/events", events, methods=["POST"]),
                             Route("/healthz", healthz, methods=["GET"]),
                             Route("/readyz", readyz, methods=["GET"])], lifespan=lifespan,
                     middleware=[edge_middleware(settings)])


def edge_middleware(settings: Settings) -> Middleware:
    return Middleware(SlackEdge, signing_secret=settings.slack_signing_secret.get_secret_value(),
                      max_body_bytes=settings.max_body_bytes,
                      body_timeout_s=settings.body_timeout_s)


def _raise_open_files_limit() -> None:
    """Sockets are file descriptors: take the hard limit rather than a 1,024 soft default."""
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY:
            hard = max(soft, 65536)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _exit_cleanly(signum: int, _frame: Any) -> None:
    raise SystemExit(0)


def serve(*, socket_mode: bool = False, host: str = "0.0.0.0") -> int:
    settings = load_settings()
    obs.configure_logging([settings.slack_bot_token.get_secret_value(),
                           settings.slack_signing_secret.get_secret_value(),
                           settings.slack_app_token.get_secret_value()
                           if settings.slack_app_token else ""])
    workers.warm_up()  # answer workers up before the first question
    Intake.warm_up()  # the readers' tables compiled before the first message, not by it
    # messages are read in threads beside the event loop; a thread holding the GIL keeps the
    # loop (everyone's acks) waiting up to the switch interval at every hand-over: 5 ms by
    # default, paid many times per ack while a long message is read
    sys.setswitchinterval(GIL_SWITCH_S)
    obs.serve_metrics(host=settings.metrics_host, port=settings.metrics_port,
                      max_connections=settings.metrics_max_connections)
    if socket_mode:
        return _socket_mode(settings)
    import uvicorn

    _raise_open_files_limit()
    # uvicorn re-raises SIGTERM once it has shut down; with the default handler the process would
    # then die without running its exit handlers (the worker pool's queues leak). Exit cleanly.
    signal.signal(signal.SIGTERM, _exit_cleanly)
    uvicorn.run(create_asgi(settings), host=host, port=settings.port, log_level="info",
                log_config=obs.uvicorn_log_config(), access_log=False,
                http=edge_protocol(header_timeout_s=settings.header_timeout_s,
                                   max_waiting=settings.max_waiting_connections),
                limit_concurrency=settings.limit_concurrency,
                timeout_keep_alive=max(1, round(settings.keep_alive_s)),
                h11_max_incomplete_event_size=H11_MAX_HEADER_BYTES, backlog=2048,
                # uvicorn's own wait for open requests, then the lifespan's job drain: both
                # inside Kubernetes' 30 s grace
                timeout_graceful_shutdown=GRACEFUL_HTTP_S)
    return 0


def _socket_mode(settings: Settings) -> int:
    if settings.slack_app_token is None:
        raise SystemExit("gpusize serve --socket: setting SLACK_APP_TOKEN is missing")
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    async def main() -> None:
        app, jobs, identity = create_bot(settings, web_client(settings), redis_client(settings))
        await identity.started()
        await jobs.start()
        try:
            await AsyncSocketModeHandler(app,
                                         settings.slack_app_token.get_secret_value()).start_async()
        finally:
            await identity.stop()
            await jobs.stop(grace_s=settings.shutdown_grace_s)
            workers.shutdown()

    asyncio.run(main())
    return 0
