"""Block Kit from the templates: Slack's limits, slack_sdk's own model round trip, escaping."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import Block

import engine
from bot.dialog import help_message
from bot.replies import Notice
from present import blockkit, slack

LIMITS = {"blocks": 50, "section_text": 3000, "fields": 10, "field_text": 2000, "header": 150,
          "button_text": 75, "button_value": 2000, "id": 255, "actions": 25, "context": 10,
          "option_text": 75, "option_value": 150, "options": 100}


def check_blocks(blocks: list[dict[str, Any]]) -> None:
    assert 0 < len(blocks) <= LIMITS["blocks"]
    for block in blocks:
        assert Block.parse(block).to_dict() == block, block  # nothing silently dropped
        assert len(block.get("block_id", "")) <= LIMITS["id"]
        kind = block["type"]
        if kind == "section":
            if "text" in block:
                assert len(block["text"]["text"]) <= LIMITS["section_text"]
            fields = block.get("fields", [])
            assert len(fields) <= LIMITS["fields"]
            assert all(len(f["text"]) <= LIMITS["field_text"] for f in fields)
        elif kind == "header":
            assert len(block["text"]["text"]) <= LIMITS["header"]
        elif kind == "context":
            assert len(block["elements"]) <= LIMITS["context"]
            assert all(len(e["text"]) <= 2000 for e in block["elements"])
        elif kind == "actions":
            assert len(block["elements"]) <= LIMITS["actions"]
            for el in block["elements"]:
                assert len(el["action_id"]) <= LIMITS["id"]
                if el["type"] == "button":
                    assert len(el["text"]["text"]) <= LIMITS["button_text"]
                    assert len(el["value"]) <= LIMITS["button_value"]
                else:
                    assert len(el["options"]) <= LIMITS["options"]
                    for opt in el["options"]:
                        assert len(opt["text"]["text"]) <= LIMITS["option_text"]
                        assert len(opt["value"]) <= LIMITS["option_value"]
    raw = json.dumps(blocks)
    assert "<!channel>" not in raw and "<!here>" not in raw and "<!everyone>" not in raw


QUERIES = ["13B full-finetune budget=150k", "llama-3.1-8b full-finetune gpu=4090 gpus=1",
           "llama-3.1-70b lora", "deepseek-v3 inference users=200 context=32k",
           "qwen2.5-72b serve quant=awq users=20", "llama-3.1-405b pretrain tokens=15T",
           "llama-3.1-70b full-finetune budget=1k", "mixtral-8x22b qlora rank=time"]


@pytest.mark.parametrize("query", QUERIES)
def test_answers_fit_block_kit(query: str) -> None:
    ans = engine.ask(query)
    view = slack.answer_view(ans, version=7, changes=["method: lora → qlora"], user="U0ALICE")
    blocks = blockkit.blocks("answer.json.j2", v=view)
    check_blocks(blocks)
    assert blockkit.fallback(slack.answer_fallback(ans))
    for sections in (slack.breakdown_sections(ans), slack.rent_vs_buy_sections(ans)):
        check_blocks(blockkit.blocks("notice.json.j2", n={"sections": sections, "context": "",
                                                        "user": ""}))


def test_every_catalog_model_renders() -> None:
    from engine import catalog

    for name in catalog.models():
        ans = engine.ask(f"{name} lora")
        check_blocks(blockkit.blocks("answer.json.j2", v=slack.answer_view(ans, version=1)))


def test_questions_help_and_errors_fit() -> None:
    check_blocks(blockkit.blocks("question.json.j2", q=slack.method_question("13B", 1)))
    check_blocks(blockkit.blocks("question.json.j2", q=slack.budget_question(2, "CNY")))
    check_blocks(help_message().blocks)
    check_blocks(Notice("x" * 10_000).blocks)


def test_escaping_is_slacks_not_htmls() -> None:
    assert blockkit.mrkdwn("a & b <!here> it's") == "a &amp; b &lt;!here&gt; it's"
    # truncation never leaves half an escape behind
    cut = blockkit.truncate(blockkit.mrkdwn("x" * 10 + "<" * 5), 14)
    assert cut.endswith("…") and "&l…" not in cut and "&lt…" not in cut


def test_mentions_only_for_real_user_ids() -> None:
    assert blockkit.mention("U0ALICE") == "<@U0ALICE>"
    assert blockkit.mention("<!channel>") == "&lt;!channel&gt;"
    assert blockkit.mrkdwn("by " + blockkit.user_ref("U0ALICE")) == "by <@U0ALICE>"
    assert blockkit.user_ref("<!channel>") == "someone"
    for live in ("<!channel>", "<!here>", "<#C123|x>", "<https://x.y|z>", "<@U1|<!here>>",
                 "<@U0ALICE>", blockkit.clean_input("\x00U0ALICE\x00")):
        assert "<" not in blockkit.mrkdwn(live)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=5000))
def test_any_user_text_renders_within_limits(text: str) -> None:
    note = Notice(text, context=text)
    check_blocks(note.blocks)
    assert "<" not in note.text.replace("&lt;", "")
