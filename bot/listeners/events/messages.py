"""Typed replies in the bot's threads, mentions, and direct messages (a top-level DM is asked of
the bot as a mention is: answered in its thread, which then continues like any other).

Events are acknowledged by Bolt before any listener runs, so they are recorded as jobs in a
middleware (`record`), before the 200 goes back: the event id and the message ts are the dedupe
keys, set in the same step as the job is recorded, so Slack's retry after a crash is dropped only
when the job is durably there, and a thread reply that mentions the bot (two events, message and
app_mention) is handled once. The jobs themselves run in `run_message` and `run_mention`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from redis.exceptions import RedisError
from slack_bolt.response import BoltResponse

from bot import keys
from bot.dialog import NO_BUDGET
from bot.job import Handler, Job, Submitted
from bot.listeners import recording
from bot.observability import REDIS_ERRORS
from bot.parts import Parts
from bot.words import failure_text
from engine.i18n import set_language
from engine.reader import has_slot
from present.blockkit import clean_input

log = logging.getLogger(__name__)
IGNORED_SUBTYPES = {"message_changed", "message_deleted", "bot_message", "channel_join",
                    "channel_leave", "message_replied"}
SEEN_TTL_S = 3600  # Slack retries an event for minutes, not hours
_unrecorded: set[asyncio.Task[None]] = set()  # run or said here, after the 200


def asks_the_bot(text: str) -> bool:
    """Would the bot have answered this message? (Chatter gets no job and no apology.) A reply
    it reads, one it would refuse (a ParseError is said privately), or "no budget" to its
    budget question; any other thread message is people talking."""
    cleaned = clean_input(text)
    if NO_BUDGET.search(cleaned):
        return True
    try:
        return has_slot(cleaned)
    except Exception:
        return True


def job_of(body: dict[str, Any]) -> Job | None:
    """The job an event asks for: a reply in a thread, or a mention; None for everything else."""
    event = body.get("event") or {}
    kind = event.get("type")
    team = body.get("team_id", "")
    payload = {"team": team, "channel": event.get("channel", ""), "ts": event.get("ts", ""),
               "thread_ts": event.get("thread_ts") or "", "user": event.get("user", ""),
               "text": event.get("text", "")}
    if kind == "message":
        if event.get("subtype") in IGNORED_SUBTYPES or event.get("bot_id"):
            return None
        if names_the_bot(body, payload["text"]):
            # its app_mention twin carries the same ts and is dropped as a duplicate when this
            # one comes first: the job must be the mention's either way (a mention in a thread
            # that is not the bot's opens one; a reply would be ignored there)
            kind = "app_mention"
        if not payload["thread_ts"] or payload["thread_ts"] == payload["ts"]:
            # a DM: channel_type "im" (a D... channel when a payload leaves the type out)
            if event.get("channel_type") != "im" and not (
                    not event.get("channel_type") and payload["channel"].startswith("D")):
                return None  # only replies in threads; top-level chatter is not for the bot
            # a direct message to the bot is asked of it, as a mention is in a channel
            kind = "app_mention"
    elif kind != "app_mention":
        return None
    if not payload["channel"] or not payload["ts"]:
        return None
    return Job(kind=kind, payload=payload, owner=f"{team}:{payload['user']}")


def names_the_bot(body: dict[str, Any], text: str) -> bool:
    """Does `text` mention the bot? (Its user id is in the event's authorizations.)"""
    authorizations = body.get("authorizations") or []
    bots = {a.get("user_id") for a in authorizations if isinstance(a, dict) and a.get("is_bot")}
    return any(f"<@{bot}>" in text for bot in bots if isinstance(bot, str) and bot)


def record(parts: Parts) -> Callable[..., Awaitable[BoltResponse | None]]:
    jobs = parts.jobs

    async def tell(outcome: Submitted, p: dict[str, Any]) -> None:
        set_language(await parts.languages.of(p["team"], p["user"], p["text"]))
        await recording.tell(parts.replies, outcome, channel=p["channel"], user=p["user"],
                             thread_ts=p["thread_ts"] or p["ts"])

    async def record_events(body: dict[str, Any], next: Any) -> BoltResponse | None:
        if body.get("type") != "event_callback" or (body.get("event") or {}).get("type") not in (
                "message", "app_mention"):
            return await next()
        job = job_of(body)
        if job is None or (job.kind == "message" and not await asyncio.to_thread(
                asks_the_bot, job.payload["text"])):  # read off the event loop
            return BoltResponse(status=200, body="")  # chatter costs no job slot
        p = job.payload
        dedupe = [(keys.message_seen(p["team"], p["channel"], p["ts"]), SEEN_TTL_S)]
        if body.get("event_id"):
            dedupe.insert(0, (keys.event_seen(body["event_id"]), SEEN_TTL_S))
        outcome = await jobs.submit(job, dedupe=dedupe, refused=recording.later(
            parts.replies, channel=p["channel"], user=p["user"],
            thread_ts=p["thread_ts"] or p["ts"], languages=parts.languages, team=p["team"]))
        if outcome is Submitted.UNRECORDED:
            # without Redis, answering (perhaps twice) beats not answering
            _in_background(jobs.run_here(job))
        elif outcome in (Submitted.HELD, Submitted.REFUSED, Submitted.BUSY):  # said after the 200, privately
            _in_background(tell(outcome, p))
        return BoltResponse(status=200, body="")

    return record_events


def _in_background(work: Coroutine[Any, Any, None]) -> None:
    task = asyncio.create_task(work)
    _unrecorded.add(task)
    task.add_done_callback(_unrecorded.discard)


def run_message(parts: Parts) -> Handler:
    async def on_message(p: dict[str, Any]) -> None:
        set_language(await parts.languages.of(p["team"], p["user"], p["text"]))
        try:
            await parts.dialog.follow_up(team=p["team"], channel=p["channel"], thread_ts=p["thread_ts"],
                                   user=p["user"], text=clean_input(p["text"]))
        except RedisError:
            REDIS_ERRORS.labels("follow-up").inc()
            if asks_the_bot(p["text"]):
                await parts.replies.apologise(p["channel"], p["user"], p["thread_ts"],
                                               store_down=True)
        except Exception as err:
            log.exception("follow-up failed")
            await parts.replies.apologise(p["channel"], p["user"], p["thread_ts"],
                                           store_down=False, text=failure_text(err))

    return on_message


def run_mention(parts: Parts) -> Handler:
    async def on_mention(p: dict[str, Any]) -> None:
        set_language(await parts.languages.of(p["team"], p["user"], p["text"]))
        channel, ts, thread = p["channel"], p["ts"], p["thread_ts"] or p["ts"]
        try:
            in_thread = bool(p["thread_ts"]) and p["thread_ts"] != ts
            if not (in_thread and await parts.dialog.follow_up(
                    team=p["team"], channel=channel, thread_ts=thread, user=p["user"],
                    text=clean_input(p["text"]), named=True)):
                # a new question, or the bot named in a thread that is not one of its own:
                # a thread is opened, admitted as every other way of opening one is
                await parts.dialog.mention_start(team=p["team"], channel=channel, ts=thread,
                                                 user=p["user"], text=clean_input(p["text"]),
                                                 limit=parts.thread_limit, message_ts=ts)
        except RedisError:
            REDIS_ERRORS.labels("mention").inc()
            await parts.replies.apologise(channel, p["user"], thread, store_down=True)
        except Exception as err:
            log.exception("mention failed")
            await parts.replies.apologise(channel, p["user"], thread, store_down=False,
                                           text=failure_text(err))

    return on_mention
