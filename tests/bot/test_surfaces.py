"""The Slack surfaces beside the slash command, over signed HTTP against the Web API stand-in:
the sizing form (an empty /gpusize, its model menu, its submission), the message shortcut, App
Home and direct messages. Each surface's view is also checked against Slack's limits."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from tests.harness import TEAM, Bot, RedisServer, SlackStub
from tests.present.test_views import check_view

pytestmark = pytest.mark.slow


def texts(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def state(**values: Any) -> dict[str, Any]:
    """A submitted form's state.values, as Slack sends it: block -> action -> value."""
    out: dict[str, Any] = {}
    for block, value in values.items():
        action = f"form_{block}"
        if block in ("model", "method", "currency", "gpu", "market", "way"):
            out[block] = {action: {"type": "static_select",
                                   "selected_option": {"value": value}}}
        elif block == "channel":
            out[block] = {action: {"type": "conversations_select",
                                   "selected_conversation": value}}
        else:
            out[block] = {action: {"type": "plain_text_input", "value": value}}
    return out


def submission(view: dict[str, Any], *, user: str = "U0ALICE", **values: Any) -> dict[str, Any]:
    submitted = {**view, "id": "VFORM1", "hash": f"h{time.time_ns()}",
                 "state": {"values": state(**values)}}
    return {"type": "view_submission", "team": {"id": TEAM}, "api_app_id": "A0APP",
            "user": {"id": user, "team_id": TEAM}, "trigger_id": "9.9.9", "view": submitted}


def open_form(bot: Bot, slack: SlackStub) -> dict[str, Any]:
    status, body = bot.command("")
    assert status == 200 and body == ""
    opened = slack.wait_for("views.open")[0].body
    assert opened["trigger_id"]
    return opened["view"]


def test_an_empty_command_opens_the_form_and_its_submission_posts_the_card(
        bot: Bot, slack: SlackStub, redis_server: RedisServer) -> None:
    view = open_form(bot, slack)
    check_view(view)
    assert view["callback_id"] == "sizing_form" and view["submit"]["text"] == "Size it"
    blocks = {b["block_id"]: b for b in view["blocks"]}
    assert blocks["model"]["element"]["type"] == "external_select"
    assert not blocks["model"]["optional"] and not blocks["method"]["optional"]
    assert {"budget", "way", "currency", "users", "context", "gpu", "gpus", "market"} <= set(blocks)
    assert "channel" not in blocks  # the command's channel is where the card goes
    # the model menu: catalog models matching what is typed, and what is typed itself
    status, body = bot.interaction({"type": "block_suggestion", "action_id": "form_model",
                                    "block_id": "model", "value": "llama 3.1",
                                    "team": {"id": TEAM}, "user": {"id": "U0ALICE"},
                                    "view": view})
    options = json.loads(body)["options"]
    assert status == 200 and 1 < len(options) <= 100
    labels = [o["text"]["text"] for o in options]
    assert any(label.startswith("Llama 3.1 8B") for label in labels), labels
    assert "llama-3.1-8b" in [o["value"] for o in options]
    hub = json.loads(bot.interaction({"type": "block_suggestion", "action_id": "form_model",
                                      "block_id": "model", "value": "my-org/My-Model-7B",
                                      "team": {"id": TEAM}, "view": view})[1])["options"]
    assert hub[0]["value"] == "my-org/My-Model-7B"  # a Hub id is used as typed
    # a budget that is not an amount is said beside the budget, and nothing is posted
    status, body = bot.interaction(submission(view, model="llama-3.1-70b", method="inference",
                                              budget="lots"))
    assert status == 200 and json.loads(body)["response_action"] == "errors"
    assert "budget" in json.loads(body)["errors"]
    # a good one posts the same card the command would, in the command's channel
    status, body = bot.interaction(submission(view, model="llama-3.1-70b", method="inference",
                                              budget="20000", way="rent", users="20",
                                              context="8k", market="china"))
    assert status == 200 and body == ""
    post = slack.wait_for("chat.postMessage")[0].body
    assert post["channel"] == "C0CHAN" and "thread_ts" not in post
    header = post["blocks"][0]["text"]["text"]
    assert header.startswith("Llama 3.1 70B serving → ") and post["text"].startswith(header)
    asked = texts(post["blocks"])
    assert "llama-3.1-70b inference budget=720000 mode=rent users=20 context=8k" in asked
    redis_server.wait_for_conversation("1700000000.000002")


