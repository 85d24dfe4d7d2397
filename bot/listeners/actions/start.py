"""Buttons that start something rather than answer a card: an error's "Run it" (the corrected
command, run as if typed), help's "All options" (every key, in a modal) and "Prices" (the
`price` sub-command). "Open the form" is bot/listeners/views/form.py's."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot import keys, subcommands
from bot.intake import TooManyThreads
from bot.job import Job, Submitted
from bot.listeners import recording
from bot.listeners.actions import presser
from bot.listeners.commands.gpusize import error_notice
from bot.observability import COMMANDS
from bot.parts import Parts
from bot.pricestore import new_id
from bot.words import NOT_OPENED
from engine.errors import UserError
from engine.i18n import _, current, set_language
from present.blockkit import clean_input

log = logging.getLogger(__name__)
Listener = Callable[..., Awaitable[None]]
PRESS_TTL_S = 600


def who(body: dict[str, Any]) -> tuple[str, str, str, dict[str, Any]]:
    """(team, channel, user, the action) of a press."""
    team = (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id", "")
    channel = (body.get("channel") or {}).get("id") or ""
    return team, channel, (body.get("user") or {}).get("id", ""), (body.get("actions") or [{}])[0]


def run_it(parts: Parts) -> Listener:
    """The corrected command, run as if typed: admitted again (`Intake.admit_question`, as every
    way of opening a thread is), then the same job as a command; the error message it came from
    is replaced by what happens. Pressed where there is no channel (a modal, App Home), the
    answer comes by direct message."""
    async def on_press(ack: Any, body: dict[str, Any], respond: Any) -> None:
        await ack()
        team, channel, user, action = who(body)
        text = clean_input(str(action.get("value") or "")).strip()
        set_language(await parts.languages.of(team, user, text))
        try:  # the same checks and the same thread limit as the typed command
            draft = await parts.intake.admit_question(
                text, team=team, user=user, limit=parts.thread_limit,
                attempt=f"press:{action.get('action_ts') or ''}" if action.get("action_ts")
                else "")
        except TooManyThreads as err:  # the error card stays: it can be run once allowed
            COMMANDS.labels("limited").inc()
            await presser.tell(parts, body, str(err), respond)
            return
        except UserError as err:
            if not body.get("response_url"):
                await presser.tell(parts, body, str(err))
                return
            msg = await asyncio.to_thread(error_notice, parts, err, text)  # reads: off the loop
            with contextlib.suppress(Exception):
                await respond(replace_original=True, response_type="ephemeral", text=msg.text,
                              blocks=msg.blocks)
            return
        if not channel:  # no channel to post in: the person's direct message with the bot
            channel = await parts.replies.direct_channel(user)
        job = Job(kind="command", owner=f"{team}:{user}",
                  payload={"team": team, "channel": channel, "user": user, "text": text,
                           "draft": dict(draft.values),
                           "response_url": body.get("response_url") or "", "lang": current()})
        outcome = await parts.jobs.submit(job, dedupe=[(keys.action_seen(
            team, user, action.get("action_ts", "")), PRESS_TTL_S)], refused=recording.later(
            parts.replies, channel=channel, user=user,
            response_url=body.get("response_url") or ""))
        COMMANDS.labels("run-it").inc()
        if outcome is Submitted.UNRECORDED:
            await parts.jobs.run_here(job)
        note = recording.note(outcome)
        if note is not None:  # delayed, or not taken: said, and the error card stays
            await presser.tell(parts, body, note, respond)
            return
        if body.get("response_url"):
            with contextlib.suppress(Exception):  # the error has done its work
                await respond(delete_original=True)

    return on_press


def all_options(parts: Parts) -> Listener:
    async def on_press(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        team, _channel, user, _action = who(body)
        set_language(await parts.languages.of(team, user))
        try:
            await parts.replies.open_view(body.get("trigger_id") or "",
                                          subcommands.all_options_view())
        except Exception as err:  # an expired trigger: said, not left to silence
            log.warning("the options modal did not open: %s", type(err).__name__)
            await presser.tell(parts, body, _(NOT_OPENED))

    return on_press


def prices(parts: Parts) -> Listener:
    """Help's "Prices": the `price` sub-command, answered privately like the typed one."""
    async def on_press(ack: Any, body: dict[str, Any]) -> None:
        team, channel, user, _action = who(body)
        set_language(await parts.languages.of(team, user))
        job = Job(kind="subcommand", owner=f"{team}:{user}", payload={
            "command": {"team_id": team, "channel_id": channel, "user_id": user,
                        "response_url": body.get("response_url") or ""},
            "text": "price", "lang": current(), "quote_id": new_id("q")})
        await record_press(parts, ack, body, job)

    return on_press


async def record_press(parts: Parts, ack: Any, body: dict[str, Any], job: Job) -> None:
    """Record a press's job before the ack (its action_ts the dedupe key: people double-click);
    without Redis, run it here."""
    team, _channel, user, action = who(body)
    outcome = await parts.jobs.submit(job, dedupe=[(keys.action_seen(
        team, user, action.get("action_ts", "")), PRESS_TTL_S)])
    await ack()
    if outcome is Submitted.UNRECORDED:
        await parts.jobs.run_here(job)
