"""Buttons and selects: answers to the dialog's questions and the what-ifs under each answer.

Each press is recorded as a job (bot.jobs) before the ack, with the press as its dedupe key:
Slack never retries interactive payloads, but people double-click. Chart presses are limited per
user (bot.limits): over the limit, the presser is told privately and nothing is queued."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError

from bot import keys, limits
from bot.jobs import Handler, Job, Submitted
from bot.observability import REDIS_ERRORS
from bot.parts import Parts
from bot.words import TOO_MANY_CHARTS, failure_text
from engine.i18n import _, set_language
from present import slack
from present.actions import CHART_ACTIONS, Action, Detail

log = logging.getLogger(__name__)
Listener = Callable[..., Awaitable[None]]
Work = Callable[[dict[str, Any]], Awaitable[None]]
PRESS_TTL_S = 600


def _where(body: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """(team, channel, thread_ts, message_ts, user) of a block action."""
    message = body.get("message") or {}
    message_ts = body.get("container", {}).get("message_ts") or message.get("ts", "")
    thread_ts = message.get("thread_ts") or message_ts
    team = (body.get("team") or {}).get("id") or body.get("user", {}).get("team_id", "")
    return team, body["channel"]["id"], thread_ts, message_ts, body["user"]["id"]


def _press(body: dict[str, Any]) -> dict[str, Any]:
    """What a job needs of an action payload (the message's blocks are left out)."""
    message = body.get("message") or {}
    return {"team": body.get("team"), "user": body.get("user"), "channel": body.get("channel"),
            "container": body.get("container") or {},
            "message": {k: message[k] for k in ("ts", "thread_ts") if k in message},
            "actions": body.get("actions") or []}


def draws_a_chart(action: dict[str, Any]) -> bool:
    value = action.get("value") or (action.get("selected_option") or {}).get("value", "")
    return Action.of(action.get("action_id") or "") in CHART_ACTIONS or \
        slack.split_value(value or "")[1] == Detail.CHARTS


def guarded(parts: Parts, kind: str) -> Listener:
    """Record the press as a job, then ack; a chart over the presser's limit is refused."""
    async def listener(ack: Any, body: dict[str, Any]) -> None:
        try:
            await record(ack, body)
        except Exception:  # a payload the bot cannot read: acked all the same, never a 500
            log.exception("button press not recorded")
            with contextlib.suppress(Exception):
                await ack()

    async def record(ack: Any, body: dict[str, Any]) -> None:
        team, channel, thread_ts, _message, user = _where(body)
        action = (body.get("actions") or [{}])[0]
        if draws_a_chart(action):
            verdict = await limits.allow(parts.store.redis, limit=parts.chart_limit, team=team,
                                         subject=user)
            if not verdict.allowed:
                await ack()
                set_language(await parts.languages.of(team, user))
                await parts.replies.apologise(channel, user, thread_ts, store_down=False,
                                              text=_(TOO_MANY_CHARTS).format(
                                                  count=parts.chart_limit.count,
                                                  seconds=verdict.retry_after_s))
                return
        job = Job(kind=kind, payload=_press(body), owner=f"{team}:{user}")
        dedupe = [(keys.action_seen(team, user, action.get("action_ts", "")), PRESS_TTL_S)]
        outcome = await parts.jobs.submit(job, dedupe=dedupe)
        await ack()
        if outcome is Submitted.UNRECORDED:  # Redis down: answer here, best effort
            await parts.jobs.run_here(job)

    return listener


def runner(parts: Parts, work: Work) -> Handler:
    """A press's job: answer in the presser's language, apologise on failure."""
    async def run(body: dict[str, Any]) -> None:
        team, channel, thread_ts, _message, user = _where(body)
        set_language(await parts.languages.of(team, user))
        try:
            await work(body)
        except RedisError:
            REDIS_ERRORS.labels("button").inc()
            await parts.replies.apologise(channel, user, thread_ts, store_down=True)
        except Exception as err:
            log.exception("button handling failed")
            await parts.replies.apologise(channel, user, thread_ts, store_down=False,
                                          text=failure_text(err))

    return run


def answer_method(parts: Parts) -> Work:
    async def work(body: dict[str, Any]) -> None:
        team, channel, thread_ts, message_ts, user = _where(body)
        await parts.dialog.answer_method(team=team, channel=channel, thread_ts=thread_ts, user=user,
                                   message_ts=message_ts, method=body["actions"][0]["value"])
    return work


def answer_budget(parts: Parts) -> Work:
    async def work(body: dict[str, Any]) -> None:
        team, channel, thread_ts, message_ts, user = _where(body)
        action = body["actions"][0]
        budget = (action.get("selected_option") or {}).get("value")
        skip = Action.of(action["action_id"]) is Action.ANSWER_BUDGET_SKIP
        await parts.dialog.answer_budget(team=team, channel=channel, thread_ts=thread_ts,
                                         user=user, message_ts=message_ts,
                                         budget=None if skip else budget)
    return work


def card_action(parts: Parts) -> Work:
    async def work(body: dict[str, Any]) -> None:
        team, channel, thread_ts, message_ts, user = _where(body)
        action = body["actions"][0]
        value = action.get("value") or (action.get("selected_option") or {}).get("value", "")
        await parts.presses.card_action(team=team, channel=channel, thread_ts=thread_ts,
                                        message_ts=message_ts, user=user,
                                        action_id=action.get("action_id", ""), value=value)
    return work
