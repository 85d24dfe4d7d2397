"""`/gpusize ...`: ack at once (help and errors in the ack itself, ephemeral), then answer. An
empty `/gpusize` opens the sizing form (bot/forms.py) with the command's trigger.

A first word that is a sub-command (bot/subcommands.py: price, quote, digest, lang) runs that row;
anything else is a sizing question in the grammar the CLI uses, read and checked before the ack
(bot/intake.py) and answered after it (bot/dialog.py)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot import forms, keys, subcommands
from bot.intake import TooManyThreads
from bot.job import Handler, Job, Submitted
from bot.listeners import recording
from bot.observability import COMMANDS, REDIS_ERRORS
from bot.once import JobDeferred
from bot.parts import Parts
from bot.permissions import Permissions
from bot.pricestore import new_id
from bot.replies import Notice
from bot.subcommands import HELP_WORDS, Call, help_message
from bot.words import SLACK_UNREACHABLE, STORE_DOWN, failure_text
from engine import ParseError, UserError
from engine.i18n import _, current, set_language
from engine.request import Draft
from present import slack
from present.blockkit import clean_input

log = logging.getLogger(__name__)
REPLAY_TTL_S = 600  # Slack refuses a signature older than 5 minutes


def handler(parts: Parts) -> Callable[..., Awaitable[None]]:
    async def gpusize_command(ack: Any, command: dict[str, Any], respond: Any,
                              client: Any, request: Any) -> None:
        text = clean_input(command.get("text") or "").strip()
        unreachable = parts.identity.unreachable
        set_language(await parts.languages.of(command["team_id"], command["user_id"], text,
                                              ask_slack=not unreachable))
        if unreachable:
            # Slack has not answered this process since it started: said in the ack's body,
            # which needs no Web API; nothing is recorded that could not be answered
            COMMANDS.labels("slack_unreachable").inc()
            msg = Notice(_(SLACK_UNREACHABLE))
            await ack(text=msg.text, blocks=msg.blocks)
            return
        if not text and command.get("trigger_id"):
            # nothing typed: the form, which asks what the grammar would (help if it cannot open)
            await ack()
            try:
                await forms.open_form(parts.replies, command["trigger_id"],
                                      channel=command.get("channel_id") or "")
                COMMANDS.labels("form").inc()
            except Exception as err:
                log.warning("the form did not open: %s", type(err).__name__)
                msg = help_message()
                await respond(response_type="ephemeral", text=msg.text, blocks=msg.blocks)
            return
        if text.lower() in HELP_WORDS:
            COMMANDS.labels("help").inc()
            msg = help_message()
            await ack(text=msg.text, blocks=msg.blocks)
            return
        owner = f"{command['team_id']}:{command['user_id']}"
        digest = request_digest(request)
        dedupe = [(keys.command_seen(digest), REPLAY_TTL_S)]
        if subcommands.find(text) is not None:
            # a quote, a subscription or a language choice is acknowledged work too: recorded
            # before the ack like an answer; its quote id is fixed now, so a re-run stores it once
            job = Job(kind="subcommand", owner=owner, payload={
                "command": {k: command.get(k) or "" for k in ("team_id", "channel_id",
                                                               "user_id", "response_url")},
                "text": text, "lang": current(), "quote_id": new_id("q")})
            outcome = await parts.jobs.submit(job, dedupe=dedupe, refused=recording.later(
                parts.replies, channel=command["channel_id"], user=command["user_id"],
                response_url=command.get("response_url") or ""))
            await ack(**recording.ack_with_note(outcome))
            if outcome is Submitted.UNRECORDED:
                await parts.jobs.run_here(job)
            return
        try:
            # each question opens a thread: one person's are counted (a script opened 500 in 4 s)
            draft = await parts.intake.admit_question(text, team=command["team_id"],
                                                      user=command["user_id"],
                                                      limit=parts.thread_limit,
                                                      attempt=f"cmd:{digest}")
        except TooManyThreads as err:
            COMMANDS.labels("limited").inc()
            await ack(**refusal(str(err)))
            return
        except UserError as err:
            COMMANDS.labels("error").inc()
            # the correction re-reads the text up to 3 times: off the event loop, as reading is
            msg = await asyncio.to_thread(error_notice, parts, err, text)
            await ack(text=msg.text, blocks=msg.blocks)
            return
        except Exception as err:  # e.g. a ValidationError: said plainly, never a 500 to Slack
            COMMANDS.labels("error").inc()
            log.warning("/gpusize input refused: %s", type(err).__name__)
            msg = Notice(failure_text(err))
            await ack(text=msg.text, blocks=msg.blocks)
            return
        # recorded before the ack (bot.jobs): a stop or a crash now loses nothing, and a replay
        # of this very request (same timestamp and body) is answered once
        job = Job(kind="command", owner=owner,
                  payload={"team": command["team_id"], "channel": command["channel_id"],
                           "user": command["user_id"], "text": text, "draft": dict(draft.values),
                           "response_url": command.get("response_url") or "",
                           "lang": current()})
        outcome = await parts.jobs.submit(job, dedupe=dedupe, refused=recording.later(
            parts.replies, channel=command["channel_id"], user=command["user_id"],
            response_url=command.get("response_url") or ""))
        # held (Redis slow) or refused (Redis full): the person hears it in the ack, privately
        await ack(**recording.ack_with_note(outcome))
        if outcome is Submitted.UNRECORDED:  # Redis down: answer here, best effort
            await parts.jobs.run_here(job)

    return gpusize_command


@functools.lru_cache(maxsize=64)
def _refusal(text: str) -> tuple[str, str]:
    msg = Notice(text)
    return msg.text, json.dumps(msg.blocks)


def refusal(text: str) -> dict[str, Any]:
    """A refusal's ack arguments. A member's burst past a limit repeats the same few lines
    (one per language and minute): rendered once each, not once per command on the loop."""
    fallback, blocks = _refusal(text)
    return {"text": fallback, "blocks": json.loads(blocks)}


def error_notice(parts: Parts, err: Exception, text: str) -> Notice:
    """A command that cannot be read: the problem, the corrected command and a button that runs
    it (when a correction reads), the typed text echoed, and the form prefilled from it."""
    view = slack.error_view(str(err), text, forms.corrected(text, parts.intake.check))
    for button in view["buttons"]:  # Slack's markup is no part of a sizing question
        button["value"] = re.sub(r"[<>]", " ", button["value"])
    return Notice("\n".join(view["sections"]), context=view["context"], buttons=view["buttons"])


def request_digest(request: Any) -> str:
    """A signed request's identity: its timestamp and raw body (a replay repeats both; Slack's
    trigger_id is in the body, so two real commands never share it)."""
    headers = getattr(request, "headers", None) or {}
    stamp = headers.get("x-slack-request-timestamp") or [""]
    raw = getattr(request, "raw_body", "") or ""
    return hashlib.sha256(f"{stamp[0] if isinstance(stamp, list | tuple) else stamp}\n{raw}"
                          .encode()).hexdigest()


def run_command(parts: Parts) -> Handler:
    """A sizing command's job: post the answer (or the first question) in the channel."""
    async def run(p: dict[str, Any]) -> None:
        set_language(p.get("lang") or "en")
        # a submitted form has no response_url: private replies go through the Web API
        respond = (AsyncRespond(response_url=p["response_url"]) if p["response_url"]
                   else parts.replies.privately(p["channel"], p["user"]))
        draft = Draft(p["draft"])
        try:
            await parts.dialog.command(team=p["team"], channel=p["channel"], user=p["user"],
                                 draft=draft, respond=respond, text=p["text"])
            COMMANDS.labels("answered" if draft.method else "asked").inc()
        except JobDeferred:  # Slack away or a 429: the job runs again later, nothing to say now
            raise
        except Exception as err:  # the user is told plainly, the log gets the details
            COMMANDS.labels("failed").inc()
            log.exception("answering /gpusize failed")
            text = failure_text(err)
            if p["response_url"]:
                with contextlib.suppress(Exception):
                    await parts.replies.respond(respond, response_type="ephemeral", text=text)
            else:
                await parts.replies.apologise(p["channel"], p["user"], None, store_down=False,
                                               text=text)

    return run


