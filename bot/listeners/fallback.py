"""Last in line: interactive requests no listener above claims (an action id, a view or a
shortcut callback no surface of ours carries: a forged or outdated payload). Bolt would answer
them 404 and log a page of advice; here they are acknowledged and the presser is told, in their
language, that nothing was done (an error is an answer).

And the safety net under every listener (`failed`): a listener that raises before its ack made
Bolt answer Slack 500 (Slack shows the person an error and retries events); it is answered 200,
logged in one line, and the person hears a short apology where they asked."""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse

from bot.listeners.actions import presser
from bot.parts import Parts
from bot.words import APOLOGY
from engine.i18n import _, set_language

log = logging.getLogger(__name__)

ANY = re.compile(".*")


def register(app: AsyncApp, parts: Parts) -> None:
    async def unknown_press(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        team, user = presser.team_and_user(body)
        set_language(await parts.languages.of(team, user))
        await presser.unknown_button(parts, body)

    async def unknown_view(ack: Any) -> None:
        await ack()  # closes the modal: it has no submission of ours to read

    async def unknown_options(ack: Any) -> None:
        await ack(options=[])

    async def failed(error: Exception, body: dict[str, Any],
                     response: BoltResponse | None) -> None:
        log.error("listener failed before its ack: %s", type(error).__name__, exc_info=error)
        if response is not None:  # acknowledged all the same: never a 500 to Slack
            response.status, response.body = 200, ""
        if not isinstance(body, dict) or body.get("type") == "event_callback":
            return  # an event's own job apologises; there is nobody to tell here
        command = body if body.get("command") else {}
        team, user = presser.team_and_user(body)
        team, user = team or str(command.get("team_id") or ""), user or str(
            command.get("user_id") or "")
        set_language(await parts.languages.of(team, user))
        await presser.tell(parts, {**body, "user": {"id": user}, "team": {"id": team}},
                           _(APOLOGY))

    app.error(failed)
    app.action(ANY)(unknown_press)
    app.shortcut(ANY)(unknown_press)
    app.view(ANY)(unknown_view)
    app.options(ANY)(unknown_options)
