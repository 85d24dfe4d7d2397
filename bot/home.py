"""App Home: the tab a person opens on the bot (views.publish on app_home_opened).

It shows "New sizing" (the form), the person's recent answers as links, their language, and the
workspace's digest subscriptions and team quotes with their controls. A control runs the very
sub-command a person would type (bot/subcommands.py), so who may do what is checked in one
place; the tab is then published again with what the control did.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient

from bot import keys, subcommands
from bot.digest import Digests
from bot.language import Languages
from bot.permissions import Permissions
from bot.pricecommands import amount_text
from bot.pricestore import PriceStore
from bot.pricetables import display
from bot.replies import Replies
from bot.words import UNKNOWN_BUTTON
from engine.errors import UserError
from engine.i18n import _, set_language
from engine.prices import KIND_TEXT
from present import views
from present.actions import Action
from present.blockkit import user_ref

RECENT = 10  # answers listed per person
RECENT_TTL_S = 90 * 86400
PERMALINK_S = 2.0  # links asked of Slack for the tab, all at once
LANGUAGE_NAMES = {"en": "English", "zh": "中文"}


class Home:
    def __init__(self, redis: Redis, client: AsyncWebClient, replies: Replies, prices: PriceStore,
                 digests: Digests, languages: Languages) -> None:
        self.redis = redis
        self.client = client
        self.replies = replies
        self.prices = prices
        self.digests = digests
        self.languages = languages
        self.permissions = Permissions(redis, client)

    async def remember(self, team: str, user: str, channel: str, ts: str, title: str) -> None:
        """An answer this person asked for, for their tab (best effort: never fails an answer)."""
        entry = json.dumps({"channel": channel, "ts": ts, "title": title[:150],
                            "at": int(time.time())})
        key = keys.recent_answers(team, user)
        with contextlib.suppress(RedisError, OSError):
            await self.redis.lpush(key, entry)
            await self.redis.ltrim(key, 0, RECENT - 1)
            await self.redis.expire(key, RECENT_TTL_S)

    async def _recent(self, team: str, user: str) -> list[tuple[str, str, str]]:
        raw = await self.redis.lrange(keys.recent_answers(team, user), 0, RECENT - 1)
        entries = []
        for item in raw:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                entry = json.loads(item)
                entries.append((str(entry["channel"]), str(entry["ts"]), str(entry["title"]),
                                int(entry["at"])))
        links = await asyncio.gather(*(self._link(channel, ts) for channel, ts, *_r in entries))
        return [(link, title, datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d"))
                for link, (_c, _t, title, at) in zip(links, entries, strict=True)]

    async def _link(self, channel: str, ts: str) -> str:
        """The message's permalink; Slack's redirect to the conversation if it cannot say."""
        with contextlib.suppress(Exception):
            resp = await asyncio.wait_for(
                self.client.chat_getPermalink(channel=channel, message_ts=ts), PERMALINK_S)
            if resp.get("permalink"):
                return str(resp["permalink"])
        return f"https://slack.com/app_redirect?channel={channel}"

    async def _language(self, team: str, user: str) -> tuple[str, str]:
        """The person's language and where it comes from."""
        prefs: dict[str, str] = {}
        with contextlib.suppress(RedisError, OSError):
            prefs = await self.redis.hgetall(keys.language(team))
        if prefs.get(f"user:{user}") in LANGUAGE_NAMES:
            return LANGUAGE_NAMES[prefs[f"user:{user}"]], _("your choice")
        if prefs.get("workspace") in LANGUAGE_NAMES:
            return LANGUAGE_NAMES[prefs["workspace"]], _("the workspace's choice")
        lang = await self.languages.of(team, user)
        return LANGUAGE_NAMES.get(lang, lang), _("from your Slack settings")

    async def view(self, team: str, user: str, notice: str = "") -> dict[str, Any]:
        language, scope = await self._language(team, user)
        digests = [{"text": "• " + sub.status(), "label": _("Unsubscribe"),
                    "run": f"digest unsubscribe <#{sub.channel}>"}
                   for sub in sorted(await self.digests.subscriptions(team),
                                     key=lambda s: s.created_at)]
        quotes = [{"text": "• " + _("{item} {kind} {amount} from {vendor}, {date}, by {user}"
                                    ).format(item=display(r.item, 40), kind=_(KIND_TEXT[r.kind]),
                                             amount=amount_text(r),
                                             vendor=r.vendor or _("an unnamed vendor"),
                                             date=r.quoted, user=user_ref(r.entered_by)),
                   "label": _("Remove"), "run": f"quote remove {r.id}"}
                  for r in sorted(await self.prices.records(team), key=lambda r: r.quoted,
                                  reverse=True)]
        return views.home_view(recent=await self._recent(team, user), language=language,
                               language_scope=scope, digests=digests, quotes=quotes,
                               notice=notice, run_action=Action.HOME_RUN,
                               form_action=Action.OPEN_FORM)

    async def publish(self, team: str, user: str, notice: str = "") -> None:
        await self.replies.publish_home(user, await self.view(team, user, notice))

    async def run(self, team: str, user: str, text: str) -> None:
        """A control on the tab: the sub-command it stands for, then the tab again with what it
        did (a refusal says why, as typed)."""
        row = subcommands.find(text)
        if row is None:  # no control of ours runs it (a forged value): said on the tab
            await self.publish(team, user, notice=_(UNKNOWN_BUTTON))
            return
        command = {"team_id": team, "channel_id": "", "user_id": user, "response_url": ""}
        try:
            sections = await row.run(subcommands.Call(
                command=command, text=text, prices=self.prices, digests=self.digests,
                languages=self.languages, permissions=self.permissions))
        except UserError as err:
            sections = [str(err)]
        set_language(await self.languages.of(team, user))  # `lang` may have changed it
        await self.publish(team, user, notice=" ".join(sections))

