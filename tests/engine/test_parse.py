"""The grammar shared by the CLI and Slack: good input, every bad-input case, and fuzzing."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.parse import ParseError, parse, parse_fields, parse_money
from engine.reader import read


@pytest.mark.parametrize(
    ("text", "method"),
    [
        ("13B full-finetune", "full-finetune"),
        ("13B full", "full-finetune"),
        ("13B FFT", "full-finetune"),
        ("13b sft", "full-finetune"),
        ("7B lora", "lora"),
        ("7B QLoRA", "qlora"),
        ("7B serve", "inference"),
        ("7B infer", "inference"),
        ("7B inference", "inference"),
        ("70B pretrain", "pretrain"),
    ],
)
def test_method_aliases(text: str, method: str) -> None:
    assert parse(text).method == method


@pytest.mark.parametrize(
    ("token", "model"),
    [
        ("13B", "13B"), ("0.5b", "0.5B"), ("1.3B", "1.3B"), ("70b", "70B"), ("8x7B", "8X7B"),
        ("llama-3.1-8b", "llama-3.1-8b"), ("Llama-3.1-8B", "llama-3.1-8b"),
        ("meta-llama/Llama-3.1-8B", "llama-3.1-8b"), ("some-org/new-model", "some-org/new-model"),
    ],
)
def test_model_forms(token: str, model: str) -> None:
    assert parse(f"{token} lora").model == model


def test_keys_are_order_free_and_case_insensitive() -> None:
    a = parse("llama-3.1-8b LORA RANK=8 Seq=4K gpu=RTX4090 gpus=2 targets=attn")
    b = parse("llama-3.1-8b gpus=2 targets=attn gpu=4090 lora seq=4096 rank=8")
    assert a == b
    assert (a.rank, a.seq, a.gpu, a.gpus, a.targets) == (8, 4096, "rtx-4090", 2, "attn")


def test_every_key_parses() -> None:
    req = parse(
        "70B full-finetune gpu=a100-80gb gpus=8 seq=8k batch=2 precision=fp16 optimizer=adamw-8bit "
        "checkpointing=selective zero=3 offload=optimizer tp=2 headroom=15% tokens=300B "
        "budget=150k currency=usd region=chengdu hours=300"
    )
    assert req.seq == 8192 and req.batch == 2 and req.precision == "fp16"
    assert req.optimizer == "adamw-8bit" and req.checkpointing == "selective"
    assert req.zero == 3 and req.offload == "optimizer" and req.tp == 2
    assert req.headroom == pytest.approx(0.15) and req.tokens == 300 * 10**9
    assert req.budget is not None and req.budget.amount == 150_000
    assert req.currency == "USD" and req.region == "chengdu" and req.hours == 300
    serve = parse("qwen2.5-72b serve quant=Q4_K_M context=32k users=20 kv=fp8")
    assert (serve.quant, serve.context, serve.users, serve.kv) == ("q4_k_m", 32768, 20, "fp8")


def test_defaults_are_stated_values() -> None:
    req = parse("13B full-finetune")
    assert (req.seq_len, req.batch, req.precision, req.optimizer_used) == (2048, 1, "bf16",
                                                                            "adamw")
    assert req.checkpointing_mode == "full" and req.headroom == 0.2 and req.weight_quant == "bf16"
    assert parse("13B qlora").weight_quant == "nf4"
    assert parse("13B serve").checkpointing_mode == "none"
    assert parse("70B pretrain").seq_len == 4096


@pytest.mark.parametrize(
    ("value", "amount", "currency"),
    [("150k", 150_000, None), ("1.2M", 1_200_000, None), ("$20k", 20_000, "USD"),
     ("¥150k", 150_000, "CNY"), ("150kcny", 150_000, "CNY"), ("15w", 150_000, None)],
)
def test_money(value: str, amount: float, currency: str | None) -> None:
    money = parse_money("budget", value.lower())
    assert money.amount == pytest.approx(amount) and money.currency == currency


@pytest.mark.parametrize(
    ("text", "names", "suggestion"),
    [
        ("-5B lora", "-5B", "5B"),
        ("13Q full-finetune", "13Q", "13B"),
        ("7B lora rank=0", "rank=0", None),
        ("7B lora seq=abc", "seq=abc", None),
        ("7B full-finetune quant=q4_k_m", "quant=q4_k_m", "inference"),
        ("7B lora quant=nf4", "quant=nf4", "qlora"),
        ("7B lroa", "lroa", "lora"),
        ("7B qlorra", "qlorra", "qlora"),
        ("7B lora gpu=rtx9999", "gpu=rtx9999", None),
        ("7B lora optimizer=adam8", "optimizer=adam8", None),
        ("7B lora precision=fp4", "precision=fp4", None),
        ("7B lora zero=5", "zero=5", None),
        ("7B lora batch=1.5", "batch=1.5", None),
        ("7B lora headroom=2", "headroom=2", None),
        ("7B lora sqe=2048", "sqe", "seq="),
        ("7B lora full-finetune", "full-finetune", None),
        ("7B", "METHOD", None),
        ("", "MODEL", None),
        ("7B lora gpus=3 tp=2", "tp=2", None),
        ("100000B lora", "100000B", None),
    ],
)
def test_bad_input_names_the_token(text: str, names: str, suggestion: str | None) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    message = str(info.value)
    assert "\n" not in message
    assert names in message
    if suggestion:
        assert info.value.suggestion is not None and suggestion in info.value.suggestion
        assert f"Did you mean {info.value.suggestion}?" in message


def test_unknown_card_lists_accepted_values() -> None:
    with pytest.raises(ParseError) as info:
        parse("7B lora gpu=rtx9999")
    assert "rtx-4090" in str(info.value) or "h100-sxm" in str(info.value)
    assert info.value.accepted


def test_ten_thousand_characters_are_cut_and_said() -> None:
    # the reader cuts a paste before any pattern reads it (issue 26), and says so; an unbalanced
    # quote is a word like any other (issue 20: words the answer does not need are skipped)
    reading = read("13B lora " + "x" * 10_000)
    assert (reading.values["model"], reading.values["method"]) == ("13B", "lora")
    assert any("10,009 characters" in note for note in reading.notes)
    assert all(len(word) <= 24 for word in reading.skipped)
    assert parse("7B lora 'unbalanced").method == "lora"


def test_fields_for_follow_ups_need_no_model() -> None:
    fields = parse_fields("qlora budget=300k", require_model=False)
    assert fields.model is None and fields.method == "qlora"
    assert fields.options["budget"] == {"amount": 300_000, "currency": None}


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200))
def test_parser_raises_only_its_own_error(text: str) -> None:
    try:
        parse(text)
    except ParseError as err:
        assert str(err) and "\n" not in str(err)


WORDS = st.sampled_from(
    ["13B", "7b", "8x7B", "llama-3.1-8b", "lora", "qlora", "full", "serve", "seq=", "seq=8k",
     "gpu=", "gpu=4090", "rank=", "rank=-1", "quant=q4_k_m", "budget=$", "budget=1e309", "=",
     "users=0", "context=nan", "tp=3", "gpus=8", "zero=3", "x=y", "'", '"', "1e309B", "¥"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(WORDS, max_size=8))
def test_parser_on_grammar_shaped_noise(words: list[str]) -> None:
    try:
        parse(" ".join(words))
    except ParseError as err:
        assert str(err) and "\n" not in str(err)


def _requests_both_ways(values: dict) -> tuple[object, object]:
    from pydantic import ValidationError

    from engine.request import Request

    def attempt(make):
        try:
            return make().model_dump()
        except ValidationError as err:
            return str(err.errors()[0]["msg"])

    return attempt(lambda: Request.from_values(values)), attempt(lambda: Request(**values))


def test_requests_built_without_a_schema_equal_validated_ones() -> None:
    import json
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    texts = json.loads((root / "tests" / "data" / "bad_inputs.json").read_text(encoding="utf-8"))
    texts += [r["query"] for r in tomllib.loads(
        (root / "validation" / "references.toml").read_text(encoding="utf-8"))["ref"]]
    compared = 0
    for text in texts:
        try:
            draft = parse_fields(text)
        except ParseError:
            continue
        if draft.model and draft.method:
            fast, slow = _requests_both_ways(dict(draft.values))
            assert fast == slow, text
            compared += 1
    assert compared > 40
    # out of bounds or of another type: left to validation, which coerces or words the error
    for values in ({"gpus": 500_000}, {"hours": 800.0}, {"budget": {"amount": -1.0}},
                   {"precision": "int3"}, {"nonsense": 1}):
        fast, slow = _requests_both_ways({"model": "7B", "method": "lora", **values})
        assert fast == slow and isinstance(fast, str), values
    fast, slow = _requests_both_ways({"model": "7B", "method": "lora", "batch": "2"})
    assert fast == slow and fast["batch"] == 2


# pydantic's own checks behind the grammar (bounds, types, choices) reach the user in the
# answer's language: in English as pydantic words them, in Chinese from the catalog
VALIDATION_CASES = [
    ({"batch": 5000}, "less_than_equal"), ({"gpu_util": 0.1}, "greater_than_equal"),
    ({"min_speed": 0}, "greater_than"), ({"precision": "int3"}, "literal_error"),
    ({"gpus": "eight"}, "int_parsing"), ({"hours": "abc"}, "float_parsing"),
    ({"gpus": 2.5}, "int_from_float"), ({"compile": "maybe"}, "bool_parsing"),
    ({"sharding": "ring"}, "extra_forbidden"), ({"budget": "x"}, "model_type"),
    ({"budget": {"amount": -5.0, "currency": None}}, "greater_than"),
    ({"budget": {"amount": 5.0, "currency": "EUR"}}, "literal_error"),
    ({"seq": 20_000_000}, "less_than_equal"), ({"headroom": 1.5}, "less_than_equal"),
]


@pytest.mark.parametrize(("options", "kind"), VALIDATION_CASES,
                         ids=[k for _o, k in VALIDATION_CASES])
def test_validation_errors_in_both_languages(options: dict, kind: str) -> None:
    from pydantic import ValidationError

    from engine.i18n import language
    from engine.parse import build_request
    from engine.request import Draft, Request

    values = {"model": "7B", "method": "lora", **options}
    with pytest.raises(ValidationError) as pyd:
        Request(**values)
    assert pyd.value.errors()[0]["type"] == kind
    with language("en"), pytest.raises(ParseError) as en:
        build_request(Draft(values))
    with language("zh"), pytest.raises(ParseError) as zh:
        build_request(Draft(values))
    key = next(iter(options))
    # English: pydantic's sentence after key=value, its first letter lower case (the choices and
    # names keep theirs: 'CNY', Money)
    message = pyd.value.errors()[0]["msg"]
    assert str(en.value).startswith(f"{key}=")
    assert str(en.value).endswith(": " + message[0].lower() + message[1:] + ".")
    # Chinese: the same key=value, the bound or choices kept, no English sentence
    head, problem = str(zh.value).split("：", 1)
    assert head == str(en.value).split(": ", 1)[0]
    assert re.search(r"[\u4e00-\u9fff]", problem) and not re.search(r"[a-z]{3,} [a-z]{3,}", problem)
    for bound in re.findall(r"\d+(?:\.\d+)?|'[^']*'", pyd.value.errors()[0]["msg"]):
        assert bound in problem


def test_an_unlisted_validation_error_is_still_worded() -> None:
    from engine.i18n import language
    from engine.parse import validation_problem

    assert validation_problem("uuid_type", {}) == "not a valid value (uuid_type)"
    with language("zh"):
        assert validation_problem("uuid_type", {}) == "取值无效（uuid_type）"
        assert validation_problem("less_than_equal", {"le": 4096}) == "取值不能大于 4096"
        assert validation_problem("literal_error", {"expected": "'a', 'b' or 'c'"}) == (
            "取值应为 'a', 'b' 或 'c'")