def run_subcommand(parts: Parts) -> Handler:
    """A sub-command's job: its row's handler, then its private reply."""
    permissions = Permissions(parts.digests.redis, parts.digests.client)

    async def run(p: dict[str, Any]) -> None:
        set_language(p.get("lang") or "en")
        command, text = p["command"], p["text"]
        row = subcommands.find(text)
        try:
            if row is None:  # recorded by a version that had a sub-command this one lacks
                raise ParseError(_("Nothing was posted. `/gpusize help` shows the grammar."))
            sections = await row.run(Call(
                command=command, text=text, prices=parts.prices, digests=parts.digests,
                languages=parts.languages, permissions=permissions, quote_id=p.get("quote_id")))
            COMMANDS.labels(row.name).inc()
        except UserError as err:  # Refused, a full quota, a bad price or its words
            COMMANDS.labels("error").inc()
            sections = [f"{err}"]
        except RedisError:
            REDIS_ERRORS.labels("command").inc()
            sections = [_(STORE_DOWN)]
        except Exception as err:  # acknowledged work is answered: an error is an answer too
            COMMANDS.labels("failed").inc()
            log.exception("a /gpusize sub-command failed")
            sections = [failure_text(err)]
        msg = Notice("\n\n".join(sections))
        if command.get("response_url"):
            await parts.replies.respond(AsyncRespond(response_url=command["response_url"]),
                                        response_type="ephemeral", text=msg.text,
                                        blocks=msg.blocks)
        elif command.get("channel_id"):  # a press with no response_url: privately in its channel
            await parts.replies.privately(command["channel_id"], command["user_id"])(
                text=msg.text, blocks=msg.blocks)
        else:  # a press with no channel either (App Home, a modal): by direct message
            await parts.replies.direct(command["user_id"], "\n\n".join(sections))

    return run
