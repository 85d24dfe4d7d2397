"""Requests a day into concurrency and tokens (engine/traffic.py): Little's law at the peak, the
Poisson 99th percentile it is sized for, and the defaults the answer says it assumed."""

from __future__ import annotations

import math

import pytest

import engine
from engine.parse import parse
from engine.request import PREFILL_FLOOR, TTFT_FLOOR_S, Request
from engine.traffic import (
    DAYS_PER_MONTH,
    DEFAULT_ANSWER,
    DEFAULT_PEAK,
    DEFAULT_PROMPT,
    SECONDS_PER_DAY,
    load_of,
    poisson_quantile,
    users_for,
    with_traffic,
)


def _req(**values: object) -> Request:
    return Request(model="qwen3-32b", method="inference", **values)


def test_littles_law_by_hand() -> None:
    # 10k requests a day, 2k in, 500 out, peak 3: W = 2.5 s to the first token (2,000 tokens at
    # 800/s) + 500 tokens at 15 tokens/s; L = rate x W
    load = load_of(_req(requests=10_000, prompt=2000, output=500, peak=3))
    assert load is not None
    seconds = max(TTFT_FLOOR_S, 2000 / PREFILL_FLOOR) + 500 / 15
    rate = 10_000 / SECONDS_PER_DAY * 3
    assert load.seconds == pytest.approx(seconds)
    assert load.peak_rate == pytest.approx(rate)
    assert load.mean_in_flight == pytest.approx(rate * seconds)
    assert load.tokens_per_month == pytest.approx(10_000 * DAYS_PER_MONTH * 2500)


def test_service_level_sets_the_time_in_system() -> None:
    slow = load_of(_req(requests=10_000, output=500))
    fast = load_of(_req(requests=10_000, output=500, min_speed=50, ttft=1))
    assert slow is not None and fast is not None
    assert fast.seconds == pytest.approx(1 + 500 / 50)
    assert fast.mean_in_flight < slow.mean_in_flight


def test_linear_in_traffic_and_peak() -> None:
    one = load_of(_req(requests=5000, peak=2))
    two = load_of(_req(requests=10_000, peak=2))
    three = load_of(_req(requests=5000, peak=4))
    assert one and two and three
    assert two.mean_in_flight == pytest.approx(2 * one.mean_in_flight)
    assert three.mean_in_flight == pytest.approx(2 * one.mean_in_flight)


def test_defaults_are_stated() -> None:
    req = _req(requests=1000)
    load = load_of(req)
    assert load is not None
    assert (load.prompt, load.answer, load.peak) == (DEFAULT_PROMPT, DEFAULT_ANSWER, DEFAULT_PEAK)
    _new, doc = with_traffic(req)
    assert doc is not None and len(doc.assumed) == 3
    assert any("peak" in a for a in doc.assumed)


@pytest.mark.parametrize("mean", [0.3, 1, 4.2, 12.44, 60, 400, 999])
def test_poisson_quantile_is_the_99th_percentile(mean: float) -> None:
    n = poisson_quantile(mean)

    def cdf(k: int) -> float:
        return sum(math.exp(-mean + i * math.log(mean) - math.lgamma(i + 1)) for i in range(k + 1))

    assert cdf(n) >= 0.99
    assert n == 0 or cdf(n - 1) < 0.99


def test_large_means_use_the_normal_approximation_near_the_exact_one() -> None:
    exact = poisson_quantile(1000)
    approx = poisson_quantile(1000.001)  # past the switch
    assert abs(approx - exact) <= 2


def test_users_and_context_follow_the_traffic() -> None:
    req = parse("qwen3-32b inference requests=10k prompt=2000 output=500")
    new, doc = with_traffic(req)
    load = load_of(req)
    assert doc is not None and load is not None
    assert new.users == doc.users == users_for(load) > load.mean_in_flight
    assert (new.context, new.prompt_tokens, new.answer_tokens) == (2500, 2000, 500)
    given, doc2 = with_traffic(parse("qwen3-32b inference requests=10k users=5 context=8k"))
    assert (given.users, given.context) == (5, 8192)
    assert given.prompt_tokens + given.answer_tokens == 8192  # the context holds the request
    assert doc2 is not None and any("users=5" in a for a in doc2.assumed)


def test_training_ignores_traffic() -> None:
    req = parse("7B lora requests=10k")
    assert with_traffic(req) == (req, None)


def test_keys_parse() -> None:
    req = parse("qwen3-32b inference requests=10k prompt=2000 answer=500 peak=2.5")
    assert (req.requests, req.prompt, req.output, req.peak) == (10_000, 2000, 500, 2.5)
    assert parse("qwen3-32b serve rpd=1m in=300 out=200").requests == 1_000_000


def test_the_answer_carries_the_conversion() -> None:
    ans = engine.ask("qwen3-32b inference requests=10k prompt=2000 output=500")
    assert ans.traffic is not None
    assert ans.traffic.users == ans.plans[0].settings.users
    assert ans.traffic.peak_factor == DEFAULT_PEAK
    assert "Little" in ans.traffic.text


def test_a_reasoning_models_traffic_counts_its_mean_answer_and_holds_its_longest() -> None:
    """Little's law wants the mean time in the system: a reasoning model's recommended maximum
    (32,768 tokens) taken as every request's answer made 10k Qwen3-32B requests a day 825 users
    that no card could hold. The mean (ServeGen's production R1 traffic) counts the requests in
    flight and the month's tokens; each sequence is still sized to hold the longest answer; an
    output= given wins."""
    from engine.traffic import REASONING_ANSWER

    ans = engine.ask("qwen3-32b inference requests=10k")
    doc = ans.traffic
    assert doc is not None and doc.answer_tokens == REASONING_ANSWER
    assert doc.users == poisson_quantile(doc.mean_in_flight)
    assert doc.tokens_per_month == pytest.approx(
        10_000 * DAYS_PER_MONTH * (doc.prompt_tokens + REASONING_ANSWER), rel=1e-6)
    assert ans.plans and ans.plans[0].service is not None
    assert ans.plans[0].service.context == doc.prompt_tokens + 32_768  # the longest still held
    assert any("requests=" in a and f"{REASONING_ANSWER:,}" in a for a in ans.assumptions)
    given = engine.ask("qwen3-32b inference requests=10k output=500").traffic
    assert given is not None and given.answer_tokens == 500
    # a model that does not reason keeps the conversation average
    plain = engine.ask("qwen2.5-32b inference requests=10k").traffic
    assert plain is not None and plain.answer_tokens == DEFAULT_ANSWER
