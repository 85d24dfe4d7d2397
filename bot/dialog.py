"""The conversation: a command starts it, buttons and typed replies continue it.

Listeners translate Slack payloads into these calls. The dialog merges what each turn said into
the thread's Draft, stores it, lets `next_stage` decide what comes next, and has the answer
computed (bot.workers) and posted (bot.replies). Nothing here knows about HTTP or signatures.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from typing import Any

from redis.exceptions import RedisError

from bot import workers
from bot.conversation import Stage, next_stage
from bot.observability import ENGINE_SECONDS, REDIS_ERRORS
from bot.pricestore import PriceStore
from bot.replies import Notice, Replies, Respond
from bot.store import ConversationStore
from engine import ParseError, UnknownModel
from engine.i18n import N_, _, current
from engine.parse import build_request, parse_fields, read_reply
from engine.prices import PriceBook
from engine.request import Draft
from engine.resolve import HubLookup, resolve_model
from present import blockkit, slack

log = logging.getLogger("gpusize.bot")
FIRST_POST_GRACE_S = 0.5
STATE_DOWN = N_("I could not save this conversation right now, so replies in this thread will "
                "not reach me; ask again with /gpusize later.")


def couldnt_use(err: Exception) -> str:
    return _("I could not use that: {error}").format(error=err)


def help_message() -> Notice:
    return Notice(slack.help_text())


class Dialog:
    def __init__(self, replies: Replies, store: ConversationStore, prices: PriceStore,
                 hub: HubLookup | None = None) -> None:
        self.replies = replies
        self.store = store
        self.prices = prices
        self.hub = hub

    # -- reading and checking what was asked ------------------------------------------------------

    def check(self, text: str) -> Draft:
        """A command line as a Draft, validated as far as it goes (ParseError / UnknownModel)."""
        draft = parse_fields(text)
        if draft.model is None:
            raise ParseError("missing MODEL: start with a size like 13B or a name like "
                             "llama-3.1-8b.")
        self._validate(draft)
        return draft

    def _validate(self, draft: Draft) -> None:
        if draft.method is not None:
            build_request(draft)
        if draft.model is not None:
            resolve_model(draft.model, hub=self.hub)

    async def _book(self, team: str) -> PriceBook | None:
        """This workspace's prices (catalog, feeds, its quotes); the bundled catalog if Redis
        cannot be read."""
        try:
            return await self.prices.book_for(team)
        except RedisError:
            REDIS_ERRORS.labels("prices").inc()
            return None

    async def _answer_message(self, team: str, draft: Draft, version: int,
                              changes: list[tuple[str, Any, Any]] | None = None,
                              user: str | None = None) -> dict[str, Any]:
        book = await self._book(team)
        start = time.perf_counter()
        message = await workers.run(workers.answer_message, draft, version, changes or [], user,
                                    book, current())
        ENGINE_SECONDS.observe(time.perf_counter() - start)
        top = message.pop("top_gpu")
        if top:
            with contextlib.suppress(RedisError):
                await self.prices.note_asked(team, top)
        return message

    # -- starting a thread ------------------------------------------------------------------------

    async def command(self, *, team: str, channel: str, user: str, draft: Draft,
                      respond: Respond) -> None:
        """After the ack: post the answer (or the first question) in the channel."""
        stage = next_stage(draft)
        if stage is Stage.METHOD:
            await self._ask_method(team=team, channel=channel, user=user, draft=draft,
                                   respond=respond)
            return
        message = await self._answer_message(team, draft, 1)
        posted = await self.replies.post(channel=channel, respond=respond, **message)
        if posted is None:
            return
        try:
            await self.store.update(team, channel, posted, user=user, change=draft, stage=stage,
                                    meta={"_answer_ts": posted, "_created_by": user},
                                    note="command")
        except RedisError:
            log.warning("state store unavailable; answered without a thread")
            await self.replies.say(channel, posted, _(STATE_DOWN))

    async def mention_start(self, *, team: str, channel: str, ts: str, user: str,
                            text: str) -> None:
        """`@gpusize 13B lora` in a channel: answer in the mention's thread."""
        text = re.sub(r"<@[A-Z0-9]+>", " ", text).strip()
        if text.lower() in ("", "help", "?"):
            await self.replies.notice_in_thread(channel, ts, help_message())
            return
        try:
            draft = self.check(text)
        except (ParseError, UnknownModel) as err:
            await self.replies.private(channel, user, f"{err}", ts)
            return
        stage = next_stage(draft)
        if stage is Stage.METHOD:
            await self._ask_method(team=team, channel=channel, user=user, draft=draft,
                                   respond=None, thread_ts=ts)
            return
        await self.store.update(team, channel, ts, user=user, change=draft, stage=stage,
                                meta={"_created_by": user}, note="mention")
        await self._answer_in_thread(team, channel, ts, user, draft, [])

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
            root = posted
        else:
            await self.replies.in_thread(channel, thread_ts, text=text, blocks=blocks)
            root = thread_ts
        try:
            await self.store.update(team, channel, root, user=user, change=draft,
                                    stage=Stage.METHOD, meta={"_created_by": user},
                                    note="command (incomplete)")
        except RedisError:
            await self.replies.say(channel, root, _(STATE_DOWN))

    # -- answers to the questions (buttons, selects) ------------------------------------------------

    async def answer_method(self, *, team: str, channel: str, thread_ts: str, user: str,
                            message_ts: str, method: str) -> None:
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.stage is not Stage.METHOD:
            return
        change = Draft({"method": method})
        stage = next_stage(conv.inputs.merged(change), answered=Stage.METHOD)
        update = await self.store.update(team, channel, thread_ts, user=user, change=change,
                                         stage=stage, note="answered method")
        q_text = slack.method_question(conv.inputs.model or "", 0)["text"]
        await self.replies.update(channel, message_ts, Notice(
            slack.answered(q_text, slack.method_title(method))[0], context="answered", user=user))
        inputs = update.conversation.inputs
        if stage is Stage.DONE:
            await self._answer_in_thread(team, channel, thread_ts, user, inputs, [])
            return
        currency = inputs.values.get("currency") or "CNY"
        q = slack.budget_question(update.conversation.version, currency)
        await self.replies.in_thread(channel, thread_ts, text=blockkit.fallback(q["text"]),
                                     blocks=blockkit.blocks("question.json.j2", q=q))

    async def answer_budget(self, *, team: str, channel: str, thread_ts: str, user: str,
                            message_ts: str, budget: str | None) -> None:
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.stage is not Stage.BUDGET:
            return
        change = Draft()
        label = _("no budget")
        if budget:
            change = parse_fields(f"budget={budget}", require_model=False)
            label = budget
        inputs = conv.inputs.merged(change)
        await self.store.update(team, channel, thread_ts, user=user, change=change,
                                stage=next_stage(inputs, answered=Stage.BUDGET),
                                note="answered budget")
        await self.replies.update(channel, message_ts, Notice(
            slack.answered(_("Budget"), label)[0], context="answered", user=user))
        await self._answer_in_thread(team, channel, thread_ts, user, inputs, [])

    # -- follow-ups (typed, or what-if buttons) ------------------------------------------------------

    async def follow_up(self, *, team: str, channel: str, thread_ts: str, user: str,
                        text: str | None = None, change: Draft | None = None) -> bool:
        """Apply a change to the thread's request and answer again. False: not our thread or
        nothing the bot understood (people talk in threads too)."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None:
            # the bot stores a thread right after posting its first message: a reply typed in
            # that instant gets one more look before it is taken for someone else's thread
            await asyncio.sleep(FIRST_POST_GRACE_S)
            conv = await self.store.get(team, channel, thread_ts)
        if conv is None:
            return False
        if change is None:
            try:
                change = read_reply(text or "")
            except ParseError as err:
                await self.replies.private(channel, user, couldnt_use(err), thread_ts)
                return True
            if change is None:
                return False
        try:
            self._validate(conv.inputs.merged(change))
        except ParseError as err:
            if "quant=" in err.token and "quant" in conv.inputs.values \
                    and "quant" not in change.values:
                # a method switch drops a format it cannot use
                change = Draft({**change.values, "quant": None})
            else:
                await self.replies.private(channel, user, couldnt_use(err), thread_ts)
                return True
        except UnknownModel as err:
            await self.replies.private(channel, user, str(err), thread_ts)
            return True
        stage = next_stage(conv.inputs.merged(change))
        update = await self.store.update(team, channel, thread_ts, user=user, change=change,
                                         stage=stage, note="follow-up")
        if stage is Stage.METHOD:
            await self.replies.say(channel, thread_ts, _(
                "Noted. Which method: full-finetune, lora, qlora, inference or pretrain?"))
            return True
        await self._answer_in_thread(team, channel, thread_ts, user, update.conversation.inputs,
                                     update.changes(change), version=update.conversation.version)
        return True

    async def _answer_in_thread(self, team: str, channel: str, thread_ts: str, user: str,
                                inputs: Draft, changes: list[tuple[str, Any, Any]], *,
                                version: int = 1) -> None:
        message = await self._answer_message(team, inputs, version, changes, user)
        ts = await self.replies.in_thread(channel, thread_ts, **message)
        # bookkeeping only: the change and the answer are already in, so a failure here must not
        # tell anyone the thread failed
        with contextlib.suppress(RedisError):
            await self.store.update(team, channel, thread_ts, user=user,
                                    meta={"_answer_ts": ts}, note="answered")

    # -- more detail on demand ----------------------------------------------------------------------

    async def breakdown(self, *, team: str, channel: str, thread_ts: str,
                        kind: str = "memory") -> None:
        """Post the full memory breakdown, or the rent-vs-buy comparison, in the thread."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.inputs.method is None:
            return
        job = workers.breakdown_sections if kind == "memory" else workers.rent_vs_buy_sections
        sections = await workers.run(job, conv.inputs, await self._book(team), current())
        await self.replies.in_thread(
            channel, thread_ts, text=blockkit.fallback(sections[0]),
            blocks=blockkit.blocks("notice.json.j2", n={"sections": sections, "context": "",
                                                        "user": ""}))

    async def chart(self, *, team: str, channel: str, thread_ts: str, kind: str,
                    card: str = "") -> None:
        """Upload a PNG into the thread: the memory breakdown of the options, or a card's
        price history. The text answer stays for clients without images."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.inputs.method is None:
            return
        lang = current()
        if kind == "memory":
            png = await workers.run(workers.memory_chart_png, conv.inputs,
                                    await self._book(team), lang)
            name, title = "memory.png", _("Memory per GPU, per option")
        else:
            records = [r for r in await self.prices.visible(team) if r.item == card]
            if not records:
                await self.replies.say(channel, thread_ts, _(
                    "No prices recorded for {card}.").format(card=card))
                return
            png = await workers.run(workers.price_chart_png, records, card, lang)
            name, title = f"prices-{card}.png", _("Price history of {card}").format(card=card)
        await self.replies.upload(channel, thread_ts, content=png, filename=name, title=title)
