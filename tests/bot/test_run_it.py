"""An error's "Run it" and presses without a channel, in-process: the real listeners and Intake
against the session's redis-server, the rest of the bot faked at its edges (no bot process).

"Run it" opens a thread as a typed question does, so it is counted against the same per-person
thread limit (issue 26 item 7) and refused privately, in the presser's language, over it."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from redis.asyncio import Redis

from bot.intake import Intake
from bot.job import Job, Submitted
from bot.limits import Limit
from bot.listeners.actions import buttons, start
from bot.words import NO_THREAD, TOO_MANY_THREADS
from engine.i18n import _, set_language

USER = "U0ALICE"


class Jobs:
    """The job queue's edge: what was submitted."""

    def __init__(self) -> None:
        self.submitted: list[Job] = []

    async def submit(self, job: Job, **_kw: Any) -> Submitted:
        self.submitted.append(job)
        return Submitted.QUEUED

    async def run_here(self, job: Job) -> None:
        raise AssertionError("recorded jobs are not run here")


def parts_for(redis: Redis, *, lang: str, per_hour: int) -> Any:
    async def of(_team: str, _user: str, _text: str = "") -> str:
        return lang

    return SimpleNamespace(languages=SimpleNamespace(of=of), intake=Intake(redis), jobs=Jobs(),
                           replies=Told(), thread_limit=Limit("thread", per_hour, 3600))


class Told:
    """The Slack edge of a press without a channel: where the presser was told, and what."""

    def __init__(self) -> None:
        self.said: list[tuple[str, Any]] = []

    async def push_view(self, trigger_id: str, view: dict[str, Any]) -> None:
        if trigger_id == "expired":
            raise RuntimeError("expired_trigger_id")
        self.said.append(("views.push", view))

    async def direct(self, user: str, text: str) -> None:
        self.said.append(("direct message", text))

    async def publish(self, team: str, user: str, notice: str = "") -> None:
        self.said.append(("App Home", notice))


def run_it_press(team: str, text: str, n: int) -> dict[str, Any]:
    return {"type": "block_actions", "team": {"id": team}, "user": {"id": USER, "team_id": team},
            "channel": {"id": "C0CHAN"}, "response_url": "https://hooks.example/err",
            "container": {"type": "message", "is_ephemeral": True},
            "actions": [{"action_id": "run_it", "type": "button", "value": text,
                         "action_ts": f"1700000000.{n:06d}"}]}


async def press_run_it(redis_url: str, *, lang: str, presses: int, per_hour: int,
                       typed_before: int = 0) -> tuple[Any, list[dict[str, Any]]]:
    redis = Redis.from_url(redis_url, decode_responses=True)
    team = f"T{uuid.uuid4().hex[:8]}"  # the counters are per team: nothing left by other tests
    parts = parts_for(redis, lang=lang, per_hour=per_hour)
    said: list[dict[str, Any]] = []

    async def ack(**_kw: Any) -> None:
        return None

    async def respond(**kw: Any) -> None:
        said.append(kw)

    try:
        for _n in range(typed_before):  # questions typed before, through the same intake
            await parts.intake.admit_question("13B lora", team=team, user=USER,
                                              limit=parts.thread_limit)
        listener = start.run_it(parts)
        for n in range(presses):
            await listener(ack=ack, body=run_it_press(team, "13B lora budget=150k", n),
                           respond=respond)
    finally:
        await redis.aclose()
    return parts, said


def test_run_it_counts_against_the_thread_limit_like_a_typed_command(redis_url: str) -> None:
    parts, said = asyncio.run(press_run_it(redis_url, lang="en", presses=3, per_hour=2))
    assert [job.payload["text"] for job in parts.jobs.submitted] == ["13B lora budget=150k"] * 2
    refusals = [r for r in said if r.get("response_type") == "ephemeral"]
    assert len(refusals) == 1 and "at most 2 an hour" in refusals[0]["text"]
    assert not refusals[0].get("replace_original")  # the error card stays, to run later
    # the two that ran replaced their error card
    assert sum(1 for r in said if r.get("delete_original")) == 2


def test_typed_questions_and_run_it_share_one_count(redis_url: str) -> None:
    parts, said = asyncio.run(press_run_it(redis_url, lang="en", presses=1, per_hour=2,
                                           typed_before=2))
    assert parts.jobs.submitted == []
    assert len(said) == 1 and "more new threads than one person opens" in said[0]["text"]


def test_run_it_over_the_limit_is_refused_in_the_pressers_language(redis_url: str) -> None:
    _parts, said = asyncio.run(press_run_it(redis_url, lang="zh", presses=2, per_hour=1))
    refusal = said[-1]
    set_language("zh")
    try:
        expected = _(TOO_MANY_THREADS).format(count=1, minutes=60)
    finally:
        set_language("en")
    assert refusal["response_type"] == "ephemeral" and refusal["text"] == expected
    assert "threads" not in refusal["text"] and "每小时最多 1 个" in refusal["text"]


