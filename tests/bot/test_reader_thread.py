"""Issue 20 in a thread, over real HTTP and real Redis: a sentence starts the thread, and each of
the issue's follow-ups (上下文长度改成32k, 并发改成50, 20个人同时用, 换成H20, 改用QLoRA, 预算加到30万,
what if 16 cards, make it 8k context) changes its one slot; chatter gets nothing, and a negated
card is asked about in the thread, never guessed."""

from __future__ import annotations

import json
import time

import pytest

from bot.intake import Intake
from bot.words import failure_text
from engine.i18n import language
from engine.parse import ParseError
from engine.phrases import has_cjk
from tests.bot.test_dialog import card_text, reply, start
from tests.harness import BOT_USER, Bot, RedisServer, SlackStub

KEY = "gpusize:v1:conv:T0TEAM:C0CHAN:{root}"


def state(redis: RedisServer, root: str) -> dict[str, object]:
    return {k: json.loads(v) for k, v in redis.command("HGETALL", KEY.format(root=root)).items()
            if not k.startswith("_")}


def test_a_sentence_starts_the_thread_and_says_what_was_read(
        bot: Bot, slack: SlackStub, redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "我们想用8张4090跑qwen3-32b推理，20人同时用，够吗")
    got = state(redis_server, root)
    assert (got["model"], got["method"], got["gpu"], got["gpus"], got["users"]) == (
        "qwen3-32b", "inference", "rtx-4090", 8, 20)
    card = card_text(slack.of("chat.postMessage")[0].body)
    assert "qwen3-32b · " in card and "8×rtx-4090" in card  # the read line, in the context


def test_each_follow_up_changes_its_slot(bot: Bot, slack: SlackStub,
                                         redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "qwen3-32b 推理 8张4090 并发20")
    steps = [
        ("上下文长度改成32k", "context", 32768),
        ("并发改成50", "users", 50),
        ("20个人同时用", "users", 20),
        ("换成H20", "gpu", "h20"),
        ("预算加到30万", "budget", {"amount": 300000.0, "currency": "CNY"}),
        ("what if 16 cards", "gpus", 16),
        ("make it 8k context", "context", 8192),
        ("改用QLoRA", "method", "qlora"),
    ]
    for number, (text, key, value) in enumerate(steps, start=1):
        posts = len(slack.of("chat.postMessage"))
        bot.event(reply(text, thread_ts=root, ts=f"1700000100.{number}"), event_id=f"EvR{number}")
        slack.wait_for("chat.postMessage", posts + 1)
        got = state(redis_server, root)
        assert got[key] == value, (text, got)
    assert state(redis_server, root)["model"] == "qwen3-32b"


def test_chatter_is_not_read_and_a_negation_is_asked(bot: Bot, slack: SlackStub,
                                                     redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "qwen3-32b 推理 8张4090")
    before = state(redis_server, root)
    for number, text in enumerate(("好的，谢谢", "thanks, looks good", "我们下周再讨论"), start=1):
        bot.event(reply(text, thread_ts=root, ts=f"1700000200.{number}"), event_id=f"EvC{number}")
    time.sleep(0.5)
    assert len(slack.of("chat.postMessage")) == 1 and not slack.of("chat.postEphemeral")
    bot.event(reply("不要4090", thread_ts=root, ts="1700000200.9"), event_id="EvC9")
    asked = slack.wait_for("chat.postMessage", 2)[1].body
    assert asked["thread_ts"] == root and "rtx-4090" in json.dumps(asked, ensure_ascii=False)
    assert state(redis_server, root) == before


def test_naming_the_bot_with_nothing_to_change_is_answered(bot: Bot, slack: SlackStub,
                                                          redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "qwen3-32b 推理 8张4090")
    before = state(redis_server, root)
    bot.event({"type": "app_mention", "channel": "C0CHAN", "user": "U0CAROL",
               "text": f"<@{BOT_USER}> thanks!", "ts": "1700000300.1", "thread_ts": root},
              event_id="EvM1")
    told = slack.wait_for("chat.postEphemeral")[0].body
    assert told["user"] == "U0CAROL" and "8k context" in json.dumps(told)
    assert state(redis_server, root) == before and len(slack.of("chat.postMessage")) == 1


def test_a_capacity_question_without_a_model_is_asked_for_it() -> None:
    """我们有8张4090能服务多少人: the bot asks which model (the engine's one line, in the asker's
    language) rather than answering for the largest model it could assume."""
    with language("zh"), pytest.raises(ParseError) as asked:
        Intake(redis=None).check("我们有8张4090能服务多少人")  # type: ignore[arg-type]
    told = failure_text(asked.value)
    assert has_cjk(told) and "qwen3-32b 8xrtx-4090" in told
    named = Intake(redis=None).check("qwen3-32b 我们有8张4090能服务多少人")  # type: ignore[arg-type]
    assert named.model == "qwen3-32b"
