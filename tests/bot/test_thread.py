"""The thread flow in-process, the way arq tests its worker: the real Dialog, ConversationStore and
Intake against the session's real redis-server (flushed per test) and the Slack stand-in on a
thread, answers computed in a thread instead of a worker process. No bot process, so each test
takes milliseconds; tests/bot/test_dialog.py runs the same flows over HTTP (slow tier)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from slack_sdk.web.async_client import AsyncWebClient

from bot import workers
from bot.cards import Cards
from bot.conversation import Question, Root, Stage, next_stage
from bot.dialog import Dialog
from bot.intake import NEW_HUB_MODELS, Intake
from bot.limits import Limit
from bot.pricestore import PriceStore
from bot.replies import Replies
from bot.store import ConversationStore, Swap
from engine import ParseError, UnknownModel
from engine.request import Draft
from tests.harness import TEAM, TOKEN, SlackStub

THREADS = Limit("thread", count=30, window_s=3600)  # the deployed default

CHANNEL = "C0CHAN"


@pytest.fixture(autouse=True)
def answers_in_a_thread(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Answers computed in threads of this process (GPUSIZE_WORKERS=0), and a Hub cache of the
    test's own."""
    monkeypatch.setenv("GPUSIZE_CACHE", str(tmp_path / "cache"))
    workers.shutdown()
    workers.start(0)
    yield
    workers.shutdown()


@asynccontextmanager
async def parts(redis_url: str, slack: SlackStub, *, hub: bool = False
                ) -> AsyncIterator[tuple[Dialog, ConversationStore, Intake]]:
    redis = Redis.from_url(redis_url, decode_responses=True)
    store = ConversationStore(redis, ttl_seconds=3600)
    intake = Intake(redis, hub=(lambda repo: None) if hub else None)  # type: ignore[arg-type,return-value]
    dialog = Dialog(Replies(AsyncWebClient(token=TOKEN, base_url=slack.url)), store, intake,
                    Cards(PriceStore(redis), intake))
    try:
        yield dialog, store, intake
    finally:
        await redis.aclose()


def run(coro: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro())


async def nobody(**_message: Any) -> None:
    raise AssertionError("the bot is in the channel: nothing is answered privately")


def text_of(call: Any) -> str:
    return json.dumps(call.body.get("blocks", []), ensure_ascii=False) + call.body.get("text", "")


# -- next_stage: the one place a thread's stage is decided --------------------------------------


@pytest.mark.parametrize(("values", "answered", "stage"), [
    ({"model": "13B"}, None, Stage.METHOD),
    ({"model": "13B", "method": "lora"}, None, Stage.DONE),  # a complete command: answered at once
    ({"model": "13B", "method": "lora"}, Stage.METHOD, Stage.BUDGET),  # by button: budget next
    ({"model": "13B", "method": "lora", "budget": 150000}, Stage.METHOD, Stage.DONE),
    ({"model": "13B", "method": "lora"}, Stage.BUDGET, Stage.DONE),
    ({"model": "13B", "method": None}, Stage.BUDGET, Stage.METHOD),  # no method: asked again
])
def test_next_stage(values: dict[str, Any], answered: Stage | None, stage: Stage) -> None:
    assert next_stage(Draft({k: v for k, v in values.items() if v is not None}),
                      answered=answered) is stage


# -- the store --------------------------------------------------------------------------------


def test_the_store_merges_deletes_and_says_what_it_replaced(redis_url: str) -> None:
    async def go() -> None:
        redis = Redis.from_url(redis_url, decode_responses=True)
        store = ConversationStore(redis, ttl_seconds=60)
        first = await store.update(TEAM, CHANNEL, "1.1", user="U1",
                                   change=Draft({"model": "13B", "method": "lora"}),
                                   stage=Stage.DONE, record={"created_by": "U1", "root": Root.CARD})
        assert first.conversation.version == 1 and first.previous.values == {}
        second = await store.update(TEAM, CHANNEL, "1.1", user="U2",
                                    change=Draft({"method": "qlora", "gpus": 8}))
        assert second.conversation.version == 2
        assert second.previous.values == {"method": "lora"}  # gpus was not set before
        assert second.changes(Draft({"method": "qlora", "gpus": 8})) == [
            ("method", "lora", "qlora"), ("gpus", None, 8)]
        third = await store.update(TEAM, CHANNEL, "1.1", user="U1", change=Draft({"gpus": None}),
                                   record={"root": None})
        got = await store.get(TEAM, CHANNEL, "1.1")
        assert got is not None and got == third.conversation
        assert got.inputs.values == {"model": "13B", "method": "qlora"}
        assert got.record.root is None and got.record.created_by == "U1"
        assert 0 < await redis.ttl("gpusize:v1:conv:T0TEAM:C0CHAN:1.1") <= 60
        assert await store.get(TEAM, CHANNEL, "9.9") is None
        assert await store.get("T0OTHER", CHANNEL, "1.1") is None  # keyed by workspace
        await redis.aclose()

    run(go)


