"""HTTP mode: Starlette + uvicorn. POST /slack/events for everything Slack sends; GET /healthz
(process up) and GET /readyz (Redis answers and the answer workers work) for load balancers and
Kubernetes. The lifespan runs the job consumer (bot.jobs) and drains it on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bot import feeds, workers
from bot import observability as obs
from bot.app import create_bot, redis_client, web_client
from bot.digest import Digests
from bot.pricestore import PriceStore
from bot.settings import Settings, load_settings

SCHEDULER_TICK_S = 30


async def scheduler(settings: Settings, redis: Redis, client: Any) -> None:
    """In-process trigger for the single-process case: due digests every tick, feeds on their
    interval. Safe beside other replicas and `gpusize digest run`: posting is once per period."""
    log = logging.getLogger("gpusize.scheduler")
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
    app, jobs = create_bot(settings, client, redis)
    handler = AsyncSlackRequestHandler(app)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        task = (asyncio.create_task(scheduler(settings, redis, client))
                if settings.digest_scheduler else None)
        await jobs.start()
        yield
        # SIGTERM (uvicorn has stopped taking requests): finish running jobs within the grace
        # period, leave the rest pending for another replica or this one restarted
        if task:
            task.cancel()
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

    async def metrics(_: Request) -> Response:
        body, ctype = obs.metrics_body()
        return Response(body, media_type=ctype)

    async def healthz(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def readyz(_: Request) -> JSONResponse:
        try:
            await asyncio.wait_for(redis.ping(), timeout=1)
        except (TimeoutError, RedisError, OSError):
            return JSONResponse({"ready": False, "redis": "unreachable"}, status_code=503)
        if not await workers.ready(timeout_s=5):  # a broken pool that cannot be rebuilt
            return JSONResponse({"ready": False, "workers": "down"}, status_code=503)
        return JSONResponse({"ready": True})

    return Starlette(routes=[Route("/slack/events", events, methods=["POST"]),
                             Route("/healthz", healthz, methods=["GET"]),
                             Route("/readyz", readyz, methods=["GET"]),
                             Route("/metrics", metrics, methods=["GET"])], lifespan=lifespan)


def serve(*, socket_mode: bool = False, host: str = "0.0.0.0") -> int:
    settings = load_settings()
    obs.configure_logging([settings.slack_bot_token.get_secret_value(),
                           settings.slack_signing_secret.get_secret_value(),
                           settings.slack_app_token.get_secret_value()
                           if settings.slack_app_token else ""])
    workers.warm_up()  # answer workers up before the first question
    if socket_mode:
        return _socket_mode(settings)
    import uvicorn

    uvicorn.run(create_asgi(settings), host=host, port=settings.port, log_level="info",
                access_log=False)
    return 0


def _socket_mode(settings: Settings) -> int:
    if settings.slack_app_token is None:
        raise SystemExit("gpusize serve --socket: setting SLACK_APP_TOKEN is missing")
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    async def main() -> None:
        app, jobs = create_bot(settings, web_client(settings), redis_client(settings))
        await jobs.start()
        try:
            await AsyncSocketModeHandler(app,
                                         settings.slack_app_token.get_secret_value()).start_async()
        finally:
            await jobs.stop(grace_s=settings.shutdown_grace_s)
            workers.shutdown()

    asyncio.run(main())
    return 0
