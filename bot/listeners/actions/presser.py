"""Telling whoever pressed a button, wherever they pressed it (issue 26: every acknowledged
request is answered, an error is an answer).

A press under a message carries its channel (and usually a response_url): it is answered there,
privately. A press in a modal or on App Home carries no channel, so there is no thread to answer
in: App Home is published again with the answer as its notice, a modal gets a view pushed on
top of it (Close returns to the modal), and anything else goes to the person's direct message
with the bot (conversations.open). Never acknowledged only."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.parts import Parts
from bot.words import NO_THREAD, UNKNOWN_BUTTON
from engine.i18n import _
from present import views

log = logging.getLogger(__name__)


def team_and_user(body: dict[str, Any]) -> tuple[str, str]:
    user = body.get("user") if isinstance(body.get("user"), dict) else {}
    team = (body.get("team") or {}).get("id") if isinstance(body.get("team"), dict) else ""
    return str(team or user.get("team_id") or ""), str(user.get("id") or "")


def channel_of(body: dict[str, Any]) -> str:
    channel = body.get("channel")
    return str(channel.get("id") or "") if isinstance(channel, dict) else ""


def thread_of(body: dict[str, Any]) -> str:
    message = body.get("message") if isinstance(body.get("message"), dict) else {}
    return str(message.get("thread_ts") or message.get("ts") or "")


async def tell(parts: Parts, body: dict[str, Any], text: str,
               respond: Callable[..., Awaitable[Any]] | None = None) -> None:
    """`text` to the presser, privately: under the message pressed when Slack said where it is
    (`respond`: the listener's own, for the press's response_url), else where the press was
    made (App Home, a modal, a direct message). Best effort: a Slack failure is logged in one
    line, never raised into the listener."""
    team, user = team_and_user(body)
    channel = channel_of(body)
    try:
        if body.get("response_url"):
            say = respond or AsyncRespond(response_url=body["response_url"])
            await say(response_type="ephemeral", replace_original=False, text=text)
        elif channel:
            await parts.replies.private(channel, user, text, thread_of(body))
        else:
            await tell_without_channel(parts, body, team, user, text)
    except Exception as err:
        log.warning("a press could not be answered: %s", type(err).__name__)


async def tell_without_channel(parts: Parts, body: dict[str, Any], team: str, user: str,
                               text: str) -> None:
    view = body.get("view") if isinstance(body.get("view"), dict) else {}
    if view.get("type") == "home":
        await parts.home.publish(team, user, notice=text)
        return
    trigger = body.get("trigger_id") or ""
    if view.get("type") == "modal" and trigger:
        try:
            await parts.replies.push_view(trigger, views.notice_view("gpusize", text))
            return
        except Exception as err:  # an expired trigger: the direct message says it instead
            log.info("views.push failed (%s): answered by direct message", type(err).__name__)
    await parts.replies.direct(user, text)


async def no_thread(parts: Parts, body: dict[str, Any]) -> None:
    """A press on an answer's button that came without its channel (a modal, App Home)."""
    await tell(parts, body, _(NO_THREAD))


async def unknown_button(parts: Parts, body: dict[str, Any]) -> None:
    """A press whose id or value the bot never puts on a button (a forged payload)."""
    await tell(parts, body, _(UNKNOWN_BUTTON))