def test_concurrent_changes_to_one_thread_all_land(redis_url: str) -> None:
    keys = ("gpus", "seq", "batch", "rank", "epochs", "users", "context", "months", "budget",
            "output")

    async def go() -> None:
        redis = Redis.from_url(redis_url, decode_responses=True)
        store = ConversationStore(redis, ttl_seconds=60)
        await store.update(TEAM, CHANNEL, "2.1", user="U1", change=Draft({"model": "13B"}))
        await asyncio.gather(*(store.update(TEAM, CHANNEL, "2.1", user=f"U{n}",
                                            change=Draft({key: n + 1}))
                               for n, key in enumerate(keys)))
        got = await store.get(TEAM, CHANNEL, "2.1")
        assert got is not None and got.version == 1 + len(keys)
        assert {k: got.inputs.values[k] for k in keys} == {k: n + 1 for n, k in enumerate(keys)}
        assert await redis.llen("gpusize:v1:convlog:T0TEAM:C0CHAN:2.1") == 1 + len(keys)
        await redis.aclose()

    run(go)


def test_only_the_newest_answer_goes_live(redis_url: str) -> None:
    async def go() -> None:
        redis = Redis.from_url(redis_url, decode_responses=True)
        store = ConversationStore(redis, ttl_seconds=60)
        assert (await store.swap_card(TEAM, CHANNEL, "3.1", version=1,
                                      record={"answer_ts": "3.2"}))[0] is Swap.NEWER_LIVE  # none
        await store.update(TEAM, CHANNEL, "3.1", user="U1", change=Draft({"model": "13B"}))
        swapped, old = await store.swap_card(TEAM, CHANNEL, "3.1", version=2,
                                             record={"answer_ts": "3.2", "card_version": 2})
        assert swapped is Swap.SWAPPED and old.answer_ts is None
        stale, _old = await store.swap_card(TEAM, CHANNEL, "3.1", version=1,
                                            record={"answer_ts": "3.3", "card_version": 1})
        assert stale is Swap.NEWER_LIVE
        moved, _old = await store.swap_card(TEAM, CHANNEL, "3.1", version=3, expect_ts="3.9",
                                            record={"answer_ts": "3.4", "card_version": 3})
        assert moved is Swap.MOVED
        newer, old = await store.swap_card(TEAM, CHANNEL, "3.1", version=3, expect_ts="3.2",
                                           record={"answer_ts": "3.4", "card_version": 3})
        assert newer is Swap.SWAPPED and old.answer_ts == "3.2" and old.card_version == 2
        got = await store.get(TEAM, CHANNEL, "3.1")
        assert got is not None and got.record.answer_ts == "3.4" and got.card_version == 3
        await redis.aclose()

    run(go)


# -- intake ------------------------------------------------------------------------------------


def test_intake_reads_and_checks_before_the_ack(redis_url: str, slack: SlackStub) -> None:
    async def go() -> None:
        async with parts(redis_url, slack) as (_dialog, _store, intake):
            assert intake.check("llama-3.1-8b lora gpus=2").values == {
                "model": "llama-3.1-8b", "method": "lora", "gpus": 2}
            assert intake.check("13B").method is None  # the method is asked in the thread
            with pytest.raises(ParseError, match="lroa"):
                intake.check("13B lroa")
            with pytest.raises(ParseError, match=r"Did you mean qwen2\.5-7b"):
                intake.check("qwen9-7b lora")
            with pytest.raises(UnknownModel, match="acme/unknown-model"):
                intake.check("acme/unknown-model lora")  # no Hub here: a repo id is unknown
            with pytest.raises(ParseError, match="MODEL"):
                intake.check("lora budget=10k")

    run(go)


