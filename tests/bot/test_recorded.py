"""Acknowledged means recorded (issue 26, items 2 and 3), on a real redis-server: a command
acknowledged while Redis is blocked (DEBUG SLEEP) is held in the bot's outbox and recorded once
Redis answers, the person told privately in their language; at maxmemory with noeviction a
request is refused in the ack (nothing stored, nothing evicted) and answered again once there is
room."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.bot.test_jobs import answers_by_channel, settle, wait_until
from tests.harness import TEAM, RedisServer, SlackStub

ROOT = "1700000000.000001"


def test_work_acknowledged_while_redis_sleeps_is_held_then_answered_once(
        make_bot: Any, slack: SlackStub, own_redis: RedisServer) -> None:
    bot = make_bot(REDIS_URL=own_redis.url)
    bot.command("13B lora", channel="C0WARM")
    slack.wait_for("chat.postMessage", timeout=30)
    slack.clear()
    sleeper = threading.Thread(target=lambda: own_redis.command("DEBUG", "SLEEP", "4"))
    sleeper.start()
    time.sleep(0.2)
    channels = [f"C0SLEEP{n}" for n in range(6)]
    started = time.monotonic()
    with ThreadPoolExecutor(6) as pool:
        acks = list(pool.map(lambda n: (bot.command("13B lora", channel=channels[n],
                                                    user=f"U0SL{n}"), time.monotonic()),
                             range(6)))
    sleeper.join()
    assert all(code == 200 for (code, _body), _at in acks)
    assert max(at for _ack, at in acks) - started < 3  # every ack inside Slack's 3 s
    held = [body for (_code, body), _at in acks if "held here" in body]
    assert held  # the ones Redis did not confirm were said to be delayed, privately
    assert all(json.loads(body).get("response_type", "ephemeral") == "ephemeral" for body in held)
    wait_until(lambda: len(answers_by_channel(slack)) == len(channels), timeout=60)
    settle(slack)
    assert answers_by_channel(slack) == dict.fromkeys(channels, 1)  # none lost, none doubled
    assert own_redis.command("XLEN", "gpusize:v1:jobs") == 0


def test_a_reply_held_while_redis_sleeps_is_told_in_its_language(
        make_bot: Any, slack: SlackStub, own_redis: RedisServer) -> None:
    bot = make_bot(REDIS_URL=own_redis.url)
    bot.command("13B lora")
    slack.wait_for("chat.postMessage", timeout=30)
    own_redis.wait_for_conversation(ROOT, field="_answer_ts")
    sleeper = threading.Thread(target=lambda: own_redis.command("DEBUG", "SLEEP", "3"))
    sleeper.start()
    time.sleep(0.2)
    code, _body = bot.event({"type": "message", "channel": "C0CHAN", "user": "U0ZH",
                             "text": "预算 30 万", "ts": "1700000300.1", "thread_ts": ROOT},
                            event_id="EvHeldZh")
    assert code == 200
    sleeper.join()
    told = slack.wait_for("chat.postEphemeral", timeout=20)[0].body
    assert told["user"] == "U0ZH" and "存储" in told["text"]  # said in Chinese, privately
    replies = lambda: [c for c in slack.of("chat.postMessage")  # noqa: E731
                       if c.body.get("thread_ts") == ROOT]
    wait_until(lambda: len(replies()) >= 1, timeout=30)
    settle(slack)
    assert len(replies()) == 1  # answered once it was recorded


def test_redis_at_maxmemory_refuses_in_the_ack_and_evicts_nothing(
        make_bot: Any, slack: SlackStub, own_redis: RedisServer) -> None:
    bot = make_bot(REDIS_URL=own_redis.url)
    threads = []
    for n in range(3):
        bot.command("13B lora", channel=f"C0KEEP{n}")
    wait_until(lambda: len(answers_by_channel(slack)) == 3, timeout=60)
    wait_until(lambda: len(own_redis.command("KEYS", f"gpusize:v1:conv:{TEAM}:C0KEEP*")) == 3)
    threads = sorted(own_redis.command("KEYS", f"gpusize:v1:conv:{TEAM}:C0KEEP*"))
    before = {key: own_redis.command("HGETALL", key) for key in threads}
    # full: the bundled policy (noeviction) and less room than is used
    own_redis.command("CONFIG", "SET", "maxmemory-policy", "noeviction")
    own_redis.command("SET", "filler", "x" * 2_000_000)
    own_redis.command("CONFIG", "SET", "maxmemory", "1000000")
    channels = [f"C0FULL{n}" for n in range(4)]
    bodies = [bot.command("13B lora", channel=c, user=f"U0FULL{n}")
              for n, c in enumerate(channels)]
    assert all(code == 200 and "store is full" in body for code, body in bodies)
    bot.event({"type": "message", "channel": "C0KEEP0", "user": "U0FULLR",
               "text": "budget 300k", "ts": "1700000400.1", "thread_ts": "x"},
              event_id="EvFull")
    settle(slack, 1.5)
    assert not set(channels) & set(answers_by_channel(slack))  # refused, not acknowledged and dropped
    assert {key: own_redis.command("HGETALL", key) for key in threads} == before  # none evicted
    # room again: the same person asks again and is answered
    own_redis.command("CONFIG", "SET", "maxmemory", "0")
    assert bot.command("13B lora", channel=channels[0], user="U0FULL0")[0] == 200
    wait_until(lambda: answers_by_channel(slack)[channels[0]] == 1, timeout=30)


def test_work_held_by_a_bot_killed_while_redis_sleeps_is_answered_by_its_restart(
        make_bot: Any, slack: SlackStub, own_redis: RedisServer, tmp_path: Path) -> None:
    env = {"REDIS_URL": own_redis.url, "GPUSIZE_CACHE": str(tmp_path / "cache")}
    bot = make_bot(**env)
    bot.command("13B lora", channel="C0WARM")
    slack.wait_for("chat.postMessage", timeout=30)
    sleeper = threading.Thread(target=lambda: own_redis.command("DEBUG", "SLEEP", "4"))
    sleeper.start()
    time.sleep(0.2)
    channels = [f"C0HELD{n}" for n in range(3)]
    with ThreadPoolExecutor(len(channels)) as pool:
        bodies = list(pool.map(lambda n: bot.command("13B lora", channel=channels[n],
                                                     user=f"U0HELD{n}")[1], range(3)))
    held = sum("held here" in body for body in bodies)
    assert held >= 1
    journal = list((tmp_path / "cache" / "outbox").glob("*/*.json"))
    assert len(journal) == held  # on disk as well as in the process
    bot.kill()  # with Redis still asleep: the process's outbox is gone, the journal is not
    sleeper.join()
    make_bot(**env)
    wait_until(lambda: all(answers_by_channel(slack)[c] for c in channels), timeout=60)
    settle(slack)
    assert {c: answers_by_channel(slack)[c] for c in channels} == dict.fromkeys(channels, 1)
    wait_until(lambda: not list((tmp_path / "cache" / "outbox").glob("*/*.json")))
