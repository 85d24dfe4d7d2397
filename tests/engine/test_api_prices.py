"""API versus self-hosting (engine/api_prices.py): the catalog is sourced and dated, the match
says how the API relates to the model, and the comparison's arithmetic holds."""

from __future__ import annotations

import re
from datetime import date

import pytest

import engine
from engine import catalog
from engine.api_prices import api_prices, held_mean, matches
from engine.parse import parse
from engine.prices import price_book
from engine.resolve import resolve_model
from engine.sizing import prepared
from engine.traffic import DAYS_PER_MONTH, poisson_quantile, request_lengths
from present.detail import api_lines

TODAY = date(2026, 12, 2)


def test_every_row_is_sourced_dated_and_names_catalog_models() -> None:
    models = catalog.models()
    rows = api_prices()
    assert rows
    for row in rows:
        assert re.match(r"https://", row.source), row
        assert row.currency in ("CNY", "USD") and row.market in ("china", "global")
        assert row.input > 0 and row.output > 0 and row.cached >= 0
        assert row.quoted <= row.retrieved
        assert row.models or row.comparable
        for name in (*row.models, *row.comparable):
            assert name in models, name


def test_the_issue_s_providers_are_there() -> None:
    served = {m for r in api_prices() for m in (*r.models, *r.comparable)}
    for family in ("deepseek", "qwen3", "glm", "kimi", "gpt-oss"):
        assert any(m.startswith(family) for m in served), family


def test_cache_hits_cost_less_than_misses() -> None:
    for row in api_prices():
        assert row.cached < row.input, row  # 0 when no cache discount is offered


def test_deepseek_s_own_api_is_a_successor_priced_in_each_market_s_currency() -> None:
    # DeepSeek's API serves V4-generation models only: a comparable model for V3/R1, never the same
    found = [m for m in matches(catalog.models()["deepseek-v3"]) if m.price.provider == "DeepSeek"]
    assert found and {m.match for m in found} == {"comparable"}
    assert {(m.price.market, m.price.currency) for m in found} == {("china", "CNY"), ("global", "USD")}


def test_match_kinds() -> None:
    models = catalog.models()
    assert {m.match for m in matches(models["qwen3-32b"])} == {"same"}
    assert {m.match for m in matches(models["deepseek-r1"])} == {"comparable"}
    similar = matches(models["qwen2.5-32b"])  # listed as comparable
    assert {m.match for m in similar} == {"comparable"}
    loose = matches(models["yi-1.5-34b"])  # no row: a model of similar size
    assert loose and {m.match for m in loose} == {"similar"}
    for m in loose:
        served = models[m.price.models[0]]
        assert 1 / 1.5 <= served.params / models["yi-1.5-34b"].params <= 1.5


def test_comparison_arithmetic() -> None:
    ans = engine.ask("qwen3-32b inference requests=10k prompt=2000 output=500", today=TODAY)
    plan = ans.plans[0]
    api = plan.api
    assert api is not None and api.offers and api.monthly is not None
    book = price_book()
    requests = 10_000
    tokens = requests * DAYS_PER_MONTH * 2500
    assert api.tokens_per_month == pytest.approx(tokens, rel=1e-6)
    assert api.per_m_tokens == pytest.approx(api.monthly / (tokens / 1e6), rel=1e-3)
    for offer in api.offers:
        per_request = book.convert((2000 * offer.input_per_m + 500 * offer.output_per_m) / 1e6,
                                   offer.currency, api.currency)
        assert offer.monthly == pytest.approx(per_request * requests * DAYS_PER_MONTH, rel=1e-3)
        # at the break-even traffic the API costs what the plan does
        even = offer.break_even_requests_per_day
        assert even is not None
        assert per_request * even * DAYS_PER_MONTH == pytest.approx(api.monthly, rel=1e-3)
    monthly = plan.cost.buy.monthly_total if api.mode == "buy" else plan.cost.rent.monthly  # type: ignore[union-attr]
    assert api.monthly == pytest.approx(monthly, abs=1)


def test_capacity_is_what_the_plan_holds_at_its_peak() -> None:
    ans = engine.ask("qwen3-32b inference users=20 context=4k", today=TODAY)
    plan = ans.plans[0]
    api = plan.api
    assert api is not None and api.capacity_requests_per_day
    # no prompt= or output=: the 4k sequence holds a typical 340-token answer and its prompt
    seconds = (4096 - 340) / plan.speed.prefill_tokens_per_s + 340 / plan.speed.decode_tokens_per_s  # type: ignore[operator]
    expected = held_mean(20) / seconds * 86_400 / 3
    assert api.capacity_requests_per_day == pytest.approx(expected, rel=1e-3)
    assert api.utilization == pytest.approx(1 / 3, rel=1e-3)  # compared at its capacity


@pytest.mark.parametrize("users", [1, 5, 21, 83, 400])
def test_held_mean_is_the_largest_mean_the_users_hold(users: int) -> None:
    mean = held_mean(users)
    assert poisson_quantile(mean) <= users
    assert poisson_quantile(mean * 1.01 + 0.01) > users or mean == users


def test_training_has_no_comparison() -> None:
    assert engine.ask("7B lora", today=TODAY).plans[0].api is None


def test_rows_go_stale() -> None:
    ans = engine.ask("deepseek-v3 inference", today=date(2027, 12, 31))
    offers = ans.plans[0].api.offers  # type: ignore[union-attr]
    assert offers and all(o.stale for o in offers)


