"""App Home's listeners: the tab published when it is opened, and its controls (each runs a
sub-command, recorded as a job before the ack). Its "New sizing" is the form's button
(bot/listeners/views/form.py `open_button`, shared with help and errors)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.job import Handler, Job
from bot.listeners.actions import start
from bot.parts import Parts
from engine.i18n import set_language

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
    async def run(p: dict[str, Any]) -> None:
        set_language(await parts.languages.of(p["team"], p["user"]))
        await parts.home.run(p["team"], p["user"], p["text"])

    return run
