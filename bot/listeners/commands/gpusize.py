"""`/gpusize ...`: ack at once (help and errors in the ack itself, ephemeral), then answer."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.dialog import Dialog, help_message, notice
from engine import ParseError, UnknownModel

log = logging.getLogger("gpusize.bot")
HELP_WORDS = ("", "help", "-h", "--help", "?")
APOLOGY = "Sorry, something went wrong while answering; nothing was posted. Please try again."


def handler(dialog: Dialog) -> Callable[..., Awaitable[None]]:
    async def gpusize_command(ack: Any, command: dict[str, Any], respond: Any) -> None:
        text = (command.get("text") or "").strip()
        if text.lower() in HELP_WORDS:
            msg = help_message()
            await ack(text=msg.text, blocks=msg.blocks)
            return
        try:
            fields = dialog.check(text)
        except (ParseError, UnknownModel) as err:
            msg = notice(f"{err}", context="Nothing was posted. `/gpusize help` shows the grammar.")
            await ack(text=msg.text, blocks=msg.blocks)
            return
        await ack()
        try:
            await dialog.command(team=command["team_id"], channel=command["channel_id"],
                                 user=command["user_id"], fields=fields, respond=respond)
        except Exception:  # the user gets a short apology, the log gets the details
            log.exception("answering /gpusize failed")
            await respond(response_type="ephemeral", text=APOLOGY)

    return gpusize_command