BOXES = ("llama-3.1-8b inference gpu=4090 gpus=1", "qwen3-32b inference gpu=4090 gpus=8",
         "qwen2.5-7b inference gpu=l20 gpus=1 prompt=2000 output=500",
         "qwen2.5-72b inference quant=awq gpu=a100-80gb gpus=2 context=8k",
         # traffic on a box: the box is paid for whole, so it is compared at all it carries
         "qwen3-32b inference gpu=4090 gpus=8 requests=10k prompt=2k output=500")


@pytest.mark.parametrize("text", BOXES)
def test_a_box_is_compared_serving_typical_requests_at_its_launched_capacity(text: str) -> None:
    """A box is compared as launched (the most users at the context asked, from the reverse
    answer, even when requests= implies fewer) serving the traffic's requests, else the one
    requests= would assume, not its whole context split in two."""
    ans = engine.ask(text, today=TODAY)
    plan = ans.plans[0]
    api = plan.api
    assert api is not None and ans.capacity is not None
    req = parse(text)
    expected = request_lengths(prepared(resolve_model(req.model)[0], req))
    assert (api.prompt_tokens, api.answer_tokens) == expected
    assert api.tokens_per_month == pytest.approx(
        api.requests_per_day * DAYS_PER_MONTH * sum(expected), rel=1e-3)
    launched = plan.launch[0].commands[0]
    seqs = re.search(r"--max-num-seqs (\d+)", launched)
    # vLLM schedules --max-num-seqs per data-parallel rank: the box carries that many per replica
    ranks = re.search(r"--data-parallel-size (\d+)", launched)
    assert seqs is not None
    assert api.users == int(seqs.group(1)) * (int(ranks.group(1)) if ranks else 1)
    row = max((r for r in ans.capacity.rows if r.context <= plan.settings.context and r.users),
              key=lambda r: r.context)
    assert api.users == row.users
    if "prompt=" not in text and "context=" not in text and not resolve_model(
            req.model)[0].reasoning:
        assert expected == (1000, 340)  # the typical chat request, said as assumed
        assert any("1000 tokens" in n for n in api.notes)


@pytest.mark.parametrize("text", [*BOXES, "qwen2.5-72b inference requests=100k"])
def test_break_even_is_said_only_where_the_plan_reaches_it(text: str) -> None:
    plan = engine.ask(text, today=TODAY).plans[0]
    api = plan.api
    assert api is not None and api.capacity_requests_per_day
    lines = api_lines(plan, limit=len(api.offers))
    offer_lines = [line for line in lines if line.startswith("• ") and " in/out = " in line]
    assert len(offer_lines) == len(api.offers)
    for offer, line in zip(api.offers, offer_lines, strict=True):
        even = offer.break_even_requests_per_day
        if even is None:
            continue
        if even > api.capacity_requests_per_day:
            assert "never pays off" in line and "pays off above" not in line, line
        else:
            assert f"pays off above {even:,.0f} requests a day" in line, line


@pytest.mark.parametrize("text", ["qwen3-32b inference gpu=4090 gpus=8 requests=10k output=500",
                                  "qwen3-32b inference requests=10k prompt=2000 output=500",
                                  "deepseek-v3 inference requests=1M"])
def test_the_way_not_chosen_is_priced_against_the_cheapest_api(text: str) -> None:
    """Buying when the answer rents (renting when it buys): its cost a month over the cheapest
    API's cost per request a day is where it pays off, said only within what the plan carries."""
    plan = engine.ask(text, today=TODAY).plans[0]
    api, cost = plan.api, plan.cost
    assert api is not None and cost is not None and api.offers
    other = cost.buy.monthly_total if api.mode == "rent" else cost.rent.monthly
    allowed = cost.buy_allowed if api.mode == "rent" else cost.rent_allowed
    if not (other and allowed):
        assert " instead (" not in api.verdict
        return
    cheapest = min(api.offers, key=lambda o: o.monthly or 0.0)
    even = other / (cheapest.monthly / api.requests_per_day)  # type: ignore[operator]
    if api.capacity_requests_per_day and even > api.capacity_requests_per_day:
        assert "instead" in api.verdict and "never pays off" in api.verdict.split("instead")[1]
    else:
        assert f"above {even:,.0f} requests a day" in api.verdict.split("instead")[1]


def test_a_plan_that_does_not_run_gets_the_apis_alone_for_given_traffic() -> None:
    text = "deepseek-v3 inference gpu=4090 gpus=8"
    plan = engine.ask(f"{text} requests=100k", today=TODAY).plans[0]
    assert plan.verdict == "no" and plan.api is not None and plan.api.offers
    api = plan.api
    assert api.monthly is None and api.capacity_requests_per_day is None
    assert api.requests_per_day == 100_000
    book = price_book()
    for offer in api.offers:
        per_request = book.convert((api.prompt_tokens * offer.input_per_m  # type: ignore[operator]
                                    + api.answer_tokens * offer.output_per_m) / 1e6,  # type: ignore[operator]
                                   offer.currency, api.currency)
        assert offer.monthly == pytest.approx(per_request * 100_000 * DAYS_PER_MONTH, rel=1e-3)
        assert offer.break_even_requests_per_day is None
    assert "does not run" in api.verdict
    assert engine.ask(text, today=TODAY).plans[0].api is None  # no traffic, nothing to price
