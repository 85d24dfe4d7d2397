"""What buyers say that is not a slot as it stands: head counts, data sets, card and host memory
without a card, deadlines relative to today (engine/rates.py, engine/datasize.py,
engine/deadline.py). Each rule is checked from its stated assumption, in both languages."""

from __future__ import annotations

import math
from datetime import date

import pytest

from engine import datasize, deadline, rates
from engine.catalog import gpus
from engine.plan import cards_of_memory
from engine.reader import read


def _head_count_requests(people: int) -> int:
    return round(people * rates.DAILY_SHARE_OF_HEAD_COUNT * rates.REQUESTS_PER_DAILY_USER)


@pytest.mark.parametrize(("text", "people"), [
    ("qwen3-32b 推理 给200个开发者用", 200),
    ("serve qwen3-32b for a team of 200 developers", 200),
    ("qwen3-32b for 200 engineers", 200),
    ("qwen3-8b, 50 seats", 50),
    ("部署qwen3-8b 给500个员工用", 500),
    ("qwen3-32b 30人的团队", 30),
    ("团队40人 部署qwen3-8b", 40),
    ("a 120-person company serving qwen3-14b", 120),
])
def test_a_head_count_is_traffic_not_concurrency(text: str, people: int) -> None:
    reading = read(text)
    assert "users" not in reading.values
    assert reading.values["requests"] == _head_count_requests(people)
    assert reading.values["method"] == "inference"
    assert any("Stack Overflow" in note for note in reading.notes)
    assert not reading.skipped


@pytest.mark.parametrize(("text", "users"), [
    ("qwen3-32b 200人同时用", 200), ("qwen3-32b 200 concurrent users", 200),
    ("qwen3-8b for 300 employees, 5% concurrent", 15),
    ("部署qwen3-32b给500个员工用，同时在线10%", 50),
])
def test_concurrency_said_stays_concurrency(text: str, users: int) -> None:
    reading = read(text)
    assert reading.values["users"] == users and "requests" not in reading.values


def test_a_head_count_on_a_training_run_is_said_unused() -> None:
    reading = read("7B lora for our 20 engineers")
    assert "requests" not in reading.values and "users" not in reading.values
    assert any("not used" in note for note in reading.notes)


@pytest.mark.parametrize(("text", "samples", "epochs"), [
    ("7B lora 数据5万条", 50_000, 1), ("qwen3-8b 全参微调 10万条对话", 100_000, 1),
    ("7B lora 50k samples", 50_000, 1), ("qwen3-8b lora on 100k conversations, 3 epochs", 100_000, 3),
    ("7B lora 1万条数据 训练2轮", 10_000, 2),
])
def test_a_data_set_in_samples_is_training_tokens(text: str, samples: int, epochs: int) -> None:
    reading = read(text)
    assert reading.values["tokens"] == round(samples * datasize.TOKENS_PER_SAMPLE * epochs)
    assert any("LMSYS-Chat-1M" in note for note in reading.notes)
    assert not reading.skipped


@pytest.mark.parametrize(("text", "size"), [
    ("7B lora 数据集3GB", 3e9), ("7B lora 500MB的语料", 500e6), ("7B lora on a 3GB dataset", 3e9),
    ("7B full fine-tune, dataset of 2 GB", 2e9),
])
def test_a_data_set_in_bytes_is_training_tokens(text: str, size: float) -> None:
    reading = read(text)
    assert reading.values["tokens"] == round(size / datasize.BYTES_PER_TOKEN)
    assert not reading.skipped


def test_tokens_of_data_and_serving_data() -> None:
    assert read("7B full fine-tune 2B tokens of data").values["tokens"] == 2_000_000_000
    serving = read("qwen3-32b 推理 数据5万条")
    assert "tokens" not in serving.values
    assert any("not used" in note for note in serving.notes)


@pytest.mark.parametrize(("text", "gb"), [
    ("qwen3-32b 推理 24gb", 24), ("qwen3-32b 24G显存", 24), ("qwen3-32b on 48GB cards", 48),
    ("显存16G 跑qwen3-8b", 16), ("is 96GB enough for qwen3-32b?", 96),
])
def test_memory_without_a_card_is_the_cards_of_that_memory(text: str, gb: float) -> None:
    reading = read(text)
    assert reading.values["card_memory"] == gb and "gpu" not in reading.values
    assert not reading.skipped


def test_cards_of_a_memory_are_the_nearest_at_or_above_it() -> None:
    cards = list(gpus().values())
    for gb in (24, 48, 80, 10, 500):
        chosen = cards_of_memory(cards, gb)
        assert chosen and len({g.memory_gb for g in chosen}) == 1
        above = [g.memory_gb for g in cards if g.memory_gb >= gb - 0.5]
        assert chosen[0].memory_gb == (min(above) if above else max(g.memory_gb for g in cards))


def test_a_named_cards_memory_picks_its_variant() -> None:
    assert read("在A100上跑llama3.1-8b的qlora，40G版本").values["gpu"] == "a100-40gb"


@pytest.mark.parametrize("text", ["70B qlora 512G内存", "70B lora 512GB RAM", "70B lora 内存512G"])
def test_host_memory_is_read_and_said(text: str) -> None:
    reading = read(text)
    assert reading.values["host_memory"] == 512
    assert "card_memory" not in reading.values and not reading.skipped


