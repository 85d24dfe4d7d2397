"""The reverse question (engine/capacity.py) against the forward one: the users it reports for a
box make that box's forward answer meet the service level, and one more user does not; the
longest context likewise; the largest model runs and the next larger one does not."""

from __future__ import annotations

import random
from datetime import date

import pytest

import engine
from engine import catalog, runs
from engine.capacity import CONTEXT_STEP, LARGEST_METHODS, MAX_USERS, _split, memory_recipes
from engine.cost import ASSUMED_EPOCH_TOKENS
from engine.i18n import _
from engine.parse import parse
from engine.plan import ranked_plans
from engine.prices import price_book
from engine.request import LARGEST_MODEL
from engine.resolve import resolve_model
from engine.schema import Plan
from engine.sizing import prepared, with_native_format

TODAY = date(2026, 12, 2)
BOXES = ("qwen3-32b inference gpu=4090 gpus=8", "llama-3.1-8b inference gpu=4090 gpus=1",
         "qwen2.5-72b inference quant=awq gpu=a100-80gb gpus=2",
         "qwen3-30b-a3b inference gpu=h100-sxm gpus=1 min_speed=40",
         "qwen2.5-7b inference quant=q4_k_m gpu=rtx-3090 gpus=1",
         # more models, cards and service levels: MoE in MXFP4, FP8 KV, a context asked, a tight
         # first-token ceiling, a reasoning distill, Ascend and AMD boards
         "gpt-oss-20b inference gpu=l20 gpus=1 context=16k",
         "glm-4.5-air inference gpu=h20 gpus=4 kv=fp8",
         "llama-3.1-70b inference quant=awq gpu=4090 gpus=4 ttft=1",
         "deepseek-r1-distill-qwen-14b inference gpu=rtx-5090 gpus=2",
         "qwen2.5-32b inference gpu=ascend-910b gpus=2", "llama-3.1-70b inference gpu=mi300x gpus=1")


def forward(text: str, **update: object) -> Plan | None:
    """The forward answer's plan for the box, as the sizing question would ask it (a context
    split into prompt and answer as the box's own request splits it: the answer a reasoning
    model gives, whose prompts the other users' decode steps then carry)."""
    base = parse(text)
    spec, _notes = resolve_model(base.model)
    base = prepared(spec, base)
    split = _split(base, update["context"]) if "context" in update else {}  # type: ignore[arg-type]
    req, _native = with_native_format(spec, base.model_copy(update={**update, **split}))
    plans, _m, _e = ranked_plans(spec, req, today=TODAY, book=price_book())
    return plans[0] if plans else None


def meets(plan: Plan | None) -> bool:
    return (plan is not None and plan.verdict != "no" and plan.service is not None
            and plan.service.meets)


@pytest.mark.parametrize("text", BOXES)
def test_reported_users_meet_and_one_more_does_not(text: str) -> None:
    ans = engine.ask(text, today=TODAY)
    assert ans.capacity is not None and ans.capacity.rows
    for row in ans.capacity.rows:
        if row.users:
            assert meets(forward(text, users=row.users, context=row.context)), row
        if row.users < MAX_USERS:
            assert not meets(forward(text, users=row.users + 1, context=row.context)), row


def test_the_json_answer_agrees_end_to_end() -> None:
    text = "qwen3-32b inference gpu=4090 gpus=8"
    row = next(r for r in engine.ask(text, today=TODAY).capacity.rows  # type: ignore[union-attr]
               if r.context == 8192)
    at = engine.ask(f"{text} users={row.users} context=8k", today=TODAY).plans[0]
    over = engine.ask(f"{text} users={row.users + 1} context=8k", today=TODAY).plans[0]
    assert meets(at) and not meets(over)


def test_limits_read_from_the_failing_answer() -> None:
    ans = engine.ask("qwen3-32b inference gpu=4090 gpus=8", today=TODAY)
    rows = ans.capacity.rows  # type: ignore[union-attr]
    assert {r.limit for r in rows} <= {"weights", "kv-memory", "bandwidth", "compute",
                                       "communication", "prefill", "cap"}
    # 24 GB cards over PCIe: at short contexts the tensor-parallel all-reduces of a hundred-odd
    # rows through the host stop the next user, at long ones the KV cache
    assert rows[0].limit == "communication" and "all-reduces" in rows[0].limit_text
    assert rows[-1].limit == "kv-memory"
    fast = engine.ask("qwen3-30b-a3b inference gpu=h100-sxm gpus=1 min_speed=40", today=TODAY)
    assert any(r.limit in ("bandwidth", "compute") for r in fast.capacity.rows)  # type: ignore[union-attr]


