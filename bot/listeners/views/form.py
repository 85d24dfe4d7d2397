"""The sizing form's listeners: its model menu (an external select over the catalog, answered
in the options request itself) and its submission, read into the grammar, checked like a typed
command and recorded as the same job (bot/listeners/commands/gpusize.py's `run_command`)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot import forms, keys
from bot.job import Job, Submitted
from bot.listeners import recording
from bot.listeners.actions import presser
from bot.observability import COMMANDS
from bot.parts import Parts
from bot.words import NOT_OPENED
from engine.errors import UserError
from engine.i18n import _, current, set_language
from present.blockkit import clean_input

log = logging.getLogger(__name__)
Listener = Callable[..., Awaitable[None]]
SUBMIT_TTL_S = 600


def model_menu() -> Listener:
    async def options(ack: Any, body: dict[str, Any]) -> None:
        await ack(options=forms.model_options(clean_input(body.get("value") or "")))
    return options


def submitted(parts: Parts) -> Listener:
    async def on_submit(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        user = (body.get("user") or {}).get("id", "")
        team = (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id", "")
        set_language(await parts.languages.of(team, user))
        text = ""
        try:
            text, channel = forms.read(view, user=user)
            text = clean_input(text)
            # a submitted form opens a thread as a typed question does: counted the same way
            draft = await parts.intake.admit_question(
                text, team=team, user=user, limit=parts.thread_limit,
                attempt=f"form:{view.get('id')}:{view.get('hash')}")
        except UserError as err:
            COMMANDS.labels("error").inc()
            await ack(response_action="errors",
                      errors={forms.problem_block(err, text): str(err)[:2000]})
            return
        if channel == user:  # no channel known (App Home): the answer comes as a DM
            channel = await parts.replies.direct_channel(user)
        # the same job as a typed command: the same card, posted in the channel
        job = Job(kind="command", owner=f"{team}:{user}",
                  payload={"team": team, "channel": channel, "user": user, "text": text,
                           "draft": dict(draft.values), "response_url": "", "lang": current()})
        seen = hashlib.sha256(f"{view.get('id')}:{view.get('hash')}".encode()).hexdigest()[:32]
        outcome = await parts.jobs.submit(job, dedupe=[(keys.form_submitted(seen),
                                                        SUBMIT_TTL_S)], refused=recording.later(
            parts.replies, channel=channel, user=user, languages=parts.languages, team=team))
        note = recording.note(outcome)
        if outcome in (Submitted.REFUSED, Submitted.BUSY) and note:  # not taken: the form
            await ack(response_action="errors", errors={"model": note})  # stays, and says so
            return
        await ack()
        if outcome is Submitted.UNRECORDED:
            await parts.jobs.run_here(job)
        elif outcome is Submitted.HELD and note:  # taken, delayed: said where it will come
            await parts.replies.privately(channel, user)(text=note)

    return on_submit


def shortcut(parts: Parts) -> Listener:
    """"Size this with gpusize" on any message: the form, prefilled with what the message says,
    in the message's language; its answer goes to the message's channel."""
    async def size_this(ack: Any, body: dict[str, Any]) -> None:
        await ack()  # the form opens with the trigger; nothing else to acknowledge
        user = (body.get("user") or {}).get("id", "")
        team = (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id", "")
        text = clean_input((body.get("message") or {}).get("text") or "")
        set_language(await parts.languages.of(team, user, text))
        draft, notes = forms.read_message(text)
        prefill, extra = forms.prefill_of(draft)
        channel = (body.get("channel") or {}).get("id") or ""
        try:
            await forms.open_form(parts.replies, body.get("trigger_id") or "", channel=channel,
                                  prefill=prefill, read_from=text, extra=extra, notes=notes)
            COMMANDS.labels("shortcut").inc()
        except Exception as err:  # an expired trigger: said under the message, privately
            log.warning("the shortcut's form did not open: %s", type(err).__name__)
            await presser.tell(parts, body, _(NOT_OPENED))

    return size_this


def open_button(parts: Parts) -> Listener:
    """A button that opens the form (App Home's "New sizing", help's "Open the form"): in the
    channel it was pressed in, or asking where to post when there is none."""
    async def on_press(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        user = (body.get("user") or {}).get("id", "")
        team = (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id", "")
        set_language(await parts.languages.of(team, user))
        channel = (body.get("channel") or {}).get("id") or ""
        action = (body.get("actions") or [{}])[0]
        prefill, extra = forms.prefill_of(forms.read_message(str(action.get("value") or ""))[0])
        try:
            await forms.open_form(parts.replies, body.get("trigger_id") or "", channel=channel,
                                  prefill=prefill, extra=extra)
        except Exception as err:  # an expired trigger: said where it was pressed
            log.warning("the form did not open: %s", type(err).__name__)
            await presser.tell(parts, body, _(NOT_OPENED))

    return on_press
