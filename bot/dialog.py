"""The conversation: a command starts it, buttons and typed replies continue it.

Listeners translate Slack payloads into these calls. The dialog merges what each turn said into
the thread's Draft, stores it, lets `next_stage` decide what comes next, and has the answer
computed (bot.workers) and posted (bot.replies). Nothing here knows about HTTP or signatures.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import functools
import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from prometheus_client import Counter
from pydantic import ValidationError
from redis.exceptions import RedisError
from slack_sdk.errors import SlackApiError

from bot import keys, workers
from bot.conversation import Conversation, Stage, next_stage
from bot.limits import Limit, allow
from bot.observability import ENGINE_SECONDS, REDIS_ERRORS
from bot.pricecommands import KIND_TEXT
from bot.pricestore import PriceStore
from bot.replies import Notice, Replies, Respond
from bot.store import MOVED, ConversationStore
from engine import ParseError, UnknownModel, catalog
from engine import hub as hub_cache
from engine.architecture import ModelSpec
from engine.family import parse_size
from engine.i18n import N_, _, current
from engine.methods import METHODS
from engine.parse import build_request, parse_fields, read_reply, validation_problem
from engine.prices import PriceBook
from engine.request import Draft
from engine.resolve import HubLookup, resolve_model
from present import blockkit, slack
from present.labels import input_text, input_value

log = logging.getLogger("gpusize.bot")
CHART_CACHE = Counter("gpusize_chart_cache_total", "chart PNGs reused or drawn", ["outcome"])
FIRST_POST_GRACE_S = 0.5
# "no budget" typed while the budget question is open (the grammar has no word for none)
NO_BUDGET = re.compile(r"\b(no|without|skip)\s+budget\b|^\s*(none|skip|no)\s*[.!]?\s*$|"
                       r"不设预算|没有预算|无预算|不限预算", re.IGNORECASE)
STALE = N_("That button is on an older answer: the thread has moved on since. Use the buttons "
           "on the newest answer, or reply in the thread.")
EXPIRED = N_("This conversation has expired (or was never stored); ask again with /gpusize.")
SUPERSEDED = N_("Superseded: a newer answer is in this thread; its buttons are the live ones.")
# New Hub repo ids one person may have looked up: each costs a request to the Hub and one of
# the look-up threads for up to HUB_TIMEOUT_S
NEW_HUB_MODELS = Limit("hub-new", count=10, window_s=600)
_HUB_THREADS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hub-lookup")
STATE_DOWN = N_("I could not save this conversation right now, so replies in this thread will "
                "not reach me; ask again with /gpusize later.")


class _NotLookedUpYet(LookupError):
    """A Hub repo id the local cache has neither a spec nor a recent miss for."""


def couldnt_use(err: Exception) -> str:
    return _("I could not use that: {error}").format(error=err)


def unusable(err: ParseError) -> str:
    """A reply the bot cannot use, said back to its author: what was read and, where the
    grammar has one, the likely meaning ("I read 300. Did you mean 300k?")."""
    if err.suggestion and err.token:
        return _("I read {token}. Did you mean {suggestion}?").format(
            token=err.token, suggestion=err.suggestion) + "\n" + err.message
    return couldnt_use(err)


NOT_ANSWERED = N_("I could not answer that: {problem}. Nothing was posted; change it and ask "
                 "again (`/gpusize help` shows the grammar).")
APOLOGY = N_("Sorry, something went wrong while answering; nothing was posted. Please try again.")


def failure_text(err: BaseException) -> str:
    """What a person is told when their request fails after the ack: what was wrong with it
    when it was the input (a validation error, an unknown model), else a short apology. Never a
    traceback; the log has the details."""
    if isinstance(err, ValidationError):
        first = (err.errors() or [{}])[0]
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "__root__")
        problem = validation_problem(str(first.get("type", "")), first.get("ctx") or {})
        return _(NOT_ANSWERED).format(problem=f"{where}: {problem}" if where else problem)
    if isinstance(err, ParseError):
        return unusable(err)
    if isinstance(err, UnknownModel):
        return _(NOT_ANSWERED).format(problem=str(err))
    return _(APOLOGY)


def help_message() -> Notice:
    return Notice(slack.help_text())


class Dialog:
    def __init__(self, replies: Replies, store: ConversationStore, prices: PriceStore,
                 hub: HubLookup | None = None, *, chart_cache_s: int = 120) -> None:
        self.replies = replies
        self.store = store
        self.prices = prices
        self.hub = hub
        self.chart_cache_s = chart_cache_s

    # -- reading and checking what was asked ------------------------------------------------------

    def check(self, text: str) -> Draft:
        """A command line as a Draft, validated as far as it goes (ParseError / UnknownModel),
        from what is known here only: a Hub repo id not looked up yet passes (`pending_lookup`)."""
        draft = parse_fields(text)
        if draft.model is None:
            raise ParseError("missing MODEL: start with a size like 13B or a name like "
                             "llama-3.1-8b.")
        self._validate(draft)
        return draft

    def _validate(self, draft: Draft) -> None:
        """Never the network (this runs before Slack's ack, on the event loop): the catalog, the
        family templates and the local Hub cache, hits and remembered misses alike."""
        if draft.method is not None:
            build_request(draft)
        if draft.model is not None:
            # a repo id not looked up yet is accepted for now: looked up after the ack
            with contextlib.suppress(_NotLookedUpYet):
                resolve_model(draft.model, hub=self._hub_cached if self.hub else None)

    @staticmethod
    def _hub_cached(repo_id: str) -> ModelSpec:
        spec = hub_cache.cached(repo_id)  # UnknownModel for a remembered miss
        if spec is None:
            raise _NotLookedUpYet(repo_id)
        return spec

    def pending_lookup(self, draft: Draft) -> str | None:
        """The Hub repo id `draft` names that nobody has looked up yet (it is looked up after the
        ack). None when the model is known here, or known to be missing."""
        model = draft.model
        if (self.hub is None or model is None or "/" not in model
                or catalog.find_model(model) is not None or parse_size(model) is not None):
            return None
        try:
            return model if hub_cache.cached(model) is None else None
        except UnknownModel:
            return None  # a remembered miss: _validate says so

    async def admit(self, text: str, *, team: str, user: str) -> Draft:
        """`check`, then the limit on new Hub repo ids per user (NEW_HUB_MODELS): over it, an
        UnknownModel saying when to try again. Before the ack: local and Redis only."""
        draft = self.check(text)
        await self._allow_lookup(team, user, draft)
        return draft

    async def _allow_lookup(self, team: str, user: str, draft: Draft) -> None:
        """Count a repo id this user has not asked about in this window against the limit; the
        same id again (its command, then its answer) is free. Without Redis it allows."""
        repo = self.pending_lookup(draft)
        if repo is None:
            return
        redis = self.store.redis
        seen = keys.hub_new_model(team, user, repo)
        try:
            if not await redis.set(seen, "1", nx=True, ex=NEW_HUB_MODELS.window_s):
                return
        except (RedisError, OSError):
            return
        verdict = await allow(redis, limit=NEW_HUB_MODELS, team=team, subject=user)
        if verdict.allowed:
            return
        with contextlib.suppress(RedisError, OSError):
            await redis.delete(seen)
        raise UnknownModel(_(
            "{model} is not known here yet, and you have asked for {count} new models in the last "
            "{minutes} minutes, the most the Hugging Face Hub is asked for one person. Try again "
            "in {wait} minutes, or use a catalog model (`/gpusize help`).").format(
            model=repo, count=NEW_HUB_MODELS.count, minutes=NEW_HUB_MODELS.window_s // 60,
            wait=max(1, -(-verdict.retry_after_s // 60))))

    async def _answer_card(self, team: str, draft: Draft, card: slack.CardInput, *,
                           tell: Callable[[str], Awaitable[Any]]) -> dict[str, Any] | None:
        """`_card`, except that a model the Hub does not know (looked up after the ack) or the
        limit on new ones is told to the asker privately: then None."""
        try:
            await self._allow_lookup(team, card.user, draft)
            repo = self.pending_lookup(draft)
            if repo is not None:
                # waiting on the Hub in an I/O thread, not in an answer worker: others' answers
                # do not queue behind a slow Hub; the worker then reads the cache
                lookup = functools.partial(contextvars.copy_context().run, hub_cache.lookup, repo)
                await asyncio.get_running_loop().run_in_executor(_HUB_THREADS, lookup)
            return await self._card(team, draft, card)
        except (UnknownModel, ParseError) as err:
            await tell(str(err))
            return None

    async def _book(self, team: str) -> PriceBook | None:
        """This workspace's prices (catalog, feeds, its quotes); the bundled catalog if Redis
        cannot be read."""
        try:
            return await self.prices.book_for(team)
        except RedisError:
            REDIS_ERRORS.labels("prices").inc()
            return None

    async def _card(self, team: str, draft: Draft, card: slack.CardInput) -> dict[str, Any]:
        """An answer card for `draft`, computed in a worker with this workspace's prices."""
        book = await self._book(team)
        priced = frozenset(p.item for p in book.prices) if book is not None else frozenset()
        start = time.perf_counter()
        message = await workers.run(workers.answer_message, draft,
                                    card._replace(priced=priced), book, current())
        ENGINE_SECONDS.observe(time.perf_counter() - start)
        top = message.pop("top_gpu")
        if top:
            with contextlib.suppress(RedisError):
                await self.prices.note_asked(team, top)
        return message

    @staticmethod
    def _card_meta(ts: str, version: int, message: dict[str, Any]) -> dict[str, str]:
        """What the thread keeps of its live answer: where it is, the version its buttons carry,
        its blocks without buttons (to retire it when a newer one lands), its result."""
        return {"_answer_ts": ts, "_card_v": str(version),
                "_card": json.dumps({"blocks": blockkit.without_actions(message["blocks"]),
                                     "text": message["text"]}, ensure_ascii=False),
                "_result": json.dumps(message["result"], ensure_ascii=False)}

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
        message = await self._answer_card(
            team, draft, card,
            tell=lambda text: self.replies.respond(respond, response_type="ephemeral", text=text))
        if message is None:
            return
        posted = await self.replies.post(channel=channel, respond=respond,
                                         blocks=message["blocks"], text=message["text"])
        if posted is None:
            return
        try:
            # the thread's first version is 1: the version the card's buttons carry
            await self.store.update(team, channel, posted, user=user, change=draft, stage=stage,
                                    meta={**self._card_meta(posted, 1, message),
                                          "_created_by": user, "_root": "card"},
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
        update = await self.store.update(team, channel, ts, user=user, change=draft, stage=stage,
                                         meta={"_created_by": user, "_root": "mention"},
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
            root, asked, where = posted, posted, "question"
        else:
            asked = await self.replies.in_thread(channel, thread_ts, text=text, blocks=blocks)
            root, where = thread_ts, "mention"
        try:
            await self.store.update(team, channel, root, user=user, change=draft,
                                    stage=Stage.METHOD,
                                    meta={"_created_by": user, "_root": where,
                                          "_question_ts": asked, "_question": "method"},
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
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.stage is not Stage.METHOD:
            await self._already_answered(channel, user, thread_ts, conv)
            return
        change = Draft({"method": method})
        stage = next_stage(conv.inputs.merged(change), answered=Stage.METHOD)
        update = await self.store.update(team, channel, thread_ts, user=user, change=change,
                                         stage=stage, meta={"_question_ts": "null"},
                                         note="answered method")
        if stage is not Stage.DONE or conv.meta.get("_root") != "question":
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
                                    meta={"_question_ts": asked, "_question": "budget"},
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
                                         meta={"_question_ts": "null"}, note="answered budget")
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
                        text: str | None = None, change: Draft | None = None) -> bool:
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
                change = read_reply(text or "")
            except ParseError as err:
                await self.replies.private(channel, user, unusable(err), thread_ts)
                return True
            if change is None:
                if conv.stage is Stage.BUDGET and NO_BUDGET.search(text or ""):
                    await self._no_budget(conv, channel, user, text or "")
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
            self._validate(conv.inputs.merged(change))
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
                await self.replies.say(channel, thread_ts, _(
                    "Nothing to change: {what} already.").format(
                    what=slack.changes_text([(k, None, v) for k, v in change.values.items()],
                                            self._currency(merged) or "CNY")))
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
        ts, kind = conv.meta.get("_question_ts"), conv.meta.get("_question")
        if not ts or ts == "null" or conv.stage is Stage.DONE:
            return
        if kind == "method" and conv.meta.get("_root") == "question" and final:
            return  # the root question becomes the verdict line with the answer
        currency = self._currency(now.inputs) or "CNY"
        if kind == "method":
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
                                    meta={"_question_ts": "null"}, note="question closed")

    async def _answer_in_thread(self, team: str, channel: str, thread_ts: str, user: str,
                                conv: Conversation, changes: list[tuple[str, Any, Any]], *,
                                asked: str = "", how: str = "command",
                                notes: list[str] | None = None) -> None:
        """Answer in the thread: a card when the recommendation changed (the previous card
        retired), one line when it did not (the live card refreshed in place)."""
        raw = conv.meta.get("_result")
        previous = json.loads(raw) if raw else None
        version = conv.version
        card = slack.CardInput(version=version, user=user, asked=asked, how=how,
                               changes=tuple(changes), previous=previous,
                               notes=tuple(notes or ()))
        message = await self._answer_card(
            team, conv.inputs, card,
            tell=lambda text: self.replies.private(channel, user, text, thread_ts))
        if message is None:
            return
        live = conv.meta.get("_answer_ts")
        if message["same"] and live:
            swapped: dict[str, str] | None = None  # None: a newer one is live, or no store
            with contextlib.suppress(RedisError):
                # only if `live` is still the live answer: a concurrent answer may have posted a
                # card since, and pointing the thread back at `live` would leave that card live
                swapped = await self.store.swap_card(team, channel, thread_ts, version=version,
                                                     meta=self._card_meta(live, version, message),
                                                     expect_ts=live)
            if swapped is not MOVED:
                await self.replies.say(channel, thread_ts, "\n".join([message["same_line"],
                                                                      *(notes or [])]))
                if swapped is not None:
                    with contextlib.suppress(SlackApiError):
                        await self.replies.edit(channel, live, blocks=message["blocks"],
                                                text=message["text"])
                return
            # another card went live meanwhile: this answer is posted as a card of its own
        ts = await self.replies.in_thread(channel, thread_ts, text=message["text"],
                                          blocks=message["blocks"])
        # bookkeeping only: the change and the answer are already in, so a failure here must not
        # tell anyone the thread failed
        try:
            old = await self.store.swap_card(team, channel, thread_ts, version=version,
                                             meta=self._card_meta(ts, version, message))
        except RedisError:
            return
        if old is None:  # a newer answer landed while this one was computed: this one is old
            await self._retire(channel, ts, self._card_meta(ts, version, message)["_card"])
            return
        if old.get("_answer_ts") and old.get("_card") and old["_answer_ts"] != ts:
            await self._retire(channel, old["_answer_ts"], old["_card"])
        if conv.meta.get("_root") == "question":
            who = conv.meta.get("_created_by", "")
            with contextlib.suppress(SlackApiError):
                await self.replies.update(channel, thread_ts, Notice(
                    message["verdict"], context=_("asked; details in the thread") if who else "",
                    user=who))

    async def _retire(self, channel: str, ts: str, card_json: str) -> None:
        """An older answer keeps its figures but loses its buttons and says it is superseded."""
        try:
            card = json.loads(card_json)
        except ValueError:
            return
        blocks = [*card.get("blocks", []), {
            "type": "context", "block_id": f"superseded-{ts}"[:255],
            "elements": [{"type": "mrkdwn", "text": blockkit.mrkdwn(_(SUPERSEDED))}]}][-50:]
        with contextlib.suppress(SlackApiError):
            await self.replies.edit(channel, ts, blocks=blocks,
                                    text=blockkit.fallback(_("(superseded) ") + card.get("text", "")))

    # -- the buttons and menu under an answer ---------------------------------------------------------

    async def card_action(self, *, team: str, channel: str, thread_ts: str, message_ts: str,
                          user: str, action_id: str, value: str) -> None:
        """A what-if button, "Rent vs buy" or the menu under an answer. A press on an answer the
        thread has moved on from is told so privately and changes nothing."""
        version, payload = slack.split_value(value)
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None:
            await self.replies.private(channel, user, _(EXPIRED), thread_ts)
            return
        live_v, live_ts = conv.card_version, conv.meta.get("_answer_ts")
        if ((version is not None and live_v is not None and version != live_v)
                or (version is None and live_ts and message_ts and message_ts != live_ts)):
            await self.replies.private(channel, user, _(STALE), thread_ts)
            return
        if action_id.startswith("whatif_") or "=" in payload:
            if version is None:  # from before values carried versions: whatif_<key>_...
                key = "goal" if action_id == "whatif_goal" else action_id.split("_")[1]
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
            await self.follow_up(team=team, channel=channel, thread_ts=thread_ts, user=user,
                                 change=change)
        elif payload in ("cost", "breakdown") or action_id in ("show_rent_vs_buy",
                                                               "show_breakdown"):
            memory = payload == "breakdown" or action_id == "show_breakdown"
            await self.breakdown(team=team, channel=channel, thread_ts=thread_ts,
                                 kind="memory" if memory else "cost")
        elif payload in ("assumptions", "advice"):
            await self.notes(team=team, channel=channel, thread_ts=thread_ts, kind=payload)
        elif payload == "charts" or action_id == "show_chart":
            await self.chart(team=team, channel=channel, thread_ts=thread_ts, kind="memory")
            top = json.loads(conv.meta.get("_result") or "{}").get("gpu")
            if top and payload == "charts":
                await self.chart(team=team, channel=channel, thread_ts=thread_ts,
                                 kind="prices", card=top, quiet=True)
        elif action_id == "show_price_chart":
            await self.chart(team=team, channel=channel, thread_ts=thread_ts, kind="prices",
                             card=payload, user=user)

    # -- more detail on demand ----------------------------------------------------------------------

    async def breakdown(self, *, team: str, channel: str, thread_ts: str,
                        kind: str = "memory") -> None:
        """Post the full memory breakdown, or the rent-vs-buy comparison, in the thread."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.inputs.method is None:
            return
        job = workers.breakdown_sections if kind == "memory" else workers.rent_vs_buy_sections
        sections = await workers.run(job, conv.inputs, await self._book(team), current())
        await self._post_sections(channel, thread_ts, sections)

    async def notes(self, *, team: str, channel: str, thread_ts: str, kind: str) -> None:
        """Post the assumptions, or the buying guides' advice, in the thread."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.inputs.method is None:
            return
        sections = await workers.run(workers.notes_sections, conv.inputs, kind,
                                     await self._book(team), current())
        await self._post_sections(channel, thread_ts, sections)

    async def _post_sections(self, channel: str, thread_ts: str, sections: list[str]) -> None:
        first = blockkit.visible(sections[0]).split("\n", 1)[0].replace("*", "")
        await self.replies.in_thread(
            channel, thread_ts, text=blockkit.fallback(first),
            blocks=blockkit.blocks("notice.json.j2", n={"sections": sections, "context": "",
                                                        "user": ""}))

    async def chart(self, *, team: str, channel: str, thread_ts: str, kind: str,
                    card: str = "", user: str = "", quiet: bool = False) -> None:
        """Upload a PNG into the thread, with what it shows in words (alt text and a comment):
        the memory of the options, or a card's price history. `quiet`: no price history, no
        word about it."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.inputs.method is None:
            return
        lang = current()
        if kind == "memory":
            png, alt = await self._cached_chart(
                ["memory", team, lang, json.dumps(conv.inputs.values, sort_keys=True)],
                workers.memory_chart_with_alt, conv.inputs, await self._book(team), lang)
            name, title = "memory.png", _("Memory per GPU, per option")
        else:
            records = sorted((r for r in await self.prices.visible(team) if r.item == card),
                             key=lambda r: (r.quoted, r.recorded_at))
            if not records:
                if user and not quiet:  # said to the presser only: nothing to show the channel
                    await self.replies.private(channel, user, _(
                        "No prices recorded for {card}.").format(card=card), thread_ts)
                return
            png, _alt = await self._cached_chart(
                ["prices", team, lang, card, repr(records)], workers.price_chart_no_alt,
                records, card, lang)
            name, title = f"prices-{card}.png", _("Price history of {card}").format(card=card)
            alt = slack.price_chart_alt(card, [(str(r.quoted), _(KIND_TEXT.get(r.kind, r.kind)),
                                                (r.low + r.high) / 2, r.currency)
                                               for r in records])
        await self.replies.upload(channel, thread_ts, content=png, filename=name, title=title,
                                  alt_text=alt, comment=f"{title}: {alt}")

    async def _cached_chart(self, inputs: list[str], job: Any, *args: Any) -> tuple[bytes, str]:
        """A chart and its alt text, reused for `chart_cache_s` for the same inputs: repeated
        clicks on one thread cost a Redis read, not a worker's time."""
        key = keys.chart_cache(hashlib.sha256("\x1f".join(inputs).encode()).hexdigest()[:32])
        if self.chart_cache_s:
            with contextlib.suppress(RedisError, OSError, ValueError, KeyError, TypeError):
                hit = await self.store.redis.get(key)
                if hit:
                    cached = json.loads(hit)
                    CHART_CACHE.labels("hit").inc()
                    return base64.b64decode(cached["png"]), cached["alt"]
        png, alt = await workers.run(job, *args)
        CHART_CACHE.labels("miss").inc()
        if self.chart_cache_s:
            with contextlib.suppress(RedisError, OSError):
                await self.store.redis.set(key, json.dumps(
                    {"png": base64.b64encode(png).decode(), "alt": alt}), ex=self.chart_cache_s)
        return png, alt