def test_a_form_with_a_typo_is_told_beside_the_input(bot: Bot, slack: SlackStub) -> None:
    view = open_form(bot, slack)
    status, body = bot.interaction(submission(view, model="llama-9000-zz", method="lora"))
    reply = json.loads(body)
    assert status == 200 and reply["response_action"] == "errors"
    assert set(reply["errors"]) == {"model"} and reply["errors"]["model"]
    time.sleep(0.3)
    assert slack.of("chat.postMessage") == []


def shortcut(text: str, *, user: str = "U0BOB") -> dict[str, Any]:
    return {"type": "message_action", "callback_id": "size_this", "trigger_id": "7.7.7",
            "team": {"id": TEAM}, "user": {"id": user, "team_id": TEAM},
            "channel": {"id": "C0CHAN", "name": "general"}, "message_ts": "1699999999.000100",
            "message": {"type": "message", "user": "U0CAROL", "ts": "1699999999.000100",
                        "text": text}, "response_url": ""}


def test_the_shortcut_opens_the_form_prefilled_from_the_message(
        bot: Bot, slack: SlackStub, redis_server: RedisServer) -> None:
    status, _body = bot.interaction(shortcut(
        "Could we serve llama-3.1-70b for 50 users with 32k context? Budget 300k, we'd rent."))
    assert status == 200
    opened = slack.wait_for("views.open")[0].body
    assert opened["trigger_id"] == "7.7.7"
    view = opened["view"]
    check_view(view)
    blocks = {b.get("block_id"): b for b in view["blocks"]}
    assert blocks["model"]["element"]["initial_option"]["value"] == "llama-3.1-70b"
    assert blocks["method"]["element"]["initial_option"]["value"] == "inference"
    assert blocks["users"]["element"]["initial_value"] == "50"
    assert blocks["context"]["element"]["initial_value"] == "32k"
    assert "Read from the message" in texts(view["blocks"])
    # submitted as prefilled: the card goes to the message's channel
    status, body = bot.interaction(submission(view, user="U0BOB", model="llama-3.1-70b",
                                              method="inference", users="50", context="32k"))
    assert status == 200 and body == ""
    post = slack.wait_for("chat.postMessage")[0].body
    assert post["channel"] == "C0CHAN"
    assert post["blocks"][0]["text"]["text"].startswith("Llama 3.1 70B serving → ")
    # a message in Chinese opens the form in Chinese; one that says nothing opens it empty
    bot.interaction(shortcut("我们有8张4090，想微调qwen2.5-72b，预算30万"))
    zh = slack.wait_for("views.open", 2)[1].body["view"]
    assert zh["title"]["text"] == "GPU 服务器选型"
    zh_blocks = {b.get("block_id"): b for b in zh["blocks"]}
    assert zh_blocks["model"]["element"]["initial_option"]["value"] == "qwen2.5-72b"
    assert zh_blocks["gpu"]["element"]["initial_option"]["value"] == "rtx-4090"
    bot.interaction(shortcut("lunch at noon?"))
    empty = slack.wait_for("views.open", 3)[2].body["view"]
    assert "initial_option" not in {b.get("block_id"): b for b in empty["blocks"]}["model"][
        "element"]


def home_opened(bot: Bot, user: str = "U0ALICE", n: int = 1) -> None:
    bot.event({"type": "app_home_opened", "user": user, "channel": "D0HOME", "tab": "home",
               "event_ts": f"{time.time():.6f}"}, event_id=f"EvHome{time.time_ns()}")


