"""Typed replies in the bot's threads, and mentions. A thread reply that mentions the bot
arrives twice (message and app_mention events): each message is handled once."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError

from bot import keys
from bot.dialog import Dialog
from bot.language import Languages
from bot.observability import REDIS_ERRORS
from engine.i18n import set_language
from engine.parse import read_reply
from present.blockkit import clean_input

log = logging.getLogger("gpusize.bot")
IGNORED_SUBTYPES = {"message_changed", "message_deleted", "bot_message", "channel_join",
                    "channel_leave", "message_replied"}


def asks_the_bot(text: str) -> bool:
    """Would the bot have answered this message? (Chatter gets no apology either.)"""
    try:
        return read_reply(clean_input(text)) is not None
    except Exception:
        return True


async def _first_time(dialog: Dialog, team: str, channel: str, ts: str) -> bool:
    try:
        return await dialog.store.claim(keys.message_seen(team, channel, ts))
    except RedisError:
        return True


def thread_message(dialog: Dialog, languages: Languages) -> Callable[..., Awaitable[None]]:
    async def on_message(event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("subtype") in IGNORED_SUBTYPES or event.get("bot_id"):
            return
        thread_ts = event.get("thread_ts")
        if not thread_ts or thread_ts == event.get("ts"):
            return  # only replies in threads; top-level chatter is not for the bot
        team = body.get("team_id", "")
        if not await _first_time(dialog, team, event["channel"], event["ts"]):
            return
        set_language(await languages.of(team, event.get("user", ""), event.get("text", "")))
        try:
            await dialog.follow_up(team=team, channel=event["channel"], thread_ts=thread_ts,
                                   user=event.get("user", ""),
                                   text=clean_input(event.get("text", "")))
        except RedisError:
            REDIS_ERRORS.labels("follow-up").inc()
            if asks_the_bot(event.get("text", "")):
                await dialog.replies.apologise(event["channel"], event.get("user", ""), thread_ts,
                                       store_down=True)
        except Exception:
            log.exception("follow-up failed")
            await dialog.replies.apologise(event["channel"], event.get("user", ""), thread_ts,
                                   store_down=False)

    return on_message


def mention(dialog: Dialog, languages: Languages) -> Callable[..., Awaitable[None]]:
    async def on_mention(event: dict[str, Any], body: dict[str, Any]) -> None:
        team = body.get("team_id", "")
        channel, ts = event["channel"], event["ts"]
        if not await _first_time(dialog, team, channel, ts):
            return
        set_language(await languages.of(team, event.get("user", ""), event.get("text", "")))
        thread = event.get("thread_ts") or ts
        try:
            if event.get("thread_ts") and event["thread_ts"] != ts:
                await dialog.follow_up(team=team, channel=channel, thread_ts=event["thread_ts"],
                                       user=event.get("user", ""), text=clean_input(event.get("text", "")))
            else:
                await dialog.mention_start(team=team, channel=channel, ts=ts,
                                           user=event.get("user", ""),
                                           text=clean_input(event.get("text", "")))
        except RedisError:
            REDIS_ERRORS.labels("mention").inc()
            await dialog.replies.apologise(channel, event.get("user", ""), thread, store_down=True)
        except Exception:
            log.exception("mention failed")
            await dialog.replies.apologise(channel, event.get("user", ""), thread, store_down=False)

    return on_mention
