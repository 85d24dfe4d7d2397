"""The Chinese phrase grammar: a table of real phrasings (tests/data/zh_phrasings.toml), each read
to the same request as its English form; number words and units in both languages; a budget with
no unit that cannot be meant; and unknown Chinese words answered with a Chinese example."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from engine import numbers
from engine.i18n import language
from engine.parse import ParseError, build_request, parse, parse_fields, parse_money, read_reply
from engine.reader import read
from engine.zh_input import KEYWORDS, ZH_PHRASES

TABLE = tomllib.loads((Path(__file__).resolve().parents[1] / "data" / "zh_phrasings.toml")
                      .read_text(encoding="utf-8"))
CHINESE = re.compile(r"[\u4e00-\u9fff]")


def test_the_table_is_big_and_chinese() -> None:
    rows = TABLE["command"] + TABLE["reply"]
    assert sum(bool(CHINESE.search(r["zh"])) for r in rows) >= 100
    assert len({r["zh"] for r in rows}) == len(rows)  # no phrasing counted twice


def _said(values: object) -> dict:
    """Draft values without asked_in, the question's language (the English form has none)."""
    return {k: v for k, v in dict(values).items() if k != "asked_in"}  # type: ignore[call-overload]


@pytest.mark.parametrize("row", TABLE["command"], ids=lambda r: r["zh"])
def test_command_reads_as_its_english_form(row: dict[str, str]) -> None:
    zh = parse_fields(row["zh"])
    assert _said(zh.values) == _said(parse_fields(row["en"]).values)
    assert (zh.values.get("asked_in") == "zh") == bool(CHINESE.search(row["zh"]))
    build_request(zh)  # and it is a complete, valid request


@pytest.mark.parametrize("row", TABLE["reply"], ids=lambda r: r["zh"])
def test_reply_reads_as_its_english_form(row: dict[str, str]) -> None:
    zh, en = read_reply(row["zh"]), read_reply(row["en"])
    assert zh is not None and en is not None
    assert _said(zh.values) == _said(en.values)


@pytest.mark.parametrize("row", TABLE["chatter"], ids=lambda r: r["text"])
def test_chinese_chatter_is_not_for_the_bot(row: dict[str, str]) -> None:
    assert read_reply(row["text"]) is None


def test_the_issue_list_reads_as_intended() -> None:
    # spelled out, not only against the English form: what failed with exit 2 before
    assert parse("qwen2.5-72b 推理 100并发").users == 100
    assert parse("32B 推理 上下文32k").context == 32768
    four = parse("70B 推理 4bit 双卡4090")
    assert (four.quant, four.gpus, four.gpu) == ("int4", 2, "rtx-4090")
    assert parse("deepseek-r1 满血版 部署").model == "deepseek-r1"
    assert parse("deepseek-r1 蒸馏版 32B 推理").model == "deepseek-r1-distill-qwen-32b"
    two = parse("70B 全参微调 两台8卡H800")
    assert (two.gpus, two.gpu, two.method) == (16, "h800", "full-finetune")
    assert parse("7B 预训练 1T tokens").tokens == 10**12
    lora = parse("qwen2.5-7b LoRA微调 序列长度8k")
    assert (lora.method, lora.seq) == ("lora", 8192)
    reply = read_reply("序列长度8k")
    assert reply is not None and reply.values == {"seq": 8192}


def test_bits_follow_the_method() -> None:
    assert parse("13B qlora 4bit").quant == "nf4"  # QLoRA's own 4-bit format
    assert parse("70B inference 4bit").quant == "int4"
    assert parse("7B lora 8bit").quant == "int8"
    with pytest.raises(ParseError) as info:
        parse("7B lora 4bit")  # a 4-bit base is QLoRA
    assert info.value.suggestion == "qlora"
    assert parse("70B inference quant=awq 4bit").quant == "awq"  # a named format wins


@pytest.mark.parametrize(("text", "amount", "currency"), [
    ("budget 300 thousand", 300_000, None), ("budget 1.5 million", 1_500_000, None),
    ("budget 300k", 300_000, None), ("budget $20k", 20_000, "USD"), ("budget 20k usd", 20_000, "USD"),
    ("budget 2 million yuan", 2_000_000, "CNY"), ("budget ¥150k", 150_000, "CNY"),
    ("预算15万", 150_000, "CNY"), ("预算3千元", 3_000, "CNY"), ("预算1.2亿", 120_000_000, "CNY"),
    ("预算2万美元", 20_000, "USD"), ("预算 300k", 300_000, None), ("budget 300 yuan", 300, "CNY"),
    ("预算300元", 300, "CNY"), ("budget 5000", 5_000, None),
])
def test_money_words_and_units(text: str, amount: float, currency: str | None) -> None:
    draft = read_reply(text)
    assert draft is not None
    assert draft.values["budget"] == {"amount": pytest.approx(amount), "currency": currency}


