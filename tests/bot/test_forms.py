"""The sizing form without a server: its view in both languages within Slack's limits, read back
into the grammar, prefilled, and its model menu."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot import forms
from engine.i18n import language
from engine.parse import parse_fields
from present import views
from tests.bot.test_surfaces import state
from tests.present.test_views import check_view


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_form_fits_slack_in_both_languages(lang: str) -> None:
    with language(lang):
        for view in (forms.form(channel="C0CHAN"), forms.form(),
                     forms.form(channel="C1", prefill={"model": "qwen2.5-72b", "method": "lora"},
                                read_from="能不能用8张4090微调qwen2.5-72b")):
            check_view(view)
            assert len(view["blocks"]) <= 12 and views.view_text_length(view) <= 1500
            # what it asks first: the model, then what to do with it
            inputs = [b["block_id"] for b in view["blocks"] if b["type"] == "input"]
            assert inputs[:2] == ["model", "method"]
            gpu = next(b for b in view["blocks"] if b.get("block_id") == "gpu")
            assert len(gpu["element"]["options"]) <= 100


def test_a_prefilled_form_starts_from_what_was_read() -> None:
    prefill = dict(parse_fields("qwen2.5-72b lora budget=300k mode=rent gpu=4090 gpus=8 "
                                "users=20 context=32k").values)
    view = forms.form(channel="C1", prefill=prefill, extra="seq=8k")
    blocks = {b.get("block_id"): b for b in view["blocks"]}
    assert blocks["model"]["element"]["initial_option"]["value"] == "qwen2.5-72b"
    assert blocks["method"]["element"]["initial_option"]["value"] == "lora"
    assert blocks["way"]["element"]["initial_option"]["value"] == "rent"
    # the form asks rent per month: 300k over 36 months
    assert blocks["budget"]["element"]["initial_value"] == "8333"
    assert blocks["gpu"]["element"]["initial_option"]["value"] == "rtx-4090"
    assert blocks["gpus"]["element"]["initial_value"] == "8"
    assert blocks["context"]["element"]["initial_value"] == "32k"
    # read back: the grammar's words, the words the form has no input for kept
    submitted = {**view, "state": {"values": state(
        model="qwen2.5-72b", method="lora", budget="8333", way="rent", gpu="rtx-4090",
        gpus="8", users="20", context="32k")}}
    text, channel = forms.read(submitted, user="U0ALICE")
    assert channel == "C1" and text.endswith("seq=8k")
    draft = parse_fields(text)
    assert draft.values["gpu"] == "rtx-4090" and draft.values["gpus"] == 8
    assert draft.values["mode"] == "rent" and draft.values["seq"] == 8192
    assert draft.values["budget"]["amount"] == pytest.approx(8333 * 36)


def _submitted(**values: Any) -> dict[str, Any]:
    return {"private_metadata": json.dumps({"channel": "", "extra": ""}),
            "state": {"values": state(**values)}}


def test_reading_the_form() -> None:
    text, channel = forms.read(_submitted(model="13B", method="full-finetune", budget="1.2M",
                                          currency="USD"), user="U0ALICE")
    assert channel == "U0ALICE"  # no channel known: a direct message
    values = parse_fields(text).values
    assert values["budget"]["amount"] == 1_200_000 and values["currency"] == "USD"
    text, _channel = forms.read(_submitted(model="13B", method="lora", budget="15万",
                                           channel="C9"), user="U0ALICE")
    assert "budget=150000" in text and _channel == "C9"
    with pytest.raises(forms.FormProblem) as err:
        forms.read(_submitted(model="13B", method="lora", budget="-5"), user="U0ALICE")
    assert err.value.block == "budget"
    with pytest.raises(forms.FormProblem) as err:
        forms.read(_submitted(method="lora"), user="U0ALICE")
    assert err.value.block == "model"


def test_the_model_menu() -> None:
    options = forms.model_options("qwen")
    assert 1 < len(options) <= 100 and all(len(o["text"]["text"]) <= 75 for o in options)
    assert all(len(o["value"]) <= 150 for o in options)
    assert options[0]["value"] == "qwen"  # what was typed comes first: it may be a size or Hub id
    exact = forms.model_options("llama-3.1-8b")
    assert exact[0]["value"] == "llama-3.1-8b"  # an exact catalog name is not offered twice
    assert [o["value"] for o in exact].count("llama-3.1-8b") == 1
    assert forms.model_options("   ") == []
    assert forms.model_options("zzzz-unknown")[0]["value"] == "zzzz-unknown"


def test_a_message_is_read_by_the_sentence_reader_and_two_readings_are_said() -> None:
    draft, notes = forms.read_message("我们有8张4090，想微调qwen2.5-72b，预算30万")
    assert draft.values["model"] == "qwen2.5-72b" and draft.values["gpus"] == 8
    assert draft.values["gpu"] == "rtx-4090" and draft.values["budget"]["amount"] == 300_000
    # two models: the first reading starts the form, the note says there were two
    draft, notes = forms.read_message("should we serve llama 70b or qwen 72b for 30 users?")
    assert draft.values["method"] == "inference" and notes and "two" in notes[0]
    view = forms.form(channel="C1", prefill=dict(draft.values), read_from="…", notes=notes)
    check_view(view)
    assert "⚠ " + notes[0] in view["blocks"][0]["elements"][0]["text"]
    assert not forms.read_message("lunch at noon?")[0]


def test_a_rent_budget_per_month_is_held_over_the_horizon_the_message_gave() -> None:
    draft, _notes = forms.read_message("llama-3.1-8b lora budget=48k mode=rent months=24")
    prefill, extra = forms.prefill_of(draft)
    assert "months=24" in extra
    view = forms.form(channel="C1", prefill=prefill, extra=extra)
    blocks = {b.get("block_id"): b for b in view["blocks"]}
    assert blocks["budget"]["element"]["initial_value"] == "2000"  # 48k over 24 months
    submitted = {**view, "state": {"values": state(model="llama-3.1-8b", method="lora",
                                                   budget="2000", way="rent")}}
    text, _channel = forms.read(submitted, user="U1")
    values = parse_fields(text).values
    assert values["budget"]["amount"] == 48_000 and values["months"] == 24