def test_new_hub_models_are_limited_per_person_and_the_same_one_is_free(
        redis_url: str, slack: SlackStub) -> None:
    async def go() -> None:
        async with parts(redis_url, slack, hub=True) as (_dialog, _store, intake):
            for n in range(NEW_HUB_MODELS.count):
                draft = await intake.admit(f"someone/model-{n} inference", team=TEAM, user="U1")
                assert intake.pending_lookup(draft) == f"someone/model-{n}"
            await intake.admit("someone/model-0 inference", team=TEAM, user="U1")  # asked before
            with pytest.raises(UnknownModel, match="someone/model-new"):
                await intake.admit("someone/model-new inference", team=TEAM, user="U1")
            await intake.admit("someone/model-new inference", team=TEAM, user="U2")  # per person
            assert intake.pending_lookup(intake.check("llama-3.1-8b lora")) is None  # catalog

    run(go)


# -- the thread flow ---------------------------------------------------------------------------


def test_a_command_without_a_method_asks_then_buttons_lead_to_the_answer(
        redis_url: str, slack: SlackStub) -> None:
    async def go() -> None:
        async with parts(redis_url, slack) as (dialog, store, _intake):
            await dialog.command(team=TEAM, channel=CHANNEL, user="U0ALICE",
                                 draft=Draft({"model": "llama-3.1-8b"}), respond=nobody)
            question = slack.of("chat.postMessage")[0]
            root = "1700000000.000001"
            conv = await store.get(TEAM, CHANNEL, root)
            assert conv is not None and conv.stage is Stage.METHOD
            assert conv.record.root is Root.QUESTION and conv.record.question is Question.METHOD
            assert conv.record.created_by == "U0ALICE" and "lora" in text_of(question)

            await dialog.answer_method(team=TEAM, channel=CHANNEL, thread_ts=root, user="U0BOB",
                                       message_ts=root, method="1|lora")
            conv = await store.get(TEAM, CHANNEL, root)
            assert conv is not None and conv.stage is Stage.BUDGET
            assert conv.record.question is Question.BUDGET
            budget_question = slack.of("chat.postMessage")[-1]
            assert budget_question.body["thread_ts"] == root

            await dialog.answer_budget(team=TEAM, channel=CHANNEL, thread_ts=root, user="U0BOB",
                                       message_ts=budget_question.body.get("ts", "x"),
                                       budget=None)
            conv = await store.get(TEAM, CHANNEL, root)
            assert conv is not None and conv.stage is Stage.DONE
            assert conv.record.question_ts is None and conv.record.answer_ts is not None
            card = slack.of("chat.postMessage")[-1]
            assert card.body["thread_ts"] == root and "llama" in text_of(card).lower()
            # the root question became the verdict
            assert any(u.body["ts"] == root for u in slack.of("chat.update"))

            # the same button again is told, privately, that the question was answered
            await dialog.answer_method(team=TEAM, channel=CHANNEL, thread_ts=root, user="U0BOB",
                                       message_ts=root, method="1|qlora")
            told = slack.of("chat.postEphemeral")[-1]
            assert "answered already" in told.body["text"]

    run(go)


def test_a_follow_up_answers_again_and_retires_the_card_it_supersedes(
        redis_url: str, slack: SlackStub) -> None:
    async def go() -> None:
        async with parts(redis_url, slack) as (dialog, store, _intake):
            await dialog.command(team=TEAM, channel=CHANNEL, user="U0ALICE", respond=nobody,
                                 draft=Draft({"model": "llama-3.1-8b", "method": "lora"}))
            root = slack.of("chat.postMessage")[0].body
            thread = "1700000000.000001"
            conv = await store.get(TEAM, CHANNEL, thread)
            assert conv is not None and conv.record.root is Root.CARD
            assert conv.record.answer_ts == thread and conv.card_version == 1
            assert "llama" in json.dumps(root["blocks"]).lower()

            assert await dialog.follow_up(team=TEAM, channel=CHANNEL, thread_ts=thread,
                                          user="U0CAROL", text="what about full-finetune?")
            conv = await store.get(TEAM, CHANNEL, thread)
            assert conv is not None and conv.inputs.method == "full-finetune"
            assert conv.version == 2 and conv.card_version == 2
            new_card = slack.of("chat.postMessage")[-1]
            assert new_card.body["thread_ts"] == thread
            assert conv.record.answer_ts != thread  # the thread's live answer is the new card
            retired = [u for u in slack.of("chat.update") if u.body["ts"] == thread]
            assert retired and "Superseded" in text_of(retired[-1])

            # the same change again changes nothing and says so, to its author only
            posted = len(slack.of("chat.postMessage"))
            assert await dialog.follow_up(team=TEAM, channel=CHANNEL, thread_ts=thread,
                                          user="U0CAROL", text="full-finetune")
            told = slack.of("chat.postEphemeral")[-1].body
            assert told["user"] == "U0CAROL" and "Nothing to change" in told["text"]
            assert len(slack.of("chat.postMessage")) == posted
            # small talk in the thread is not for the bot; nor is a thread it never stored
            assert not await dialog.follow_up(team=TEAM, channel=CHANNEL, thread_ts=thread,
                                              user="U0CAROL", text="thanks, looks good")
            assert not await dialog.follow_up(team=TEAM, channel=CHANNEL, thread_ts="5.5",
                                              user="U0CAROL", text="qlora")

    run(go)


