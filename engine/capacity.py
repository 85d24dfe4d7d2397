"""What a box you own can serve or train: the reverse of the sizing question.

Serving: for each context length, the most concurrent users whose forward answer on the box (the
plan engine/plan.py picks for gpu=, gpus=, users=, context=) runs and meets the service level,
found by searching over that forward answer: the users reported meet it and one more does not.
The answer never re-derives memory or speed, so it follows every change to the serving model.
What stops one more user is read from that failing forward answer: the KV cache no longer fits
(memory), or decode per user falls under the floor (bandwidth or compute, from the decode step's
parts), or the first token comes too late (prefill compute).

Training: the largest catalog model each training method runs on the box, and for the model asked
the fastest recipe (checkpointing, micro-batch, offload) that fits, all by the forward answer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from engine import catalog, speed
from engine.architecture import ModelSpec
from engine.catalog import GpuSpec
from engine.i18n import N_, _
from engine.plan import ranked_plans
from engine.prices import PriceBook
from engine.recommend import method_name
from engine.request import Request
from engine.schema import Capacity, CapacityRow, ModelFit, Plan, Recipe

CONTEXTS = (2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)
MAX_USERS = 100_000  # Request's own bound on users=
CONTEXT_STEP = 1024  # the longest context is found to the nearest 1k tokens
LARGEST_METHODS = ("full-finetune", "lora", "qlora")
RECIPE_KNOBS = (("checkpointing", ("none", "selective", "full")), ("batch", (1, 2, 4, 8)),
                ("offload", ("none", "optimizer")))
LIMITS = {"kv-memory": N_("KV cache memory"), "bandwidth": N_("memory bandwidth (decode)"),
          "compute": N_("compute (decode)"), "prefill": N_("prefill compute (first token)"),
          "cap": N_("the 100,000-user bound")}

Forward = Callable[[Request], Plan | None]


def forward_answer(spec: ModelSpec, today: date, book: PriceBook) -> Forward:
    """The plan the forward answer gives for a request pinned to the box."""

    def plan_for(req: Request) -> Plan | None:
        plans, _misses, _excluded = ranked_plans(spec, req, today=today, book=book)
        return plans[0] if plans else None

    return plan_for


def meets(plan: Plan | None) -> bool:
    """The forward answer runs and meets the service level (the budget aside)."""
    return (plan is not None and plan.verdict != "no" and plan.service is not None
            and plan.service.meets)


def _at(req: Request, **update: object) -> Request:
    return req.model_copy(update={"budget": None, **update})


def _split(req: Request, context: int) -> dict[str, object]:
    """A sequence of `context` tokens split as the request splits its own: the answer it asked
    for (or a reasoning model's typical one), at most half the context; the rest prompt."""
    output = min(req.output, max(1, context // 2)) if req.output is not None else None
    return {"context": context, "output": output, "prompt": None}


def most_users(forward: Forward, req: Request, context: int) -> tuple[int, Plan | None,
                                                                     Plan | None]:
    """(n, the plan at n users, the plan at n + 1): n meets the service level at `context`,
    n + 1 does not (n = 0 when one user does not; the bound when the bound does)."""
    def probe(users: int) -> Plan | None:
        return forward(_at(req, users=users, **_split(req, context)))

    first = probe(1)
    if not meets(first):
        return 0, None, first
    lo, lo_plan, hi = 1, first, 2
    hi_plan = probe(hi)
    while meets(hi_plan):  # gallop: the first failing count brackets the answer
        if hi >= MAX_USERS:
            return MAX_USERS, hi_plan, None
        lo, lo_plan = hi, hi_plan
        hi = min(MAX_USERS, hi * 2)
        hi_plan = probe(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        mid_plan = probe(mid)
        if meets(mid_plan):
            lo, lo_plan = mid, mid_plan
        else:
            hi, hi_plan = mid, mid_plan
    return lo, lo_plan, hi_plan


def longest_context(forward: Forward, req: Request, users: int, ceiling: int) -> int:
    """The longest context (to CONTEXT_STEP) `users` share while meeting the service level."""
    def ok(steps: int) -> bool:
        return meets(forward(_at(req, users=users, **_split(req, steps * CONTEXT_STEP))))

    lo, hi = 0, ceiling // CONTEXT_STEP
    if hi == 0 or not ok(1):
        return 0
    lo = 1
    if ok(hi):
        return hi * CONTEXT_STEP
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo * CONTEXT_STEP


def limit_of(spec: ModelSpec, gpu: GpuSpec, req: Request, failed: Plan | None,
             users: int, context: int) -> tuple[str, str]:
    """What stops one more user, read from the forward answer that fails."""
    if users >= MAX_USERS:
        return "cap", _(LIMITS["cap"])
    if failed is None or failed.verdict == "no":
        return "kv-memory", _("{users} users x {context} tokens of KV cache no longer fit the "
                              "cards").format(users=users + 1, context=context)
    sv, s = failed.service, failed.settings
    if sv is not None and sv.users_held is not None and sv.users_held <= users:
        return "kv-memory", _("the KV cache holds {held} users at {context} tokens with room to "
                              "spare, not {users}").format(held=sv.users_held, context=context,
                                                           users=users + 1)
    per_user = sv.decode_per_user if sv else None
    if per_user is not None and sv is not None and sv.decode_floor and per_user < sv.decode_floor:
        _step, parts = speed.decode_step_s(
            spec, gpu, quant=s.quant, context=context, users=-(-(users + 1) // s.replicas),
            kv_bytes=1 if req.kv == "fp8" else 2, tp=s.tp, engine=s.engine or "vllm")
        kind = "compute" if parts["compute"] > parts["read"] else "bandwidth"
        return kind, _("{users} users get {per:.1f} tokens/s each, under the {floor:g} asked "
                       "({what}-bound: a decode step reads {gb:.1f} GB)").format(
            users=users + 1, per=per_user, floor=sv.decode_floor,
            what=_(LIMITS[kind]), gb=parts["bytes"] / 1e9)
    return "prefill", _("the first token takes {ttft:.1f} s, over the {ceiling:g} s allowed").format(
        ttft=sv.ttft_s or 0.0 if sv else 0.0, ceiling=sv.ttft_ceiling_s or 0.0 if sv else 0.0)


def serving_capacity(spec: ModelSpec, req: Request, gpu: GpuSpec, today: date,
                     book: PriceBook) -> Capacity:
    forward = forward_answer(spec, today, book)
    contexts = sorted({c for c in CONTEXTS if c <= spec.max_context}
                      | ({req.context} if "context" in req.model_fields_set else set()))
    rows = []
    for context in contexts:
        users, good, failed = most_users(forward, req, context)
        kind, text = limit_of(spec, gpu, req, failed, users, context)
        sv = good.service if good else None
        rows.append(CapacityRow.build(context=context, users=users,
                                      decode_per_user=sv.decode_per_user if sv else None,
                                      ttft_s=sv.ttft_s if sv else None, limit=kind,
                                      limit_text=text))
        if users == 0:
            break  # longer contexts only need more
    given = req.users if "users" in req.model_fields_set else None
    longest = (longest_context(forward, req, given, spec.max_context) if given is not None
               else None)
    text = _capacity_text(spec, gpu, req, rows, given, longest)
    return Capacity.build(gpu=gpu.name, gpus=req.gpus or 1, decode_floor=req.decode_floor,
                          ttft_rule=_("first token within max(2 s, context / 800 tokens/s)")
                          if req.ttft is None else _("first token within {s:g} s").format(
                              s=req.ttft),
                          rows=rows, users=given, longest_context=longest, text=text)


def _capacity_text(spec: ModelSpec, gpu: GpuSpec, req: Request, rows: list[CapacityRow],
                   given: int | None, longest: int | None) -> str:
    box = f"{req.gpus} x {gpu.display}"
    best = [r for r in rows if r.users]
    if not best:
        return _("{box} cannot serve {model} to even one user at {floor:g} tokens/s: {why}").format(
            box=box, model=spec.display, floor=req.decode_floor,
            why=rows[0].limit_text if rows else "")
    first = next((r for r in best if r.context >= 4096), best[0])
    text = _("{box} serves {model} to {users:,} users at once with {context} tokens each, at "
             "least {floor:g} tokens/s per user; then {limit} stops it").format(
        box=box, model=spec.display, users=first.users, context=_k(first.context),
        floor=req.decode_floor, limit=_(LIMITS[first.limit]))
    if given is not None:
        text += _("; {users} users can each have up to {context} tokens").format(
            users=given, context=_k(longest or 0))
    return text


def _k(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens >= 1024 and tokens % 1024 == 0 else f"{tokens:,}"


def training_capacity(spec: ModelSpec, req: Request, gpu: GpuSpec, today: date,
                      book: PriceBook) -> Capacity:
    largest = []
    models = sorted(catalog.models().values(), key=lambda m: -m.params)
    for name in LARGEST_METHODS:
        found = ModelFit.build(method=name, model=None)
        for model in models:
            probe = _at(req, model=model.name, method=name, quant=None, tokens=None)
            plan = forward_answer(model, today, book)(probe)
            if plan is not None and plan.verdict != "no":
                found = ModelFit.build(method=name, model=model.name, display=model.display,
                                       params=model.params, verdict=plan.verdict,
                                       tokens_per_s=plan.speed.train_tokens_per_s)
                break
        largest.append(found)
    recipes = fastest_recipes(spec, req, gpu, today, book)
    fastest = recipes[0] if recipes else None
    box = f"{req.gpus} x {gpu.display}"
    parts = [_("{method}: up to {model}").format(method=method_name(f.method), model=f.display)
             if f.model else _("{method}: no catalog model").format(method=method_name(f.method))
             for f in largest]
    text = _("{box} trains {list}").format(box=box, list="; ".join(parts))
    if fastest is not None:
        text += _("; {model} fastest with {change} at {rate:,.0f} tokens/s").format(
            model=spec.display, change=fastest.change, rate=fastest.tokens_per_s)
    return Capacity.build(gpu=gpu.name, gpus=req.gpus or 1, largest=largest, fastest=fastest,
                          recipes=recipes[:5], text=text)


def fastest_recipes(spec: ModelSpec, req: Request, gpu: GpuSpec, today: date,
                    book: PriceBook) -> list[Recipe]:
    """Recipes of the asked method that run on the box, fastest first."""
    forward = forward_answer(spec, today, book)
    found: list[Recipe] = []
    seen = set()
    for checkpointing in RECIPE_KNOBS[0][1]:
        for batch in RECIPE_KNOBS[1][1]:
            for offload in RECIPE_KNOBS[2][1]:
                plan = forward(_at(req, checkpointing=checkpointing, batch=batch,
                                   offload=offload))
                if plan is None or plan.verdict == "no" or not plan.speed.train_tokens_per_s:
                    continue
                key = (checkpointing, batch, offload)
                if key in seen:
                    continue
                seen.add(key)
                change = _("checkpointing={ck}, batch={batch}, offload={off}").format(
                    ck=checkpointing, batch=batch, off=offload)
                found.append(Recipe.build(change=change, settings=plan.settings,
                                          tokens_per_s=plan.speed.train_tokens_per_s,
                                          verdict=plan.verdict))
    found.sort(key=lambda r: (r.verdict != "fits", -r.tokens_per_s))
    return found


def at_capacity(spec: ModelSpec, req: Request, cap: Capacity | None, today: date,
                book: PriceBook) -> tuple[Request, Plan] | None:
    """A serving box asked about without users=: the request and forward plan at the most users
    it serves at the context asked (what the box is worth comparing with an API at)."""
    if cap is None or not req.is_serving or "users" in req.model_fields_set or not cap.rows:
        return None
    rows = [r for r in cap.rows if r.context <= req.context and r.users] or \
        [r for r in cap.rows if r.users]
    if not rows:
        return None
    row = rows[-1] if rows[-1].context <= req.context else rows[0]
    full = _at(req, users=row.users, **_split(req, row.context)).model_copy(
        update={"budget": req.budget})
    plan = forward_answer(spec, today, book)(full)
    return (full, plan) if meets(plan) and plan is not None else None


def capacity(spec: ModelSpec, req: Request, today: date, book: PriceBook) -> Capacity | None:
    """The reverse answer for a box given by gpu= and gpus=; None otherwise."""
    if not (req.gpu and req.gpus):
        return None
    gpu = catalog.gpus()[req.gpu]
    if req.is_serving:
        return serving_capacity(spec, req, gpu, today, book)
    return training_capacity(spec, req, gpu, today, book)