@pytest.mark.parametrize("text", BOXES)
def test_users_fall_as_context_grows(text: str) -> None:
    rows = engine.ask(text, today=TODAY).capacity.rows  # type: ignore[union-attr]
    users = [r.users for r in rows]
    assert users == sorted(users, reverse=True)


@pytest.mark.parametrize(("text", "users"), [("qwen3-32b inference gpu=4090 gpus=8", 20),
                                             ("llama-3.1-8b inference gpu=4090 gpus=1", 4),
                                             ("gpt-oss-20b inference gpu=l20 gpus=1", 1),
                                             ("glm-4.5-air inference gpu=h20 gpus=4 kv=fp8", 64),
                                             ("qwen2.5-72b inference quant=awq "
                                              "gpu=a100-80gb gpus=2 min_speed=25", 8)])
def test_longest_context_for_given_users(text: str, users: int) -> None:
    ans = engine.ask(f"{text} users={users}", today=TODAY)
    cap = ans.capacity
    assert cap is not None and cap.users == users and cap.longest_context
    assert meets(forward(text, users=users, context=cap.longest_context))
    spec = resolve_model(parse(text).model)[0]
    if cap.longest_context + CONTEXT_STEP <= spec.max_context:
        assert not meets(forward(text, users=users, context=cap.longest_context + CONTEXT_STEP))


def test_no_capacity_unless_the_box_is_given() -> None:
    assert engine.ask("qwen3-32b inference", today=TODAY).capacity is None
    assert engine.ask("qwen3-32b inference gpu=4090", today=TODAY).capacity is None


def _train(spec_name: str, method: str, box: str, **recipe: object) -> Plan | None:
    """The forward answer for training this model on the box, asked as the sizing asks it (the
    released format for LoRA's frozen base), with a recipe's request fields when given."""
    spec = catalog.models()[spec_name]
    req = prepared(spec, parse(f"{spec_name} {method} {box}").model_copy(update=recipe))
    plans, _m, _e = ranked_plans(spec, req, today=TODAY, book=price_book())
    return plans[0] if plans else None


TRAIN_BOXES = ("gpu=rtx-4090 gpus=2", "gpu=h100-sxm gpus=8", "gpu=a100-80gb gpus=4",
               "gpu=rtx-3090 gpus=1", "gpu=h20 gpus=8", "gpu=rtx-4090 gpus=1")


def _runs_with_some_recipe(spec_name: str, method: str, box: str) -> bool:
    """The model's forward answer runs on the box as asked or with any memory-saving recipe the
    same-card alternatives would try."""
    return any(_trains(_train(spec_name, method, box, **update))
               for update in ({}, *(u for _c, u, _k in memory_recipes(method))))


def _trains(plan: Plan | None) -> bool:
    """Fits, and one assumed epoch (ASSUMED_EPOCH_TOKENS) ends within a fine-tune's 30 days."""
    return (plan is not None and plan.verdict != "no" and bool(plan.speed.train_tokens_per_s)
            and ASSUMED_EPOCH_TOKENS / plan.speed.train_tokens_per_s <= 30 * 86400)


@pytest.mark.parametrize("box", TRAIN_BOXES)
def test_largest_model_runs_and_the_next_larger_does_not(box: str) -> None:
    ans = engine.ask(f"llama-3.1-8b lora {box}", today=TODAY)
    cap = ans.capacity
    assert cap is not None and [f.method for f in cap.largest] == list(LARGEST_METHODS)
    ordered = sorted(catalog.models().values(), key=lambda m: -m.params)
    for fit in cap.largest:
        assert fit.model is not None
        plan = _train(fit.model, fit.method, box, **fit.recipe_update)
        assert _trains(plan)
        if fit.recipe:  # a recipe is reported only where the model does not run as asked
            as_asked = _train(fit.model, fit.method, box)
            assert as_asked is None or as_asked.verdict == "no"
            assert plan.speed.train_tokens_per_s == pytest.approx(fit.tokens_per_s)
        bigger = [m for m in ordered if m.params > (fit.params or 0)]
        for model in bigger:
            assert not _runs_with_some_recipe(model.name, fit.method, box), (fit.method,
                                                                             model.name)
        if bigger:  # what stops the next larger is its own answer's memory
            nearest = bigger[-1]
            assert fit.next_model is not None
            assert catalog.models()[fit.next_model].params == nearest.params
            failed = _train(fit.next_model, fit.method, box)
            if failed is not None and failed.verdict == "no":
                assert f"{failed.memory.total / 2**30:.1f} GiB" in fit.limit
            elif failed is not None:  # it fits but is too slow for the assumed epoch
                assert "epoch takes" in fit.limit, fit.limit


