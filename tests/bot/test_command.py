"""`/gpusize` over real HTTP: help, errors, answers, not-in-channel, signatures."""

from __future__ import annotations

import json
import time

from tests.harness import Bot, RedisServer, SlackStub


def texts(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_help_answers_ephemerally_and_a_bare_command_opens_the_form(bot: Bot,
                                                                     slack: SlackStub) -> None:
    for text in ("help", "--help"):
        status, body = bot.command(text)
        assert status == 200
        reply = json.loads(body)
        assert reply.get("response_type", "ephemeral") == "ephemeral"
        assert "/gpusize MODEL METHOD" in texts(reply["blocks"])
    status, body = bot.command("")
    assert status == 200 and body == ""
    assert slack.wait_for("views.open")[0].body["view"]["callback_id"] == "sizing_form"
    time.sleep(0.3)
    assert slack.of("chat.postMessage") == []


def test_parse_error_is_ephemeral_and_posts_nothing(bot: Bot, slack: SlackStub,
                                                    redis_server: RedisServer) -> None:
    status, body = bot.command("7B lroa budget=150k")
    reply = json.loads(body)
    assert status == 200 and "Did you mean lora?" in texts(reply["blocks"])
    assert "Traceback" not in body
    time.sleep(0.3)
    assert slack.of("chat.postMessage") == []
    assert redis_server.command("KEYS", "gpusize:v1:conv:*") == []


def test_complete_command_acks_fast_then_posts_in_channel(bot: Bot, slack: SlackStub,
                                                          redis_server: RedisServer) -> None:
    start = time.monotonic()
    status, body = bot.command("13B full-finetune budget=150k")
    assert status == 200 and body == ""
    assert time.monotonic() - start < 3
    post = slack.wait_for("chat.postMessage")[0].body
    assert post["channel"] == "C0CHAN" and "thread_ts" not in post
    assert post["blocks"][0]["text"]["text"].startswith("13B full fine-tune → ")
    assert post["text"].startswith(post["blocks"][0]["text"]["text"])
    redis_server.wait_for_conversation("1700000000.000001")
    keys = redis_server.command("KEYS", "gpusize:v1:conv:*")
    assert len(keys) == 1 and keys[0].endswith(":C0CHAN:1700000000.000001")


def test_not_in_channel_answers_privately_with_invite(bot: Bot, slack: SlackStub) -> None:
    slack.not_in_channel.add("C0PRIVATE")
    bot.command("llama-3.1-8b qlora", channel="C0PRIVATE", response_url=slack.response_url())
    reply = slack.wait_for("response_url")[0].body
    assert reply["response_type"] == "ephemeral"
    assert "/invite @gpusize" in texts(reply["blocks"])
    assert reply["blocks"][0]["text"]["text"].startswith("Llama 3.1 8B QLoRA → ")
    # a private copy has no thread to continue: nothing on it to press
    assert not [b for b in reply["blocks"] if b["type"] == "actions" or "accessory" in b]


def test_forged_and_stale_requests_are_rejected(bot: Bot, slack: SlackStub) -> None:
    assert bot.command("13B lora", secret="wrong-secret")[0] == 401
    assert bot.command("13B lora", timestamp=int(time.time()) - 301)[0] == 401
    time.sleep(0.3)
    assert slack.of("chat.postMessage") == []


def test_user_text_never_becomes_a_live_mention_or_link(bot: Bot) -> None:
    _status, body = bot.command("<!channel> <https://evil.example|click> lora")
    blocks = texts(json.loads(body)["blocks"])
    assert "<!channel>" not in blocks and "<https://" not in blocks
    assert "&lt;!channel&gt;" in blocks


def test_healthz_and_readyz(bot: Bot) -> None:
    import urllib.request

    with urllib.request.urlopen(bot.url + "/healthz") as r:
        assert r.read() == b"ok"
    with urllib.request.urlopen(bot.url + "/readyz") as r:
        assert json.loads(r.read())["ready"] is True