@pytest.mark.parametrize(("text", "kind"), [
    ("7B lora 下个月", "next_month"), ("7B lora 月底前", "month_end"),
    ("7B lora 下个月底前", "next_month_end"), ("7B lora 年底前", "year_end"),
    ("7B lora by next month", "next_month"), ("7B lora by end of month", "month_end"),
    ("7B lora by the end of next month", "next_month_end"), ("7B lora by end of year", "year_end"),
    ("7B lora by next week", "next_week"), ("7B lora 下周前", "next_week"),
])
@pytest.mark.parametrize("today", [date(2026, 12, 3), date(2027, 1, 31), date(2027, 2, 28)])
def test_a_deadline_relative_to_today_is_days(text: str, kind: str, today: date) -> None:
    reading = read(text, today=today)
    due = deadline.due_date(kind, today)
    assert due > today or (kind == "month_end" and due == today)
    assert reading.values["days"] == max(1, (due - today).days)
    assert any(due.isoformat() in note for note in reading.notes)
    assert not reading.skipped


def test_deadline_dates_follow_the_calendar() -> None:
    assert deadline.due_date("month_end", date(2027, 2, 10)) == date(2027, 2, 28)
    assert deadline.due_date("next_month", date(2026, 12, 31)) == date(2027, 1, 1)
    assert deadline.due_date("next_month_end", date(2027, 1, 31)) == date(2027, 2, 28)
    assert deadline.due_date("next_week", date(2026, 12, 3)).weekday() == 0
    assert math.isclose(deadline.days_until("year_end", date(2026, 12, 30))[0], 1)


@pytest.mark.parametrize("text", ["我们下周再讨论这个", "下个月再说吧", "let's talk next month"])
def test_chatter_in_a_thread_is_no_deadline(text: str) -> None:
    assert "days" not in read(text, reply=True).values


@pytest.mark.parametrize(("text", "card", "count"), [
    ("我们有4张V100 7B lora", "v100-32gb", 4), ("we have 8 T4s, serve qwen3-8b", "t4", 8),
    ("我们有2张P40 跑qwen3-8b", "p40", 2), ("we own two A2s for qwen3-4b", "a2", 2),
    ("手上有一张3060 12G 跑qwen3-4b", "rtx-3060-12gb", 1),
    ("we own two servers with 8 A800 each, can we full fine-tune qwen3-32b?", "a800", 16),
    ("we have 2 nodes of 8 H100, serve llama-3.1-70b to 100 users", "h100-sxm", 16),
])
def test_cards_teams_own_are_read_as_owned(text: str, card: str, count: int) -> None:
    values = read(text).values
    assert (values["gpu"], values["gpus"], values.get("owned")) == (card, count, True)


@pytest.mark.parametrize("card", ["v100-16gb", "v100-32gb", "t4", "p40"])
def test_a_card_without_bf16_is_planned_in_its_own_format(card: str) -> None:
    from engine.plan import in_card_precision
    from engine.request import Request

    spec = gpus()[card]
    req = Request(model="7B", method="lora")
    assert in_card_precision(req, spec).precision == spec.half_dtype != "bf16"
    assert "no bf16" in spec.serving_stack and spec.fp8_tflops is None
    assert in_card_precision(req, gpus()["a10"]).precision == "bf16"
    from engine.formats import weight_path

    path = weight_path(spec, "bf16")  # a BF16 release on the card: its own format, said
    assert path.compute == spec.half_dtype and "bf16" not in path.kernel
    assert weight_path(gpus()["a10"], "bf16").compute == "bf16"


def test_host_memory_is_checked_against_what_offload_keeps() -> None:
    import engine

    ans = engine.ask("qwen3-8b full-finetune gpu=rtx-4090 gpus=2 offload=optimizer host_memory=64")
    need = ans.plans[0].memory.host_offload * 2 / 1e9  # two GPUs in the server
    assert need > 64 and f"{need:,.0f} GB" in ans.recommendation and "more than the 64 GB" in (
        ans.recommendation)
    plain = engine.ask("qwen3-8b lora gpu=rtx-4090 gpus=1 host_memory=512")
    assert plain.plans[0].memory.host_offload == 0 and "not used" in plain.recommendation


def test_epochs_multiply_the_tokens_said_and_are_never_dropped_silently() -> None:
    assert read("7B lora 1B tokens, 3 epochs").values["tokens"] == 3_000_000_000
    alone = read("7B lora 3 epochs")
    assert "tokens" not in alone.values and any("epochs" in note for note in alone.notes)


@pytest.mark.parametrize(("card", "dtype"), [("v100-32gb", "fp16"), ("t4", "fp16")])
def test_a_pinned_card_without_bf16_is_answered_in_its_format(card: str, dtype: str) -> None:
    import engine

    ans = engine.ask(f"qwen2.5-7b lora gpu={card} gpus=1")
    assert ans.plans[0].settings.precision == dtype
    assert any("no bf16" in note for note in ans.plans[0].notes)


def test_serving_on_pascal_is_llama_cpp_with_weights_as_stored() -> None:
    import engine

    ans = engine.ask("qwen3-8b inference gpu=p40 gpus=1")
    assert ans.plans[0].settings.engine == "llama.cpp"
    assert ans.plans[0].settings.kernel == "as-fp32"


def test_servers_with_cards_each_skip_nothing() -> None:
    assert not read("we own two servers with 8 A800 each, full fine-tune qwen3-32b").skipped
