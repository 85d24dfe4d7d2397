"""Issue 16, item 1: a Hub look-up never blocks anyone.

The bot runs as a real process against a local stand-in of the Hugging Face Hub (HF_ENDPOINT)
that can be made slow; the stand-in counts the requests it gets."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.test_hub import FakeHub
from tests.harness import Bot, SlackStub, serve_http


@pytest.fixture
def hub_standin() -> Iterator[str]:
    server = serve_http(FakeHub)
    FakeHub.requests, FakeHub.delay_s = [], 0.0
    yield f"http://127.0.0.1:{server.server_port}"
    FakeHub.delay_s = 0.0
    server.shutdown()
    server.server_close()


@pytest.fixture
def hub_bot(make_bot: Any, hub_standin: str, tmp_path: Path) -> Any:
    def make(**env: str) -> Bot:
        return make_bot(HF_ENDPOINT=hub_standin, HF_HOME=str(tmp_path / "hf"),
                        GPUSIZE_CACHE=str(tmp_path / "cache"), **env)
    return make


def timed(fn: Any, *args: Any, **kw: Any) -> tuple[float, Any]:
    start = time.monotonic()
    result = fn(*args, **kw)
    return time.monotonic() - start, result


def fetches(repo: str) -> int:
    return sum(1 for r in FakeHub.requests if f"/{repo}/" in r)


def private_replies(slack: SlackStub) -> list[str]:
    return [c.body.get("text", "") for c in slack.of("response_url")]


def wait_for_reply(slack: SlackStub, needle: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [t for t in private_replies(slack) if needle in t]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no private reply with {needle!r}: {private_replies(slack)}")


def test_a_slow_hub_delays_no_ack_and_no_health_check(hub_bot: Any, slack: SlackStub) -> None:
    FakeHub.delay_s = 4  # a far-away Hub; Slack waits 3 s for an ack
    bot = hub_bot(HUB_TIMEOUT_S="2")
    results: dict[str, tuple[float, Any]] = {}

    def alice(n: int) -> None:
        results[f"alice{n}"] = timed(bot.command, f"test-org/unknown-{n} lora", user="U0ALICE",
                                     response_url=slack.response_url(f"alice{n}"))

    threads = [threading.Thread(target=alice, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)  # alice's look-ups are under way
    bob = timed(bot.command, "13B lora", user="U0BOB")
    health = timed(urllib.request.urlopen, bot.url + "/healthz", timeout=5)
    for thread in threads:
        thread.join()
    assert bob[1][0] == 200 and bob[0] < 3, bob
    assert health[1].status == 200 and health[0] < 3, health
    for name, (seconds, (status, _body)) in results.items():
        assert status == 200 and seconds < 3, (name, seconds)
    # the look-up ran after the ack, in a worker, under HUB_TIMEOUT_S: alice is told, privately,
    # what went wrong (not the generic apology)
    reply = wait_for_reply(slack, "test-org/unknown-0")
    assert "could not be fetched" in reply and "TimeoutError" in reply
    assert not any("Sorry, something went wrong" in t for t in private_replies(slack))
    # asked again, the miss is remembered: the ack says so at once, and the Hub is not asked
    asked = fetches("test-org/unknown-0")
    seconds, (status, body) = timed(bot.command, "test-org/unknown-0 lora", user="U0ALICE")
    assert status == 200 and "could not be fetched" in json.loads(body)["text"]
    assert fetches("test-org/unknown-0") == asked == 1


def test_new_repo_ids_per_user_are_limited_and_the_cache_is_bounded(
        hub_bot: Any, slack: SlackStub, tmp_path: Path) -> None:
    bot = hub_bot(HUB_CACHE_MAX_ENTRIES="4")
    for n in range(10):
        status, body = bot.command(f"test-org/missing-{n} lora",
                                   response_url=slack.response_url(f"m{n}"))
        assert status == 200 and body == "", body  # accepted for now, looked up after the ack
    status, body = bot.command("test-org/missing-10 lora")
    assert status == 200 and "10 new models" in json.loads(body)["text"]
    # the same id again is not a new one; a catalog model is never limited; nor is bob
    assert bot.command("test-org/missing-3 lora", response_url=slack.response_url("again"))[0] \
        == 200
    assert bot.command("13B lora", response_url=slack.response_url("catalog"))[1] == ""
    assert bot.command("test-org/missing-10 lora", user="U0BOB",
                       response_url=slack.response_url("bob"))[1] == ""
    for n in range(11):  # alice's ten, then bob's
        assert "could not be fetched" in wait_for_reply(slack, f"test-org/missing-{n}:")
    assert sum("test-org/missing-10:" in t for t in private_replies(slack)) == 1  # bob's only
    # each id reached the Hub once (the cache holds 4 here: missing-3, asked twice, may have
    # been evicted in between), alice's eleventh never did, and nothing else was asked
    counts = [fetches(f"test-org/missing-{n}") for n in range(10)]
    assert counts[:3] + counts[4:] == [1] * 9 and counts[3] <= 2, FakeHub.requests
    bobs = fetches("test-org/missing-10")  # bob's own new id, maybe under way
    assert bobs <= 1 and len(FakeHub.requests) == sum(counts) + bobs, FakeHub.requests
    # the cache stays within HUB_CACHE_MAX_ENTRIES, and huggingface_hub's cache is not used
    deadline = time.monotonic() + 10
    while fetches("test-org/missing-10") < 1:  # bob's
        assert time.monotonic() < deadline
        time.sleep(0.05)
    entries = list((tmp_path / "cache").rglob("*.json"))
    assert len(entries) <= 4, entries
    assert not any(p.is_file() for p in (tmp_path / "hf").rglob("*"))


def test_a_mention_naming_an_unknown_repo_is_told_privately(hub_bot: Any,
                                                            slack: SlackStub) -> None:
    bot = hub_bot()
    bot.event({"type": "app_mention", "channel": "C0CHAN", "user": "U0DAVE",
               "text": "<@UBOT0001> test-org/not-there inference", "ts": "1700000030.1"},
              event_id="EvHubMention")
    (told,) = slack.wait_for("chat.postEphemeral")
    assert told.body["user"] == "U0DAVE" and "could not be fetched" in told.body["text"]
    assert slack.of("chat.postMessage") == []  # nothing in the channel
    assert fetches("test-org/not-there") == 1
