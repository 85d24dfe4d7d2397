"""Issue 25 in the Slack card, over signed HTTP against a real bot process: the answer's menu
opens "Bill of materials" and "How to run it" in a modal for the presser, in English and in
Chinese, for a serving plan (the engine's serve command) and a training plan (torchrun)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.harness import Bot, RedisServer, SlackStub

ROOT = "1700000000.000001"


def menu_value(card: dict[str, Any], label: str) -> str:
    return next(o["value"] for b in card["blocks"] for e in b.get("elements", [])
                if e.get("action_id") == "card_more" for o in e["options"]
                if o["text"]["text"] == label)


def opened_detail(bot: Bot, slack: SlackStub, value: str, n: int) -> str:
    status, _body = bot.action(action_id="card_more", value=None, selected=value,
                               element="overflow", message_ts=ROOT)
    assert status == 200
    views = slack.wait_for("views.open", n, timeout=20)
    return json.dumps(views[n - 1].body["view"], ensure_ascii=False)


@pytest.mark.parametrize(("question", "locale", "labels", "expected"), [
    ("llama-3.1-70b inference users=32", "en-US", ("Bill of materials", "How to run it"),
     ("NVMe", "vllm serve")),
    ("llama-3.1-8b full-finetune", "en-US", ("Bill of materials", "How to run it"),
     ("host RAM", "torchrun")),
    ("llama-3.1-70b inference users=32", "zh-CN", ("物料清单", "如何运行"),
     ("NVMe", "vllm serve")),
])
def test_the_bill_of_materials_and_how_to_run_it_open_from_the_card(
        bot: Bot, slack: SlackStub, redis_server: RedisServer, question: str, locale: str,
        labels: tuple[str, str], expected: tuple[str, str]) -> None:
    slack.locales["U0ALICE"] = slack.locales["U0BOB"] = locale
    assert bot.command(question)[0] == 200
    card = slack.wait_for("chat.postMessage", timeout=20)[0].body
    redis_server.wait_for_conversation(ROOT, field="_card_v")
    for n, (label, words) in enumerate(zip(labels, expected, strict=True), start=1):
        view = opened_detail(bot, slack, menu_value(card, label), n)
        assert label in view and words.lower() in view.lower(), (label, view[:400])
