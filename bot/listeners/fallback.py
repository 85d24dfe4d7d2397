"""Last in line: interactive requests no listener above claims (an action id, a view or a
shortcut callback no surface of ours carries: a forged or outdated payload). Bolt would answer
them 404 and log a page of advice; here they are acknowledged and the presser is told, in their
language, that nothing was done (an error is an answer)."""

from __future__ import annotations

import re
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.listeners.actions import presser
from bot.parts import Parts
from engine.i18n import set_language

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

    app.action(ANY)(unknown_press)
    app.shortcut(ANY)(unknown_press)
    app.view(ANY)(unknown_view)
    app.options(ANY)(unknown_options)