def home_press(bot: Bot, value: str, *, action_id: str = "home_run",
               user: str = "U0ALICE") -> None:
    bot.interaction({"type": "block_actions", "team": {"id": TEAM}, "api_app_id": "A0APP",
                     "user": {"id": user, "team_id": TEAM}, "trigger_id": "5.5.5",
                     "container": {"type": "view", "view_id": "VHOME"},
                     "view": {"id": "VHOME", "type": "home"},
                     "actions": [{"action_id": action_id, "block_id": "b", "type": "button",
                                  "value": value, "action_ts": f"{time.time():.6f}"}]})


def test_app_home_lists_recent_answers_language_and_team_quotes_with_controls(
        bot: Bot, slack: SlackStub, redis_server: RedisServer) -> None:
    home_opened(bot)
    first = slack.wait_for("views.publish")[0].body
    assert first["user_id"] == "U0ALICE"
    view = first["view"]
    check_view(view)
    assert view["type"] == "home" and len(view["blocks"]) <= 20
    shown = texts(view["blocks"])
    # what to do first: the header, then "New sizing" (the form)
    assert view["blocks"][0]["type"] == "header"
    assert view["blocks"][1]["accessory"]["action_id"] == "open_form"
    assert "None yet" in shown and "English" in shown and "No quotes yet" in shown
    # an answer and a quote later, the tab links the answer and offers to remove the quote
    bot.command("13B lora")
    slack.wait_for("chat.postMessage")
    bot.command('quote H20 buy 150k vendor="Chengdu IDC A"', response_url=slack.response_url())
    slack.wait_for("response_url")
    home_opened(bot)
    view = slack.wait_for("views.publish", 2)[1].body["view"]
    check_view(view)
    shown = texts(view["blocks"])
    # the card's permalink, labelled with its verdict
    assert re.search(r"<https://test\.slack\.com/archives/C0CHAN/p1700000000\d{6}\|13B LoRA → ",
                     shown), shown
    quote = next(b for b in view["blocks"] if "Chengdu IDC A" in texts([b]))
    assert quote["accessory"]["text"]["text"] == "Remove"
    assert quote["accessory"]["value"].startswith("quote remove q")
    assert quote["accessory"]["value"].split()[-1] not in quote["text"]["text"]  # no ids shown
    # the control runs the sub-command as typed, and the tab says what it did
    home_press(bot, quote["accessory"]["value"])
    after = slack.wait_for("views.publish", 3)[2].body["view"]
    assert "Removed quote" in texts(after["blocks"]) and "Chengdu IDC A" not in texts(
        after["blocks"])
    # the language control: the tab comes back in Chinese
    home_press(bot, "lang zh")
    zh = slack.wait_for("views.publish", 4)[3].body["view"]
    check_view(zh)
    assert "中文" in texts(zh["blocks"]) and "New sizing" not in texts(zh["blocks"])
    # the messages tab publishes nothing (a DM is the way to talk there)
    bot.event({"type": "app_home_opened", "user": "U0ALICE", "channel": "D0HOME",
               "tab": "messages"}, event_id="EvHomeMessages")
    time.sleep(0.5)
    assert len(slack.of("views.publish")) == 4
    # "New sizing" opens the form, asking where to post (no channel on the tab)
    home_press(bot, "", action_id="open_form")
    form = slack.wait_for("views.open")[0].body["view"]
    assert form["callback_id"] == "sizing_form"
    assert any(b.get("block_id") == "channel" for b in form["blocks"])