def test_largest_full_finetune_tries_the_same_card_recipes() -> None:
    """One 4090: the standard AdamW recipe holds only a ~1B model, but the same-card
    alternatives' recipes (torchtune's 8-bit paged AdamW, fused step, chunked loss) hold more;
    "largest" reports the recipe, its cost and speed, and is never smaller than a model someone
    published a full fine-tune of on that one card."""
    box = "gpu=4090 gpus=1"
    cap = engine.ask(f"largest full-finetune {box}", today=TODAY).capacity
    assert cap is not None
    fit = next(f for f in cap.largest if f.method == "full-finetune")
    assert fit.model is not None and fit.recipe and fit.recipe_costs
    assert any(fit.recipe == _(change) and fit.recipe_update == update
               for change, update, _k in memory_recipes("full-finetune"))
    assert fit.recipe in cap.text and fit.recipe_costs in cap.text
    assert f"{fit.tokens_per_s:,.0f} tokens/s" in cap.text
    published = [r for r in runs.runs() if r.method == "full-finetune" and r.gpus == 1
                 and catalog.gpus()[r.gpu].memory_gb <= catalog.gpus()["rtx-4090"].memory_gb]
    assert published
    assert all((fit.params or 0) >= r.spec.params for r in published)
    # the model the answer is then about is planned with that recipe, and it runs
    ans = engine.ask(f"largest full-finetune {box}", today=TODAY)
    assert ans.model.name == fit.model and ans.plans[0].verdict != "no"
    assert ans.plans[0].settings.optimizer == fit.recipe_update["optimizer"]


def test_recipes_tried_keep_what_is_trained() -> None:
    """"largest" never changes the method, the adapters' targets, the base's format or the data
    to make a model fit: those answer another question."""
    for method in LARGEST_METHODS:
        for _change, update, _costs in memory_recipes(method):
            assert not {"method", "targets", "quant", "seq", "context"} & update.keys()
    assert memory_recipes("full-finetune")  # the same-card table is shared, not empty


@pytest.mark.parametrize("text", ["lora gpu=4090 gpus=8", "largest lora gpu=4090 gpus=8",
                                  "largest full-finetune gpu=4090 gpus=1",
                                  "biggest full-finetune gpu=a100-80gb gpus=4"])
def test_largest_as_the_model_answers_for_that_model(text: str) -> None:
    """MODEL largest (or MODEL left out with a box): the answer is about the largest model the
    method runs there, and its plan is the forward answer for that model."""
    assert parse(text).model == LARGEST_MODEL
    ans = engine.ask(text, today=TODAY)
    cap = ans.capacity
    assert cap is not None
    method = parse(text).method
    fit = next(f for f in cap.largest if f.method == method)
    assert ans.model.name == fit.model
    assert ans.plans[0].verdict != "no"
    assert cap.text.startswith(_("the largest catalog model")[:15])
    assert fit.display in cap.text


@pytest.mark.parametrize("text", ["largest inference gpu=4090 gpus=2",
                                  "largest inference gpu=4090 gpus=8 requests=100k"])
def test_largest_served_meets_the_service_level_and_the_next_larger_does_not(text: str) -> None:
    """Serving, the largest is the largest whose forward answer meets the service level for the
    users asked, or those requests= brings."""
    ans = engine.ask(text, today=TODAY)
    cap = ans.capacity
    assert cap is not None and len(cap.largest) == 1
    fit = cap.largest[0]
    assert fit.model == ans.model.name and meets(ans.plans[0])
    bigger = [m for m in catalog.models().values() if m.params > (fit.params or 0)]
    for model in bigger:
        req = prepared(model, parse(text.replace("largest", model.name)))
        plans, _m, _e = ranked_plans(model, req, today=TODAY, book=price_book())
        assert not (plans and meets(plans[0])), model.name


def test_largest_needs_a_box() -> None:
    with pytest.raises(engine.UnknownModel):
        engine.ask("largest lora gpu=4090", today=TODAY)
    with pytest.raises(engine.ParseError):
        parse("lora gpu=4090")  # no count, no box: MODEL is still missing
    smallest = min(catalog.models().values(), key=lambda m: m.params)
    with pytest.raises(engine.UnknownModel, match=f"serves none.*{smallest.display}"):
        engine.ask("largest inference gpu=l4 gpus=1 users=2000", today=TODAY)


