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
from bot.digest import USAGE as DIGEST_USAGE
from bot.digest import Digests, parse_subscribe
from bot.language import Languages
from bot.observability import COMMANDS, REDIS_ERRORS
from bot.replies import Notice
from engine import ParseError, UnknownModel
from engine.i18n import N_, _, set_language
from present.blockkit import channel_ref, clean_input

log = logging.getLogger("gpusize.bot")
HELP_WORDS = ("", "help", "-h", "--help", "?", "帮助")
APOLOGY = N_("Sorry, something went wrong while answering; nothing was posted. Please try again.")
STORE_DOWN = N_("Prices and digests live in Redis, which is not answering right now; try again "
                "soon.")


def handler(dialog: Dialog, digests: Digests,
            languages: Languages) -> Callable[..., Awaitable[None]]:
    async def gpusize_command(ack: Any, command: dict[str, Any], respond: Any,
                              client: Any) -> None:
        text = clean_input(command.get("text") or "").strip()
        first = text.split(maxsplit=1)[0].lower() if text else ""
        set_language(await languages.of(command["team_id"], command["user_id"], text))
        if first in ("lang", "language", "语言"):
            await ack()
            try:
                reply = await languages.choose(command["team_id"], command["user_id"],
                                               text.split()[1:])
            except ParseError as err:
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
                    sections = await digest_command(digests, command, text)
                else:
                    sections = await pricecommands.handle(
                        dialog.prices, team=command["team_id"], user=command["user_id"],
                        text=text, today=datetime.now(UTC).date(),
                        is_admin=await _is_admin(client, command, text))
                COMMANDS.labels(first.rstrip("s")).inc()
            except ParseError as err:
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


async def _is_admin(client: Any, command: dict[str, Any], text: str) -> bool:
    """Only asked when removing a quote: workspace admins may remove anyone's."""
    if not any(w in text.lower().split() for w in ("remove", "delete", "rm")):
        return False
    try:
        info = await client.users_info(user=command["user_id"])
    except Exception:
        return False
    user = info.get("user") or {}
    return bool(user.get("is_admin") or user.get("is_owner"))


async def digest_command(digests: Digests, command: dict[str, Any], text: str) -> list[str]:
    words = text.split()[1:]
    action = words[0].lower() if words else "help"
    team, channel, user = command["team_id"], command["channel_id"], command["user_id"]
    now = datetime.now(UTC)
    if action == "subscribe":
        sub = parse_subscribe(words[1:], team=team, channel=channel, user=user, now=now)
        await digests.subscribe(sub)
        return [_("Subscribed: a GPU price digest {when}. The first one comes at the next slot; "
                  "`/gpusize digest preview` shows what it will say.").format(when=sub.describe())]
    if action == "unsubscribe":
        target = channel
        for word in words[1:]:
            if word.startswith("<#"):
                target = word[2:].split("|")[0].rstrip(">")
        removed = await digests.unsubscribe(team, target)
        return [_("Unsubscribed.") if removed
                else _("No digest subscription for {channel}.").format(channel=channel_ref(target))]
    if action == "preview":
        sections, title = await digests.compose(team, channel, now=now)
        return [f"*{title}* " + _("(preview)"), *sections]
    if action == "list":
        subs = await digests.subscriptions(team)
        return ["\n".join(f"• {s.describe()}" for s in subs) or _("No digest subscriptions.")]
    return [_(DIGEST_USAGE)]
