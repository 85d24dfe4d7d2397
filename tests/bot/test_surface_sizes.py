"""Every surface a person screenshots, without a server: its block count, its characters and
what comes first (the verdict, the problem, the heading), in both languages. The answer card is
tests/present/test_slack.py's, the details' modals and the form tests/present/test_views.py's
and tests/bot/test_forms.py's."""

from __future__ import annotations

from datetime import date

import pytest

from bot import pricecommands
from bot.pricestore import catalog_records
from bot.replies import Notice
from bot.subcommands import all_options_view, help_message
from engine.i18n import language
from present import blockkit, slack, views
from tests.present.test_slack import check_blocks
from tests.present.test_views import check_view

LANGS = ["en", "zh"]


@pytest.mark.parametrize("lang", LANGS)
def test_help(lang: str) -> None:
    with language(lang):
        msg = help_message()
        modal = all_options_view()
    check_blocks(msg.blocks)
    assert [b["type"] for b in msg.blocks] == ["section", "actions"]
    assert len(msg.blocks[0]["text"]["text"].split("\n")) == 4
    assert blockkit.text_length(msg.blocks) <= 600
    check_view(modal)
    assert len(modal["blocks"]) <= 3 and "`goal=`" in str(modal["blocks"])


@pytest.mark.parametrize("lang", LANGS)
def test_an_error_says_the_problem_first(lang: str) -> None:
    with language(lang):
        view = slack.error_view("unexpected word lroa. Did you mean lora?",
                                "13B lroa budget=150k", "13B lora budget=150k")
        msg = Notice("\n".join(view["sections"]), context=view["context"],
                     buttons=view["buttons"])
    check_blocks(msg.blocks)
    assert [b["type"] for b in msg.blocks] == ["section", "context", "actions"]
    assert msg.blocks[0]["text"]["text"].startswith("unexpected word lroa")
    assert "13B lroa budget=150k" in msg.blocks[1]["elements"][0]["text"]
    assert blockkit.text_length(msg.blocks) <= 500
    assert msg.text.startswith("unexpected word lroa")  # the notification says it too


@pytest.mark.parametrize("lang", LANGS)
def test_app_home_at_its_fullest_stays_within_a_tab(lang: str) -> None:
    rows = [{"text": "• " + "x" * 200, "label": "Remove", "run": f"quote remove q-{n}"}
            for n in range(40)]
    recent = [(f"https://test.slack.com/archives/C1/p{n}", "13B LoRA → rent 1 × RTX 4090",
               "2026-12-02") for n in range(10)]
    with language(lang):
        view = views.home_view(recent=recent, language="English", language_scope="x",
                               digests=rows, quotes=rows, notice="Removed quote.",
                               run_action="home_run", form_action="open_form")
    check_view(view)
    assert view["blocks"][0]["type"] == "header"
    assert view["blocks"][1]["accessory"]["action_id"] == "open_form"
    assert len(view["blocks"]) <= 60 and views.view_text_length(view) <= 12_000
    # rows past the limit are counted, not listed
    assert sum(b.get("accessory", {}).get("text", {}).get("text") == "Remove"
               for b in view["blocks"]) == 2 * views.HOME_ROWS


@pytest.mark.parametrize("lang", LANGS)
def test_price_history_and_a_quote_announcement(lang: str) -> None:
    records = catalog_records()
    with language(lang):
        history = Notice("\n\n".join(pricecommands.history(records, "rtx-4090",
                                                           date(2026, 12, 2))))
    check_blocks(history.blocks)
    assert history.blocks[0]["text"]["text"].startswith("*")  # its heading first
    assert len(history.blocks) <= 6 and blockkit.text_length(history.blocks) <= 12_000