def test_fastest_recipe_is_the_fastest_that_fits() -> None:
    ans = engine.ask("llama-3.1-8b full-finetune gpu=h100-sxm gpus=8", today=TODAY)
    cap = ans.capacity
    assert cap is not None and cap.fastest is not None and cap.recipes
    assert cap.fastest.tokens_per_s == max(r.tokens_per_s for r in cap.recipes
                                           if r.verdict == cap.fastest.verdict)
    assert cap.fastest.verdict in ("fits", "tight")


@pytest.mark.parametrize("text", ["llama-3.1-8b full-finetune gpu=h100-sxm gpus=8",
                                  "qwen3-32b lora gpu=4090 gpus=8",
                                  "qwen2.5-7b full-finetune gpu=a100-80gb gpus=2"])
def test_no_step_from_the_fastest_recipe_is_faster_and_as_safe(text: str) -> None:
    """A doubled micro-batch or less recomputation than the fastest recipe either does not fit,
    fits less safely (tight against fits), or is no faster; the answer says which stops it."""
    ans = engine.ask(text, today=TODAY)
    cap = ans.capacity
    assert cap is not None and cap.fastest is not None and cap.fastest_limit
    s = cap.fastest.settings
    order = ("none", "selective", "full")
    steps = [{"batch": (s.batch or 1) * 2}]
    if order.index(s.checkpointing or "none") > 0:
        steps.append({"checkpointing": order[order.index(s.checkpointing or "none") - 1]})
    safety = {"fits": 0, "tight": 1, "no": 2}
    for step in steps:
        knobs = {"checkpointing": s.checkpointing, "batch": s.batch, "offload": s.offload,
                 "zero": s.zero if parse(text).gpus > 1 else None, **step}
        plan = forward(text, **knobs)
        if plan is None or plan.verdict == "no":
            assert "batch" not in step or f"batch={step['batch']}" in cap.fastest_limit
            continue
        if safety[plan.verdict] <= safety[cap.fastest.verdict]:
            assert (plan.speed.train_tokens_per_s or 0) <= cap.fastest.tokens_per_s + 1e-6, step


@pytest.mark.parametrize("text", ["gpt-oss-20b lora gpu=4090 gpus=8",
                                  "llama-3.1-8b full-finetune gpu=a100-80gb gpus=4"])
def test_sharding_is_a_recipe_knob_and_a_faster_tight_one_is_said(text: str) -> None:
    """On several cards each ZeRO stage is tried; the fastest recipe that fits comes first, and a
    faster one that runs only tight is named beside it, as its forward answer has it."""
    cap = engine.ask(text, today=TODAY).capacity
    assert cap is not None and cap.fastest is not None
    fits = [r for r in cap.recipes if r.verdict == "fits"]
    assert cap.fastest.tokens_per_s == max(r.tokens_per_s for r in fits)
    for stage in (0, 1, 2, 3):
        plan = forward(text, zero=stage, checkpointing=cap.fastest.settings.checkpointing,
                       batch=cap.fastest.settings.batch, offload=cap.fastest.settings.offload)
        if plan is not None and plan.verdict == "fits":
            assert (plan.speed.train_tokens_per_s or 0) <= cap.fastest.tokens_per_s + 1e-6
    tight = [r for r in cap.recipes if r.verdict == "tight"]
    if tight and max(r.tokens_per_s for r in tight) > cap.fastest.tokens_per_s:
        best = max(tight, key=lambda r: r.tokens_per_s)
        assert best.change in cap.fastest_limit
        again = forward(text, zero=best.settings.zero, checkpointing=best.settings.checkpointing,
                        batch=best.settings.batch, offload=best.settings.offload)
        assert again is not None and again.verdict == "tight"
        assert again.speed.train_tokens_per_s == pytest.approx(best.tokens_per_s)
    assert len({r.settings.zero for r in cap.recipes}) > 1 or tight  # the stages were tried


def test_with_a_deadline_the_largest_is_the_largest_that_meets_it() -> None:
    box = "gpu=4090 gpus=8 tokens=1B days=3"
    ans = engine.ask(f"largest lora {box}", today=TODAY)
    cap = ans.capacity
    assert cap is not None
    fit = next(f for f in cap.largest if f.method == "lora")
    # with the recipe the answer names (e.g. 8-bit paged AdamW frees what EP=8 needs on 24 GB)
    assert fit.model == ans.model.name
    assert meets(_train(fit.model, "lora", box, **(fit.recipe_update or {})))
    for model in catalog.models().values():
        if model.params > (fit.params or 0):
            assert not meets(_train(model.name, "lora", box)), model.name
    assert fit.next_model is not None and ("3 days" in fit.limit or "GiB" in fit.limit)


