"""The conversation: a command starts it, buttons and typed follow-ups continue it.

Listeners translate Slack payloads into these calls; this module talks to the engine, the
store and the Slack Web API, and nothing here knows about HTTP or signatures.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import keys, render, views, workers
from bot.followup import parse_followup
from bot.observability import ENGINE_SECONDS, REDIS_ERRORS
from bot.pricestore import PriceStore
from bot.store import ConversationStore
from engine import ParseError, UnknownModel
from engine.i18n import LANGUAGES, N_, _, current, from_locale, language
from engine.parse import Fields, build_request, parse_fields
from engine.prices import PriceBook
from engine.request import Money
from engine.resolve import HubLookup, resolve_model

log = logging.getLogger("gpusize.bot")
Respond = Callable[..., Awaitable[Any]]
FIRST_POST_GRACE_S = 0.5
NOT_IN_CHANNEL = ("not_in_channel", "channel_not_found", "is_archived")
INVITE = N_("I am not in this channel, so the answer is only for you. Invite me with "
            "`/invite @gpusize` and ask again to start a thread the team can follow.")
THREAD_DOWN = N_("I cannot continue this thread right now (my conversation store is not "
                 "answering). `/gpusize MODEL METHOD ...` still answers; the thread works again "
                 "once the store is back.")
APOLOGY = N_("Sorry, I could not answer that just now (Slack or my store failed); please try "
             "again.")
STATE_DOWN = N_("I could not save this conversation right now, so replies in this thread will "
                "not reach me; ask again with /gpusize later.")


@dataclass
class Ephemeral:
    """What to show only to the person who asked (a command's ack)."""

    text: str
    blocks: list[dict[str, Any]]


def notice(text: str, context: str = "") -> Ephemeral:
    visible = render.clean_input(text).strip()  # what is left once reference markers go
    text = text if visible else "(empty)"  # Slack rejects empty text objects
    context = context if render.clean_input(context).strip() else ""
    sections = [text] if len(text) <= 2900 else [text[i:i + 2900] for i in range(0, len(text), 2900)]
    return Ephemeral(text=render.fallback(text), blocks=render.blocks(
        "notice.json.j2", n={"sections": sections, "context": context, "user": ""}))


def couldnt_use(err: Exception) -> str:
    return _("I could not use that: {error}").format(error=err)


def help_message() -> Ephemeral:
    return notice(_(views.HELP))


def fields_to_inputs(fields: Fields) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    if fields.model is not None:
        inputs["model"] = fields.model
    if fields.method is not None:
        inputs["method"] = fields.method
    for name, value in fields.options.items():
        inputs[name] = value.model_dump() if isinstance(value, Money) else value
    return inputs


def inputs_to_fields(inputs: dict[str, Any]) -> Fields:
    options = {k: (Money(**v) if k == "budget" else v) for k, v in inputs.items()
               if k not in ("model", "method")}
    return Fields(model=inputs.get("model"), method=inputs.get("method"), options=options)


def show(name: str, value: Any) -> str:
    if value is None:
        return "—"
    if name == "budget":
        amount = value["amount"]
        text = f"{amount / 1e6:g}M" if amount >= 1e6 else f"{amount / 1e3:g}k"
        return text + (f" {value['currency']}" if value.get("currency") else "")
    return str(value)


def describe_changes(previous: dict[str, Any], inputs: dict[str, Any]) -> list[str]:
    return [f"{name}: {show(name, previous.get(name))} → {show(name, value)}"
            for name, value in inputs.items() if previous.get(name) != value]


class Dialog:
    def __init__(self, client: AsyncWebClient, store: ConversationStore,
                 prices: PriceStore, hub: HubLookup | None = None) -> None:
        self.client = client
        self.store = store
        self.prices = prices
        self.hub = hub

    async def _book(self, team: str) -> PriceBook | None:
        """This workspace's prices (catalog, feeds, its quotes); the bundled catalog if Redis
        cannot be read."""
        try:
            return await self.prices.book_for(team)
        except RedisError:
            REDIS_ERRORS.labels("prices").inc()
            return None

    async def language_for(self, team: str, user: str) -> str:
        """The person's language: their /gpusize lang choice, else the workspace's, else their
        Slack locale (users.info, cached a day), else English."""
        # runs before a command's ack: every outside call is capped well under Slack's 3 s
        with contextlib.suppress(RedisError, OSError, TimeoutError):
            prefs = await asyncio.wait_for(self.store.redis.hgetall(keys.language(team)), 0.5)
            for key in (f"user:{user}", "workspace"):
                if prefs.get(key) in LANGUAGES:
                    return prefs[key]
            cached = await asyncio.wait_for(
                self.store.redis.get(keys.user_locale(team, user)), 0.5)
            if cached in LANGUAGES:
                return cached
        lang = "en"
        with contextlib.suppress(Exception):
            info = await asyncio.wait_for(self.client.users_info(user=user, include_locale=True),
                                          1.0)
            lang = from_locale((info.get("user") or {}).get("locale"))
        with contextlib.suppress(RedisError, OSError):
            await self.store.redis.set(keys.user_locale(team, user), lang, ex=86400)
        return lang

    async def set_language(self, team: str, user: str, words: list[str]) -> str:
        """`/gpusize lang zh|en|auto [workspace]`."""
        choice = words[0].lower() if words else ""
        if choice not in (*LANGUAGES, "auto"):
            raise ParseError(_("lang takes zh, en or auto, optionally followed by workspace."))
        scope = "workspace" if len(words) > 1 and words[1].lower() in ("workspace", "team",
                                                                       "工作区") else f"user:{user}"
        if choice == "auto":
            await self.store.redis.hdel(keys.language(team), scope)
        else:
            await self.store.redis.hset(keys.language(team), scope, choice)
        with language(choice if choice in LANGUAGES else "en"):
            who = _("this workspace") if scope == "workspace" else _("you")
            return _("Language for {who}: {choice}.").format(who=who, choice=choice)

    async def _compose(self, team: str, fields: Fields, version: int,
                       changes: list[str] | None = None, user: str | None = None
                       ) -> dict[str, Any]:
        book = await self._book(team)
        start = time.perf_counter()
        message = await workers.run(workers.compose, fields, version, changes, user, book,
                                    current())
        ENGINE_SECONDS.observe(time.perf_counter() - start)
        top = message.pop("top_gpu")
        if top:
            with contextlib.suppress(RedisError):
                await self.prices.note_asked(team, top)
        return message

    # -- engine (answers themselves run in bot.workers) ------------------------------------------

    def check(self, text: str) -> Fields:
        """Validate a command line without answering it (ParseError / UnknownModel)."""
        fields = parse_fields(text)
        if fields.model is None:
            raise ParseError("missing MODEL: start with a size like 13B or a name like "
                             "llama-3.1-8b.")
        resolve_model(fields.model, hub=self.hub)
        if fields.method is not None:
            build_request(fields)
        return fields

    # -- the slash command ---------------------------------------------------------------------

    async def command(self, *, team: str, channel: str, user: str, fields: Fields,
                      respond: Respond) -> None:
        """After the ack: post the answer (or the first question) in the channel."""
        inputs = fields_to_inputs(fields)
        if fields.method is None:
            await self._ask_method(team=team, channel=channel, user=user, inputs=inputs,
                                   respond=respond)
            return
        message = await self._compose(team, fields, 1)
        posted = await self._post(channel=channel, respond=respond, **message)
        if posted is None:
            return
        try:
            await self.store.update(team, channel, posted, user=user, inputs=inputs,
                                    meta={"_stage": "done", "_answer_ts": posted,
                                          "_created_by": user}, note="command")
        except RedisError:
            log.warning("state store unavailable; answered without a thread")
            await self._say(channel, posted, _(STATE_DOWN))

    async def _ask_method(self, *, team: str, channel: str, user: str, inputs: dict[str, Any],
                          respond: Respond | None, thread_ts: str | None = None) -> None:
        q = views.method_question(inputs["model"], 1)
        blocks = render.blocks("question.json.j2", q=q)
        text = render.fallback(q["text"])
        if thread_ts is None:
            posted = await self._post(channel=channel, respond=respond, blocks=blocks, text=text)
            if posted is None:
                return
        else:
            await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts,
                                               blocks=blocks, text=text)
        root = thread_ts or posted
        try:
            await self.store.update(team, channel, root, user=user, inputs=inputs,
                                    meta={"_stage": "method", "_created_by": user},
                                    note="command (incomplete)")
        except RedisError:
            await self._say(channel, root, _(STATE_DOWN))

    async def mention_start(self, *, team: str, channel: str, ts: str, user: str,
                            text: str) -> None:
        """`@gpusize 13B lora` in a channel: answer in the mention's thread."""
        text = re.sub(r"<@[A-Z0-9]+>", " ", text).strip()
        if text.lower() in ("", "help", "?"):
            msg = help_message()
            await self.client.chat_postMessage(channel=channel, thread_ts=ts, text=msg.text,
                                               blocks=msg.blocks)
            return
        try:
            fields = self.check(text)
        except (ParseError, UnknownModel) as err:
            await self._ephemeral(channel, user, f"{err}", ts)
            return
        inputs = fields_to_inputs(fields)
        if fields.method is None:
            await self._ask_method(team=team, channel=channel, user=user, inputs=inputs,
                                   respond=None, thread_ts=ts)
            return
        await self.store.update(team, channel, ts, user=user, inputs=inputs,
                                meta={"_stage": "done", "_created_by": user}, note="mention")
        await self._answer_in_thread(team, channel, ts, user, inputs, [])

    # -- answers to questions (buttons, selects) -------------------------------------------------

    async def answer_method(self, *, team: str, channel: str, thread_ts: str, user: str,
                            message_ts: str, method: str) -> None:
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.stage != "method":
            return
        update = await self.store.update(team, channel, thread_ts, user=user,
                                         inputs={"method": method}, meta={"_stage": "budget"},
                                         note="answered method")
        q_text = views.method_question(conv.inputs.get("model", ""), 0)["text"]
        await self._update(channel, message_ts, views.answered(q_text, views.METHOD_LABELS.get(
            method, method)), user)
        inputs = update.conversation.inputs
        if "budget" in inputs:
            await self._answer_in_thread(team, channel, thread_ts, user, inputs, [], stage="done")
            return
        currency = inputs.get("currency") or "CNY"
        q = views.budget_question(update.conversation.version, currency)
        await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts,
                                           blocks=render.blocks("question.json.j2", q=q),
                                           text=render.fallback(q["text"]))

    async def answer_budget(self, *, team: str, channel: str, thread_ts: str, user: str,
                            message_ts: str, budget: str | None) -> None:
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.stage != "budget":
            return
        inputs: dict[str, Any] = {}
        label = _("no budget")
        if budget:
            fields = parse_fields(f"budget={budget}", require_model=False)
            inputs = fields_to_inputs(fields)
            label = budget
        await self.store.update(team, channel, thread_ts, user=user, inputs=inputs,
                                meta={"_stage": "done"}, note="answered budget")
        await self._update(channel, message_ts, views.answered(_("Budget"), label), user)
        merged = {**conv.inputs, **inputs}
        await self._answer_in_thread(team, channel, thread_ts, user, merged, [], stage="done")

    # -- follow-ups (typed, or what-if buttons) ----------------------------------------------------

    async def follow_up(self, *, team: str, channel: str, thread_ts: str, user: str,
                        text: str | None = None, inputs: dict[str, Any] | None = None) -> bool:
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
        if inputs is None:
            try:
                fields = parse_followup(text or "")
            except ParseError as err:
                await self._ephemeral(channel, user, couldnt_use(err), thread_ts)
                return True
            if fields is None:
                return False
            inputs = fields_to_inputs(fields)
        merged = {**conv.inputs, **inputs}
        try:
            self._validate(merged)
        except ParseError as err:
            if "quant=" in err.token and "quant" in merged and "quant" not in inputs:
                inputs = {**inputs, "quant": None}  # a method switch drops a format it cannot use
                merged.pop("quant")
            else:
                await self._ephemeral(channel, user, couldnt_use(err), thread_ts)
                return True
        except UnknownModel as err:
            await self._ephemeral(channel, user, str(err), thread_ts)
            return True
        stage = "done" if "method" in merged else conv.stage
        update = await self.store.update(team, channel, thread_ts, user=user, inputs=inputs,
                                         meta={"_stage": stage}, note="follow-up")
        changes = describe_changes(update.previous, inputs)
        merged = update.conversation.inputs
        if "method" not in merged:
            await self._say(channel, thread_ts, _("Noted. Which method: full-finetune, lora, "
                                                  "qlora, inference or pretrain?"))
            return True
        await self._answer_in_thread(team, channel, thread_ts, user, merged, changes,
                                     version=update.conversation.version)
        return True

    async def breakdown(self, *, team: str, channel: str, thread_ts: str,
                        kind: str = "memory") -> None:
        """Post the full memory breakdown, or the rent-vs-buy comparison, in the thread."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or "method" not in conv.inputs:
            return
        work = workers.breakdown if kind == "memory" else workers.rent_vs_buy
        sections = await workers.run(work, inputs_to_fields(conv.inputs), await self._book(team),
                                     current())
        await self.client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, text=render.fallback(sections[0]),
            blocks=render.blocks("notice.json.j2", n={"sections": sections, "context": "", "user": ""}))

    async def chart(self, *, team: str, channel: str, thread_ts: str, kind: str,
                    card: str = "") -> None:
        """Upload a PNG into the thread: the memory breakdown of the options, or a card's
        price history. The text answer stays for clients without images."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or "method" not in conv.inputs:
            return
        lang = current()
        if kind == "memory":
            png = await workers.run(workers.memory_chart, inputs_to_fields(conv.inputs),
                                    await self._book(team), lang)
            name, title = "memory.png", _("Memory per GPU, per option")
        else:
            records = [r for r in await self.prices.visible(team) if r.item == card]
            if not records:
                await self._say(channel, thread_ts, _("No prices recorded for {card}.").format(
                    card=card))
                return
            png = await workers.run(workers.price_chart, records, card, lang)
            name, title = f"prices-{card}.png", _("Price history of {card}").format(card=card)
        await self.client.files_upload_v2(channel=channel, thread_ts=thread_ts, content=png,
                                          filename=name, title=title)

    # -- helpers -------------------------------------------------------------------------------

    def _validate(self, inputs: dict[str, Any]) -> None:
        fields = inputs_to_fields(inputs)
        if fields.method is not None:
            build_request(fields)
        if fields.model is not None:
            resolve_model(fields.model, hub=self.hub)

    async def _answer_in_thread(self, team: str, channel: str, thread_ts: str, user: str,
                                inputs: dict[str, Any], changes: list[str], *,
                                stage: str | None = None, version: int = 1) -> None:
        message = await self._compose(team, inputs_to_fields(inputs), version, changes, user)
        resp = await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, **message)
        meta = {"_answer_ts": str(resp["ts"])}
        if stage:
            meta["_stage"] = stage
        # bookkeeping only: the change and the answer are already in, so a failure here must not
        # tell anyone the thread failed
        with contextlib.suppress(RedisError):
            await self.store.update(team, channel, thread_ts, user=user, meta=meta,
                                    note="answered")

    async def _post(self, *, channel: str, respond: Respond, blocks: list[dict[str, Any]],
                    text: str) -> str | None:
        """Post in the channel; if the bot is not a member, answer the asker privately."""
        try:
            resp = await self.client.chat_postMessage(channel=channel, blocks=blocks, text=text)
            return str(resp["ts"])
        except SlackApiError as err:
            if err.response.get("error") not in NOT_IN_CHANNEL:
                raise
        await respond(response_type="ephemeral", replace_original=False, text=text,
                      blocks=[*blocks, {"type": "context", "elements": [
                          {"type": "mrkdwn", "text": _(INVITE)}]}][:50])
        return None

    async def _update(self, channel: str, ts: str, sections: list[str], user: str) -> None:
        await self.client.chat_update(
            channel=channel, ts=ts, text=render.fallback(sections[0]),
            blocks=render.blocks("notice.json.j2", n={"sections": sections, "user": user,
                                                      "context": "answered"}))

    async def _say(self, channel: str, thread_ts: str, text: str) -> None:
        await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts,
                                           text=render.fallback(text))

    async def apologise(self, channel: str, user: str, thread_ts: str | None, *,
                        store_down: bool) -> None:
        """Best effort: tell the person instead of leaving them in silence."""
        with contextlib.suppress(Exception):
            await self._ephemeral(channel, user, _(THREAD_DOWN) if store_down else _(APOLOGY),
                                  thread_ts or "")

    async def _ephemeral(self, channel: str, user: str, text: str, thread_ts: str) -> None:
        note = notice(text)
        extra = {"thread_ts": thread_ts} if thread_ts else {}
        await self.client.chat_postEphemeral(channel=channel, user=user, text=note.text,
                                             blocks=note.blocks, **extra)
