"""Buttons and selects: answers to the dialog's questions and the what-ifs under each answer.

Each press is recorded as a job (bot.jobs) before the ack, with the press as its dedupe key:
Slack never retries interactive payloads, but people double-click. Chart presses are limited per
user (bot.limits): over the limit, the presser is told privately and nothing is queued. A press
that opens a detail opens its modal with the detail when it is worked out within DETAIL_NOW_S;
otherwise a modal saying so opens before the ack, while the trigger is fresh (3 s), and the
press's job fills it in (views.update)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError

from bot import keys, limits, presses
from bot.job import Handler, Job, Submitted
from bot.listeners import recording
from bot.listeners.actions import presser
from bot.observability import REDIS_ERRORS
from bot.parts import Parts
from bot.words import TOO_MANY_CHARTS, failure_text
from engine.i18n import _, set_language
from present import slack, views
from present.actions import CHART_ACTIONS, Action, Detail

log = logging.getLogger(__name__)
Listener = Callable[..., Awaitable[None]]
Work = Callable[[dict[str, Any]], Awaitable[None]]
PRESS_TTL_S = 600
MODAL_OPEN_S = 2.0  # views.open before the ack: Slack's 3 s hold the ack and the trigger both
DETAIL_NOW_S = 1.0  # a detail worked out within this is opened with its content at once


class PressWithoutChannel(LookupError):
    """A press in a modal or on App Home: Slack sends no channel, so there is no thread to
    answer in; the presser is told so where they pressed (bot/listeners/actions/presser.py)."""


def _where(body: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """(team, channel, thread_ts, message_ts, user) of a block action; PressWithoutChannel
    for one that has no channel."""
    channel = body.get("channel")
    if not isinstance(channel, dict) or not channel.get("id"):
        container = body.get("container")
        raise PressWithoutChannel(container.get("type") if isinstance(container, dict) else None)
    message = body.get("message") or {}
    message_ts = body.get("container", {}).get("message_ts") or message.get("ts", "")
    thread_ts = message.get("thread_ts") or message_ts
    team = (body.get("team") or {}).get("id") or body.get("user", {}).get("team_id", "")
    return team, channel["id"], thread_ts, message_ts, body["user"]["id"]


def _press(body: dict[str, Any], view_id: str = "") -> dict[str, Any]:
    """What a job needs of an action payload (the message's blocks are left out); `view_id`:
    the modal the press opened."""
    message = body.get("message") or {}
    return {"team": body.get("team"), "user": body.get("user"), "channel": body.get("channel"),
            "container": body.get("container") or {},
            "message": {k: message[k] for k in ("ts", "thread_ts") if k in message},
            "actions": body.get("actions") or [], "view_id": view_id}


def _value(action: dict[str, Any]) -> str:
    return action.get("value") or (action.get("selected_option") or {}).get("value", "") or ""


def opens_a_modal(action: dict[str, Any]) -> Detail | None:
    """The detail a press reads in a modal, if any."""
    return presses.modal_detail(Action.of(action.get("action_id") or ""),
                                slack.split_value(_value(action))[1])


async def open_at_once(parts: Parts, ack: Any, body: dict[str, Any], kind: Detail) -> bool:
    """Work the detail out now and open its modal with it (one views.open, nothing to update),
    when that takes less than DETAIL_NOW_S; False when it takes longer (the workers are busy):
    the press is then a job that fills in a modal opened at once."""
    team, channel, thread_ts, message_ts, user = _where(body)
    action = (body.get("actions") or [{}])[0]
    set_language(await parts.languages.of(team, user))
    try:
        sections, refusal = await asyncio.wait_for(parts.presses.detail(
            team=team, channel=channel, thread_ts=thread_ts, message_ts=message_ts,
            value=_value(action), kind=kind), DETAIL_NOW_S)
    except TimeoutError:
        return False
    except Exception as err:  # Redis, a worker: the press's job tries again and says so
        log.warning("detail not worked out at once: %s", type(err).__name__)
        return False
    await ack()
    view = (views.notice_view("gpusize", refusal) if refusal
            else views.detail_view(kind, sections))
    try:
        await parts.replies.open_view(body.get("trigger_id") or "", view)
    except Exception as err:  # an expired trigger: the detail comes privately instead
        log.warning("views.open failed: %s", type(err).__name__)
        await parts.details.deliver(channel=channel, thread_ts=thread_ts, user=user, kind=kind,
                                    sections=sections, refusal=refusal)
    return True


async def open_loading(parts: Parts, body: dict[str, Any], kind: Detail) -> str:
    """Open the detail's modal now, while the press's trigger is fresh (3 s), saying it is being
    worked out; the job fills it in. "" when Slack refused (the job then answers privately)."""
    trigger = body.get("trigger_id") or ""
    if not trigger:
        return ""
    try:
        return await asyncio.wait_for(parts.replies.open_view(trigger, views.loading_view(kind)),
                                      MODAL_OPEN_S)
    except Exception as err:  # an expired trigger, a slow Slack: the detail comes privately
        log.warning("views.open failed: %s", type(err).__name__)
        return ""


def draws_a_chart(action: dict[str, Any]) -> bool:
    return Action.of(action.get("action_id") or "") in CHART_ACTIONS or \
        slack.split_value(_value(action))[1] == Detail.CHARTS


def guarded(parts: Parts, kind: str) -> Listener:
    """Record the press as a job, then ack; a chart over the presser's limit is refused."""
    async def listener(ack: Any, body: dict[str, Any]) -> None:
        try:
            await record(ack, body)
        except PressWithoutChannel as err:  # expected, not a fault: one line, no traceback
            log.info("button press without a channel (from %.40s): told where pressed", err)
            with contextlib.suppress(Exception):
                await ack()
            team, user = presser.team_and_user(body)
            set_language(await parts.languages.of(team, user))
            await presser.no_thread(parts, body)  # there is no thread to answer in
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
        dedupe = [(keys.action_seen(team, user, action.get("action_ts", "")), PRESS_TTL_S)]
        detail = opens_a_modal(action)
        view_id = ""
        if detail is not None:
            if await open_at_once(parts, ack, body, detail):
                return
            view_id = await open_loading(parts, body, detail)
        job = Job(kind=kind, payload=_press(body, view_id), owner=f"{team}:{user}")
        outcome = await parts.jobs.submit(job, dedupe=dedupe, refused=recording.later(
            parts.replies, channel=channel, user=user, thread_ts=thread_ts,
            languages=parts.languages, team=team))
        await ack()
        if outcome is Submitted.UNRECORDED:  # Redis down: answer here, best effort
            await parts.jobs.run_here(job)
        elif outcome in (Submitted.HELD, Submitted.REFUSED, Submitted.BUSY):
            set_language(await parts.languages.of(team, user))
            await recording.tell(parts.replies, outcome, channel=channel, user=user,
                                 thread_ts=thread_ts)

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
                                        action_id=action.get("action_id", ""), value=value,
                                        view_id=body.get("view_id") or "")
    return work