def test_run_it_still_checks_the_command(redis_url: str) -> None:
    """A value that does not read (it is sent by the client, so anything) is the same error
    card as a typed one, not a job, and opens no thread."""
    async def go() -> tuple[Any, list[dict[str, Any]]]:
        redis = Redis.from_url(redis_url, decode_responses=True)
        parts = parts_for(redis, lang="en", per_hour=1)
        said: list[dict[str, Any]] = []

        async def ack(**_kw: Any) -> None:
            return None

        async def respond(**kw: Any) -> None:
            said.append(kw)

        team = f"T{uuid.uuid4().hex[:8]}"
        try:
            listener = start.run_it(parts)
            await listener(ack=ack, body=run_it_press(team, "zzzz-unknown-model lora", 0),
                           respond=respond)
            await listener(ack=ack, body=run_it_press(team, "13B lora", 1), respond=respond)
        finally:
            await redis.aclose()
        return parts, said

    parts, said = asyncio.run(go())
    assert said[0]["replace_original"] is True and said[0]["blocks"]
    assert [job.payload["text"] for job in parts.jobs.submitted] == ["13B lora"]


@pytest.mark.parametrize(("where", "told_in"), [
    ({"container": {"type": "view", "view_id": "V0MODAL"},
      "view": {"id": "V0MODAL", "type": "modal"}, "trigger_id": "1.2.3"}, "views.push"),
    ({"container": {"type": "view", "view_id": "V0MODAL"},
      "view": {"id": "V0MODAL", "type": "modal"}, "trigger_id": "expired"}, "direct message"),
    ({"container": {"type": "view", "view_id": "V0HOME"}, "view": {"type": "home"}}, "App Home"),
    ({"container": {"type": "message_attachment"}}, "direct message"),
])
def test_a_press_without_a_channel_is_answered_where_it_was_pressed(
        where: dict[str, Any], told_in: str, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 26: a press in a modal or on App Home was only acknowledged. It has no thread to
    answer in, so the presser is told so where they pressed (the view, App Home, else a direct
    message), in their language; the log has one line, no traceback."""
    acked: list[bool] = []

    async def ack(**_kw: Any) -> None:
        acked.append(True)

    async def of(_team: str, _user: str, _text: str = "") -> str:
        return "zh"

    body = {"type": "block_actions", "team": {"id": "T0TEAM"}, "user": {"id": USER},
            "actions": [{"action_id": "card_more", "type": "button", "value": "1|charts",
                         "action_ts": "1700000000.000001"}], **where}
    told = Told()
    parts = SimpleNamespace(languages=SimpleNamespace(of=of), replies=told, home=told)
    listener = buttons.guarded(parts, "press:card")  # type: ignore[arg-type]
    with caplog.at_level(logging.DEBUG, logger=buttons.__name__):
        asyncio.run(listener(ack=ack, body=body))
    set_language("en")
    assert acked == [True]
    assert [where for where, _said in told.said] == [told_in]
    said = told.said[0][1]
    text = json.dumps(said, ensure_ascii=False) if isinstance(said, dict) else said
    set_language("zh")
    try:
        expected = _(NO_THREAD)
    finally:
        set_language("en")
    assert expected != NO_THREAD and expected.split("`")[0] in text  # in the presser's language
    records = [r for r in caplog.records if r.name == buttons.__name__]
    assert len(records) == 1 and records[0].exc_info is None
    assert "without a channel" in records[0].getMessage()
    assert records[0].levelno < logging.WARNING


def test_an_app_home_control_that_fails_is_said_by_direct_message() -> None:
    """A control's job whose sub-command or tab fails (Redis gone, Slack refusing the tab) was
    logged only: the person is told by direct message, in their language."""
    from redis.exceptions import ConnectionError as RedisDown

    from bot.listeners.views import home
    from bot.words import STORE_DOWN

    async def of(_team: str, _user: str, _text: str = "") -> str:
        return "zh"

    async def broken(_team: str, _user: str, _text: str) -> None:
        raise RedisDown("gone")

    told = Told()
    parts = SimpleNamespace(languages=SimpleNamespace(of=of), replies=told,
                            home=SimpleNamespace(run=broken))
    asyncio.run(home.run_control(parts)(  # type: ignore[arg-type]
        {"team": "T0TEAM", "user": USER, "text": "digest unsubscribe <#C0X>"}))
    set_language("zh")
    try:
        expected = _(STORE_DOWN)
    finally:
        set_language("en")
    assert told.said == [("direct message", expected)] and expected != STORE_DOWN
