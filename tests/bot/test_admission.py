"""One admission path (issue 26, the bot's remaining gaps), over signed HTTP against a real bot
process, the session's redis-server and the Slack Web API stand-in.

Every way a question opens a thread (a slash command, a mention, a mention in a thread that is
not the bot's, a direct message, the form from the command, from the message shortcut and from
App Home, an error's "Run it", in a channel or pressed where there is none) is admitted by
`Intake.admit_question`: with the limit at one thread an hour, a member who has opened one with a
slash command is refused on each of them, in that surface's own way, and nothing more is posted.
Then: presses with no channel (App Home, a modal) and presses with ids or values no button of
ours carries are answered, never only acknowledged."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from bot.words import NO_THREAD, UNKNOWN_BUTTON
from tests.bot.test_surfaces import dm, home_press, open_form, press, shortcut, submission
from tests.harness import TEAM, Bot, SlackStub

REFUSED = "more new threads than one person opens"
USER = "U0ALICE"


def said(slack: SlackStub, method: str, words: str, timeout: float = 10) -> dict[str, Any]:
    """The first call of `method` whose body has `words` (waiting for it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for call in slack.of(method):
            if words in json.dumps(call.body, ensure_ascii=False):
                return call.body
        time.sleep(0.02)
    raise AssertionError(f"no {method} saying {words!r}: {slack.of(method)}")


def form_refused(bot: Bot, slack: SlackStub, view: dict[str, Any]) -> None:
    status, body = bot.interaction(submission(view, user=USER, model="llama-3.1-8b",
                                              method="inference"))
    assert status == 200 and body, "the form was taken, not refused"
    reply = json.loads(body)
    assert reply["response_action"] == "errors" and REFUSED in json.dumps(reply["errors"])


def by_slash_command(bot: Bot, slack: SlackStub) -> None:
    status, body = bot.command("70B lora", user=USER)
    assert status == 200 and REFUSED in body


def by_mention(bot: Bot, slack: SlackStub) -> None:
    bot.event({"type": "app_mention", "channel": "C0CHAN", "user": USER,
               "text": "<@UBOT0001> 70B lora", "ts": "1700000500.000100"}, event_id="EvM1")
    assert said(slack, "chat.postEphemeral", REFUSED)["channel"] == "C0CHAN"


def by_mention_in_someone_elses_thread(bot: Bot, slack: SlackStub) -> None:
    bot.event({"type": "app_mention", "channel": "C0CHAN", "user": USER,
               "text": "<@UBOT0001> 70B lora", "ts": "1700000500.000300",
               "thread_ts": "1700000400.000100"}, event_id="EvM2")
    told = said(slack, "chat.postEphemeral", REFUSED)
    assert told["thread_ts"] == "1700000400.000100"


def by_direct_message(bot: Bot, slack: SlackStub) -> None:
    bot.event(dm("70B lora", ts="1700000600.000100"), event_id="EvDm1")
    assert said(slack, "chat.postEphemeral", REFUSED)["channel"] == "D0ALICE"


def by_the_form(bot: Bot, slack: SlackStub) -> None:
    form_refused(bot, slack, open_form(bot, slack))


def by_the_shortcut(bot: Bot, slack: SlackStub) -> None:
    assert bot.interaction(shortcut("can we serve llama-3.1-8b?", user=USER))[0] == 200
    form_refused(bot, slack, slack.wait_for("views.open")[0].body["view"])


def by_app_home(bot: Bot, slack: SlackStub) -> None:
    home_press(bot, "", action_id="open_form", user=USER)
    view = slack.wait_for("views.open")[0].body["view"]
    form_refused(bot, slack, view)


def by_run_it(bot: Bot, slack: SlackStub) -> None:
    press(bot, "run_it", "70B lora", slack.response_url("err"), user=USER)
    assert REFUSED in said(slack, "response_url", REFUSED)["text"]


def by_run_it_on_app_home(bot: Bot, slack: SlackStub) -> None:
    home_press(bot, "70B lora", action_id="run_it", user=USER)  # no channel, no response_url
    said(slack, "views.publish", REFUSED)


ENTRY_POINTS: list[Callable[[Bot, SlackStub], None]] = [
    by_slash_command, by_mention, by_mention_in_someone_elses_thread, by_direct_message,
    by_the_form, by_the_shortcut, by_app_home, by_run_it, by_run_it_on_app_home]


@pytest.mark.parametrize("entry_point", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_every_way_of_opening_a_thread_is_admitted_by_one_count(
        make_bot: Any, slack: SlackStub, entry_point: Callable[[Bot, SlackStub], None]) -> None:
    bot = make_bot(THREAD_LIMIT_PER_HOUR="1")
    status, body = bot.command("13B lora", user=USER)  # the one thread this hour
    assert status == 200 and REFUSED not in body
    slack.wait_for("chat.postMessage")
    entry_point(bot, slack)
    time.sleep(0.5)  # anything the refused request would have posted
    assert len(slack.of("chat.postMessage")) == 1
    # another member is not held back by it
    assert REFUSED not in bot.command("13B lora", user="U0OTHER")[1]
    slack.wait_for("chat.postMessage", 2)


def test_a_mention_in_a_thread_that_is_not_the_bots_is_answered_there(
        bot: Bot, slack: SlackStub) -> None:
    """It used to be taken for a follow-up of a thread the bot does not have, and dropped."""
    bot.event({"type": "app_mention", "channel": "C0CHAN", "user": USER,
               "text": "<@UBOT0001> llama-3.1-8b qlora", "ts": "1700000500.000300",
               "thread_ts": "1700000400.000100"}, event_id="EvM3")
    card = slack.wait_for("chat.postMessage")[0].body
    assert card["thread_ts"] == "1700000400.000100"
    assert card["blocks"][0]["text"]["text"].startswith("Llama 3.1 8B QLoRA → ")


def test_run_it_pressed_on_app_home_is_answered_by_direct_message(
        bot: Bot, slack: SlackStub) -> None:
    home_press(bot, "llama-3.1-8b qlora", action_id="run_it")
    card = slack.wait_for("chat.postMessage")[0].body
    assert slack.of("conversations.open")[0].body["users"] == USER
    assert card["channel"] == "D0ALICE"
    assert card["blocks"][0]["text"]["text"].startswith("Llama 3.1 8B QLoRA → ")


def modal_press(bot: Bot, action_id: str, value: str, *, trigger: str = "4.4.4") -> None:
    bot.interaction({"type": "block_actions", "team": {"id": TEAM}, "api_app_id": "A0APP",
                     "user": {"id": USER, "team_id": TEAM}, "trigger_id": trigger,
                     "container": {"type": "view", "view_id": "VMODAL"},
                     "view": {"id": "VMODAL", "type": "modal", "callback_id": "detail"},
                     "actions": [{"action_id": action_id, "block_id": "b", "type": "button",
                                  "value": value, "action_ts": f"{time.time():.6f}"}]})


def test_presses_without_a_channel_are_answered_where_they_were_pressed(
        bot: Bot, slack: SlackStub) -> None:
    """Buttons of an answer pressed in a modal or on App Home: no thread to answer in, so the
    presser is told so there (a view pushed on the modal, App Home published again) and in
    their language; nothing else happens."""
    slack.locales["U0ALICE"] = "zh-CN"
    modal_press(bot, "whatif_method_qlora", "1|method=qlora")
    pushed = slack.wait_for("views.push")[0].body
    assert pushed["trigger_id"] == "4.4.4"
    home_press(bot, "1|charts", action_id="card_more")
    home = slack.wait_for("views.publish")[0].body
    for body in (pushed, home):
        text = json.dumps(body, ensure_ascii=False)
        assert "Slack" in text and "Slack did not say" not in text  # said in Chinese
    assert not slack.of("chat.postMessage") and not slack.of("files.completeUploadExternal")


def test_forged_button_values_and_ids_are_answered_and_change_nothing(
        bot: Bot, slack: SlackStub, redis_server: Any) -> None:
    """A signed press whose id or value no button of ours carries: acknowledged (never a 404 or
    500 to Slack) and answered that nothing was done; the thread's request is unchanged."""
    status, _body = bot.command("llama-3.1-8b")  # asks for the method
    question = slack.wait_for("chat.postMessage")[0].body
    assert status == 200 and "answer_method" in json.dumps(question)
    root = "1700000000.000001"
    before = redis_server.wait_for_conversation(root, field="_stage")
    answers: list[tuple[int, str]] = [
        bot.action(action_id="answer_method_bogus", value="1|bogus", message_ts=root),
        bot.action(action_id="card_more", value="1|no-such-detail", message_ts=root),
        bot.action(action_id="zz_never_a_button", value="x", message_ts=root),
        # a what-if on a thread with no answer yet (it read as a reply before)
        bot.action(action_id="whatif_method_qlora", value="1|gpus=99999", message_ts=root)]
    assert [status for status, _ in answers] == [200, 200, 200, 200]
    told = slack.wait_for("chat.postEphemeral", 4)
    assert all(UNKNOWN_BUTTON.split(",")[0] in json.dumps(c.body) for c in told), told
    assert redis_server.wait_for_conversation(root, field="_stage") == before
    home_press(bot, "rm -rf /", action_id="home_run")
    said(slack, "views.publish", UNKNOWN_BUTTON.split(",")[0])
    assert NO_THREAD not in json.dumps([c.body for c in slack.of("chat.postEphemeral")])


def test_a_mention_in_someone_elses_thread_is_answered_whichever_twin_comes_first(
        bot: Bot, slack: SlackStub) -> None:
    """Slack sends a thread reply that names the bot twice, as `message` and `app_mention`, with
    one ts: the second is dropped as a duplicate. When the `message` came first it was taken for
    a reply to a thread the bot does not have, and nothing was said."""
    event = {"channel": "C0CHAN", "user": USER, "text": "<@UBOT0001> llama-3.1-8b qlora",
             "ts": "1700000500.000400", "thread_ts": "1700000400.000200"}
    assert bot.event({"type": "message", **event}, event_id="EvTwin1")[0] == 200
    assert bot.event({"type": "app_mention", **event}, event_id="EvTwin2")[0] == 200
    card = slack.wait_for("chat.postMessage")[0].body
    assert card["thread_ts"] == "1700000400.000200"
    time.sleep(0.5)
    assert len(slack.of("chat.postMessage")) == 1


def test_a_listener_that_fails_before_its_ack_is_never_a_500(bot: Bot, slack: SlackStub) -> None:
    """The form from App Home is answered by DM: when Slack refuses to open the DM before the
    ack, the listener raised and Bolt answered 500 (Slack shows the person an error). Now 200,
    and the person hears an apology where they are (pushed on the form)."""
    home_press(bot, "", action_id="open_form", user=USER)
    view = slack.wait_for("views.open")[0].body["view"]
    slack.fail_next.append({"method": "conversations.open",
                            "body": {"ok": False, "error": "fatal_error"}})
    status, _body = bot.interaction(submission(view, user=USER, model="llama-3.1-8b",
                                               method="inference"))
    assert status == 200
    said(slack, "views.push", "Sorry, I could not answer that just now")
    assert not slack.of("chat.postMessage")
