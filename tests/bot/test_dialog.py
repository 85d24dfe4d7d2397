"""Whole dialogs over real HTTP and real Redis: questions, buttons, typed follow-ups, restarts,
two replicas, duplicate deliveries and concurrent follow-ups."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from present import blockkit
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


def blocks_of(call: Any, kind: str) -> list[dict[str, Any]]:
    return [b for b in call.body.get("blocks", []) if b["type"] == kind]


def card_text(body: dict[str, Any]) -> str:
    return " ".join(blockkit.visible(t) for t in _texts(body.get("blocks", [])))


def _texts(blocks: list[dict[str, Any]]) -> list[str]:
    out = []
    for b in blocks:
        out += [(b.get("text") or {}).get("text", "")] + [f["text"] for f in b.get("fields", [])]
        out += [e.get("text", "") for e in b.get("elements", []) if isinstance(e.get("text"), str)]
        out += [c["text"] for row in b.get("rows", []) for c in row]
    return out


def value_of(body: dict[str, Any], action_id: str) -> str:
    """The value a button (or the first option of a select) under a message carries."""
    for block in body["blocks"]:
        for el in block.get("elements", []):
            if el.get("action_id") == action_id:
                if "value" in el:
                    return el["value"]
                groups = el.get("option_groups") or [{"options": el["options"]}]
                return groups[0]["options"][0]["value"]
    raise AssertionError(f"no {action_id} in {texts(body['blocks'])}")


def menu(body: dict[str, Any]) -> dict[str, str]:
    """The menu under an answer (an overflow, or a select when it is long): label -> value."""
    return {o["text"]["text"]: o["value"] for b in body["blocks"]
            for el in b.get("elements", []) if el.get("action_id") == "card_more"
            for o in el["options"]}


def test_incomplete_command_to_answer_to_follow_up(bot: Bot, slack: SlackStub,
                                                   redis_server: RedisServer) -> None:
    root = start_incomplete(bot, slack, redis_server)
    question = slack.of("chat.postMessage")[0].body
    assert value_of(question, "answer_method_lora") == "1|lora"  # made for version 1
    # Bob answers the method with a button: taken in place, budget asked in the thread
    bot.action(action_id="answer_method_lora", value="1|lora", message_ts=root)
    update = slack.wait_for("chat.update")[0].body
    assert update["ts"] == root and "LoRA" in texts(update["blocks"])
    assert not any(b["type"] == "actions" for b in update["blocks"])
    budget_q = slack.wait_for("chat.postMessage", 2)[1].body
    assert budget_q["thread_ts"] == root and "answer_budget" in texts(budget_q["blocks"])
    # buy or rent, in the thread's currency, and a budget is money to spend
    assert "Buy up to" in texts(budget_q["blocks"]) and "Rent up to, per month" in texts(
        budget_q["blocks"]) and "money to spend" in texts(budget_q["blocks"])
    assert "300k CNY" in texts(budget_q["blocks"]) and "5,000 CNY/month" in texts(
        budget_q["blocks"])
    choice = value_of(budget_q, "answer_budget").split("|")[0] + "|buy:300000"
    bot.action(action_id="answer_budget", value=None, selected=choice,
               message_ts="1700000000.000002", thread_ts=root)
    answer = slack.wait_for("chat.postMessage", 3)[2].body
    assert answer["thread_ts"] == root and " → buy " in answer["blocks"][0]["text"]["text"]
    # the channel sees the verdict: the root question became a one-line verdict
    verdict = slack.wait_for("chat.update", 3)[2].body
    assert verdict["ts"] == root and "in this thread" in texts(verdict["blocks"])
    assert answer["blocks"][0]["text"]["text"] in verdict["text"]
    # Carol types a follow-up: the bot answers in the thread, saying what changed in the result
    bot.event(reply("what about qlora?", thread_ts=root, ts="1700000001.000001"), event_id="Ev1")
    again = slack.wait_for("chat.postMessage", 4)[3].body
    assert again["thread_ts"] == root
    change = again["blocks"][1]["text"]["text"]
    assert change.startswith("*QLoRA* → ") and "(was " in change, change
    assert again["text"].startswith("Llama 3.1 70B: QLoRA → ") and again["text"] != answer["text"]
    assert "<@U0CAROL> replied “what about qlora?”" in texts(again["blocks"])
    state = redis_server.command("HGETALL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")
    assert json.loads(state["method"]) == "qlora"
    assert json.loads(state["budget"])["amount"] == 300_000 and json.loads(state["mode"]) == "buy"
    assert int(redis_server.command("TTL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")) > 0
    log = redis_server.command("LRANGE", f"gpusize:v1:convlog:T0TEAM:C0CHAN:{root}", "0", "-1")
    users = [json.loads(entry)["user"] for entry in log]
    assert {"U0ALICE", "U0BOB", "U0CAROL"} <= set(users)


def test_main_answer_is_one_phone_screen(bot: Bot, slack: SlackStub,
                                         redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "13B full-finetune budget=150k")
    post = slack.of("chat.postMessage")[0].body
    blocks = post["blocks"]
    assert len(blocks) <= 6 and blockkit.text_length(blocks) <= 1200
    assert [b["type"] for b in blocks] == ["header", "section", "table", "context", "actions"]
    assert blocks[0]["text"]["text"].startswith("13B full fine-tune → ")
    table = blocks_of(slack.of("chat.postMessage")[0], "table")[0]
    assert [c["text"] for c in table["rows"][0]][:2] == ["card", "GPUs"]
    assert len(table["rows"]) == 6 and all(len(r) == 4 for r in table["rows"])
    context = blocks[3]["elements"][0]["text"]
    assert context.startswith("<@U0ALICE> asked `/gpusize 13B full-finetune budget=150k`")
    assert "13B = generic Llama shape" in context and "defaults:" in context
    actions = blocks[-1]["elements"]
    assert [e["type"] for e in actions].count("button") <= 3
    assert actions[-1]["action_id"] == "card_more"
    # the top card has a price history in this workspace, so its chart is offered
    assert set(menu(post)) >= {"Memory breakdown", "Charts: memory and prices", "Assumptions",
                               "The guides' advice"}
    # the fallback is one plain line: the verdict and its figures
    assert "\n" not in post["text"] and "*" not in post["text"]
    assert post["text"].startswith(blocks[0]["text"]["text"] + ": ") and "GiB per GPU" in post["text"]
    state = redis_server.wait_for_conversation(root, field="_card_v")
    assert state["_card_v"] == "1" and state["_answer_ts"] == root


def test_older_answers_lose_their_buttons_and_stale_presses_are_told(
        bot: Bot, slack: SlackStub, redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "13B full-finetune")
    first = slack.of("chat.postMessage")[0].body
    qlora = value_of(first, "whatif_method_qlora")
    assert qlora == "1|method=qlora"
    bot.action(action_id="whatif_method_qlora", value=qlora, message_ts=root)
    second = slack.wait_for("chat.postMessage", 2)[1].body
    assert second["blocks"][1]["text"]["text"].startswith("*QLoRA* → ")
    assert "<@U0BOB> pressed QLoRA" in texts(second["blocks"])
    # the root answer is retired: its figures stay, its buttons go, it says so
    retired = slack.wait_for("chat.update")[0].body
    assert retired["ts"] == root and "Superseded" in texts(retired["blocks"])
    assert not any(b["type"] == "actions" for b in retired["blocks"])
    assert any(b["type"] == "table" for b in retired["blocks"])
    # a press on the old card (a client that had not refreshed it) changes nothing
    posts = len(slack.of("chat.postMessage"))
    bot.action(action_id="whatif_method_lora", value="1|method=lora", message_ts=root)
    eph = slack.wait_for("chat.postEphemeral")[0].body
    assert eph["user"] == "U0BOB" and "older answer" in texts(eph["blocks"])
    # ... nor does the menu of the old card (its modal says so), nor a button from before
    # versions were carried
    bot.action(action_id="card_more", value=None, selected="1|breakdown", element="overflow",
               message_ts=root)
    assert "older answer" in texts(slack.wait_for("views.open")[0].body["view"]["blocks"])
    bot.action(action_id="whatif_method_lora", value="lora", message_ts=root)
    slack.wait_for("chat.postEphemeral", 2)
    time.sleep(0.3)
    assert len(slack.of("chat.postMessage")) == posts
    state = redis_server.command("HGETALL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")
    assert json.loads(state["method"]) == "qlora"
    # the live card's buttons carry the version it was made for, and work
    live = value_of(second, "show_rent_vs_buy")
    assert live.split("|")[0] == state["_card_v"] != "1"
    bot.action(action_id="show_rent_vs_buy", value=live, message_ts=state["_answer_ts"],
               thread_ts=root)
    assert "Rent vs buy" in texts(slack.wait_for("views.open", 2)[-1].body["view"]["blocks"])


def test_a_press_that_changes_nothing_posts_nothing(bot: Bot, slack: SlackStub,
                                                    redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "13B full-finetune goal=cost")
    # a value whose merged inputs equal the thread's: nothing posted, nothing stored
    bot.action(action_id="whatif_goal", value="1|goal=cost", message_ts=root)
    # two presses of one what-if in quick succession: one answer
    qlora = value_of(slack.of("chat.postMessage")[0].body, "whatif_method_qlora")
    for n in range(2):
        bot.action(action_id="whatif_method_qlora", value=qlora, message_ts=root,
                   action_ts=f"1700000300.00000{n}")
        time.sleep(0.25)
    slack.wait_for("chat.postMessage", 2)
    time.sleep(1.0)
    posts = slack.of("chat.postMessage")
    assert len(posts) == 2, [p.body.get("text") for p in posts]
    assert len(slack.of("chat.postEphemeral")) <= 1  # at most: the second press was on an old card


def test_typed_replies_same_result_currency_context_and_unusable_values(
        bot: Bot, slack: SlackStub, redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "13B full-finetune")
    first = slack.of("chat.postMessage")[0].body
    # a budget the recommendation already fits: one line, and the card untouched (its buttons
    # still valid)
    bot.event(reply("budget 10M", thread_ts=root, ts="1700000010.1"), event_id="EvS1")
    line = slack.wait_for("chat.postMessage", 2)[1].body
    assert "blocks" not in line and "budget: 10.00M CNY: same recommendation, " in line["text"]
    state = redis_server.command("HGETALL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")
    assert state["_card_v"] == "1" and state["_answer_ts"] == root
    assert value_of(first, "show_rent_vs_buy").split("|")[0] == state["_card_v"]
    # the same again: nothing to change, said to the replier alone
    bot.event(reply("budget 10M", thread_ts=root, ts="1700000010.2"), event_id="EvS2")
    nothing = slack.wait_for("chat.postEphemeral")[0].body
    assert nothing["user"] == "U0CAROL" and "Nothing to change: budget: 10.00M CNY already." in \
        texts(nothing["blocks"])
    time.sleep(0.3)
    assert not slack.of("chat.update") and len(slack.of("chat.postMessage")) == 2
    # "8k context" on a training thread is the sequence length, and the answer says so
    bot.event(reply("8k context", thread_ts=root, ts="1700000010.3"), event_id="EvS3")
    said = slack.wait_for("chat.postMessage", 3)[2].body
    assert "context means the sequence length: seq = 8,192 tokens" in json.dumps(
        said, ensure_ascii=False)
    state = redis_server.command("HGETALL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")
    assert json.loads(state["seq"]) == 8192 and "context" not in state
    # a budget in dollars is converted: the team's market and its currency stay (issue 22)
    bot.event(reply("budget $20k", thread_ts=root, ts="1700000010.4"), event_id="EvS4")
    said = json.dumps(slack.wait_for("chat.postMessage", 4)[3].body, ensure_ascii=False)
    assert "budget: 20k USD" in said and "CNY" in said
    assert "Amounts are now in USD" not in said
    # an unusable value: privately, what was read and what it likely meant
    bot.event(reply("quant=awk", thread_ts=root, ts="1700000010.5"), event_id="EvS5")
    eph = slack.wait_for("chat.postEphemeral", 2)[1].body
    assert eph["user"] == "U0CAROL"
    assert "I read quant=awk. Did you mean quant=awq?" in texts(eph["blocks"])


def test_typed_method_gets_the_same_next_question_as_the_buttons(
        bot: Bot, slack: SlackStub, redis_server: RedisServer) -> None:
    root = start_incomplete(bot, slack, redis_server)
    bot.event(reply("lora", thread_ts=root, ts="1700000021.1"), event_id="EvT1")
    budget_q = slack.wait_for("chat.postMessage", 2)[1].body
    assert budget_q["thread_ts"] == root and "answer_budget" in texts(budget_q["blocks"])
    closed = slack.wait_for("chat.update")[0].body  # the method question, answered by typing
    assert closed["ts"] == root and "→ *LoRA*" in texts(closed["blocks"])
    assert not any(b["type"] == "actions" for b in closed["blocks"])
    # "no budget", typed: answered as the button would
    bot.event(reply("no budget", thread_ts=root, ts="1700000021.2"), event_id="EvT2")
    answer = slack.wait_for("chat.postMessage", 3)[2].body
    assert answer["blocks"][0]["text"]["text"].startswith("Llama 3.1 70B LoRA → ")
    updates = [u.body for u in slack.wait_for("chat.update", 3)]
    assert any("Budget → *no budget*" in texts(u["blocks"]) for u in updates)
    assert "in this thread" in texts(updates[-1]["blocks"]) and updates[-1]["ts"] == root


def test_question_answered_by_typing_loses_its_buttons(bot: Bot, slack: SlackStub,
                                                       redis_server: RedisServer) -> None:
    root = start_incomplete(bot, slack, redis_server)
    bot.action(action_id="answer_method_qlora", value="1|qlora", message_ts=root)
    budget_q = slack.wait_for("chat.postMessage", 2)[1].body
    question_ts = "1700000000.000002"
    assert budget_q["thread_ts"] == root
    bot.event(reply("budget 300k", thread_ts=root, ts="1700000020.1"), event_id="EvQ1")
    slack.wait_for("chat.postMessage", 3)
    updates = slack.wait_for("chat.update", 3)
    closed = [u.body for u in updates if u.body["ts"] == question_ts]
    assert closed and "Budget → *300k CNY*" in texts(closed[0]["blocks"])
    assert not any(b["type"] == "actions" for b in closed[0]["blocks"])
    # the select pressed afterwards: privately, already answered
    bot.action(action_id="answer_budget", value=None, selected=value_of(budget_q, "answer_budget"),
               message_ts=question_ts, thread_ts=root)
    eph = slack.wait_for("chat.postEphemeral")[0].body
    assert "answered already" in texts(eph["blocks"]) and "300k CNY" in texts(eph["blocks"])


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
    second.action(action_id="answer_method_qlora", value="1|qlora", message_ts=root)
    slack.wait_for("chat.update")
    second.action(action_id="answer_budget_skip", value="2|none",
                  message_ts="1700000000.000002", thread_ts=root)
    answer = slack.wait_for("chat.postMessage", 3)[2].body
    assert answer["thread_ts"] == root and "QLoRA" in texts(answer["blocks"])


def test_two_replicas_answer_alternate_turns(make_bot: Any, slack: SlackStub,
                                            redis_server: RedisServer) -> None:
    a, b = make_bot(), make_bot()
    root = start_incomplete(a, slack, redis_server)
    b.action(action_id="answer_method_inference", value="1|inference", message_ts=root)
    slack.wait_for("chat.postMessage", 2)
    a.action(action_id="answer_budget", value=None, selected="2|buy:1000000",
             message_ts="1700000000.000002", thread_ts=root)
    slack.wait_for("chat.postMessage", 3)
    b.event(reply("20 users and 8k context", thread_ts=root, ts="1700000004.1"), event_id="Ev5")
    last = slack.wait_for("chat.postMessage", 4)[3].body
    said = json.dumps(last, ensure_ascii=False)
    # human labels for each input, never raw keys or "—"
    assert "concurrent users: 20" in said and "context: 8,192 tokens" in said
    assert "—" not in said and "users: 1" not in said


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
        bot.action(action_id="answer_method_lora", value="1|lora", message_ts=root,
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
    # however the answers raced, one card keeps live buttons (the thread's live one): every
    # other card posted was retired (the stand-in numbers its posts in order)
    time.sleep(1.5)
    conv = redis_server.command("HGETALL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")
    cards = {f"1700000000.{n + 1:06d}" for n, c in enumerate(slack.of("chat.postMessage"))
             if c.body.get("blocks")}
    retired = {u.body["ts"] for u in slack.of("chat.update")
               if "Superseded" in texts(u.body["blocks"])}
    assert conv["_answer_ts"] in cards and conv["_answer_ts"] not in retired
    assert cards - {conv["_answer_ts"]} <= retired


def test_what_if_buttons_menu_and_details_in_modals(bot: Bot, slack: SlackStub,
                                                    redis_server: RedisServer) -> None:
    root = start(bot, slack, redis_server, "llama-3.1-8b full-finetune")
    first = slack.of("chat.postMessage")[0].body
    bot.action(action_id="whatif_method_qlora", value=value_of(first, "whatif_method_qlora"),
               message_ts=root)
    second = slack.wait_for("chat.postMessage", 2)[1].body
    assert second["thread_ts"] == root and second["blocks"][1]["text"]["text"].startswith(
        "*QLoRA* → ")
    live = redis_server.command("HGETALL", f"gpusize:v1:conv:T0TEAM:C0CHAN:{root}")["_answer_ts"]
    more = menu(second)
    posts = len(slack.of("chat.postMessage"))
    # each detail opens a modal with the press's trigger, with the detail in it; nothing is
    # posted in the thread
    for n, (label, expected) in enumerate((("Memory breakdown", "Memory breakdown"),
                                           ("Assumptions", "Assumptions"),
                                           ("The guides' advice", "buying guides"),
                                           ("Bill of materials", "Bill of materials"),
                                           ("How to run it", "How to run it with")), start=1):
        bot.action(action_id="card_more", value=None, selected=more[label], element="overflow",
                   message_ts=live, thread_ts=root)
        opened = slack.wait_for("views.open", n)[n - 1].body
        assert opened["trigger_id"] == "1.2.3" and opened["view"]["type"] == "modal"
        assert opened["view"]["title"]["text"] == label[:24]
        shown = texts(opened["view"]["blocks"])
        assert expected in shown and "seed 000" not in shown, (label, shown[:300])
    bot.action(action_id="show_rent_vs_buy", value=value_of(second, "show_rent_vs_buy"),
               message_ts=live, thread_ts=root)
    cost = slack.wait_for("views.open", 6)[5].body["view"]
    assert "Rent vs buy" in texts(cost["blocks"]) and "break-even" in texts(cost["blocks"])
    assert "rule of thumb is to buy when the cards are busy more than 400 h" in texts(
        cost["blocks"])
    time.sleep(0.3)
    assert len(slack.of("chat.postMessage")) == posts


def test_mention_in_a_channel_starts_a_thread(bot: Bot, slack: SlackStub) -> None:
    bot.event({"type": "app_mention", "channel": "C0CHAN", "user": "U0DAVE",
               "text": f"<@{BOT_USER}> qwen2.5-7b serve users=10", "ts": "1700000020.1"},
              event_id="EvM1")
    post = slack.wait_for("chat.postMessage")[0].body
    assert post["thread_ts"] == "1700000020.1"
    assert post["blocks"][0]["text"]["text"].startswith("Qwen2.5 7B serving → ")