def dm(text: str, *, ts: str, thread_ts: str | None = None) -> dict[str, Any]:
    event = {"type": "message", "channel": "D0ALICE", "channel_type": "im", "user": "U0ALICE",
             "text": text, "ts": ts}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def test_a_direct_message_is_answered_as_in_a_channel(bot: Bot, slack: SlackStub) -> None:
    status, _body = bot.event(dm("llama-3.1-8b qlora", ts="1700000100.000001"), event_id="EvDm1")
    assert status == 200
    card = slack.wait_for("chat.postMessage")[0].body
    assert card["channel"] == "D0ALICE" and card["thread_ts"] == "1700000100.000001"
    assert card["blocks"][0]["text"]["text"].startswith("Llama 3.1 8B QLoRA → ")
    assert any(b["type"] == "actions" for b in card["blocks"])
    # the thread continues like a channel's: a reply changes the answer
    bot.event(dm("what about lora?", ts="1700000100.000002", thread_ts="1700000100.000001"),
              event_id="EvDm2")
    again = slack.wait_for("chat.postMessage", 2)[1].body
    assert again["channel"] == "D0ALICE" and again["thread_ts"] == "1700000100.000001"
    assert again["blocks"][1]["text"]["text"].startswith("*LoRA* → ")
    # the bot's own messages and edits in the DM are not asked of it
    bot.event({**dm("13B lora", ts="1700000100.000003"), "bot_id": "BBOT0001"}, event_id="EvDm3")
    bot.event({**dm("help", ts="1700000100.000004")}, event_id="EvDm4")
    helped = slack.wait_for("chat.postMessage", 3)[2].body
    assert helped["thread_ts"] == "1700000100.000004" and "/gpusize" in texts(helped["blocks"])
    # a payload that leaves channel_type out: a D... channel is a DM all the same
    bare = {k: v for k, v in dm("13B lora", ts="1700000100.000005").items()
            if k != "channel_type"}
    bot.event(bare, event_id="EvDm5")
    fourth = slack.wait_for("chat.postMessage", 4)[3].body
    assert fourth["thread_ts"] == "1700000100.000005"
    assert fourth["blocks"][0]["text"]["text"].startswith("13B LoRA → ")
    time.sleep(0.3)
    assert len(slack.of("chat.postMessage")) == 4


def test_a_card_slack_rejects_is_posted_again_with_the_table_as_code(
        bot: Bot, slack: SlackStub, redis_server: RedisServer) -> None:
    slack.fail_next.append({"method": "chat.postMessage",
                            "body": {"ok": False, "error": "invalid_blocks"}})
    assert bot.command("13B full-finetune budget=150k")[0] == 200
    first, second = slack.wait_for("chat.postMessage", 2)[:2]
    assert any(b["type"] == "table" for b in first.body["blocks"])
    fallback = second.body["blocks"]
    assert not any(b["type"] == "table" for b in fallback)
    code = next(b["text"]["text"] for b in fallback if "```" in (b.get("text") or {}).get(
        "text", ""))
    assert "card" in code and "GPUs" in code and max(map(len, code.split("\n"))) <= 50
    # the rest of the card is as it was: verdict first, the buttons kept
    assert fallback[0] == first.body["blocks"][0] and fallback[-1]["type"] == "actions"
    assert second.body["text"] == first.body["text"]
    redis_server.wait_for_conversation("1700000000.000001")


def press(bot: Bot, action_id: str, value: str, response_url: str, *,
          user: str = "U0ALICE") -> None:
    """A button under an ephemeral message (help, an error): it carries a response_url."""
    bot.interaction({"type": "block_actions", "team": {"id": TEAM}, "api_app_id": "A0APP",
                     "user": {"id": user, "team_id": TEAM}, "channel": {"id": "C0CHAN"},
                     "container": {"type": "message", "is_ephemeral": True},
                     "trigger_id": "3.3.3", "response_url": response_url,
                     "actions": [{"action_id": action_id, "block_id": "b", "type": "button",
                                  "value": value, "action_ts": f"{time.time():.6f}"}]})


