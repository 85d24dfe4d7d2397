"""`/gpusize ...`: ack at once (help and errors in the ack itself, ephemeral), then answer.

Sub-commands: `price [CARD]`, `quote ...`, `digest ...`; anything else is a sizing question in
the grammar the CLI uses."""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from redis.exceptions import RedisError
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot import keys, pricecommands
from bot.dialog import Dialog, failure_text, help_message
from bot.digest import Digests, digest_command
from bot.jobs import Handler, Job, Jobs, Submitted
from bot.language import Languages
from bot.observability import COMMANDS, REDIS_ERRORS
from bot.permissions import AdminUnknown, Permissions, Refused
from bot.pricestore import new_id
from bot.replies import Notice
from engine import ParseError, UnknownModel
from engine.i18n import N_, _, current, set_language
from engine.request import Draft
from present.blockkit import clean_input

log = logging.getLogger("gpusize.bot")
HELP_WORDS = ("", "help", "-h", "--help", "?", "帮助")
LANG_WORDS = ("lang", "language", "语言")
REPLAY_TTL_S = 600  # Slack refuses a signature older than 5 minutes
STORE_DOWN = N_("Prices and digests live in Redis, which is not answering right now; try again "
                "soon.")


def handler(dialog: Dialog, digests: Digests, languages: Languages,
            jobs: Jobs) -> Callable[..., Awaitable[None]]:
    async def gpusize_command(ack: Any, command: dict[str, Any], respond: Any,
                              client: Any, request: Any) -> None:
        text = clean_input(command.get("text") or "").strip()
        first = text.split(maxsplit=1)[0].lower() if text else ""
        set_language(await languages.of(command["team_id"], command["user_id"], text))
        if text.lower() in HELP_WORDS:
            COMMANDS.labels("help").inc()
            msg = help_message()
            await ack(text=msg.text, blocks=msg.blocks)
            return
        owner = f"{command['team_id']}:{command['user_id']}"
        dedupe = [(keys.command_seen(request_digest(request)), REPLAY_TTL_S)]
        if first in LANG_WORDS or first in pricecommands.SUBCOMMANDS or first == "digest":
            # a quote, a subscription or a language choice is acknowledged work too: recorded
            # before the ack like an answer; its quote id is fixed now, so a re-run stores it once
            job = Job(kind="subcommand", owner=owner, payload={
                "command": {k: command.get(k) or "" for k in ("team_id", "channel_id",
                                                               "user_id", "response_url")},
                "text": text, "lang": current(), "quote_id": new_id("q")})
            outcome = await jobs.submit(job, dedupe=dedupe)
            await ack()
            if outcome is Submitted.UNRECORDED:
                await jobs.run_here(job)
            return
        try:
            draft = await dialog.admit(text, team=command["team_id"], user=command["user_id"])
        except (ParseError, UnknownModel) as err:
            COMMANDS.labels("error").inc()
            msg = Notice(f"{err}",
                         context=_("Nothing was posted. `/gpusize help` shows the grammar."))
            await ack(text=msg.text, blocks=msg.blocks)
            return
        except Exception as err:  # e.g. a ValidationError: said plainly, never a 500 to Slack
            COMMANDS.labels("error").inc()
            log.warning("/gpusize input refused: %s", type(err).__name__)
            msg = Notice(failure_text(err))
            await ack(text=msg.text, blocks=msg.blocks)
            return
        # recorded before the ack (bot.jobs): a stop or a crash now loses nothing, and a replay
        # of this very request (same timestamp and body) is answered once
        job = Job(kind="command", owner=owner,
                  payload={"team": command["team_id"], "channel": command["channel_id"],
                           "user": command["user_id"], "text": text, "draft": dict(draft.values),
                           "response_url": command.get("response_url") or "",
                           "lang": current()})
        outcome = await jobs.submit(job, dedupe=dedupe)
        await ack()
        if outcome is Submitted.UNRECORDED:  # Redis down: answer here, best effort
            await jobs.run_here(job)

    return gpusize_command


def request_digest(request: Any) -> str:
    """A signed request's identity: its timestamp and raw body (a replay repeats both; Slack's
    trigger_id is in the body, so two real commands never share it)."""
    headers = getattr(request, "headers", None) or {}
    stamp = headers.get("x-slack-request-timestamp") or [""]
    raw = getattr(request, "raw_body", "") or ""
    return hashlib.sha256(f"{stamp[0] if isinstance(stamp, list | tuple) else stamp}\n{raw}"
                          .encode()).hexdigest()


def run_command(dialog: Dialog) -> Handler:
    """A sizing command's job: post the answer (or the first question) in the channel."""
    async def run(p: dict[str, Any]) -> None:
        set_language(p.get("lang") or "en")
        respond = AsyncRespond(response_url=p["response_url"] or None)
        draft = Draft(p["draft"])
        try:
            await dialog.command(team=p["team"], channel=p["channel"], user=p["user"],
                                 draft=draft, respond=respond, text=p["text"])
            COMMANDS.labels("answered" if draft.method else "asked").inc()
        except Exception as err:  # the user is told plainly, the log gets the details
            COMMANDS.labels("failed").inc()
            log.exception("answering /gpusize failed")
            text = failure_text(err)
            if p["response_url"]:
                with contextlib.suppress(Exception):
                    await dialog.replies.respond(respond, response_type="ephemeral", text=text)
            else:
                await dialog.replies.apologise(p["channel"], p["user"], None, store_down=False,
                                               text=text)

    return run


def run_subcommand(dialog: Dialog, digests: Digests, languages: Languages) -> Handler:
    """A `lang`, `price`, `quote` or `digest` sub-command's job: its private reply."""
    permissions = Permissions(digests.redis, digests.client)

    async def run(p: dict[str, Any]) -> None:
        set_language(p.get("lang") or "en")
        command, text = p["command"], p["text"]
        first = text.split(maxsplit=1)[0].lower()
        try:
            if first in LANG_WORDS:
                sections = [await languages.choose(command["team_id"], command["user_id"],
                                                   text.split()[1:], permissions=permissions)]
            elif first == "digest":
                sections = await digest_command(digests, permissions, command, text)
            else:
                sections = await pricecommands.handle(
                    dialog.prices, team=command["team_id"], user=command["user_id"], text=text,
                    today=datetime.now(UTC).date(),
                    is_admin=await _quote_admin(permissions, command, text),
                    quote_id=p.get("quote_id"))
            COMMANDS.labels("lang" if first in LANG_WORDS else first.rstrip("s")).inc()
        except (ParseError, Refused) as err:
            COMMANDS.labels("error").inc()
            sections = [f"{err}"]
        except RedisError:
            REDIS_ERRORS.labels("command").inc()
            sections = [_(STORE_DOWN)]
        msg = Notice("\n\n".join(sections))
        await dialog.replies.respond(AsyncRespond(response_url=command["response_url"] or None),
                                     response_type="ephemeral", text=msg.text, blocks=msg.blocks)

    return run


async def _quote_admin(permissions: Permissions, command: dict[str, Any],
                       text: str) -> bool | None:
    """Only asked when removing a quote (admins may remove anyone's); None: Slack cannot say."""
    if not any(w in text.lower().split() for w in ("remove", "delete", "rm")):
        return False
    try:
        return await permissions.is_admin(team=command["team_id"], user=command["user_id"])
    except AdminUnknown:
        return None
