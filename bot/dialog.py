"""The thread flow: a command starts a thread, questions and replies continue it.

Listeners translate Slack payloads into these calls. The dialog merges what each turn said into
the thread's Draft, stores it with its record (bot/conversation.py: `ThreadRecord`), lets
`next_stage` decide what comes next, has the answer card computed (bot/cards.py) and posted
(bot/replies.py), and retires the card a newer one supersedes. Reading a command before the ack
is bot/intake.py; presses under a card are dispatched by bot/presses.py; details on demand are
bot/details.py; what the bot says when something fails is bot/words.py. Nothing here knows about
HTTP or signatures.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError
from slack_sdk.errors import SlackApiError

from bot.cards import Cards, live_card
from bot.conversation import Conversation, Question, Root, Stage, next_stage
from bot.intake import Intake, off_loop
from bot.limits import Limit
from bot.replies import Notice, Replies, Respond
from bot.store import ConversationStore, Swap
from bot.subcommands import help_message
from bot.words import EXPIRED, STATE_DOWN, SUPERSEDED, UNKNOWN_BUTTON, unusable
from engine import ParseError, UnknownModel, UserError
from engine.i18n import _, current, language
from engine.methods import METHODS
from engine.parse import build_request, parse_fields, read_reply
from engine.reader import Ambiguous
from engine.request import Draft
from present import blockkit, slack
from present.labels import input_text, input_value

log = logging.getLogger(__name__)
Remember = Callable[[str, str, str, str, str], Awaitable[None]]  # team, user, channel, ts, title
FIRST_POST_GRACE_S = 0.5
# "no budget" typed while the budget question is open (the grammar has no word for none)
NO_BUDGET = re.compile(r"\b(no|without|skip)\s+budget\b|^\s*(none|skip|no)\s*[.!]?\s*$|"
                       r"不设预算|没有预算|无预算|不限预算", re.IGNORECASE)


class Dialog:
    def __init__(self, replies: Replies, store: ConversationStore, intake: Intake,
                 cards: Cards) -> None:
        self.replies = replies
        self.store = store
        self.intake = intake
        self.cards = cards
        # told of every card posted for someone (App Home lists their recent answers)
        self.remember: Remember | None = None

    # -- starting a thread ------------------------------------------------------------------------

    async def command(self, *, team: str, channel: str, user: str, draft: Draft,
                      respond: Respond, text: str = "") -> None:
        """After the ack: post the answer (or the first question) in the channel."""
        stage = next_stage(draft)
        if stage is Stage.METHOD:
            await self._ask_method(team=team, channel=channel, user=user, draft=draft,
                                   respond=respond)
            return
        card = slack.CardInput(version=1, user=user,
                               asked=text or slack.command_text(draft.values))
        message = await self.cards.answer(
            team, draft, card,
            tell=lambda text: self.replies.respond(respond, response_type="ephemeral", text=text))
        if message is None:
            return
        posted = await self.replies.post(channel=channel, respond=respond,
                                         blocks=message["blocks"], text=message["text"])
        if posted is None:
            return
        if self.remember is not None:
            await self.remember(team, user, channel, posted, message["text"])
        try:
            # the thread's first version is 1: the version the card's buttons carry
            await self.store.update(team, channel, posted, user=user, change=draft, stage=stage,
                                    record={**live_card(posted, 1, message),
                                            "created_by": user, "root": Root.CARD,
                                            "lang": current()},
                                    note="command")
        except RedisError:
            log.warning("state store unavailable; answered without a thread")
            await self.replies.say(channel, posted, _(STATE_DOWN))

    async def mention_start(self, *, team: str, channel: str, ts: str, user: str,
                            text: str, limit: Limit, message_ts: str = "") -> None:
        """`@gpusize 13B lora` in a channel (or a direct message): answer in the mention's
        thread. It opens a thread, so it is admitted as a slash command is
        (`Intake.admit_question`: read, new Hub ids, `limit` on one person's new threads,
        counted once per message, `message_ts`, however often its job runs)."""
        text = re.sub(r"<@[A-Z0-9]+>", " ", text).strip()
        if text.lower() in ("", "help", "?"):
            await self.replies.notice_in_thread(channel, ts, help_message())
            return
        try:
            draft = await self.intake.admit_question(
                text, team=team, user=user, limit=limit,
                attempt=f"msg:{channel}:{message_ts}" if message_ts else "")
        except Ambiguous as err:  # two readings: asked in the thread, never guessed
            await self.replies.say(channel, ts, str(err))
            return
        except UserError as err:
            await self.replies.private(channel, user, f"{err}", ts)
            return
        stage = next_stage(draft)
        if stage is Stage.METHOD:
            await self._ask_method(team=team, channel=channel, user=user, draft=draft,
                                   respond=None, thread_ts=ts)
            return
        update = await self.store.update(team, channel, ts, user=user, change=draft, stage=stage,
                                         record={"created_by": user, "root": Root.MENTION,
                                                 "lang": current()},
                                         note="mention")
        await self._answer_in_thread(team, channel, ts, user, update.conversation, [],
                                     asked=text, how="command")

    async def _ask_method(self, *, team: str, channel: str, user: str, draft: Draft,
                          respond: Respond | None, thread_ts: str | None = None) -> None:
        q = slack.method_question(draft.model or "", 1)
        blocks = blockkit.blocks("question.json.j2", q=q)
        text = blockkit.fallback(q["text"])
        if thread_ts is None:
            posted = await self.replies.post(channel=channel, respond=respond, blocks=blocks,
                                             text=text)
            if posted is None:
                return
            root, asked, where = posted, posted, Root.QUESTION
        else:
            asked = await self.replies.in_thread(channel, thread_ts, text=text, blocks=blocks)
            root, where = thread_ts, Root.MENTION
        try:
            await self.store.update(team, channel, root, user=user, change=draft,
                                    stage=Stage.METHOD,
                                    record={"created_by": user, "root": where,
                                            "question_ts": asked, "question": Question.METHOD,
                                            "lang": current()},
                                    note="command (incomplete)")
        except RedisError:
            await self.replies.say(channel, root, _(STATE_DOWN))

    # -- answers to the questions (buttons, selects) ------------------------------------------------

    async def _already_answered(self, channel: str, user: str, thread_ts: str,
                                conv: Conversation | None) -> None:
        if conv is None:
            await self.replies.private(channel, user, _(EXPIRED), thread_ts)
            return
        method = conv.inputs.method
        budget = conv.inputs.values.get("budget")
        answer = _(", ").join(part for part in (
            slack.method_title(method) if method else "",
            input_text("budget", budget, self._currency(conv.inputs) or "CNY") if budget
            else "") if part)
        await self.replies.private(channel, user, _(
            "That question has been answered already ({answer}); reply in the thread to change "
            "anything.").format(answer=answer or _("no budget")), thread_ts)

    async def answer_method(self, *, team: str, channel: str, thread_ts: str, user: str,
                            message_ts: str, method: str) -> None:
        _version, method = slack.split_value(method)
        if method not in METHODS:  # no button of ours carries it (a forged payload)
            await self.replies.private(channel, user, _(UNKNOWN_BUTTON), thread_ts)
            return
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.stage is not Stage.METHOD:
            await self._already_answered(channel, user, thread_ts, conv)
            return
        change = Draft({"method": method})
        stage = next_stage(conv.inputs.merged(change), answered=Stage.METHOD)
        update = await self.store.update(team, channel, thread_ts, user=user, change=change,
                                         stage=stage, record={"question_ts": None},
                                         note="answered method")
        if stage is not Stage.DONE or conv.record.root is not Root.QUESTION:
            # a root question becomes the verdict once the answer is in
            q_text = slack.method_question(conv.inputs.model or "", 0)["text"]
            await self.replies.update(channel, message_ts, Notice(
                slack.answered(q_text, slack.method_title(method))[0], context=_("answered"),
                user=user))
        if stage is Stage.DONE:
            await self._answer_in_thread(team, channel, thread_ts, user, update.conversation, [],
                                         asked=slack.method_title(method), how="press")
            return
        await self._ask_budget(team, channel, thread_ts, user, update.conversation)

    async def _ask_budget(self, team: str, channel: str, thread_ts: str, user: str,
                          conv: Conversation) -> None:
        """The second question, whichever way the method was answered (button or typed)."""
        inputs = conv.inputs
        q = slack.budget_question(conv.version, self._currency(inputs) or "CNY",
                                  int(inputs.values.get("months") or 36))
        asked = await self.replies.in_thread(channel, thread_ts,
                                             text=blockkit.fallback(q["text"]),
                                             blocks=blockkit.blocks("question.json.j2", q=q))
        with contextlib.suppress(RedisError):
            await self.store.update(team, channel, thread_ts, user=user,
                                    record={"question_ts": asked, "question": Question.BUDGET},
                                    note="asked budget")

    async def answer_budget(self, *, team: str, channel: str, thread_ts: str, user: str,
                            message_ts: str, budget: str | None) -> None:
        _version, value = slack.split_value(budget or "")
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.stage is not Stage.BUDGET:
            await self._already_answered(channel, user, thread_ts, conv)
            return
        currency = self._currency(conv.inputs) or "CNY"
        change, label = Draft(), _("no budget")
        chosen = slack.budget_choice(value, currency, int(conv.inputs.values.get("months") or 36))
        if chosen is not None:
            change, label = Draft(chosen[0]), chosen[1]
        elif value and value != "none":  # a select made before buy/rent were told apart
            change = parse_fields(f"budget={value}", require_model=False)
            label = value
        inputs = conv.inputs.merged(change)
        update = await self.store.update(team, channel, thread_ts, user=user, change=change,
                                         stage=next_stage(inputs, answered=Stage.BUDGET),
                                         record={"question_ts": None}, note="answered budget")
        await self.replies.update(channel, message_ts, Notice(
            slack.answered(_("Budget"), label)[0], context=_("answered"), user=user))
        await self._answer_in_thread(team, channel, thread_ts, user, update.conversation,
                                     update.changes(change), asked=label, how="press")

    # -- follow-ups (typed, or what-if buttons) ------------------------------------------------------

    @staticmethod
    def _currency(draft: Draft) -> str | None:
        """The currency a thread's amounts are in (None: not a complete request yet)."""
        try:
            return build_request(draft).answer_currency
        except (ParseError, ValueError):
            return None

    async def follow_up(self, *, team: str, channel: str, thread_ts: str, user: str,
                        text: str | None = None, change: Draft | None = None,
                        named: bool = False) -> bool:
        """Apply a change to the thread's request and answer again. False: not our thread or
        nothing the bot understood (people talk in threads too). A `change` without `text` is
        a button press."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None:
            # the bot stores a thread right after posting its first message: a reply typed in
            # that instant gets one more look before it is taken for someone else's thread
            await asyncio.sleep(FIRST_POST_GRACE_S)
            conv = await self.store.get(team, channel, thread_ts)
        if conv is None:
            return False
        pressed = change is not None
        if change is None:
            try:
                # off the event loop: no reply, however long, holds up anyone else (issue 26)
                change = await off_loop(read_reply, text or "")
            except Ambiguous as err:  # two readings: asked in the thread, never guessed
                await self.replies.say(channel, thread_ts, str(err))
                return True
            except ParseError as err:
                await self.replies.private(channel, user, unusable(err), thread_ts)
                return True
            if change is None:
                if conv.stage is Stage.BUDGET and NO_BUDGET.search(text or ""):
                    await self._no_budget(conv, channel, user, text or "")
                    return True
                if named:  # the bot was named and nothing read: say how to change the answer
                    await self.replies.private(channel, user, _(
                        "I read nothing to change in that. Reply with what to change, for "
                        "example: {examples}.").format(examples=_(slack.REPLY_EXAMPLES)),
                        thread_ts)
                    return True
                return False
        notes: list[str] = []
        method = conv.inputs.merged(change).method
        if ("context" in change.values and "seq" not in change.values and method
                and METHODS[method].training):
            # people say "8k context" of a training run too: it is the sequence length there
            values = {k: v for k, v in change.values.items() if k != "context"}
            change = Draft({**values, "seq": change.values["context"]})
            notes.append(_("On a training run, context means the sequence length: seq = "
                           "{count:,} tokens.").format(count=change.values["seq"]))
        try:
            self.intake.validate(conv.inputs.merged(change))
        except ParseError as err:
            if "quant=" in err.token and "quant" in conv.inputs.values \
                    and "quant" not in change.values:
                # a method switch drops a format it cannot use
                change = Draft({**change.values, "quant": None})
            else:
                await self.replies.private(channel, user, unusable(err), thread_ts)
                return True
        except UnknownModel as err:
            await self.replies.private(channel, user, str(err), thread_ts)
            return True
        merged = conv.inputs.merged(change)
        if merged.values == conv.inputs.values:
            if not pressed:  # a press that changes nothing posts nothing
                await self._nothing_to_change(channel, user, thread_ts, change, merged)
            return True
        before, after = self._currency(conv.inputs), self._currency(merged)
        if before and after and before != after:
            notes.append(_("Amounts are now in {new}, not {old}, as the reply says; reply "
                           "“currency={old}” to switch back.").format(new=after, old=before))
        # a method typed in answer to the question leads to the same next question as the
        # buttons do
        stage = next_stage(merged, answered=Stage.METHOD if conv.stage is Stage.METHOD else None)
        update = await self.store.update(team, channel, thread_ts, user=user, change=change,
                                         stage=stage, note="follow-up")
        changes = update.changes(change)
        if not changes:  # the same change arrived twice at once: the first one answers
            if not pressed:  # and the second replier hears it, as if they had come later
                await self._nothing_to_change(channel, user, thread_ts, change, merged)
            return True
        if stage is Stage.METHOD:
            await self.replies.say(channel, thread_ts, _(
                "Noted. Which method: full-finetune, lora, qlora, inference or pretrain?"))
            return True
        await self._close_question(conv, channel, user, update.conversation,
                                   final=stage is Stage.DONE)
        if stage is Stage.BUDGET:
            await self._ask_budget(team, channel, thread_ts, user, update.conversation)
            return True
        pressed_label = slack.changes_text([(k, None, v) for k, v in change.values.items()],
                                           after or "CNY")
        await self._answer_in_thread(team, channel, thread_ts, user, update.conversation,
                                     changes, asked=text or pressed_label,
                                     how="reply" if text else "press", notes=notes)
        return True

    async def _nothing_to_change(self, channel: str, user: str, thread_ts: str, change: Draft,
                                 merged: Draft) -> None:
        """Said to the replier alone: the thread keeps the decision and its changes."""
        await self.replies.private(channel, user, _("Nothing to change: {what} already.").format(
            what=slack.changes_text([(k, None, v) for k, v in change.values.items()],
                                    self._currency(merged) or "CNY")), thread_ts)

    async def _no_budget(self, conv: Conversation, channel: str, user: str, text: str) -> None:
        """"no budget" typed in answer to the budget question: as the button says it."""
        update = await self.store.update(conv.team, channel, conv.thread_ts, user=user,
                                         stage=Stage.DONE, note="answered budget")
        await self._close_question(conv, channel, user, update.conversation)
        await self._answer_in_thread(conv.team, channel, conv.thread_ts, user,
                                     update.conversation, [], asked=text, how="reply")

    async def _close_question(self, conv: Conversation, channel: str, user: str,
                              now: Conversation, *, final: bool = True) -> None:
        """A question answered by typing loses its buttons and says what was answered."""
        ts, kind = conv.record.question_ts, conv.record.question
        if not ts or conv.stage is Stage.DONE:
            return
        if kind is Question.METHOD and conv.record.root is Root.QUESTION and final:
            return  # the root question becomes the verdict line with the answer
        currency = self._currency(now.inputs) or "CNY"
        if kind is Question.METHOD:
            text = slack.method_question(conv.inputs.model or "", 0)["text"]
            answer = slack.method_title(now.inputs.method or "")
        else:
            text = _("Budget")
            budget = now.inputs.values.get("budget")
            answer = input_value("budget", budget, currency) if budget else _("no budget")
        with contextlib.suppress(SlackApiError):
            await self.replies.update(channel, ts, Notice(slack.answered(text, answer)[0],
                                                          context=_("answered in the thread"),
                                                          user=user))
        with contextlib.suppress(RedisError):
            await self.store.update(conv.team, channel, conv.thread_ts, user=user,
                                    record={"question_ts": None}, note="question closed")

    async def _answer_in_thread(self, team: str, channel: str, thread_ts: str, user: str,
                                conv: Conversation, changes: list[tuple[str, Any, Any]], *,
                                asked: str = "", how: str = "command",
                                notes: list[str] | None = None) -> None:
        """Answer in the thread: a card when the recommendation changed (the previous card
        retired), one line when it did not (the live card refreshed in place)."""
        previous = conv.record.result
        version = conv.version
        card = slack.CardInput(version=version, user=user, asked=asked, how=how,
                               changes=tuple(changes), previous=previous,
                               notes=tuple(notes or ()))
        # the card in the thread's language; a one-liner in the language of who replied
        with language(conv.record.lang or current()):
            message = await self.cards.answer(
                team, conv.inputs, card,
                tell=lambda text: self.replies.private(channel, user, text, thread_ts))
        if message is None:
            return
        live = conv.record.answer_ts
        if message["same"] and live:
            swapped: Swap | None = None  # None: no store
            with contextlib.suppress(RedisError):
                # the live card stays as it is, its buttons valid (their version kept); only the
                # result the next answer compares with moves. Only if `live` is still the live
                # answer: a concurrent answer may have posted a card since
                swapped, _replaced = await self.store.swap_card(
                    team, channel, thread_ts, version=conv.card_version or version,
                    record={"result": message["result"]}, expect_ts=live)
            if swapped is not Swap.MOVED:
                line = slack.same_line(tuple(changes), message["result"], previous or {},
                                       message["result"].get("currency") or "CNY")
                await self.replies.say(channel, thread_ts, "\n".join([line, *(notes or [])]))
                return
            # another card went live meanwhile: this answer is posted as a card of its own
        ts = await self.replies.in_thread(channel, thread_ts, text=message["text"],
                                          blocks=message["blocks"])
        if self.remember is not None:
            await self.remember(team, user, channel, ts, message["text"])
        # bookkeeping only: the change and the answer are already in, so a failure here must not
        # tell anyone the thread failed
        mine = live_card(ts, version, message)
        try:
            swapped, old = await self.store.swap_card(team, channel, thread_ts, version=version,
                                                      record=mine)
        except RedisError:
            return
        if swapped is Swap.NEWER_LIVE:  # a newer answer landed while this one was computed
            await self._retire(channel, ts, mine["card"])
            return
        if old.answer_ts and old.card is not None and old.answer_ts != ts:
            await self._retire(channel, old.answer_ts, old.card)
        if conv.record.root is Root.QUESTION:
            who = conv.record.created_by or ""
            with contextlib.suppress(SlackApiError):
                await self.replies.update(channel, thread_ts, Notice(
                    message["verdict"], context=_("asked; details in the thread") if who else "",
                    user=who))

    async def _retire(self, channel: str, ts: str, card: dict[str, Any]) -> None:
        """An older answer keeps its figures but loses its buttons and says it is superseded."""
        blocks = [*card.get("blocks", []), {
            "type": "context", "block_id": f"superseded-{ts}"[:255],
            "elements": [{"type": "mrkdwn", "text": blockkit.mrkdwn(_(SUPERSEDED))}]}][-50:]
        with contextlib.suppress(SlackApiError):
            await self.replies.edit(channel, ts, blocks=blocks,
                                    text=blockkit.fallback(_("(superseded) ") + card.get("text", "")))