@pytest.mark.parametrize("text", ["budget 300", "预算300", "budget=300", "13B lora budget=999"])
def test_a_bare_small_budget_is_asked_about(text: str) -> None:
    with pytest.raises(ParseError) as info:
        read_reply(text) if "13B" not in text else parse(text)
    number = re.search(r"(\d+)$", text).group(1)
    assert info.value.suggestion == f"{number}k"
    assert f"Did you mean {number}k?" in str(info.value) and f"I read budget {number}" in str(info.value)


@pytest.mark.parametrize(("text", "key", "value"), [
    ("70B serve 1k users", "users", 1000), ("70B serve 1万并发", "users", 10_000),
    ("70B serve 上下文3万", "context", 30_000), ("70B serve 32k context", "context", 32_768),
    ("7B pretrain 2 trillion tokens", "tokens", 2 * 10**12),
    ("7B pretrain 300B tokens", "tokens", 3 * 10**11),
    ("7B pretrain 3000亿token", "tokens", 3 * 10**11), ("70B serve two gpus", "gpus", 2),
    ("70B serve 十六卡", "gpus", 16), ("70B serve 三十二卡", "gpus", 32),
])
def test_counts_take_number_words_and_units(text: str, key: str, value: int) -> None:
    assert parse_fields(text).values[key] == value


@pytest.mark.parametrize(("text", "value"), [
    ("一", 1), ("两", 2), ("单", 1), ("双", 2), ("十", 10), ("十六", 16), ("三十二", 32),
    ("两千", 2000), ("一百零五", 105), ("一百二十", 120), ("三四", None), ("x", None),
])
def test_chinese_numerals(text: str, value: int | None) -> None:
    assert numbers.chinese_int(text) == value


@pytest.mark.parametrize(("number", "scale", "value"), [
    ("15", "万", "150000"), ("1.2", "亿", "120000000"), ("两", "千", "2000"), ("1", "万亿", "1000000000000"),
    ("300", "thousand", "300k"), ("1.5", "million", "1.5m"), ("2", "B", "2b"), ("8", "k", "8k"),
    ("1,200", None, "1200"), ("three", None, "3"), ("1.20", None, "1.2"), ("abc", None, None),
    ("1.2", "万", "12000"), ("0.1", "亿", "10000000"),
])
def test_number_values(number: str, scale: str | None, value: str | None) -> None:
    assert numbers.value(number, scale) == value


def test_unknown_chinese_word_gets_a_chinese_example() -> None:
    # a word no slot takes is skipped, not refused (issue 20); a mistyped keyword is said with
    # the keyword and an example, so one reply fixes it
    reading = read("qwen2.5-72b 推理 并法100")
    assert "并法" in reading.skipped and reading.values["method"] == "inference"
    assert any("并发" in note and "100并发" in note for note in reading.notes)
    with language("zh"):
        notes = read("qwen2.5-72b 推理 并法100").notes
    assert any("并发" in n for n in notes)
    assert not any(re.search(r"\b(?:unexpected|write|example)\b", n) for n in notes)


def test_every_keyword_example_reads() -> None:
    for keyword, example in KEYWORDS.items():
        draft = parse_fields(example)
        assert draft.model and draft.method, (keyword, example)


def test_every_row_example_reads() -> None:
    for row in ZH_PHRASES:
        if row.example:
            read_reply(row.example)  # no ParseError: each row's own example is read


@pytest.mark.parametrize(("text", "mode"), [
    ("13B lora 租用", "rent"), ("13B lora 租卡", "rent"), ("13B lora 购置", "buy"), ("13B lora 买卡", "buy"),
    ("13B lora 自建", "buy"), ("13B lora rent", "rent"), ("13B lora renting", "rent"),
    ("13B lora buying", "buy"),
])
def test_rent_and_buy_are_the_mode(text: str, mode: str) -> None:
    assert parse_fields(text).values["mode"] == mode


def test_rent_or_buy_asks_for_both() -> None:
    assert "mode" not in parse_fields("13B lora 租还是买").values
    assert "mode" not in parse_fields("13B lora rent or buy").values


def test_typed_options_are_never_read_as_phrases() -> None:
    # key=value keeps its own error; phrases never run inside it
    with pytest.raises(ParseError) as info:
        parse("13B lora budget=1e309")
    assert "budget=1e309" in str(info.value)
    assert parse_fields("13B lora gpu=4090 gpus=2").values["gpus"] == 2


def test_moe_sizes_are_not_card_counts() -> None:
    assert parse_fields("8x7B 推理").values["model"] == "8X7B"
    assert parse_fields("8x7B serve").values["model"] == "8X7B"


def test_only_budgets_are_asked_about() -> None:
    # price quotes take small amounts as they are: 0.5 USD per GPU-hour is a real price
    assert parse_money("amount", "0.5").amount == 0.5
    assert parse_fields("13B lora budget=300cny").values["budget"] == {"amount": 300, "currency": "CNY"}


@pytest.mark.parametrize("text", ["70B serve users=" + "9" * 400, "70B serve " + "9" * 400 + "万并发",
                                  "70B serve budget " + "9" * 400 + " thousand",
                                  "7B pretrain " + "9" * 400 + "T tokens"])
def test_numbers_past_float_range_are_clear_errors(text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)
