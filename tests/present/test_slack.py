"""Block Kit from the templates: Slack's limits, slack_sdk's own model round trip, escaping."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import Block

import engine
from bot.replies import Notice
from bot.subcommands import help_message
from engine.i18n import language
from engine.parse import build_request, parse_fields
from present import blockkit, slack

LIMITS = {"blocks": 50, "section_text": 3000, "fields": 10, "field_text": 2000, "header": 150,
          "button_text": 75, "button_value": 2000, "id": 255, "actions": 25, "context": 10,
          "option_text": 75, "option_value": 150, "options": 100, "overflow_options": 5,
          "table_rows": 100, "table_cells": 20, "column_settings": 20}


def check_blocks(blocks: list[dict[str, Any]]) -> None:
    assert 0 < len(blocks) <= LIMITS["blocks"]
    # Slack takes one table per message (only_one_table_allowed)
    assert sum(b["type"] == "table" for b in blocks) <= 1
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
        elif kind == "table":
            rows = block["rows"]
            assert 0 < len(rows) <= LIMITS["table_rows"]
            assert len(block.get("column_settings", [])) <= LIMITS["column_settings"]
            assert all(0 < len(row) <= LIMITS["table_cells"] for row in rows)
            assert len({len(row) for row in rows}) == 1  # every row as wide as the header
            for row in rows:
                for cell in row:
                    assert cell["type"] in ("raw_text", "rich_text") and cell["text"].strip()
        elif kind == "actions":
            assert len(block["elements"]) <= LIMITS["actions"]
            for el in block["elements"]:
                assert len(el["action_id"]) <= LIMITS["id"]
                if el["type"] == "button":
                    assert len(el["text"]["text"]) <= LIMITS["button_text"]
                    assert len(el["value"]) <= LIMITS["button_value"]
                else:
                    if el["type"] == "overflow":
                        assert 1 <= len(el["options"]) <= LIMITS["overflow_options"]
                    options = el.get("options") or [
                        o for group in el.get("option_groups", []) for o in group["options"]]
                    assert 0 < len(options) <= LIMITS["options"]
                    for opt in options:
                        assert len(opt["text"]["text"]) <= LIMITS["option_text"]
                        assert len(opt["value"]) <= LIMITS["option_value"]
    raw = json.dumps(blocks)
    assert "<!channel>" not in raw and "<!here>" not in raw and "<!everyone>" not in raw


QUERIES = ["13B full-finetune budget=150k", "llama-3.1-8b full-finetune gpu=4090 gpus=1",
           "llama-3.1-70b lora", "deepseek-v3 inference users=200 context=32k",
           "qwen2.5-72b serve quant=awq users=20", "llama-3.1-405b pretrain tokens=15T",
           "llama-3.1-70b full-finetune budget=1k", "mixtral-8x22b qlora rank=time"]


def card(query: str, **kw: Any) -> tuple[engine.Answer, list[dict[str, Any]], slack.CardInput]:
    draft = parse_fields(query)
    req = build_request(draft)
    ans = engine.size(req)
    ci = slack.CardInput(version=7, user="U0ALICE", **{"asked": query, **kw})
    view = slack.answer_view(ans, ci, req=req, given=draft.values)
    return ans, blockkit.blocks("answer.json.j2", v=view), ci


@pytest.mark.parametrize("query", QUERIES)
def test_answers_fit_block_kit(query: str) -> None:
    ans, blocks, ci = card(query, changes=(("method", "lora", "qlora"),), how="reply",
                           previous={"gpu": "rtx-4090", "card": "GeForce RTX 4090", "gpus": 2,
                                     "verdict": "fits", "mode": "rent", "monthly": 7925.0,
                                     "currency": "CNY"})
    check_blocks(blocks)
    assert blockkit.fallback(slack.answer_fallback(ans, ci))
    for sections in (slack.breakdown_sections(ans), slack.rent_vs_buy_sections(ans),
                     slack.assumptions_sections(ans), slack.advice_sections(ans),
                     slack.bom_sections(ans), slack.launch_sections(ans)):
        check_blocks(blockkit.blocks("notice.json.j2", n={"sections": sections, "context": "",
                                                        "user": ""}))


# Typical answers on one phone screen: (query, language) -> most blocks, most characters.
PHONE = [("13B full-finetune", "en"), ("llama-3.1-70b inference users=100 context=8k", "en"),
         ("qwen2.5-7b lora", "en"), ("13B 全参微调 预算15万", "zh"),
         ("llama-3.1-70b 推理 users=100 context=8k", "zh"), ("qwen2.5-7b lora", "zh")]


@pytest.mark.parametrize(("query", "lang"), PHONE)
def test_main_answer_fits_one_phone_screen(query: str, lang: str) -> None:
    with language(lang):
        _ans, blocks, _ci = card(query)
    check_blocks(blocks)
    assert len(blocks) <= 6
    assert blockkit.text_length(blocks) <= 1200
    assert blocks[0]["type"] == "header" and " → " in blocks[0]["text"]["text"]
    kinds = [b["type"] for b in blocks]
    assert kinds.count("table") == 1 and kinds[-1] == "actions"
    actions = blocks[-1]["elements"]
    assert sum(e["type"] == "button" for e in actions) <= 3
    # one menu: an overflow (five options at most), or a select when it holds more
    menus = [e for e in actions if e["action_id"] == "card_more"]
    assert len(menus) == 1 and menus[0]["type"] == (
        "overflow" if len(menus[0]["options"]) <= 5 else "static_select")


def test_card_shows_the_verdict_first() -> None:
    ans, blocks, _ci = card("llama-3.1-70b inference users=100 context=8k")
    top = ans.plans[0]
    title = blocks[0]["text"]["text"]
    assert title.startswith("Llama 3.1 70B serving → ") and f"{top.gpus} × " in title
    assert ("rent" if top.cost.mode == "rent" else "buy") in title
    fields = " ".join(f["text"] for f in blocks[1]["fields"])
    for heading in ("*Cards*", "*Buy or rent*", "*Memory per GPU*", "*Speed*"):
        assert heading in fields
    assert "/mo" in fields and "GiB" in fields and "✓ fits" in fields
    table = next(b for b in blocks if b["type"] == "table")
    header = [c["text"] for c in table["rows"][0]]
    assert header[:2] == ["card", "GPUs"] and len(table["rows"]) == 1 + min(5, len(ans.plans))
    assert table["rows"][1][0]["text"].startswith(slack.short_card(top.gpu_display, 14))
    context = next(b for b in blocks if b["block_id"].startswith("asked-"))["elements"][0]["text"]
    assert context.startswith("<@U0ALICE> asked `/gpusize llama-3.1-70b inference")
    assert "defaults:" in context and "China market" in context and "d old" in context


def test_buttons_carry_their_version_and_charts_only_with_data() -> None:
    _ans, blocks, _ci = card("13B full-finetune")
    actions = blocks[-1]["elements"]
    values = [e["value"] for e in actions if e["type"] == "button"]
    values += [o["value"] for e in actions if e["type"] != "button" for o in e["options"]]
    assert values and all(slack.split_value(v)[0] == 7 for v in values)
    labels = [o["text"]["text"] for e in actions if e["type"] != "button" for o in e["options"]]
    assert "Memory chart" in labels and not any("prices" in label for label in labels)
    _ans, blocks, _ci = card("13B full-finetune", priced=frozenset({"rtx-3090", "a800"}))
    labels = [o["text"]["text"] for e in blocks[-1]["elements"] if e["type"] != "button"
              for o in e["options"]]
    assert "Charts: memory and prices" in labels
    assert slack.split_value("qlora") == (None, "qlora")  # buttons from before versions


def test_follow_up_says_what_changed_in_the_result() -> None:
    before = {"gpu": "mi300x", "card": "Instinct MI300X", "gpus": 2, "verdict": "fits",
              "mode": "rent", "monthly": 7925.0, "currency": "CNY"}
    ans, blocks, ci = card("13B qlora", changes=(("method", "full-finetune", "qlora"),),
                           previous=before, how="press", asked="QLoRA")
    top = ans.plans[0]
    line = blocks[1]["text"]["text"]
    assert line.startswith("*QLoRA* → ") and f"{top.gpus} × " in line
    assert line.endswith("(was 2 × MI300X, rent 7,925 CNY/mo)")
    assert slack.answer_fallback(ans, ci).startswith("13B: QLoRA → ")
    assert "*" not in slack.answer_fallback(ans, ci)  # plain text
    # the same request again reads as the same result, with one line that says so
    new = slack.result_of(ans)
    assert slack.same_result(new, dict(new)) and not slack.same_result(new, before)
    same = slack.same_line((("budget", None, {"amount": 3e5, "currency": None}),), new, new,
                           "CNY")
    assert same.startswith("budget: 300k CNY: same recommendation, ")


def test_inputs_have_human_labels() -> None:
    from engine.parse import KEYS
    from present.labels import INPUTS, input_text

    assert {field for field, _conv, _help in KEYS.values()} <= set(INPUTS)
    assert input_text("goal", "time") == "ranking: fastest first"
    assert input_text("hours", 500.0) == "use per month: 500 h/month"
    assert input_text("method", "qlora") == "QLoRA"
    assert input_text("context", 8192) == "context: 8,192 tokens"
    with language("zh"):
        assert input_text("budget", {"amount": 3e5, "currency": "CNY"}) == "预算：¥30万"


def test_no_negative_memory_rows() -> None:
    ans = engine.ask("llama-3.1-8b full-finetune gpu=h100 gpus=1")
    assert ans.plans[0].memory.reused > 0
    text = "\n".join(slack.breakdown_sections(ans))
    assert "-" + f"{ans.plans[0].memory.reused / 2**30:.1f}" not in text
    assert "counted once" in text


@pytest.mark.slow  # a sweep: seconds of CPU (the fast tier's budget is a minute in all)
def test_every_catalog_model_renders() -> None:
    from engine import catalog

    for name in catalog.models():
        draft = parse_fields(f"{name} lora")
        req = build_request(draft)
        ans = engine.size(req)
        view = slack.answer_view(ans, slack.CardInput(version=1), req=req, given=draft.values)
        check_blocks(blockkit.blocks("answer.json.j2", v=view))


def test_questions_help_and_errors_fit() -> None:
    check_blocks(blockkit.blocks("question.json.j2", q=slack.method_question("13B", 1)))
    for currency in ("CNY", "USD"):
        q = slack.budget_question(2, currency)
        check_blocks(blockkit.blocks("question.json.j2", q=q))
        groups = [g["label"] for g in q["groups"]]
        assert groups == ["Buy up to", "Rent up to, per month"]
        assert "money to spend" in q["text"] and currency in q["text"]
    assert slack.budget_choice("rent:5000", "USD", 36) == (
        {"budget": {"amount": 180_000, "currency": "USD"}, "mode": "rent"},
        "rent up to 5,000 USD/month (180k USD over 36 months)")
    check_blocks(help_message().blocks)
    assert "`goal=`" in slack.help_text()
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


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="ab<>&` \n", max_size=400), max_size=40))
def test_long_text_splits_on_lines_after_escaping(lines: list[str]) -> None:
    text = "```\n" + "\n".join(lines) + "\n```"
    parts = blockkit.sections(text, 500)
    assert all(len(blockkit.mrkdwn(p)) <= 500 for p in parts)
    assert all(p.count("```") % 2 == 0 for p in parts)  # a code block is closed in each part
    joined = "".join(parts).replace("```", "").replace("\n", "")
    assert joined == text.replace("```", "").replace("\n", "")  # nothing lost


@pytest.mark.parametrize(("query", "lang"), PHONE)
def test_the_options_table_fits_a_phone(query: str, lang: str) -> None:
    """Four columns (card, GPUs, the ranked cost, speed) of short cells: about 40 characters a
    row, what a phone shows without scrolling; the ranking's column says so in its header."""
    with language(lang):
        _ans, blocks, _ci = card(query)
    table = next(b for b in blocks if b["type"] == "table")
    rows = [[c["text"] for c in row] for row in table["rows"]]
    assert all(len(row) == 4 for row in rows)
    assert max(sum(len(cell) for cell in row) for row in rows[1:]) <= 42, rows
    header = " ".join(rows[0])
    assert ("↑" in header) != ("↓" in header)  # one column is the ranking, and says so
    # the fallback a client without tables gets: the same rows, monospaced, still narrow
    code = blockkit.table_as_code(blocks)
    assert not blockkit.has_table(code) and len(code) == len(blocks)
    fenced = next(b["text"]["text"] for b in code if "```" in b.get("text", {}).get("text", ""))
    lines = fenced.strip("`").strip("\n").split("\n")
    assert len(lines) == len(rows) and max(len(line) for line in lines) <= 50, lines
    check_blocks(code)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_what_changes_the_decision_is_one_warning_line_under_the_header(lang: str) -> None:
    with language(lang):
        # a sequence longer than the model reads: said under the header, not behind the menu
        _ans, blocks, _ci = card("llama-2-7b lora seq=8k")
        check_blocks(blocks)
        assert blocks[0]["type"] == "header" and blocks[1]["block_id"] == "warning-7"
        line = blocks[1]["text"]["text"]
        assert line.startswith("⚠ ") and "4,096" in line and "seq=4096" in line
        assert line.count("\n") == 0 and len(blocks) <= 7
        assert blockkit.text_length(blocks) <= 1400
        # a stale price behind the pick is named, with the commands that refresh it
        ans, blocks, _ci = card("deepseek-v3 inference users=200 mode=buy")
        line = next(b["text"]["text"] for b in blocks if b["block_id"] == "warning-7")
        top = ans.plans[0]
        assert f"/gpusize price {top.gpu}" in line and f"/gpusize quote {top.gpu} buy" in line
        assert re.search(r"\b\d{3,} ", line)  # its age in days
        # fresh prices and a context the model reads: no warning line
        _ans, blocks, _ci = card("llama-3.1-8b inference users=10 context=8k")
        assert not any(b["block_id"].startswith("warning-") for b in blocks)


def test_the_same_result_line_keeps_units_as_written() -> None:
    before = {"gpu": "rtx-4090", "card": "GeForce RTX 4090", "gpus": 1, "verdict": "fits",
              "mode": "rent", "monthly": 826.0, "currency": "CNY", "used": 9.8,
              "capacity": 24.0, "decode": None, "train": 911.0, "hours": None}
    after = {**before, "used": 12.1, "train": 870.0}
    line = slack.same_line((("seq", 2048, 4096),), after, before, "CNY")
    assert "same recommendation" in line and "GiB per GPU" in line and "gib" not in line
    assert line.split(". ", 1)[1][0].isupper()  # the sentence after the verdict starts upper
