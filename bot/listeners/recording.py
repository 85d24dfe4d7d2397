"""What a person hears about the recording of their request (bot.outbox.Recorder): nothing when
it was recorded; that it is delayed when Redis was slow and it is held in the outbox; that it
was not taken when Redis is full (OOM) or never confirmed it. Always privately, in their
language; a held request's later refusal is said in the language it was asked in."""

from __future__ import annotations

import contextlib
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.job import Refused, Submitted
from bot.jobs import MEMBER_BACKLOG
from bot.language import Languages
from bot.replies import Notice, Replies
from bot.words import BUSY, NOT_RECORDED, STORE_FULL, STORE_SLOW
from engine.i18n import _, current, language


def note(outcome: Submitted) -> str | None:
    """The line for `outcome`, in the current language (None: nothing to say)."""
    if outcome is Submitted.HELD:
        return _(STORE_SLOW)
    if outcome is Submitted.REFUSED:
        return _(STORE_FULL)
    if outcome is Submitted.BUSY:
        return _(BUSY).format(count=MEMBER_BACKLOG)
    return None


def ack_with_note(outcome: Submitted) -> dict[str, Any]:
    """A slash command's ack arguments: an ephemeral line when there is something to say."""
    text = note(outcome)
    if text is None:
        return {}
    msg = Notice(text)
    return {"text": msg.text, "blocks": msg.blocks}


async def tell(replies: Replies, outcome: Submitted, *, channel: str, user: str,
               thread_ts: str = "") -> None:
    """Said privately after an ack that could not carry it (an event, a button press)."""
    text = note(outcome)
    if text is not None and channel and user:
        with contextlib.suppress(Exception):
            await replies.private(channel, user, text, thread_ts)


def later(replies: Replies, *, channel: str, user: str, thread_ts: str = "",
          response_url: str = "", languages: Languages | None = None, team: str = "") -> Refused:
    """Tells the person that a held request never got recorded: in the language it was asked
    in, or (`languages`: not known at the ack) theirs, looked up then."""
    asked_in = current()

    async def refused() -> None:
        lang = asked_in
        if languages is not None:
            with contextlib.suppress(Exception):
                lang = await languages.of(team, user)
        with language(lang):
            text = _(NOT_RECORDED)
        if response_url:
            await AsyncRespond(response_url=response_url)(response_type="ephemeral",
                                                          replace_original=False, text=text)
        elif channel and user:
            await replies.private(channel, user, text, thread_ts)

    return refused
