"""Faults, measured: Redis stopped, restarted with AOF, or slow; Slack's Web API rate limiting,
failing or hanging; forged and stale requests; 100 concurrent follow-ups from three processes;
one workspace reaching for another's state."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.harness import TEAM, Bot, RedisServer, SlackStub, http_status

ROOT = "1700000000.000001"


def reply(text: str, ts: str, user: str = "U0CAROL") -> dict[str, Any]:
    return {"type": "message", "channel": "C0CHAN", "user": user, "text": text, "ts": ts,
            "thread_ts": ROOT}


def test_redis_stopped_mid_dialog_then_back(make_bot: Any, slack: SlackStub,
                                            own_redis: RedisServer) -> None:
    bot = make_bot(REDIS_URL=own_redis.url)
    bot.command("llama-3.1-70b")
    slack.wait_for("chat.postMessage")
    own_redis.wait_for_conversation(ROOT)
    own_redis.stop()
    # a button in the open dialog: a private "cannot continue right now", no crash
    bot.action(action_id="answer_method_lora", value="1|lora", message_ts=ROOT)
    eph = slack.wait_for("chat.postEphemeral")[0].body
    assert "cannot continue this thread" in json.dumps(eph)
    # a one-shot question still gets its answer, with a note that the thread cannot continue
    bot.command("13B lora", channel="C0OTHER")
    posts = slack.wait_for("chat.postMessage", 3)
    assert posts[1].body["blocks"][0]["text"]["text"].startswith("13B LoRA → ")
    assert "could not save this conversation" in posts[2].body["text"]
    # still ready: every pod would leave the Service together otherwise (Redis is shared)
    assert http_status(bot.url + "/healthz") == 200 and http_status(bot.url + "/readyz") == 200
    # Redis back (AOF): the dialog continues where it was
    own_redis.start(appendonly=True)
    bot.action(action_id="answer_method_lora", value="1|lora", message_ts=ROOT)
    budget_q = slack.wait_for("chat.postMessage", 4)[3].body
    assert budget_q["thread_ts"] == ROOT and "answer_budget" in json.dumps(budget_q["blocks"])
    assert http_status(bot.url + "/readyz") == 200


def test_redis_restart_with_aof_loses_no_conversation(make_bot: Any, slack: SlackStub,
                                                      own_redis: RedisServer) -> None:
    bot = make_bot(REDIS_URL=own_redis.url)
    bot.command("13B lora budget=150k")
    slack.wait_for("chat.postMessage")
    before = own_redis.wait_for_conversation(ROOT)
    own_redis.stop()
    own_redis.start(appendonly=True)
    assert own_redis.command("HGETALL", f"gpusize:v1:conv:{TEAM}:C0CHAN:{ROOT}") == before
    bot.event(reply("what about qlora?", "1700000100.1"), event_id="EvAOF")
    again = slack.wait_for("chat.postMessage", 2)[1].body
    assert again["blocks"][1]["text"]["text"].startswith("*QLoRA* → ")


def test_slow_redis_never_holds_an_ack(make_bot: Any, slack: SlackStub,
                                       own_redis: RedisServer) -> None:
    bot = make_bot(REDIS_URL=own_redis.url)
    bot.command("help")  # warm
    sleeper = threading.Thread(target=lambda: own_redis.command("DEBUG", "SLEEP", "4"))
    sleeper.start()
    time.sleep(0.2)
    took = []
    for send in (lambda: bot.command("13B lora"),
                 lambda: bot.event(reply("budget 300k", "1700000200.1"), event_id="EvSlow")):
        start = time.monotonic()
        code, _ = send()
        took.append(time.monotonic() - start)
        assert code == 200
    sleeper.join()
    assert max(took) < 3, took


def test_slack_rate_limit_is_retried(bot: Bot, slack: SlackStub) -> None:
    slack.fail_next.append({"status": 429, "body": {"ok": False, "error": "ratelimited"}})
    bot.command("13B lora")
    calls = slack.wait_for("chat.postMessage", 2, timeout=15)
    assert len(calls) == 2  # the 429, then the retry after Retry-After


def test_slack_failing_gets_an_apology_not_silence(bot: Bot, slack: SlackStub) -> None:
    failure = {"status": 500, "body": {"ok": False, "error": "internal_error"}}
    slack.fail_next.extend([failure] * 3)
    bot.command("13B lora", response_url=slack.response_url())
    apology = slack.wait_for("response_url", timeout=20)[0].body
    assert "Sorry" in apology["text"] and apology["response_type"] == "ephemeral"


def test_slack_hanging_the_post_it_took_is_found_not_posted_twice(make_bot: Any,
                                                                  slack: SlackStub) -> None:
    bot = make_bot(SLACK_TIMEOUT_S="1")
    slack.delay_s = 2.5  # Slack takes the post but answers after the bot stopped waiting
    bot.command("13B lora", response_url=slack.response_url())
    slack.wait_for("chat.postMessage")
    slack.delay_s = 0
    # the job is run again (bot.once: Slack cut off), and looks for its post before posting
    slack.wait_for("conversations.history", timeout=30)
    time.sleep(1)
    answers = [c for c in slack.of("chat.postMessage") if c.body["text"].startswith("13B")]
    assert len(answers) == 1 and not slack.of("response_url"), slack.calls


@pytest.mark.parametrize("tamper", ["changed body", "future", "stale", "no headers", "bad format"])
def test_protocol_rejections(bot: Bot, slack: SlackStub, tamper: str) -> None:
    import urllib.parse

    body = urllib.parse.urlencode({"command": "/gpusize", "text": "13B lora", "team_id": TEAM,
                                   "channel_id": "C0CHAN", "user_id": "U1"}).encode()
    now = int(time.time())
    from slack_sdk.signature import SignatureVerifier

    from tests.harness import SECRET

    sig = SignatureVerifier(SECRET).generate_signature(timestamp=str(now), body=body)
    headers = {"Content-Type": "application/x-www-form-urlencoded",
               "X-Slack-Request-Timestamp": str(now), "X-Slack-Signature": sig}
    if tamper == "changed body":
        body = body.replace(b"13B", b"70B")
    elif tamper == "future":
        future = str(now + 301)
        headers |= {"X-Slack-Request-Timestamp": future, "X-Slack-Signature":
                    SignatureVerifier(SECRET).generate_signature(timestamp=future, body=body)}
    elif tamper == "stale":
        old = str(now - 301)
        headers |= {"X-Slack-Request-Timestamp": old, "X-Slack-Signature":
                    SignatureVerifier(SECRET).generate_signature(timestamp=old, body=body)}
    elif tamper == "no headers":
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
    else:
        headers["X-Slack-Signature"] = "sha256=" + sig[3:]
    req = urllib.request.Request(bot.url + "/slack/events", data=body, headers=headers)
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    assert info.value.code == 401
    time.sleep(0.2)
    assert slack.of("chat.postMessage") == []


def test_100_concurrent_follow_ups_from_three_processes(make_bot: Any, slack: SlackStub,
                                                        redis_server: RedisServer) -> None:
    bots = [make_bot() for _ in range(3)]
    bots[0].command("llama-3.1-8b inference")
    slack.wait_for("chat.postMessage")
    redis_server.wait_for_conversation(ROOT)

    def send(i: int) -> int:
        return bots[i % 3].event(reply(f"users={i + 1}", f"17000003{i:02d}.1"),
                                 event_id=f"EvCc{i}")[0]

    with ThreadPoolExecutor(25) as pool:
        assert set(pool.map(send, range(100))) == {200}
    slack.wait_for("chat.postMessage", 101, timeout=60)
    time.sleep(0.5)
    assert len(slack.of("chat.postMessage")) == 101  # one answer each, none doubled
    log = [json.loads(e) for e in redis_server.command(
        "LRANGE", f"gpusize:v1:convlog:{TEAM}:C0CHAN:{ROOT}", "0", "-1")]
    assert sum(1 for e in log if e["note"] == "follow-up") == 100  # none lost
    # each reply is answered with what it changed: a card, or one line when the recommendation
    # stays; either way its own fallback text
    answers = [c.body["text"] for c in slack.of("chat.postMessage")[1:]]
    assert len({a for a in answers if "concurrent users: " in a}) == 100


def test_one_workspace_cannot_touch_anothers_state(bot: Bot, slack: SlackStub,
                                                   redis_server: RedisServer) -> None:
    bot.command("13B lora budget=150k")
    slack.wait_for("chat.postMessage")
    mine = redis_server.wait_for_conversation(ROOT)
    # the same channel id and thread ts, but another workspace: not its thread
    bot.event(reply("what about qlora?", "1700000400.1"), event_id="EvOther", team="T0OTHER")
    bot.command('quote h100 buy 200k vendor="A"', response_url=slack.response_url())
    qid = json.dumps(slack.wait_for("response_url")[0].body).split("`")[1]
    bot.command(f"quote remove {qid}", team="T0OTHER", response_url=slack.response_url("r2"))
    refused = json.dumps(slack.wait_for("response_url", 2)[1].body)
    bot.command("quote list", team="T0OTHER", response_url=slack.response_url("r3"))
    listing = json.dumps(slack.wait_for("response_url", 3)[2].body)
    time.sleep(0.3)
    assert redis_server.command("HGETALL", f"gpusize:v1:conv:{TEAM}:C0CHAN:{ROOT}") == mine
    # the answer, and the quote announced where it was typed; nothing from the other workspace
    posts = [c.body for c in slack.of("chat.postMessage")]
    assert len(posts) == 2 and "recorded a quote" in posts[1]["text"]
    assert "No quote" in refused and qid not in listing
    assert redis_server.command("HLEN", f"gpusize:v1:prices:{TEAM}") == 1
    assert all(":T0OTHER:" not in k for k in redis_server.command("KEYS", "gpusize:v1:conv:*"))
