"""Which language to answer a person in: Chinese when they asked in Chinese, else their
`/gpusize lang` choice, else the workspace's, else their Slack locale (users.info, cached a day),
else English."""

from __future__ import annotations

import asyncio
import contextlib
import time

import aiohttp
from redis.asyncio import Redis
from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient

from bot import keys
from bot.permissions import ADMIN_UNKNOWN, AdminUnknown, Permissions, Refused
from engine.i18n import LANGUAGES, _, from_locale, language, language_of_text
from engine.parse import ParseError

WORKSPACE_WORDS = ("workspace", "team", "工作区")
LOCALE_TTL_S = 86400  # a locale Slack told us
UNKNOWN_LOCALE_TTL_S = 600  # Slack did not answer: English for now, asked again soon
SLACK_AWAY_S = 30.0  # after users.info could not reach Slack, not asked again (before acks) so long


class Languages:
    def __init__(self, redis: Redis, client: AsyncWebClient) -> None:
        self.redis = redis
        self.client = client
        self._slack_away_until = 0.0  # monotonic: users.info is not asked before then

    async def of(self, team: str, user: str, text: str = "", *, ask_slack: bool = True) -> str:
        """The language to answer `text` (a command or reply) in. Runs before a command's ack:
        every outside call is capped well under Slack's 3 s, and a failure means English, never
        an error. `ask_slack` False: users.info is not asked (Slack is known to be away)."""
        asked_in = language_of_text(text)  # a question in Chinese is answered in Chinese
        if asked_in is not None:
            return asked_in
        with contextlib.suppress(RedisError, OSError, TimeoutError):
            # the choices and the cached locale in one round-trip (every command asks)
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hmget(keys.language(team), [f"user:{user}", "workspace"])
                pipe.get(keys.user_locale(team, user))
                chosen, cached = await asyncio.wait_for(pipe.execute(), 0.5)
            for choice in (*chosen, cached):
                if choice in LANGUAGES:
                    return choice
        if not ask_slack or time.monotonic() < self._slack_away_until:
            return "en"  # Slack away: every ack would wait out the 1 s cap for nothing
        lang, ttl = "en", UNKNOWN_LOCALE_TTL_S
        try:
            info = await asyncio.wait_for(self.client.users_info(user=user, include_locale=True),
                                          1.0)
            lang, ttl = from_locale((info.get("user") or {}).get("locale")), LOCALE_TTL_S
        except (aiohttp.ClientError, TimeoutError):  # unreachable or hanging
            self._slack_away_until = time.monotonic() + SLACK_AWAY_S
        except Exception:  # Slack answered with an error: English, asked again later
            pass
        with contextlib.suppress(RedisError, OSError, TimeoutError):  # capped: before an ack
            await asyncio.wait_for(self.redis.set(keys.user_locale(team, user), lang, ex=ttl),
                                   0.5)
        return lang

    async def choose(self, team: str, user: str, words: list[str], *,
                     permissions: Permissions | None = None) -> str:
        """`/gpusize lang zh|en|auto [workspace]`: the confirmation to show. Anyone sets their
        own language; the workspace's is for admins and owners (Refused otherwise, and when
        Slack cannot say whether the user is one)."""
        choice = words[0].lower() if words else ""
        if choice not in (*LANGUAGES, "auto"):
            raise ParseError(_("lang takes zh, en or auto, optionally followed by workspace."))
        scope = ("workspace" if len(words) > 1 and words[1].lower() in WORKSPACE_WORDS
                 else f"user:{user}")
        if scope == "workspace":
            permissions = permissions or Permissions(self.redis, self.client)
            try:
                admin = await permissions.is_admin(team=team, user=user)
            except AdminUnknown:
                raise Refused(_(ADMIN_UNKNOWN)) from None
            if not admin:
                raise Refused(_("Only a workspace admin or owner can set the workspace's "
                                "language; `/gpusize lang {choice}` sets yours.").format(
                    choice=choice))
        if choice == "auto":
            await self.redis.hdel(keys.language(team), scope)
        else:
            await self.redis.hset(keys.language(team), scope, choice)
        with language(choice if choice in LANGUAGES else "en"):
            who = _("this workspace") if scope == "workspace" else _("you")
            return _("Language for {who}: {choice}.").format(who=who, choice=choice)