def test_a_model_no_recipe_runs_on_the_box_says_why() -> None:
    text = "llama-3.1-70b full-finetune gpu=4090 gpus=8"
    cap = engine.ask(text, today=TODAY).capacity
    assert cap is not None and cap.fastest is None and not cap.recipes
    plan = forward(text)
    assert plan is not None and plan.verdict == "no"
    assert f"{plan.memory.total / 2**30:.1f} GiB per GPU" in cap.text


def _sampled_boxes(count: int, seed: int = 25) -> list[str]:
    """Boxes no one picked: a seeded sample of catalog models up to 80B (not templates), cards
    and counts, each with a service level and sometimes FP8 KV, so the property is checked
    beyond the hand-made cases (the seed keeps the run repeatable)."""
    rng = random.Random(seed)
    models = sorted(m.name for m in catalog.models().values() if m.params <= 80e9)
    cards = sorted(catalog.gpus())
    out = []
    while len(out) < count:
        text = (f"{rng.choice(models)} inference gpu={rng.choice(cards)} "
                f"gpus={rng.choice((1, 2, 4, 8))} min_speed={rng.choice((10, 15, 30))}"
                + (" kv=fp8" if rng.random() < 0.3 else ""))
        plan = forward(text, users=1)
        if plan is not None and plan.verdict != "no":  # a box the model runs on at all
            out.append(text)
    return out


@pytest.mark.parametrize("text", _sampled_boxes(6))
def test_sampled_boxes_report_users_that_meet_and_one_more_that_does_not(text: str) -> None:
    ans = engine.ask(text, today=TODAY)
    assert ans.capacity is not None
    for row in ans.capacity.rows:
        if row.users:
            assert meets(forward(text, users=row.users, context=row.context)), row
        if row.users < MAX_USERS:
            assert not meets(forward(text, users=row.users + 1, context=row.context)), row


def test_a_box_the_weights_alone_overflow_says_so() -> None:
    """Not even one user: when the weights, overhead and activations alone pass what the engine
    may use, that is the limit, not the KV cache."""
    text = "qwen2.5-72b inference gpu=4090 gpus=2"
    cap = engine.ask(text, today=TODAY).capacity
    assert cap is not None and cap.rows[0].users == 0 and cap.rows[0].limit == "weights"
    plan = forward(text, users=1, context=cap.rows[0].context)
    assert plan is not None and plan.verdict == "no"
    m = plan.memory
    assert m.weights + m.overhead + m.activations > (m.usable or m.capacity)
    assert f"{(m.weights + m.overhead + m.activations) / 2**30:.1f} GiB" in cap.text


@pytest.mark.parametrize("text", (*BOXES[:6], "deepseek-v3 inference gpu=h20 gpus=16"))
def test_each_limit_is_what_the_failing_answer_misses(text: str) -> None:
    """A decode limit is a pace under the floor with the KV cache still holding everyone; a KV
    limit is the cache holding fewer; a first-token limit is the first token over its ceiling."""
    cap = engine.ask(text, today=TODAY).capacity
    assert cap is not None
    for row in cap.rows:
        if row.users in (0, MAX_USERS):
            continue
        over = forward(text, users=row.users + 1, context=row.context)
        assert over is not None and over.service is not None, row
        sv = over.service
        if row.limit in ("bandwidth", "compute"):
            assert sv.decode_per_user is not None and sv.decode_per_user < sv.decode_floor
            assert sv.users_held is None or sv.users_held > row.users
        elif row.limit == "kv-memory":
            assert over.verdict == "no" or (sv.users_held is not None
                                            and sv.users_held <= row.users)
        elif row.limit == "prefill":
            assert sv.ttft_s is not None and sv.ttft_s > (sv.ttft_ceiling_s or 0)


def test_the_remembered_largest_fit_is_the_one_computed_afresh() -> None:
    """capacity.largest_fit keeps what it found per box and recipe: the same as a fresh walk,
    whichever model was asked, and never across languages (its limit text is translated)."""
    from engine import capacity
    from engine.i18n import language

    box = parse("llama-3.1-8b lora gpu=4090 gpus=2")
    other = box.model_copy(update={"model": "qwen3-8b"})
    book = price_book()
    fresh = capacity._largest_fit(box, TODAY, book)
    assert capacity.largest_fit(box, TODAY, book) == fresh
    assert capacity.largest_fit(other, TODAY, book) == fresh
    with language("zh"):
        zh = capacity.largest_fit(box, TODAY, book)
        assert zh == capacity._largest_fit(box, TODAY, book)
    assert not fresh[0].limit or zh[0].limit != fresh[0].limit
