"""The sentence reader on questions as teams type them in a channel (issue 20's held-out sweep):
active users and request rates are traffic, not concurrency (Little's law, said); punctuation is
never a skipped word; a card's name beside a model size is the card; and a table of realistic
questions in Chinese, English and both, each with every slot it must yield and no word the answer
needed left skipped."""

from __future__ import annotations

from typing import Any

import pytest

from engine import rates, traffic
from engine.i18n import language
from engine.reader import read, read_summary
from engine.request import Request


def slots(text: str, *, reply: bool = False) -> dict[str, Any]:
    return {k: v for k, v in read(text, reply=reply).values.items() if k not in ("asked_in",)}


# -- active users and request rates: traffic, never concurrent users ------------------------------

DAILY = rates.REQUESTS_PER_DAILY_USER
MONTHLY = rates.REQUESTS_PER_MONTHLY_USER
AT_PEAK = traffic.SECONDS_PER_DAY / traffic.DEFAULT_PEAK  # requests a day per request a second


@pytest.mark.parametrize(("text", "people", "each"), [
    ("qwen3-32b 推理 日活1000人", 1000, DAILY),
    ("日活跃用户数2万，部署qwen2.5-72b够吗", 20000, DAILY),
    ("2万日活 部署qwen3-8b", 20000, DAILY),
    ("qwen3-32b serve 1000 users a day", 1000, DAILY),
    ("DAU 5k, llama-3.1-8b inference", 5000, DAILY),
    ("llama-3.1-8b for 3,000 daily active users", 3000, DAILY),
    ("每天大概500人使用 qwen3-14b 部署", 500, DAILY),
    ("qwen3-32b 部署 月活5万", 50000, MONTHLY),
    ("MAU 200k on qwen3-32b, which GPUs?", 200000, MONTHLY),
])
def test_active_users_are_requests_a_day_not_concurrency(text: str, people: int, each: float) -> None:
    reading = read(text)
    assert "users" not in reading.values  # 1000 people a day are not 1000 sequences in flight
    assert reading.values["requests"] == round(people * each)
    assert reading.values["method"] == "inference"
    assert reading.traffic is not None and f"{people:,}" in reading.traffic
    assert any("ChatGPT" in note and "requests=" in note for note in reading.notes)
    assert not reading.skipped


@pytest.mark.parametrize(("text", "per_second", "word"), [
    ("qwen3-32b QPS 20", 20, "QPS"),
    ("峰值QPS 50 部署qwen3-32b", 50, "QPS"),
    ("qwen3-32b serve at 20 RPS", 20, "RPS"),
    ("qwen3-32b 每秒20个请求", 20, "QPS"),
    ("llama-3.1-8b, 5 requests per second, how many L40S", 5, "QPS"),
    ("qwen3-32b 每分钟600次请求", 10, "RPM"),
    ("RPM 1200 for qwen3-8b", 20, "RPM"),
])
def test_a_rate_a_second_is_the_busiest_hours_rate(text: str, per_second: float, word: str) -> None:
    reading = read(text)
    assert "users" not in reading.values
    assert reading.values["requests"] == round(per_second * AT_PEAK)
    assert reading.traffic is not None and word in reading.traffic
    assert any("Little" in note for note in reading.notes)
    # the traffic model takes it from there: the busiest hour runs at exactly the rate said
    req = Request(model="qwen3-32b", method="inference", requests=reading.values["requests"])
    load = traffic.load_of(req)
    assert load is not None and load.peak_rate == pytest.approx(per_second, rel=1e-4)


def test_users_follow_from_littles_law_not_from_the_head_count() -> None:
    requests = read("日活1000人 qwen3-32b").values["requests"]
    req = Request(model="qwen3-32b", method="inference", requests=requests)
    served, doc = traffic.with_traffic(req)
    assert doc is not None and 1 <= served.users < 1000
    assert served.users == traffic.users_for(traffic.load_of(req))  # type: ignore[arg-type]


def test_the_read_line_says_what_was_said_and_what_it_became() -> None:
    with language("zh"):
        line = read_summary(read("qwen3-32b 推理 日活1000人").values, "qwen3-32b 推理 日活1000人")
    assert "日活 1,000 人" in line and "每天" in line
    en = read("qwen3-32b QPS 20")
    assert "20 QPS at the peak" in " · ".join(en.read)


def test_two_traffic_readings_are_asked_not_guessed() -> None:
    from engine.reader import Ambiguous

    with pytest.raises(Ambiguous):
        read("qwen3-32b 日活1000人 每天5万次请求")


def test_a_thread_changes_the_active_users() -> None:
    assert slots("日活改成5000", reply=True) == {"requests": round(5000 * DAILY)}
    assert slots("what about 50 QPS", reply=True) == {"requests": round(50 * AT_PEAK)}


# -- punctuation, cards named like sizes ---------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("we own 16 A800 (2 servers), qwen3-32b serve",
     {"gpus": 16, "gpu": "a800", "model": "qwen3-32b", "method": "inference", "owned": True}),
    ("qwen3-32b: self-hosted vs API?", {"model": "qwen3-32b", "method": "inference"}),
    ("【qwen3-32b】部署「8张4090」够吗？", {"model": "qwen3-32b", "method": "inference",
                                          "gpus": 8, "gpu": "rtx-4090"}),
    ("qwen3:32b serve 10 users", {"model": "qwen3-32b", "method": "inference", "users": 10}),
    ("13B lora on 910b", {"model": "13B", "method": "lora", "gpu": "ascend-910b"}),
    ("70b 推理 910b 8卡", {"model": "70B", "method": "inference", "gpu": "ascend-910b", "gpus": 8}),
])
def test_punctuation_is_never_skipped_and_a_card_is_a_card(text: str, want: dict[str, Any]) -> None:
    reading = read(text)
    assert slots(text) == want
    assert not reading.skipped, reading.skipped


def test_a_card_size_alone_is_still_a_model_size() -> None:
    assert slots("910B inference") == {"model": "910B", "method": "inference"}
