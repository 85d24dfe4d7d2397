"""Whole dialogs over real HTTP and real Redis: questions, buttons, typed follow-ups, restarts,
two replicas, duplicate deliveries and concurrent follow-ups."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.harness import BOT_USER, Bot, RedisServer, SlackStub


def texts(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def reply(text: str, *, thread_ts: str, ts: str, user: str = "U0CAROL") -> dict[str, Any]:
    return {"type": "message", "channel": "C0CHAN", "user": user, "text": text, "ts": ts,
            "thread_ts": thread_ts, "channel_type": "channel"}


ROOT = "1700000000.000001"  # the stand-in's first ts: the bot's first message roots the thread


def start(bot: Bot, slack: SlackStub, redis: RedisServer, text: str) -> str:
    assert bot.command(text)[0] == 200
    slack.wait_for("chat.postMessage")
    redis.wait_for_conversation(ROOT)
    return ROOT


def start_incomplete(bot: Bot, slack: SlackStub, redis: RedisServer) -> str:
    root = start(bot, slack, redis, "llama-3.1-70b")
    question = slack.of("chat.postMessage")[0].body
    assert "What do you want to do with" in texts(question["blocks"])
    assert "answer_method_lora" in texts(question["blocks"])
    return root


def test_incomplete_command_to_answer_to_follow_up(bot: Bot, slack: SlackStub,
                                                   redis_server: RedisServer) -> None:
    root = start_incomplete(bot, slack, redis_server)
    # Bob answers the method with a button: taken in place, budget asked in the thread
    bot.action(action_id="answer_method_lora", value="lora", message_ts=root)
    update = slack.wait_for("chat.update")[0].body
    assert update["ts"] == root and "LoRA" in texts(update["blocks"])
    budget_q = slack.wait_for("chat.postMessage", 2)[1].body
    assert budget_q["thread_ts"] == root and "answer_budget" in texts(budget_q["blocks"])
    # a budget from the select: the recommendation lands in the thread
    bot.action(action_id="answer_budget", value=None, selected="300k",
               message_ts="1700000000.000002", thread_ts=root)
    answer = slack.wait_for("chat.postMessage", 3)[2].body
    assert answer["thread_ts"] == root and "Recommended" in texts(answer["blocks"])
    # Carol types a follow-up: the bot answers in the thread, saying what changed
    bot.event(reply("what about qlora?", thread_ts=root, ts="1700000001.000001"), event_id="Ev1")
    again = slack.wait_for("chat.postMessage", 4)[3].body
    assert again["thread_ts"] == root
    assert "method: lora → qlora" in texts(again["blocks"])
    state = redis_server.command("HGETALL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")
    assert json.loads(state["method"]) == "qlora"
    assert json.loads(state["budget"])["amount"] == 300_000
    assert int(redis_server.command("TTL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")) > 0
    log = redis_server.command("LRANGE", f"gpusize:v1:convlog:T0TEAM:C0CHAN:{root}", "0", "-1")
    users = [json.loads(entry)["user"] for entry in log]
    assert {"U0ALICE", "U0BOB", "U0CAROL"} <= set(users)


def test_chatter_in_the_thread_gets_no_reply(bot: Bot, slack: SlackStub,
                                            redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "13B lora")
    bot.event(reply("thanks, looks good to me", thread_ts=root, ts="1700000002.1"),
              event_id="Ev2")
    bot.event({**reply("lora", thread_ts=root, ts="1700000002.2"), "bot_id": "B1",
               "user": BOT_USER}, event_id="Ev3")
    time.sleep(0.5)
    assert len(slack.of("chat.postMessage")) == 1


def test_bad_follow_up_is_ephemeral_and_loses_nothing(bot: Bot, slack: SlackStub,
                                                      redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "13B lora budget=150k")
    key = f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}"
    before = redis_server.command("HGETALL", key)
    bot.event(reply("seq=abc please", thread_ts=root, ts="1700000003.1"), event_id="Ev4")
    eph = slack.wait_for("chat.postEphemeral")[0].body
    assert eph["user"] == "U0CAROL" and "seq=abc" in texts(eph["blocks"])
    assert redis_server.command("HGETALL", key) == before
    assert len(slack.of("chat.postMessage")) == 1


def test_restart_between_turns_continues_the_dialog(make_bot: Any, slack: SlackStub,
                                                   redis_server: RedisServer) -> None:
    first = make_bot()
    root = start_incomplete(first, slack, redis_server)
    first.kill()
    second = make_bot()
    second.action(action_id="answer_method_qlora", value="qlora", message_ts=root)
    slack.wait_for("chat.update")
    second.action(action_id="answer_budget_skip", value="none",
                  message_ts="1700000000.000002", thread_ts=root)
    answer = slack.wait_for("chat.postMessage", 3)[2].body
    assert answer["thread_ts"] == root and "QLoRA" in texts(answer["blocks"])


def test_two_replicas_answer_alternate_turns(make_bot: Any, slack: SlackStub,
                                            redis_server: RedisServer) -> None:
    a, b = make_bot(), make_bot()
    root = start_incomplete(a, slack, redis_server)
    b.action(action_id="answer_method_inference", value="inference", message_ts=root)
    slack.wait_for("chat.postMessage", 2)
    a.action(action_id="answer_budget", value=None, selected="1M",
             message_ts="1700000000.000002", thread_ts=root)
    slack.wait_for("chat.postMessage", 3)
    b.event(reply("20 users and 8k context", thread_ts=root, ts="1700000004.1"), event_id="Ev5")
    last = slack.wait_for("chat.postMessage", 4)[3].body
    assert "users: 1" not in texts(last["blocks"])  # previous was unset, shown as —
    assert "users: — → 20" in texts(last["blocks"]) and "context: — → 8192" in texts(last["blocks"])


def test_duplicate_and_retried_events_produce_one_reply(bot: Bot, slack: SlackStub,
                                                       redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "13B lora")
    event = reply("budget 300k", thread_ts=root, ts="1700000005.1")
    bot.event(event, event_id="EvDup")
    bot.event(event, event_id="EvDup", headers={"X-Slack-Retry-Num": "1",
                                                "X-Slack-Retry-Reason": "http_timeout"})
    # the same message again as an app_mention (a different event id)
    bot.event({**event, "type": "app_mention"}, event_id="EvDupMention")
    slack.wait_for("chat.postMessage", 2)
    time.sleep(0.5)
    assert len(slack.of("chat.postMessage")) == 2


def test_double_click_is_taken_once(bot: Bot, slack: SlackStub,
                                   redis_server: RedisServer) -> None:
    root = start_incomplete(bot, slack, redis_server)
    for _ in range(2):
        bot.action(action_id="answer_method_lora", value="lora", message_ts=root,
                   action_ts="1700000009.000001")
    slack.wait_for("chat.postMessage", 2)
    time.sleep(0.5)
    assert len(slack.of("chat.update")) == 1 and len(slack.of("chat.postMessage")) == 2


def test_concurrent_follow_ups_lose_no_update(bot: Bot, slack: SlackStub,
                                              redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "llama-3.1-8b inference")
    changes = ["users=3", "context=8k", "kv=fp8", "quant=awq", "gpu=h100", "gpus=2",
               "budget=200k", "currency=usd", "region=jiangsu", "hours=500"]
    with ThreadPoolExecutor(len(changes)) as pool:
        list(pool.map(lambda i: bot.event(reply(changes[i], thread_ts=root, ts=f"17000001{i:02d}.1"),
                                          event_id=f"EvC{i}"), range(len(changes))))
    slack.wait_for("chat.postMessage", 1 + len(changes))
    conv = redis_server.command("HGETALL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")
    state = {k: json.loads(v) for k, v in conv.items() if not k.startswith("_")}
    assert state["users"] == 3 and state["context"] == 8192 and state["kv"] == "fp8"
    assert state["quant"] == "awq" and state["gpu"] == "h100-sxm" and state["gpus"] == 2
    assert state["budget"]["amount"] == 200_000 and state["currency"] == "USD"
    assert state["region"] == "jiangsu" and state["hours"] == 500
    assert int(conv["_version"]) >= 1 + len(changes)


def test_what_if_buttons_and_breakdown(bot: Bot, slack: SlackStub,
                                      redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "llama-3.1-8b full-finetune")
    first = slack.of("chat.postMessage")[0].body
    assert "whatif_method_qlora" in texts(first["blocks"])
    bot.action(action_id="whatif_method_qlora", value="qlora", message_ts=root)
    second = slack.wait_for("chat.postMessage", 2)[1].body
    assert second["thread_ts"] == root and "method: full-finetune → qlora" in texts(second["blocks"])
    bot.action(action_id="show_breakdown", value="breakdown", message_ts=root)
    third = slack.wait_for("chat.postMessage", 3)[2].body
    assert "Memory breakdown" in texts(third["blocks"]) and "Assumptions" in texts(third["blocks"])
    bot.action(action_id="show_rent_vs_buy", value="cost", message_ts=root)
    fourth = slack.wait_for("chat.postMessage", 4)[3].body
    assert "Rent vs buy" in texts(fourth["blocks"]) and "break-even" in texts(fourth["blocks"])


def test_mention_in_a_channel_starts_a_thread(bot: Bot, slack: SlackStub) -> None:
    bot.event({"type": "app_mention", "channel": "C0CHAN", "user": "U0DAVE",
               "text": f"<@{BOT_USER}> qwen2.5-7b serve users=10", "ts": "1700000020.1"},
              event_id="EvM1")
    post = slack.wait_for("chat.postMessage")[0].body
    assert post["thread_ts"] == "1700000020.1" and "Recommended" in texts(post["blocks"])
