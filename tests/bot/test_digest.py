"""The price digest with a controllable clock: slots in time zones (DST included), exactly one
post per period across racing schedulers, late posts after downtime, movers, Block Kit limits."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from slack_sdk.web.async_client import AsyncWebClient

from bot import pricecommands
from bot.digest import Digests, Subscription, latest_slot, parse_subscribe
from bot.pricestore import PriceStore
from engine.parse import ParseError
from present import blockkit
from tests.harness import TOKEN, SlackStub
from tests.present.test_slack import check_blocks

TUESDAY = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)  # 11:00 in Shanghai, a Tuesday


def make(url: str, slack: SlackStub) -> Digests:
    redis = Redis.from_url(url, decode_responses=True)
    return Digests(redis, AsyncWebClient(token=TOKEN, base_url=slack.url), PriceStore(redis))


def weekly(now: datetime = TUESDAY, channel: str = "C0DIGEST") -> Subscription:
    return parse_subscribe(["<#" + channel + "|prices>", "weekly", "mon", "09:00",
                            "Asia/Shanghai"], team="T0TEAM", channel="C0CMD", user="U1", now=now)


def test_subscribe_grammar() -> None:
    sub = weekly()
    assert (sub.channel, sub.frequency, sub.weekday, sub.at, sub.tz) == (
        "C0DIGEST", "weekly", 0, "09:00", "Asia/Shanghai")
    daily = parse_subscribe(["daily", "7:30", "Europe/Berlin"], team="T", channel="C1",
                            user="U", now=TUESDAY)
    assert (daily.channel, daily.at) == ("C1", "07:30")
    for bad in (["weekly", "Mars/Olympus"], ["hourly"], ["weekly", "25:00"], ["#general", "daily"],
                []):
        with pytest.raises(ParseError):
            parse_subscribe(bad, team="T", channel="C", user="U", now=TUESDAY)


def test_slots_follow_wall_clock_across_daylight_saving() -> None:
    sub = Subscription(team="T", channel="C", frequency="daily", at="09:00",
                       tz="America/New_York", created_by="U", created_at=TUESDAY)
    # US DST began 2026-03-08: 09:00 New York is 14:00 UTC before, 13:00 UTC after
    before = latest_slot(sub, datetime(2026, 3, 7, 14, 30, tzinfo=UTC))
    after = latest_slot(sub, datetime(2026, 3, 9, 13, 30, tzinfo=UTC))
    assert before == (datetime(2026, 3, 7, 14, 0, tzinfo=UTC), "2026-03-07")
    assert after == (datetime(2026, 3, 9, 13, 0, tzinfo=UTC), "2026-03-09")
    # 13:30 UTC on the 7th is 08:30 there: the latest slot is still the 6th's
    assert latest_slot(sub, datetime(2026, 3, 7, 13, 30, tzinfo=UTC))[1] == "2026-03-06"


def test_weekly_digest_posts_once_at_the_slot_with_the_movers(redis_url: str,
                                                              slack: SlackStub) -> None:
    async def go() -> list[list[str]]:
        d = make(redis_url, slack)
        await d.subscribe(weekly())
        runs = [await d.run_due(TUESDAY + timedelta(hours=1))]  # this week's slot is not owed
        await pricecommands.handle(d.prices, team="T0TEAM", user="U1", today=TUESDAY.date(),
                                   is_admin=False, text='quote h100 buy 150k vendor="Cheaper Co"')
        monday = datetime(2026, 11, 30, 1, 1, tzinfo=UTC)  # 09:01 Monday in Shanghai
        runs.append(await d.run_due(monday - timedelta(minutes=2)))  # 08:59: not yet
        runs.append(await d.run_due(monday))
        runs.append(await d.run_due(monday + timedelta(minutes=5)))  # the trigger fires again
        return runs

    first, early, due, again = asyncio.run(go())
    assert first == [] and early == [] and again == []
    assert due == ["T0TEAM/C0DIGEST/2026-W49"]
    post = slack.wait_for("chat.postMessage")[0].body
    assert post["channel"] == "C0DIGEST"
    text = json.dumps(post["blocks"], ensure_ascii=False)
    movers = post["blocks"][1]["text"]["text"]
    # a table by display names in the workspace currency: before, now, the change
    row = next(line for line in movers.splitlines() if line.startswith("H100 SXM 80GB"))
    assert row.split()[-4:] == ["buy", "225k", "150k", "-33.3%"], row
    assert "h100-sxm" not in text and "buy_card" not in text
    assert "(late)" not in text
    check_blocks(post["blocks"])


def test_racing_schedulers_post_one_message(redis_url: str, slack: SlackStub) -> None:
    async def go() -> list[list[str]]:
        first = make(redis_url, slack)
        await first.subscribe(weekly())
        racers = [make(redis_url, slack) for _ in range(5)]
        monday = datetime(2026, 11, 30, 1, 1, tzinfo=UTC)
        return await asyncio.gather(*(r.run_due(monday) for r in racers))

    results = asyncio.run(go())
    assert sum(len(r) for r in results) == 1
    assert len(slack.wait_for("chat.postMessage")) == 1


def test_missed_weeks_post_once_marked_late(redis_url: str, slack: SlackStub) -> None:
    async def go() -> list[list[str]]:
        d = make(redis_url, slack)
        await d.subscribe(weekly())
        back = datetime(2026, 12, 17, 6, 0, tzinfo=UTC)  # down over three Mondays
        return [await d.run_due(back), await d.run_due(back + timedelta(hours=1))]

    posted, again = asyncio.run(go())
    assert posted == ["T0TEAM/C0DIGEST/2026-W51"] and again == []
    header = slack.wait_for("chat.postMessage")[0].body["blocks"][0]["text"]["text"]
    assert "(late)" in header


def test_digest_with_many_changes_fits_block_kit(redis_url: str, slack: SlackStub) -> None:
    async def go() -> list[dict[str, Any]]:
        d = make(redis_url, slack)
        await d.subscribe(weekly())
        records = await d.prices.records("global")
        cheaper = [r.model_copy(update={"id": r.id + "-x", "low": r.low * 0.9,
                                        "high": r.high * 0.9,
                                        "quoted": TUESDAY.date()}) for r in records]
        await d.prices.add("global", cheaper)
        sections, title = await d.compose("T0TEAM", "C0DIGEST", now=TUESDAY)
        return blockkit.blocks("digest.json.j2", d={"sections": sections, "title": title})

    blocks = asyncio.run(go())
    check_blocks(blocks)
    assert "smaller changes" in json.dumps(blocks)


def test_failed_feeds_show_in_the_digest(redis_url: str, slack: SlackStub) -> None:
    async def go() -> str:
        d = make(redis_url, slack)
        await d.redis.hset("gpusize:v1:feeds", "http://feeds.example/prices.json",
                           json.dumps({"ok": False, "error": "HTTP 500", "at": "2026-11-30"}))
        sections, _ = await d.compose("T0TEAM", None, now=TUESDAY)
        return "\n".join(sections)

    text = asyncio.run(go())
    assert "Feeds that failed" in text and "HTTP 500" in text


@pytest.mark.slow  # `gpusize digest run` as a command
def test_digest_run_cli_with_a_clock(redis_url: str, slack: SlackStub) -> None:
    asyncio.run(make(redis_url, slack).subscribe(weekly()))
    exe = shutil.which("gpusize", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "gpusize"]
    env = {**os.environ, "SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": "s",
           "REDIS_URL": redis_url, "SLACK_API_URL": slack.url}
    runs = [subprocess.run([*cmd, "digest", "run", "--now=2026-11-30T01:05:00+00:00"], env=env,
                           capture_output=True, text=True, timeout=60) for _ in range(2)]
    assert "digests posted: 1" in runs[0].stdout and "digests posted: 0" in runs[1].stdout
    assert len(slack.wait_for("chat.postMessage")) == 1


def test_slash_digest_subscribe_preview_unsubscribe(make_bot: Any, slack: SlackStub) -> None:
    bot = make_bot()
    bot.command("digest subscribe <#C0DIGEST|prices> weekly mon 09:00 Asia/Shanghai",
                response_url=slack.response_url())
    first = json.dumps(slack.wait_for("response_url")[0].body, ensure_ascii=False)
    assert "Subscribed" in first and "Asia/Shanghai" in first
    bot.command("digest preview", response_url=slack.response_url())
    preview = json.dumps(slack.wait_for("response_url", 2)[1].body, ensure_ascii=False)
    assert "preview" in preview and "cards this workspace asks about" in preview
    bot.command("digest unsubscribe <#C0DIGEST|prices>", response_url=slack.response_url())
    assert "Unsubscribed" in json.dumps(slack.wait_for("response_url", 3)[2].body)


def test_one_unreachable_channel_never_stops_the_other_digests(make_bot: Any, redis_url: str,
                                                               slack: SlackStub) -> None:
    """The red team's attack: the bot removed from one channel (Slack: not_in_channel). The other
    four digests, in two workspaces, still post; the bad one is recorded, retried later, turned
    off after three such answers in a row, its creator told privately, and `digest list` says
    why."""
    slack.not_in_channel.add("C0GONE")
    monday = datetime(2026, 11, 30, 1, 1, tzinfo=UTC)

    async def go() -> list[list[str]]:
        d = make(redis_url, slack)
        for team, channel in (("T0TEAM", "C0AAA"), ("T0TEAM", "C0GONE"), ("T0TEAM", "C0BBB"),
                              ("T0OTHER", "C0CCC"), ("T0OTHER", "C0DDD")):
            sub = weekly(channel=channel).model_copy(update={"team": team})
            await d.subscribe(sub)
        runs = [await d.run_due(monday)]
        runs.append(await d.run_due(monday + timedelta(minutes=5)))  # within the retry wait
        runs.append(await d.run_due(monday + timedelta(minutes=12)))
        runs.append(await d.run_due(monday + timedelta(hours=1, minutes=20)))
        runs.append(await d.run_due(monday + timedelta(hours=9)))  # off: not tried again
        return runs

    first, waiting, second, third, off = asyncio.run(go())
    assert sorted(first) == ["T0OTHER/C0CCC/2026-W49", "T0OTHER/C0DDD/2026-W49",
                             "T0TEAM/C0AAA/2026-W49", "T0TEAM/C0BBB/2026-W49"]
    assert waiting == second == third == off == []
    posts = slack.of("chat.postMessage")
    tries = [p for p in posts if p.body["channel"] == "C0GONE"]
    assert len(tries) == 3  # the first, after 10 min, after 1 h; never after it was turned off
    dm = [p for p in posts if p.body["channel"] == "U1"]
    assert len(dm) == 1 and "turned off" in dm[0].body["text"]
    assert "not_in_channel" in dm[0].body["text"] and "digest subscribe" in dm[0].body["text"]
    stored = json.loads(asyncio.run(Redis.from_url(redis_url, decode_responses=True).hget(
        "gpusize:v1:digest:subs:T0TEAM", "C0GONE")))
    assert stored["unreachable"] == 3 and stored["last_error"] == "not_in_channel"
    assert stored["disabled_at"] is not None
    bot = make_bot()
    bot.command("digest list", response_url=slack.response_url())
    listing = json.dumps(slack.wait_for("response_url")[0].body, ensure_ascii=False)
    assert "turned off" in listing and "not_in_channel" in listing and "<#C0AAA>" in listing


def test_a_failure_that_is_not_the_channel_is_retried_and_then_delivered(
        redis_url: str, slack: SlackStub) -> None:
    slack.fail_next.append({"body": {"ok": False, "error": "fatal_error"}})
    monday = datetime(2026, 11, 30, 1, 1, tzinfo=UTC)

    async def go() -> tuple[list[str], list[str], Subscription]:
        d = make(redis_url, slack)
        await d.subscribe(weekly())
        failed = await d.run_due(monday)
        later = await d.run_due(monday + timedelta(minutes=11))
        return failed, later, (await d.subscriptions("T0TEAM"))[0]

    failed, later, sub = asyncio.run(go())
    assert failed == [] and later == ["T0TEAM/C0DIGEST/2026-W49"]
    assert sub.failures == 0 and sub.disabled_at is None and sub.last_error == "fatal_error"


def test_a_feed_urls_credentials_never_reach_the_digest(redis_url: str, slack: SlackStub) -> None:
    """Issue 26: a feed's api_key was shown to members and in the digest."""
    secret_url = "https://svc:hunter2pass@feeds.example/v1/AbC123dEf456GhI789/prices.json?api_key=sk_live_abcdef123456&region=cn#frag"

    async def go() -> str:
        d = make(redis_url, slack)
        await d.redis.hset("gpusize:v1:feeds", secret_url,
                           json.dumps({"ok": False, "error": "HTTP 500", "at": "2026-11-30"}))
        sections, _ = await d.compose("T0TEAM", None, now=TUESDAY)
        return "\n".join(sections)

    text = asyncio.run(go())
    assert "feeds.example/v1/***/prices.json?api_key=***&region=***" in text
    for secret in ("hunter2pass", "svc:", "sk_live_abcdef123456", "AbC123dEf456GhI789", "frag"):
        assert secret not in text
