"""Issue 26 item 7 over real HTTP, Redis and the Slack stand-in: one member's new threads are
capped (the others' are not), every acknowledged request gets an answer (an error is one), and a
malformed signed payload is a 4xx, never a 500."""

from __future__ import annotations

import json
from typing import Any

from tests.harness import SlackStub


def test_one_member_cannot_open_threads_without_end(make_bot: Any, slack: SlackStub) -> None:
    bot = make_bot(THREAD_LIMIT_PER_HOUR="3")
    acks = [bot.command(f"{size}B lora", user="U0SCRIPT") for size in (7, 8, 13, 14, 32)]
    assert all(status == 200 for status, _ in acks)
    refused = [body for _, body in acks if "more new threads than one person opens" in body]
    assert len(refused) == 2 and "at most 3 an hour" in refused[0]
    slack.wait_for("chat.postMessage", 3)
    # someone else is not held back by it
    status, body = bot.command("13B lora", user="U0OTHER")
    assert status == 200 and "more new threads" not in body
    posts = slack.wait_for("chat.postMessage", 4)
    assert len([p for p in posts if "LoRA" in json.dumps(p.body)]) >= 4
    # a mention opens a thread too, and is counted the same way
    bot.event({"type": "app_mention", "channel": "C0CHAN", "user": "U0SCRIPT",
               "text": "<@UBOT0001> 70B lora", "ts": "1700000500.000100"}, event_id="EvMention")
    private = slack.wait_for("chat.postEphemeral")[0].body
    assert "more new threads" in json.dumps(private)
