"""Authorization inside a workspace, over real HTTP, real Redis and the Slack stand-in: who may set
the workspace's language, subscribe a channel, replace or remove a digest and remove a quote; the
per-workspace caps; and refusing (fail closed) when Slack cannot say who is an admin."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis
from slack_sdk.web.async_client import AsyncWebClient

from bot.digest import MAX_SUBSCRIPTIONS, Digests, Subscription
from bot.pricestore import PriceStore
from tests.harness import TEAM, TOKEN, RedisServer, SlackStub

SUBS = f"gpusize:v1:digest:subs:{TEAM}"


def reply(slack: SlackStub, n: int) -> str:
    """The n-th (1-based) private reply, as text."""
    return json.dumps(slack.wait_for("response_url", n)[n - 1].body, ensure_ascii=False)


def known_locale(redis_server: RedisServer, *users: str) -> None:
    """Cache the users' locale, so the only users.info call a command makes is the admin check."""
    for user in users:
        redis_server.command("SET", f"gpusize:v1:locale:{TEAM}:{user}", "en")


def test_only_admins_set_the_workspace_language_and_slack_failing_refuses(
        make_bot: Any, slack: SlackStub, redis_server: RedisServer) -> None:
    bot = make_bot()
    known_locale(redis_server, "U0ALICE", "U0ADMIN")
    slack.admins.add("U0ADMIN")
    bot.command("lang zh workspace", user="U0ALICE", response_url=slack.response_url())
    assert "Only a workspace admin" in reply(slack, 1)
    assert redis_server.command("HGET", f"gpusize:v1:lang:{TEAM}", "workspace") is None
    bot.command("lang zh", user="U0ALICE", response_url=slack.response_url())  # their own: fine
    assert redis_server.command("HGET", f"gpusize:v1:lang:{TEAM}", "user:U0ALICE") == "zh"
    reply(slack, 2)
    slack.fail_next.append({"method": "users.info", "body": {"ok": False, "error": "ratelimited"}})
    bot.command("lang en workspace", user="U0ADMIN", response_url=slack.response_url())
    assert "did not say whether you are a workspace admin" in reply(slack, 3)
    assert redis_server.command("HGET", f"gpusize:v1:lang:{TEAM}", "workspace") is None
    bot.command("lang en workspace", user="U0ADMIN", response_url=slack.response_url())
    assert "Language for this workspace: en" in reply(slack, 4)
    assert redis_server.command("HGET", f"gpusize:v1:lang:{TEAM}", "workspace") == "en"


def test_digest_unsubscribe_needs_the_creator_or_an_admin(make_bot: Any, slack: SlackStub,
                                                          redis_server: RedisServer) -> None:
    bot = make_bot()
    known_locale(redis_server, "U0ALICE", "U0BOB", "U0ADMIN")
    slack.admins.add("U0ADMIN")
    bot.command("digest subscribe <#C0DIGEST|prices> weekly mon 09:00", user="U0ALICE",
                response_url=slack.response_url())
    assert "Subscribed" in reply(slack, 1)
    bot.command("digest unsubscribe <#C0DIGEST|prices>", user="U0BOB",
                response_url=slack.response_url())
    assert "Only the person who subscribed" in reply(slack, 2)
    bot.command("digest subscribe <#C0DIGEST|prices> daily 08:00", user="U0BOB",
                response_url=slack.response_url())
    assert "already has a digest" in reply(slack, 3)
    stored = json.loads(redis_server.command("HGET", SUBS, "C0DIGEST"))
    assert stored["created_by"] == "U0ALICE" and stored["frequency"] == "weekly"
    bot.command("digest unsubscribe <#C0DIGEST|prices>", user="U0ADMIN",
                response_url=slack.response_url())
    assert "Unsubscribed" in reply(slack, 4)
    assert redis_server.command("HLEN", SUBS) == 0
    bot.command("digest subscribe <#C0DIGEST|prices> weekly mon", user="U0BOB",
                response_url=slack.response_url())
    # one person's two jobs may run at once (JOB_MAX_PER_USER): the subscription lands first
    assert "Subscribed" in reply(slack, 5)
    bot.command("digest unsubscribe <#C0DIGEST|prices>", user="U0BOB",
                response_url=slack.response_url())  # the creator removes their own
    assert "Unsubscribed" in reply(slack, 6)


