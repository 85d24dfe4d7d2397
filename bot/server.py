"""HTTP mode: Starlette + uvicorn. POST /slack/events for everything Slack sends; GET /healthz
(process up) and GET /readyz (Redis answers) for load balancers and Kubernetes."""

from __future__ import annotations

import asyncio
import logging

from redis.asyncio import Redis
from redis.exceptions import RedisError
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from bot.app import create_app, redis_client, web_client
from bot.settings import Settings, load_settings


def create_asgi(settings: Settings, redis: Redis | None = None) -> Starlette:
    redis = redis or redis_client(settings)
    client = web_client(settings)
    handler = AsyncSlackRequestHandler(create_app(settings, client, redis))

    async def events(request: Request):
        return await handler.handle(request)

    async def healthz(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def readyz(_: Request) -> JSONResponse:
        try:
            await asyncio.wait_for(redis.ping(), timeout=1)
        except (TimeoutError, RedisError, OSError):
            return JSONResponse({"ready": False, "redis": "unreachable"}, status_code=503)
        return JSONResponse({"ready": True})

    return Starlette(routes=[Route("/slack/events", events, methods=["POST"]),
                             Route("/healthz", healthz, methods=["GET"]),
                             Route("/readyz", readyz, methods=["GET"])])


def serve(*, socket_mode: bool = False, host: str = "0.0.0.0") -> int:
    settings = load_settings()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    from bot import workers

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
        app = create_app(settings, web_client(settings), redis_client(settings))
        await AsyncSocketModeHandler(app, settings.slack_app_token.get_secret_value()).start_async()

    asyncio.run(main())
    return 0
