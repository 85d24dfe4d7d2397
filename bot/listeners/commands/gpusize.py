"""`/gpusize ...`: ack at once (help and errors in the ack itself, ephemeral), then answer.

Sub-commands: `price [CARD]`, `quote ...`, `digest ...`; anything else is a sizing question in
the grammar the CLI uses."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from redis.exceptions import RedisError

from bot import pricecommands
from bot.dialog import Dialog, help_message
from bot.digest import Digests, digest_command
from bot.language import Languages
from bot.observability import COMMANDS, REDIS_ERRORS
from bot.permissions import AdminUnknown, Permissions, Refused
from bot.replies import Notice
from engine import ParseError, UnknownModel
from engine.i18n import N_, _, set_language
from present.blockkit import clean_input

log = logging.getLogger("gpusize.bot")
HELP_WORDS = ("", "help", "-h", "--help", "?", "帮助")
APOLOGY = N_("Sorry, something went wrong while answering; nothing was posted. Please try again.")
STORE_DOWN = N_("Prices and digests live in Redis, which is not answering right now; try again "
                "soon.")


def handler(dialog: Dialog, digests: Digests,
            languages: Languages) -> Callable[..., Awaitable[None]]:
    permissions = Permissions(digests.redis, digests.client)

    async def gpusize_command(ack: Any, command: dict[str, Any], respond: Any,
                              client: Any) -> None:
        text = clean_input(command.get("text") or "").strip()
        first = text.split(maxsplit=1)[0].lower() if text else ""
        set_language(await languages.of(command["team_id"], command["user_id"], text))
        if first in ("lang", "language", "语言"):
            await ack()
            try:
                reply = await languages.choose(command["team_id"], command["user_id"],
                                               text.split()[1:], permissions=permissions)
            except (ParseError, Refused) as err:
                reply = str(err)
            except RedisError:
                reply = _(STORE_DOWN)
            msg = Notice(reply)
            await respond(response_type="ephemeral", text=msg.text, blocks=msg.blocks)
            return
        if text.lower() in HELP_WORDS:
            COMMANDS.labels("help").inc()
            msg = help_message()
            await ack(text=msg.text, blocks=msg.blocks)
            return
        if first in pricecommands.SUBCOMMANDS or first == "digest":
            await ack()
            try:
                if first == "digest":
                    sections = await digest_command(digests, permissions, command, text)
                else:
                    sections = await pricecommands.handle(
                        dialog.prices, team=command["team_id"], user=command["user_id"],
                        text=text, today=datetime.now(UTC).date(),
                        is_admin=await _quote_admin(permissions, command, text))
                COMMANDS.labels(first.rstrip("s")).inc()
            except (ParseError, Refused) as err:
                COMMANDS.labels("error").inc()
                sections = [f"{err}"]
            except RedisError:
                REDIS_ERRORS.labels("command").inc()
                sections = [_(STORE_DOWN)]
            msg = Notice("\n\n".join(sections))
            await respond(response_type="ephemeral", text=msg.text, blocks=msg.blocks)
            return
        try:
            draft = await dialog.admit(text, team=command["team_id"], user=command["user_id"])
        except (ParseError, UnknownModel) as err:
            COMMANDS.labels("error").inc()
            msg = Notice(f"{err}",
                         context=_("Nothing was posted. `/gpusize help` shows the grammar."))
            await ack(text=msg.text, blocks=msg.blocks)
            return
        await ack()
        try:
            await dialog.command(team=command["team_id"], channel=command["channel_id"],
                                 user=command["user_id"], draft=draft, respond=respond,
                                 text=text)
            COMMANDS.labels("answered" if draft.method else "asked").inc()
        except Exception:  # the user gets a short apology, the log gets the details
            COMMANDS.labels("failed").inc()
            log.exception("answering /gpusize failed")
            await respond(response_type="ephemeral", text=_(APOLOGY))

    return gpusize_command


async def _quote_admin(permissions: Permissions, command: dict[str, Any],
                       text: str) -> bool | None:
    """Only asked when removing a quote (admins may remove anyone's); None: Slack cannot say."""
    if not any(w in text.lower().split() for w in ("remove", "delete", "rm")):
        return False
    try:
        return await permissions.is_admin(team=command["team_id"], user=command["user_id"])
    except AdminUnknown:
        return None