def test_help_is_four_lines_with_buttons_and_every_option_in_a_modal(
        bot: Bot, slack: SlackStub) -> None:
    status, body = bot.command("help")
    blocks = json.loads(body)["blocks"]
    assert status == 200 and [b["type"] for b in blocks] == ["section", "actions"]
    lines = blocks[0]["text"]["text"].split("\n")
    assert len(lines) == 4 and lines[0].startswith("*gpusize* sizes GPU servers")
    assert len(blocks[0]["text"]["text"]) <= 500  # was over 1,000 with a 36-key list
    assert [e["action_id"] for e in blocks[1]["elements"]] == ["open_form", "all_options",
                                                               "show_prices"]
    press(bot, "all_options", "", slack.response_url("help"))
    modal = slack.wait_for("views.open")[0].body["view"]
    check_view(modal)
    assert modal["title"]["text"] == "All options" and "`goal=`" in texts(modal["blocks"])
    press(bot, "show_prices", "price", slack.response_url("help"))
    prices = slack.wait_for("response_url")[0].body
    assert prices["response_type"] == "ephemeral" and "CNY" in texts(prices["blocks"])


def test_an_error_offers_the_corrected_command_and_runs_it(
        bot: Bot, slack: SlackStub, redis_server: RedisServer) -> None:
    status, body = bot.command("13B lroa budegt=150k")
    blocks = json.loads(body)["blocks"]
    assert status == 200
    # what is wrong first, the fix, the typed text echoed, then the buttons
    assert blocks[0]["text"]["text"].startswith("unknown key budegt=")
    assert "Did you mean `/gpusize 13B lora budget=150k`?" in blocks[0]["text"]["text"]
    assert "You typed `/gpusize 13B lroa budegt=150k`" in texts(blocks)
    run = blocks[-1]["elements"][0]
    assert run["action_id"] == "run_it" and run["value"] == "13B lora budget=150k"
    assert blocks[-1]["elements"][1]["action_id"] == "open_form"
    press(bot, "run_it", run["value"], slack.response_url("err"))
    card = slack.wait_for("chat.postMessage")[0].body
    assert card["channel"] == "C0CHAN" and card["blocks"][0]["text"]["text"].startswith(
        "13B LoRA → ")
    assert "/gpusize 13B lora budget=150k" in texts(card["blocks"])
    assert any(c.body.get("delete_original") for c in slack.wait_for("response_url"))
    # nothing to correct: the error and the form, the text still echoed
    _status, body = bot.command("zzzz-unknown-model lora")
    blocks = json.loads(body)["blocks"]
    assert [e["action_id"] for e in blocks[-1]["elements"]] == ["open_form"]
    assert "You typed `/gpusize zzzz-unknown-model lora`" in texts(blocks)


def test_a_slow_detail_opens_at_once_and_is_filled_in(make_bot: Any, slack: SlackStub,
                                                      redis_server: RedisServer) -> None:
    # workers slower than the press's budget: the modal opens with the trigger saying it is
    # being worked out, and the press's job fills it in (views.update on that view)
    bot = make_bot(GPUSIZE_TEST_ANSWER_DELAY_S="1.6")
    bot.command("llama-3.1-8b qlora")
    card = slack.wait_for("chat.postMessage", timeout=20)[0].body
    redis_server.wait_for_conversation("1700000000.000001", field="_card_v")
    bom = next(o["value"] for b in card["blocks"] for e in b.get("elements", [])
               if e.get("action_id") == "card_more" for o in e["options"]
               if o["text"]["text"] == "Bill of materials")
    started = time.monotonic()
    status, _body = bot.action(action_id="card_more", value=None, selected=bom,
                               element="overflow", message_ts="1700000000.000001")
    assert status == 200 and time.monotonic() - started < 3  # acked within Slack's 3 s
    opened = slack.wait_for("views.open")[0].body
    assert "Working it out" in texts(opened["view"]["blocks"])
    filled = slack.wait_for("views.update", timeout=20)[0].body
    assert filled["view_id"].startswith("V") and "Bill of materials" in texts(
        filled["view"]["blocks"])
