"""One answer's memo (engine/plan.py `one_answer`): planning work shared within an answer gives
the same plans it would compute afresh, requests differing only in how they are paid for share
a card's sharding because nothing that chooses it reads those fields, and nothing outlives the
answer."""

from __future__ import annotations

from datetime import date

import pytest

from engine import catalog, plan
from engine.catalog import find_gpu
from engine.parse import parse
from engine.prices import price_book
from engine.resolve import resolve_model

BOOK = price_book()
TODAY = date(2026, 12, 2)


def _spec_and_request(query: str):  # type: ignore[no-untyped-def]
    req = parse(query)
    return resolve_model(req.model)[0], req


def _budget(amount: str):  # type: ignore[no-untyped-def]
    return parse(f"13B lora budget={amount}").budget


@pytest.mark.parametrize("query", ["13B full-finetune", "llama-3.1-8b qlora",
                                   "qwen2.5-72b inference users=20",
                                   "mixtral-8x7b full-finetune tokens=1B days=30"])
@pytest.mark.parametrize("card", ["4090", "a800", "h100"])
def test_choosing_a_cards_sharding_reads_nothing_paid_only(query: str, card: str) -> None:
    spec, req = _spec_and_request(query)
    gpu = find_gpu(card)
    counts = plan.SERVE_COUNTS if req.is_serving else plan.TRAIN_COUNTS
    assert plan._MEMO.get() is None  # outside an answer: computed afresh every call
    asked = plan.choose(spec, req, gpu, counts)
    for paid in ({"mode": "buy"}, {"mode": "rent", "budget": _budget("10k")},
                 {"budget": _budget("5M")}):
        assert set(paid) <= plan.PAID_ONLY
        other = req.model_copy(update=paid)
        assert plan.choose(spec, other, gpu, counts) == asked, paid
        for n in counts[:12]:
            assert plan._best_at(spec, other, gpu, n) == plan._best_at(spec, req, gpu, n)


@pytest.mark.parametrize("query", ["13B full-finetune budget=150k", "llama-3.1-70b lora gpu=4090",
                                   "qwen2.5-72b inference context=8k users=20 mode=buy"])
def test_plans_within_an_answer_are_those_computed_afresh(query: str) -> None:
    spec, req = _spec_and_request(query)
    fresh = plan.ranked_plans(spec, req, today=TODAY, book=BOOK)
    bought = req.model_copy(update={"mode": "buy", "budget": _budget("2M")})
    fresh_bought = plan.ranked_plans(spec, bought, today=TODAY, book=BOOK)
    with plan.one_answer():
        first = plan.ranked_plans(spec, req, today=TODAY, book=BOOK)
        assert first == fresh
        first[0].clear()  # a caller's list is its own: the next caller gets the plans again
        assert plan.ranked_plans(spec, req, today=TODAY, book=BOOK) == fresh
        # a request that differs in how it is paid gets its own prices, not the memo's
        assert plan.ranked_plans(spec, bought, today=TODAY, book=BOOK) == fresh_bought
    assert plan._MEMO.get() is None


def test_the_memo_ends_with_the_answer_and_nested_answers_join_it() -> None:
    with plan.one_answer():
        outer = plan._MEMO.get()
        with plan.one_answer():
            assert plan._MEMO.get() is outer
        assert plan._MEMO.get() is outer
    assert plan._MEMO.get() is None
    assert catalog.gpus()  # the catalog is untouched by any of it


def test_equal_requests_hash_alike_and_searched_variants_apart() -> None:
    req = parse("13B full-finetune budget=150k")
    rebuilt = type(req)(**req.model_dump())  # validated, not constructed: the same request
    assert rebuilt == req and hash(rebuilt) == hash(req)
    variants = [req.model_copy(update=u) for u in ({"headroom": 0.0}, {"offload": "optimizer"},
                                                   {"mode": "buy"}, {"fused_step": True})]
    assert len({hash(v) for v in [req, *variants]}) == 5  # the planner's caches keep them apart


@pytest.mark.parametrize("query", ["13B full-finetune budget=150k mode=buy", "llama-3.1-8b lora"])
def test_without_tokens_days_changes_no_plan(query: str) -> None:
    # why budget_search skips "fewer cards and a longer run" when tokens= is not given
    spec, req = _spec_and_request(query)
    longer = req.model_copy(update={"days": 3650.0})
    assert req.tokens is None
    assert plan.ranked_plans(spec, longer, today=TODAY, book=BOOK) == plan.ranked_plans(
        spec, req, today=TODAY, book=BOOK)


def test_a_boxs_cost_is_kept_per_language_and_inputs() -> None:
    from engine import cost, i18n

    a800 = find_gpu("a800")
    inputs = cost.CostInputs(today=TODAY)
    english = cost.plan_cost(BOOK, a800, 8, inputs)
    with i18n.language("zh"):
        chinese = cost.plan_cost(BOOK, a800, 8, inputs)
    assert chinese.notes != english.notes  # translated notes are not served across languages
    assert cost.plan_cost(BOOK, a800, 8, inputs) == english
    fewer_hours = cost.plan_cost(BOOK, a800, 8, inputs._replace(hours_per_month=100))
    assert fewer_hours.monthly_power < english.monthly_power
