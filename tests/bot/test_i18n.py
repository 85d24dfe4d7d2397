"""Chinese and English replies per person and workspace, Chinese input, and chart uploads."""

from __future__ import annotations

import io
import json
import re

from PIL import Image

from tests.harness import Bot, RedisServer, SlackStub

CJK = re.compile(r"[\u4e00-\u9fff]")
ROOT = "1700000000.000001"


def blocks_text(call) -> str:
    return json.dumps(call.body.get("blocks", []), ensure_ascii=False)


def test_slack_locale_picks_chinese_and_lang_overrides(bot: Bot, slack: SlackStub) -> None:
    slack.locales["U0ZH"] = "zh-CN"
    bot.command("13B 全参微调 预算15万", user="U0ZH")
    zh = blocks_text(slack.wait_for("chat.postMessage")[0])
    assert CJK.search(zh.replace("全参微调", "")) and "¥" in zh
    # the same person asks for English
    bot.command("lang en", user="U0ZH", response_url=slack.response_url())
    slack.wait_for("response_url")
    bot.command("13B lora", user="U0ZH", channel="C0TWO")
    en = blocks_text(slack.wait_for("chat.postMessage", 2)[1])
    assert not CJK.search(en) and "Recommended" in en


def test_workspace_language_applies_to_everyone(bot: Bot, slack: SlackStub) -> None:
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
    slack.wait_for("chat.postMessage")
    redis_server.wait_for_conversation(ROOT)
    bot.action(action_id="show_chart", value="memory", message_ts=ROOT)
    done = slack.wait_for("files.completeUploadExternal", timeout=30)[0].body
    upload = slack.wait_for("upload")[0].body["bytes"]
    image = Image.open(io.BytesIO(upload))
    assert image.format == "PNG" and image.width >= 600 and image.height >= 200
    assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 20  # not blank
    url_call = slack.of("files.getUploadURLExternal")[0].body
    assert url_call["filename"] == "memory.png"
    assert done.get("thread_ts") == ROOT or json.dumps(done).count(ROOT)
    bot.action(action_id="show_price_chart", value="rtx-a6000", message_ts=ROOT)
    slack.wait_for("upload", 2, timeout=30)
    assert slack.of("files.getUploadURLExternal")[1].body["filename"] == "prices-rtx-a6000.png"


def test_a_question_in_chinese_is_answered_in_chinese(bot: Bot, slack: SlackStub,
                                                      redis_server: RedisServer) -> None:
    # U0ALICE's Slack locale is English and she chose nothing: the question's language decides
    bot.command("qwen2.5-72b 推理 100并发")
    answer = blocks_text(slack.wait_for("chat.postMessage")[0])
    assert "推荐" in answer and "Recommended" not in answer
    redis_server.wait_for_conversation(ROOT)
    # an English reply from her goes back to her own language; a Chinese one is answered in Chinese
    bot.event({"type": "message", "channel": "C0CHAN", "user": "U0ALICE", "text": "序列长度8k 换成 lora",
               "ts": "1700000001.1", "thread_ts": ROOT, "channel_type": "channel"}, event_id="EvZh1")
    again = blocks_text(slack.wait_for("chat.postMessage", 2)[1])
    assert "推荐" in again and "Recommended" not in again
    bot.event({"type": "message", "channel": "C0CHAN", "user": "U0ALICE", "text": "what about qlora?",
               "ts": "1700000002.1", "thread_ts": ROOT, "channel_type": "channel"}, event_id="EvEn1")
    third = blocks_text(slack.wait_for("chat.postMessage", 3)[2])
    assert "Recommended" in third


def test_chinese_errors_and_help_for_an_english_locale(bot: Bot) -> None:
    status, body = bot.command("qwen2.5-72b 推理 并法100")
    text = json.dumps(json.loads(body), ensure_ascii=False)
    assert status == 200 and "并发" in text and "100并发" in text and "unexpected" not in text
    _, help_zh = bot.command("帮助")
    help_zh = json.dumps(json.loads(help_zh), ensure_ascii=False)
    assert "预算15万" in help_zh and "100并发" in help_zh and "sizes GPU servers" not in help_zh
