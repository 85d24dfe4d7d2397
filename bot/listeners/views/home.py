"""App Home's listeners: the tab published when it is opened, and its controls (each runs a
sub-command, recorded as a job before the ack). Its "New sizing" is the form's button
(bot/listeners/views/form.py `open_button`, shared with help and errors)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError

from bot.job import Handler, Job
from bot.listeners.actions import start
from bot.parts import Parts
from bot.words import STORE_DOWN, failure_text
from engine.i18n import _, set_language

log = logging.getLogger(__name__)
Listener = Callable[..., Awaitable[None]]


def opened(parts: Parts) -> Listener:
    async def on_home_opened(event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("tab") == "messages":
            return  # the messages tab: a direct message is the way to talk there
        team, user = body.get("team_id", ""), event.get("user", "")
        set_language(await parts.languages.of(team, user))
        try:
            await parts.home.publish(team, user)
        except Exception:
            log.exception("App Home not published")

    return on_home_opened


def control(parts: Parts) -> Listener:
    async def on_control(ack: Any, body: dict[str, Any]) -> None:
        team, _channel, user, action = start.who(body)
        job = Job(kind="home", owner=f"{team}:{user}",
                  payload={"team": team, "user": user, "text": str(action.get("value") or "")})
        await start.record_press(parts, ack, body, job)

    return on_control


def run_control(parts: Parts) -> Handler:
    """A control's job: the sub-command, then the tab again; a failure (Redis, Slack) is said by
    direct message, since the tab could not be (an error is an answer)."""
    async def run(p: dict[str, Any]) -> None:
        set_language(await parts.languages.of(p["team"], p["user"]))
        try:
            await parts.home.run(p["team"], p["user"], p["text"])
        except Exception as err:
            log.warning("App Home control failed: %s", type(err).__name__)
            text = _(STORE_DOWN) if isinstance(err, RedisError) else failure_text(err)
            with contextlib.suppress(Exception):
                await parts.replies.direct(p["user"], text)

    return run
