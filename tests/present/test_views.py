"""Modals and the App Home tab within Slack's limits for views, in both languages: a title of at
most 24 characters, at most 100 blocks, sections of at most 3,000 characters, and what matters
first."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk.models.views import View as SdkView

import engine
from engine.i18n import language
from present import slack, views
from present.actions import MODAL_DETAILS, Detail

VIEW_LIMITS = {"title": 24, "blocks": 100, "section_text": 3000, "button_text": 75,
               "submit": 24, "private_metadata": 3000, "callback_id": 255}


def check_view(view: dict[str, Any], *, blocks: int = VIEW_LIMITS["blocks"]) -> None:
    """Within Slack's limits, and nothing slack_sdk's own model would drop."""
    assert view["type"] in ("modal", "home")
    if view["type"] == "modal":
        assert 0 < len(view["title"]["text"]) <= VIEW_LIMITS["title"]
        assert len(view["close"]["text"]) <= VIEW_LIMITS["submit"]
        if "submit" in view:
            assert len(view["submit"]["text"]) <= VIEW_LIMITS["submit"]
    assert 0 < len(view["blocks"]) <= blocks
    assert len(view.get("private_metadata", "")) <= VIEW_LIMITS["private_metadata"]
    for block in view["blocks"]:
        text = (block.get("text") or {}).get("text", "")
        assert len(text) <= VIEW_LIMITS["section_text"]
        if block["type"] == "section" and "text" in block:
            assert text.strip()
    SdkView(**view).validate_json()  # slack_sdk's own checks of a view's shape and lengths


DETAIL_QUERIES = ["13B full-finetune budget=150k", "llama-3.1-70b inference users=50",
                  "qwen2.5-72b lora gpu=4090 gpus=8", "deepseek-v3 inference users=200"]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("query", DETAIL_QUERIES)
def test_every_detail_fits_a_modal_and_says_what_it_is_first(query: str, lang: str) -> None:
    with language(lang):
        ans = engine.ask(query)
        for kind in MODAL_DETAILS:
            view = views.detail_view(kind, slack.detail_sections(ans, kind))
            check_view(view)
            assert view["title"]["text"] == views.detail_title(kind)
            first = view["blocks"][0]["text"]["text"]
            # the detail's own heading (bold) is its first line, never a stray fragment
            assert first.split("\n", 1)[0].count("*") >= 2, (kind, first[:80])
            assert views.view_text_length(view) > len(view["title"]["text"])


def test_a_long_detail_is_cut_between_lines_and_code_stays_fenced() -> None:
    ans = engine.ask("deepseek-v3 inference users=200 context=32k")
    view = views.detail_view(Detail.LAUNCH, slack.detail_sections(ans, Detail.LAUNCH))
    check_view(view)
    for block in view["blocks"]:
        assert block["text"]["text"].count("```") % 2 == 0


def test_loading_and_notice_views() -> None:
    for kind in MODAL_DETAILS:
        check_view(views.loading_view(kind))
    view = views.notice_view("gpusize", "x" * 7000)
    check_view(view)
    assert len(view["blocks"]) == 3
