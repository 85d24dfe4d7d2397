"""Buttons and selects: answers to the dialog's questions and the what-ifs under each answer.

Interactive payloads are never retried by Slack, but people double-click: each press is
claimed once in Redis before it changes anything."""

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

log = logging.getLogger("gpusize.bot")
Handler = Callable[..., Awaitable[None]]
Work = Callable[[dict[str, Any]], Awaitable[None]]


def _where(body: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """(team, channel, thread_ts, message_ts, user) of a block action."""
    message = body.get("message") or {}
    message_ts = body.get("container", {}).get("message_ts") or message.get("ts", "")
    thread_ts = message.get("thread_ts") or message_ts
    team = (body.get("team") or {}).get("id") or body.get("user", {}).get("team_id", "")
    return team, body["channel"]["id"], thread_ts, message_ts, body["user"]["id"]


async def _first_press(dialog: Dialog, body: dict[str, Any]) -> bool:
    team, _, _, _, user = _where(body)
    action_ts = body["actions"][0].get("action_ts", "")
    try:
        return await dialog.store.claim(keys.action_seen(team, user, action_ts), ttl_seconds=600)
    except RedisError:
        return True


def guarded(dialog: Dialog, languages: Languages, work: Work) -> Handler:
    """Ack, answer in the presser's language, take a double click once, apologise on failure."""
    async def listener(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        team, channel, thread_ts, _message, user = _where(body)
        set_language(await languages.of(team, user))
        if not await _first_press(dialog, body):  # a double click is taken once
            return
        try:
            await work(body)
        except RedisError:
            REDIS_ERRORS.labels("button").inc()
            await dialog.replies.apologise(channel, user, thread_ts, store_down=True)
        except Exception:
            log.exception("button handling failed")
            await dialog.replies.apologise(channel, user, thread_ts, store_down=False)

    return listener


def answer_method(dialog: Dialog) -> Work:
    async def work(body: dict[str, Any]) -> None:
        team, channel, thread_ts, message_ts, user = _where(body)
        await dialog.answer_method(team=team, channel=channel, thread_ts=thread_ts, user=user,
                                   message_ts=message_ts, method=body["actions"][0]["value"])
    return work


def answer_budget(dialog: Dialog) -> Work:
    async def work(body: dict[str, Any]) -> None:
        team, channel, thread_ts, message_ts, user = _where(body)
        action = body["actions"][0]
        budget = (action.get("selected_option") or {}).get("value")
        await dialog.answer_budget(team=team, channel=channel, thread_ts=thread_ts, user=user,
                                   message_ts=message_ts,
                                   budget=None if action["action_id"].endswith("_skip") else budget)
    return work


def card_action(dialog: Dialog) -> Work:
    async def work(body: dict[str, Any]) -> None:
        team, channel, thread_ts, message_ts, user = _where(body)
        action = body["actions"][0]
        value = action.get("value") or (action.get("selected_option") or {}).get("value", "")
        await dialog.card_action(team=team, channel=channel, thread_ts=thread_ts,
                                 message_ts=message_ts, user=user,
                                 action_id=action.get("action_id", ""), value=value)
    return work
