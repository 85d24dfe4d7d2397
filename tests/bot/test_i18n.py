"""Chinese and English replies per person and workspace, Chinese input, and chart uploads."""

from __future__ import annotations

import io
import json
import re

from PIL import Image

from present import blockkit
from tests.harness import Bot, RedisServer, SlackStub

CJK = re.compile(r"[\u4e00-\u9fff]")
ROOT = "1700000000.000001"


def blocks_text(call) -> str:
    return json.dumps(call.body.get("blocks", []), ensure_ascii=False)


def test_slack_locale_picks_chinese_and_lang_overrides(bot: Bot, slack: SlackStub) -> None:
    slack.locales["U0ZH"] = "zh-CN"
    bot.command("13B 全参微调 预算15万", user="U0ZH")
    post = slack.wait_for("chat.postMessage")[0].body
    zh = json.dumps(post["blocks"], ensure_ascii=False)
    assert CJK.search(zh.replace("全参微调", "")) and "¥" in zh
    # the Chinese answer is one phone screen too, its verdict first, its fallback one line
    assert len(post["blocks"]) <= 6 and blockkit.text_length(post["blocks"]) <= 1200
    assert post["blocks"][0]["text"]["text"].startswith("13B 全参微调 → ")
    assert post["text"].startswith(post["blocks"][0]["text"]["text"] + "：") and "\n" not in post["text"]
    # the same person asks for English
    bot.command("lang en", user="U0ZH", response_url=slack.response_url())
    slack.wait_for("response_url")
    bot.command("13B lora", user="U0ZH", channel="C0TWO")
    en = blocks_text(slack.wait_for("chat.postMessage", 2)[1])
    assert not CJK.search(en) and "13B LoRA → " in en


def test_workspace_language_applies_to_everyone(bot: Bot, slack: SlackStub) -> None:
    slack.admins.add("U0ALICE")  # only admins set the workspace's language (tests/bot/test_authz.py)
    bot.command("lang zh workspace", response_url=slack.response_url())
    slack.wait_for("response_url")
    bot.command("7B lroa")  # an English-locale user, an error: now in Chinese
    status, body = bot.command("7B lroa")
    assert status == 200 and CJK.search(json.dumps(json.loads(body), ensure_ascii=False))


def test_errors_and_help_follow_the_language(bot: Bot, slack: SlackStub) -> None:
    slack.locales["U0ZH"] = "zh_CN"
    _, help_zh = bot.command("help", user="U0ZH")
    _, help_en = bot.command("help")
    assert CJK.search(help_zh.encode().decode("unicode_escape", errors="ignore") or help_zh)
    assert "sizes GPU servers" in help_en


def test_memory_and_price_charts_are_uploaded_into_the_thread(bot: Bot, slack: SlackStub,
                                                              redis_server: RedisServer) -> None:
    bot.command("llama-3.1-8b lora")
    card = slack.wait_for("chat.postMessage")[0].body
    redis_server.wait_for_conversation(ROOT)
    charts = next(o["value"] for b in card["blocks"] for e in b.get("elements", [])
                  if e.get("action_id") == "card_more" for o in e["options"]
                  if o["text"]["text"].startswith("Charts"))
    bot.action(action_id="card_more", value=None, selected=charts, element="overflow",
               message_ts=ROOT)
    done = slack.wait_for("files.completeUploadExternal", timeout=30)[0].body
    upload = slack.wait_for("upload")[0].body["bytes"]
    image = Image.open(io.BytesIO(upload))
    assert image.format == "PNG" and image.width >= 600 and image.height >= 200
    assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 20  # not blank
    url_call = slack.of("files.getUploadURLExternal")[0].body
    assert url_call["filename"] == "memory.png"
    # what the picture shows, in words: alt text for screen readers, a comment for the rest
    assert url_call["alt_txt"].startswith("Bar chart of memory per GPU for Llama 3.1 8B")
    assert "GiB per GPU" in url_call["alt_txt"]
    assert done.get("thread_ts") == ROOT or json.dumps(done).count(ROOT)
    assert done["initial_comment"].startswith("Memory per GPU, per option: Bar chart")
    # the menu's charts include the recommended card's price history, since it has one
    slack.wait_for("upload", 2, timeout=30)
    prices = slack.of("files.getUploadURLExternal")[1].body
    assert prices["filename"].startswith("prices-") and "prices of" in prices["alt_txt"]
    # a card without prices: said privately, nothing uploaded
    uploads = len(slack.of("upload"))
    bot.action(action_id="show_price_chart", value="no-such-card", message_ts=ROOT)
    assert "No prices recorded" in json.dumps(slack.wait_for("chat.postEphemeral")[0].body)
    assert len(slack.of("upload")) == uploads


def test_a_question_in_chinese_is_answered_in_chinese(bot: Bot, slack: SlackStub,
                                                      redis_server: RedisServer) -> None:
    # U0ALICE's Slack locale is English and she chose nothing: the question's language decides
    bot.command("qwen2.5-72b 推理 100并发")
    answer = blocks_text(slack.wait_for("chat.postMessage")[0])
    assert "→ 租用" in answer or "→ 购置" in answer
    assert "Recommended" not in answer and "→ rent" not in answer
    redis_server.wait_for_conversation(ROOT)
    # the thread keeps the language it started in for its cards, whoever replies in what
    bot.event({"type": "message", "channel": "C0CHAN", "user": "U0ALICE", "text": "序列长度8k 换成 lora",
               "ts": "1700000001.1", "thread_ts": ROOT, "channel_type": "channel"}, event_id="EvZh1")
    again = blocks_text(slack.wait_for("chat.postMessage", 2)[1])
    assert "→" in again and "rent " not in again and "Buy " not in again
    bot.event({"type": "message", "channel": "C0CHAN", "user": "U0ALICE", "text": "what about qlora?",
               "ts": "1700000002.1", "thread_ts": ROOT, "channel_type": "channel"}, event_id="EvEn1")
    third = blocks_text(slack.wait_for("chat.postMessage", 3)[2])
    assert "→ 租用" in third or "→ 购置" in third
    assert "→ rent" not in third and "→ buy" not in third
    # a reply that leaves the recommendation as it is: one line, in the replier's language
    bot.event({"type": "message", "channel": "C0CHAN", "user": "U0ALICE", "text": "budget 100M",
               "ts": "1700000003.1", "thread_ts": ROOT, "channel_type": "channel"}, event_id="EvEn2")
    line = slack.wait_for("chat.postMessage", 4)[3].body
    assert "blocks" not in line and "same recommendation" in line["text"], line["text"]


def test_chinese_errors_and_help_for_an_english_locale(bot: Bot, slack: SlackStub) -> None:
    # a mistyped word is skipped, not refused (issue 20): the card says so, with the keyword
    status, _body = bot.command("qwen2.5-72b 推理 并法100")
    text = json.dumps(slack.wait_for("chat.postMessage")[0].body, ensure_ascii=False)
    assert status == 200 and "并法" in text and "100并发" in text and "unexpected" not in text
    _, help_zh = bot.command("帮助")
    help_zh = json.dumps(json.loads(help_zh), ensure_ascii=False)
    assert "预算15万" in help_zh and "100并发" in help_zh and "sizes GPU servers" not in help_zh
