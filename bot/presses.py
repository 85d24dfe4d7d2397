"""A press under an answer card: checked against the thread's live answer, then dispatched.

What-ifs ("Try QLoRA", "Fastest instead") are changes to the thread's request and go to the
thread flow (bot/dialog.py); "Rent vs buy" and the menu ask for details (bot/details.py), read in
the modal the press opened. A press on an answer the thread has moved on from is told so
privately (or in its modal) and changes nothing. The ids are
`present.actions.Action`; the menu's payloads are `Detail` words.
"""

from __future__ import annotations

from bot.conversation import Conversation
from bot.details import Details
from bot.dialog import Dialog
from bot.replies import Replies
from bot.store import ConversationStore
from bot.words import EXPIRED, STALE, UNKNOWN_BUTTON, unusable
from engine import ParseError
from engine.i18n import _
from engine.methods import METHODS
from engine.parse import parse_fields
from engine.request import Draft
from present import slack
from present.actions import MODAL_DETAILS, Action, Detail


class Presses:
    def __init__(self, replies: Replies, store: ConversationStore, dialog: Dialog,
                 details: Details) -> None:
        self.replies = replies
        self.store = store
        self.dialog = dialog
        self.details = details

    async def detail(self, *, team: str, channel: str, thread_ts: str, message_ts: str,
                     value: str, kind: Detail) -> tuple[list[str], str]:
        """A detail pressed for: (its sections, ""), or ([], why not) for a thread that has
        expired or a press on an older answer."""
        version, _payload = slack.split_value(value)
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.inputs.method is None:
            return [], _(EXPIRED)
        if older(conv, version, message_ts):
            return [], _(STALE)
        return await self.details.sections(team, conv, kind), ""

    async def card_action(self, *, team: str, channel: str, thread_ts: str, message_ts: str,
                          user: str, action_id: str, value: str, view_id: str = "") -> None:
        """A what-if button, "Rent vs buy" or the menu under an answer. `view_id`: the modal
        the press opened at once (a detail is shown there; a refusal is said there)."""
        version, payload = slack.split_value(value)
        action = Action.of(action_id)
        detail = modal_detail(action, payload)
        if detail is not None:
            sections, refusal = await self.detail(team=team, channel=channel,
                                                  thread_ts=thread_ts, message_ts=message_ts,
                                                  value=value, kind=detail)
            await self.details.deliver(channel=channel, thread_ts=thread_ts, user=user,
                                       kind=detail, sections=sections, refusal=refusal,
                                       view_id=view_id)
            return
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None:
            await self.details.tell(channel, user, thread_ts, view_id, _(EXPIRED))
            return
        if older(conv, version, message_ts):
            await self.details.tell(channel, user, thread_ts, view_id, _(STALE))
            return
        where = {"team": team, "channel": channel, "thread_ts": thread_ts}
        if not conv.record.answer_ts:  # no answer posted yet: no button of an answer is real
            await self.details.tell(channel, user, thread_ts, view_id, _(UNKNOWN_BUTTON))
            return
        if action in (Action.WHATIF, Action.WHATIF_GOAL) or "=" in payload:
            if version is None:  # from before values carried versions: whatif_<key>_...
                key = "goal" if action is Action.WHATIF_GOAL else action_id.split("_")[1]
                change = Draft({key: payload})
            else:
                key, _sep, word = payload.partition("=")
                try:
                    # a method is a word in the grammar, not a key
                    change = (Draft({"method": word}) if key == "method" and word in METHODS
                              else parse_fields(payload, require_model=False))
                except ParseError as err:
                    await self.replies.private(channel, user, unusable(err), thread_ts)
                    return
            if not change.values:  # a value that reads as nothing: no button of ours sends it
                await self.details.tell(channel, user, thread_ts, view_id, _(UNKNOWN_BUTTON))
                return
            await self.dialog.follow_up(**where, user=user, change=change)
        elif payload == Detail.CHARTS or action is Action.SHOW_CHART:
            await self.details.chart(**where, kind="memory")
            top = (conv.record.result or {}).get("gpu")
            if top and payload == Detail.CHARTS:
                await self.details.chart(**where, kind="prices", card=top, quiet=True)
        elif action is Action.SHOW_PRICE_CHART:
            await self.details.chart(**where, kind="prices", card=payload, user=user)
        else:  # a value no button of ours carries (a forged payload): said, nothing changed
            await self.details.tell(channel, user, thread_ts, view_id, _(UNKNOWN_BUTTON))


def older(conv: Conversation, version: int | None, message_ts: str) -> bool:
    """A press on an answer the thread has moved on from."""
    live_v, live_ts = conv.card_version, conv.record.answer_ts
    return bool((version is not None and live_v is not None and version != live_v)
                or (version is None and live_ts and message_ts and message_ts != live_ts))


def modal_detail(action: Action | None, payload: str) -> Detail | None:
    """The detail a press opens in a modal (present.actions.MODAL_DETAILS), or None."""
    if action is Action.SHOW_BREAKDOWN:  # posted by earlier versions
        return Detail.BREAKDOWN
    if action is Action.RENT_VS_BUY:
        return Detail.COST
    return next((d for d in MODAL_DETAILS if payload == d), None)