def test_subscribing_needs_the_bot_in_the_channel_and_room_under_the_cap(
        make_bot: Any, slack: SlackStub, redis_server: RedisServer, redis_url: str) -> None:
    bot = make_bot()
    known_locale(redis_server, "U0ALICE")
    slack.not_in_channel.add("C0SECRET")
    bot.command("digest subscribe <#C0SECRET|secret> daily", user="U0ALICE",
                response_url=slack.response_url())
    assert "I cannot post in" in reply(slack, 1) and "not_in_channel" in reply(slack, 1)
    slack.fail_next.append({"method": "conversations.info",
                            "body": {"ok": False, "error": "channel_not_found"}})
    bot.command("digest subscribe <#G0PRIVATE|private> daily", user="U0ALICE",
                response_url=slack.response_url())
    assert "channel_not_found" in reply(slack, 2)
    assert redis_server.command("HLEN", SUBS) == 0

    async def fill() -> None:
        redis = Redis.from_url(redis_url, decode_responses=True)
        digests = Digests(redis, AsyncWebClient(token=TOKEN, base_url=slack.url),
                          PriceStore(redis))
        for n in range(MAX_SUBSCRIPTIONS):
            await digests.subscribe(Subscription(
                team=TEAM, channel=f"C0FILL{n}", frequency="daily", created_by="U0ALICE",
                created_at=datetime.now(UTC)))
        await redis.aclose()

    asyncio.run(fill())
    bot.command("digest subscribe <#C0ONEMORE|more> daily", user="U0ALICE",
                response_url=slack.response_url())
    refusal = reply(slack, 3)
    assert f"already has {MAX_SUBSCRIPTIONS} digest subscriptions" in refusal
    assert redis_server.command("HLEN", SUBS) == MAX_SUBSCRIPTIONS
    assert redis_server.command("HEXISTS", SUBS, "C0ONEMORE") == 0


def test_removing_someone_elses_quote_refuses_when_slack_cannot_say(
        make_bot: Any, slack: SlackStub, redis_server: RedisServer) -> None:
    bot = make_bot()
    known_locale(redis_server, "U0ALICE", "U0BOB")
    bot.command('quote H100 buy 200k vendor="V"', user="U0ALICE",
                response_url=slack.response_url())
    quote_id = reply(slack, 1).split("Recorded quote `")[1].split("`")[0]
    slack.fail_next.append({"method": "users.info", "body": {"ok": False, "error": "fatal_error"}})
    bot.command(f"quote remove {quote_id}", user="U0BOB", response_url=slack.response_url())
    assert "did not say whether you are a workspace admin" in reply(slack, 2)
    bot.command(f"quote remove {quote_id}", user="U0BOB", response_url=slack.response_url())
    assert "Only the person who added a quote" in reply(slack, 3)
    assert redis_server.command("HEXISTS", f"gpusize:v1:prices:{TEAM}", quote_id) == 1


def test_an_admin_of_another_organisation_is_not_this_workspaces_admin(
        make_bot: Any, slack: SlackStub, redis_server: RedisServer) -> None:
    """Issue 26: in a Slack Connect channel users.info says is_admin for a member who is an
    admin of their own organisation; only the workspace's own team counts."""
    bot = make_bot()
    known_locale(redis_server, "U0GUEST", "U0ADMIN")
    slack.admins |= {"U0GUEST", "U0ADMIN"}
    slack.home_teams["U0GUEST"] = "T0OTHERORG"
    bot.command("lang zh workspace", user="U0GUEST", response_url=slack.response_url())
    assert "Only a workspace admin" in reply(slack, 1)
    assert redis_server.command("HGET", f"gpusize:v1:lang:{TEAM}", "workspace") is None
    bot.command("lang zh workspace", user="U0ADMIN", response_url=slack.response_url())
    reply(slack, 2)
    assert redis_server.command("HGET", f"gpusize:v1:lang:{TEAM}", "workspace") == "zh"