def test_a_reply_the_grammar_cannot_use_is_told_to_its_author_only(
        redis_url: str, slack: SlackStub) -> None:
    async def go() -> None:
        async with parts(redis_url, slack) as (dialog, store, _intake):
            await dialog.command(team=TEAM, channel=CHANNEL, user="U0ALICE", respond=nobody,
                                 draft=Draft({"model": "llama-3.1-8b", "method": "lora"}))
            thread = "1700000000.000001"
            before = await store.get(TEAM, CHANNEL, thread)
            assert await dialog.follow_up(team=TEAM, channel=CHANNEL, thread_ts=thread,
                                          user="U0CAROL", text="gpus=0")
            told = slack.of("chat.postEphemeral")[-1].body
            assert told["user"] == "U0CAROL" and "gpus" in told["text"]
            assert await store.get(TEAM, CHANNEL, thread) == before  # nothing stored

    run(go)


def test_a_mention_answers_in_its_own_thread(redis_url: str, slack: SlackStub) -> None:
    async def go() -> None:
        async with parts(redis_url, slack) as (dialog, store, _intake):
            mention = "1699999999.000100"
            await dialog.mention_start(team=TEAM, channel=CHANNEL, ts=mention, user="U0ALICE",
                                       text="<@UBOT0001> help", limit=THREADS)
            assert slack.of("chat.postMessage")[-1].body["thread_ts"] == mention
            assert await store.get(TEAM, CHANNEL, mention) is None  # help starts no thread

            await dialog.mention_start(team=TEAM, channel=CHANNEL, ts=mention, user="U0ALICE",
                                       text="<@UBOT0001> acme/unknown-model lora", limit=THREADS)
            told = slack.of("chat.postEphemeral")[-1].body
            assert told["user"] == "U0ALICE" and "acme/unknown-model" in told["text"]
            assert await store.get(TEAM, CHANNEL, mention) is None

            await dialog.mention_start(team=TEAM, channel=CHANNEL, ts=mention, user="U0ALICE",
                                       text="<@UBOT0001> llama-3.1-8b lora", limit=THREADS)
            conv = await store.get(TEAM, CHANNEL, mention)
            assert conv is not None and conv.record.root is Root.MENTION
            assert conv.stage is Stage.DONE and conv.record.answer_ts is not None
            card = slack.of("chat.postMessage")[-1]
            assert card.body["thread_ts"] == mention and "llama" in text_of(card).lower()

    run(go)


def test_the_same_change_from_two_people_at_once_answers_one_and_tells_the_other(
        redis_url: str, slack: SlackStub) -> None:
    """Two members reply "qlora" at the same moment: the first answers in the thread; the
    second used to hear nothing (its change was already in), now it is told so privately, as
    one who came a moment later is."""
    async def go() -> None:
        async with parts(redis_url, slack) as (dialog, _store, _intake):
            await dialog.command(team=TEAM, channel=CHANNEL, user="U0ALICE", respond=nobody,
                                 draft=Draft({"model": "llama-3.1-8b", "method": "lora"}))
            thread = "1700000000.000001"
            cards = len(slack.of("chat.postMessage"))
            answered = await asyncio.gather(*(
                dialog.follow_up(team=TEAM, channel=CHANNEL, thread_ts=thread, user=user,
                                 text="what about qlora?") for user in ("U0BOB", "U0CAROL")))
            assert answered == [True, True]
            assert len(slack.of("chat.postMessage")) == cards + 1  # one new answer
            told = [c.body for c in slack.of("chat.postEphemeral")]
            assert len(told) == 1 and "Nothing to change" in told[0]["text"]

    run(go)
