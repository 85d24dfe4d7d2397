"""What a box you own can serve or train: the reverse of the sizing question.

Serving: for each context length, the most concurrent users whose forward answer on the box (the
plan engine/plan.py picks for gpu=, gpus=, users=, context=) runs and meets the service level,
found by searching over that forward answer: the users reported meet it and one more does not.
The answer never re-derives memory or speed, so it follows every change to the serving model.
What stops one more user is read from that failing forward answer: the KV cache no longer fits
(memory), or decode per user falls under the floor (bandwidth or compute, from the decode step's
parts), or the first token comes too late (prefill compute).

Training: the largest catalog model each training method runs on the box, and for the model asked
the fastest recipe (sharding, checkpointing, micro-batch, offload) that fits, all by the forward
answer; what stops the next larger model and the next faster recipe is read from their failing
answers.

MODEL `largest` (or MODEL left out when gpu= and gpus= name a box) asks the reverse question for
the model itself: the largest catalog model the method runs on the box (serving: at the service
level for users= and context=), which the answer is then about.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from datetime import date

from engine import catalog, i18n, speed
from engine.alternatives import RECIPES
from engine.architecture import ModelSpec
from engine.catalog import GpuSpec
from engine.cost import ASSUMED_EPOCH_TOKENS
from engine.i18n import N_, _, counted
from engine.memory import GIB
from engine.plan import KV_SPARE, ranked_plans
from engine.prices import PriceBook
from engine.recommend import method_name, tokens_text
from engine.request import Request
from engine.schema import Capacity, CapacityRow, ModelFit, Plan, Recipe

CONTEXTS = (2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)
MAX_USERS = 100_000  # Request's own bound on users=
CONTEXT_STEP = 1024  # the longest context is found to the nearest 1k tokens
LARGEST_METHODS = ("full-finetune", "lora", "qlora")
RECIPE_KNOBS = (("checkpointing", ("none", "selective", "full")), ("batch", (1, 2, 4, 8)),
                ("offload", ("none", "optimizer")))
ZERO_STAGES = (0, 1, 2, 3)  # DDP, then ZeRO-1/2/3 (FSDP): sharding is a recipe knob on several cards
LIMITS = {"weights": N_("the weights' memory"), "kv-memory": N_("KV cache memory"),
          "bandwidth": N_("memory bandwidth (decode)"), "compute": N_("compute (decode)"),
          "communication": N_("the links between the cards (decode)"),
          "prefill": N_("prefill compute (first token)"), "cap": N_("the 100,000-user bound")}
BOUND = {"compute": N_("compute-bound"), "bandwidth": N_("bandwidth-bound")}
# Request fields that change what is trained or on what data (the method, the adapters' targets,
# the base's format, the sequence): a recipe setting them answers another question, so "largest"
# tries only the same-card recipes (engine/alternatives.py RECIPES) that leave them alone.
WORKLOAD_FIELDS = frozenset({"method", "targets", "quant", "seq", "context", "kv", "engine"})
FIT_WORDS = {"fits": N_("fits"), "tight": N_("runs tight, under the headroom kept")}

Forward = Callable[[Request], Plan | None]
# the request the forward answer would ask for a model (engine.sizing.prepared: a reasoning model's
# context, the released format), so a probe for another model is asked as its own question is
Prepare = Callable[[ModelSpec, Request], Request]


def _as_asked(spec: ModelSpec, req: Request) -> Request:
    return req


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
    if failed is not None and failed.verdict == "no" and users == 0:
        m = failed.memory
        fixed = m.weights + m.overhead + m.activations  # all but the KV cache
        room = m.usable or m.capacity
        if fixed > room:
            return "weights", _("the weights alone take {need:.1f} GiB per GPU before any KV "
                                "cache, over the {room:.1f} GiB the engine may use").format(
                need=fixed / GIB, room=room / GIB)
    if failed is None or failed.verdict == "no":
        return "kv-memory", _("{users} x {context} tokens of KV cache no longer fit the "
                              "cards").format(users=users_text(users + 1), context=context)
    sv, s = failed.service, failed.settings
    if sv is not None and sv.users_held is not None and sv.users_held <= users:
        return "kv-memory", _("the KV cache holds {held} at {context:,} tokens with {spare:.0%} "
                              "of blocks kept free for admissions, not {users}").format(
            held=counted(sv.users_held, "user"), context=context, spare=KV_SPARE - 1,
            users=users + 1)
    per_user = sv.decode_per_user if sv else None
    if per_user is not None and sv is not None and sv.decode_floor and per_user < sv.decode_floor:
        # the failing plan's own decode step: its replica's users, sharding and the other
        # users' prompts prefilled inside each step (as engine/speed.py's serve_speed counts it)
        replica_users = -(-(users + 1) // s.replicas)
        others, _everyone = speed.interleaved_prompt_tokens(replica_users, s.prompt or 0,
                                                             s.output or 0)
        _step, parts = speed.decode_step_s(
            spec, gpu, quant=s.quant, context=context, users=replica_users,
            kv_bytes=1 if req.kv == "fp8" else 2, tp=s.tp, engine=s.engine or "vllm", ep=s.ep,
            dp_attn=s.dp_attention, prefill_tokens=others)
        gpus = counted(failed.gpus // max(1, s.replicas), "GPU")
        if parts["comm"] > max(parts["read"], parts["compute"]):
            # every row's hidden state crosses the link in each layer's all-reduces (and each
            # MoE layer's all-to-alls): over PCIe that, not the cards, sets the step
            return "communication", _(
                "{users} get {per:.1f} tokens/s each, under the {floor:g} asked (decode is"
                " communication-bound: each step's all-reduces and all-to-alls take {ms:.0f} ms"
                " over {gpus})").format(users=users_text(users + 1), per=per_user,
                                       floor=sv.decode_floor, ms=parts["comm"] * 1e3, gpus=gpus)
        kind = "compute" if parts["compute"] > parts["read"] else "bandwidth"
        return kind, _("{users} get {per:.1f} tokens/s each, under the {floor:g} asked "
                       "(decode is {bound}: each step reads {gb:.1f} GB over {gpus})").format(
            users=users_text(users + 1), per=per_user, floor=sv.decode_floor,
            bound=_(BOUND[kind]), gb=parts["bytes"] / 1e9, gpus=gpus)
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
    text = _("{box} serves {model} to {users} at once with {context} tokens each, at "
             "least {floor:g} tokens/s per user; then {limit} stops it").format(
        box=box, model=spec.display, users=users_text(first.users), context=_k(first.context),
        floor=req.decode_floor, limit=_(LIMITS[first.limit]))
    if given is not None and longest:
        text += _("; {users} can each have up to {context} tokens").format(
            users=users_text(given), context=_k(longest))
    elif given is not None:
        text += _("; no context serves {users} at the service level").format(
            users=users_text(given))
    return text


def users_text(users: int) -> str:
    return counted(users, "user")


def _k(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens >= 1024 and tokens % 1024 == 0 else f"{tokens:,}"


def runs(req: Request, plan: Plan | None) -> bool:
    """The forward answer runs on the box and, serving, meets the service level; training with
    tokens=, meets the deadline; training without, finishes one assumed epoch within it (a model
    that fits only by offloading everything to host RAM at a few tokens/s is not one the box
    trains)."""
    if req.is_serving or req.tokens is not None:
        return meets(plan)
    if plan is None or plan.verdict == "no":
        return False
    days = _epoch_days(plan)
    return days is not None and days <= req.deadline_days


def _epoch_days(plan: Plan) -> float | None:
    """Days one assumed epoch (engine/cost.py ASSUMED_EPOCH_TOKENS) takes on the plan."""
    rate = plan.speed.train_tokens_per_s
    return ASSUMED_EPOCH_TOKENS / rate / 86400 if rate else None


def memory_recipes(method: str) -> list[tuple[str, dict[str, object], str]]:
    """The same-card recipes (engine/alternatives.py RECIPES) that save memory for `method`
    without changing what is trained: (change, the request fields it sets, what it costs)."""
    return [(r.change, r.update, r.costs) for r in RECIPES
            if method in r.methods and not WORKLOAD_FIELDS & r.update.keys()]


def _recipe_probes(req: Request) -> list[tuple[str, dict[str, object], str]]:
    """The request as asked, then (training) each memory-saving recipe it does not already use."""
    probes: list[tuple[str, dict[str, object], str]] = [("", {}, "")]
    if req.is_training:
        probes += [(change, update, costs) for change, update, costs in memory_recipes(req.method)
                   if not all(getattr(req, k) == v for k, v in update.items())]
    return probes


# largest_fit walks the catalog with a forward answer per model (0.2-0.7 s); the same box and
# recipe is asked about again and again (a thread's follow-ups, every model asked on one box), and
# the answer does not depend on which model was asked: kept per process, newest last
_FITS: OrderedDict[tuple[object, ...], tuple[PriceBook, tuple[ModelFit, ModelSpec | None]]] = (
    OrderedDict())
FITS_KEPT = 128


def largest_fit(req: Request, today: date, book: PriceBook,
                prepare: Prepare = _as_asked) -> tuple[ModelFit, ModelSpec | None]:
    """`_largest_fit`, remembered for the same box, recipe, day, price book, language and catalog
    (the asked model is replaced by every catalog model in turn, so it is not part of the key)."""
    key = (req.model_copy(update={"model": ""}), today, id(book), prepare, i18n.current(),
           len(catalog.models()))
    found = _FITS.get(key)
    if found is not None and found[0] is book:
        _FITS.move_to_end(key)
        return found[1]
    fit = _largest_fit(req, today, book, prepare)
    _FITS[key] = (book, fit)
    while len(_FITS) > FITS_KEPT:
        _FITS.popitem(last=False)
    return fit


def _largest_fit(req: Request, today: date, book: PriceBook,
                 prepare: Prepare = _as_asked) -> tuple[ModelFit, ModelSpec | None]:
    """The largest catalog model req.method runs on the box (serving: at the service level), by
    the forward answer for each model from the largest down, and what stops the next larger one;
    with its spec (None when no catalog model runs). Training, a model that does not run as asked
    is tried with each memory-saving recipe the same-card alternatives use (8-bit paged AdamW,
    the fused optimizer step, chunked loss, activation offload), lightest change first: the fit
    names the recipe that makes it run and what that costs."""
    models = sorted(catalog.models().values(), key=lambda m: (-m.params, m.name))
    failures: list[tuple[ModelSpec, Plan | None, tuple[str, Plan] | None]] = []
    probes = _recipe_probes(req)
    for model in models:
        asked = _at(req, model=model.name, quant=req.quant if req.is_serving else None)
        forward = forward_answer(model, today, book)
        first: Plan | None = None
        lightest: tuple[str, Plan] | None = None  # the failing recipe that needs least memory
        found: tuple[str, dict[str, object], str, Plan] | None = None
        for change, update, costs in probes:
            plan = forward(prepare(model, asked.model_copy(update=update)))
            if not update:
                first = plan  # why it fails is said from the recipe as asked
            if runs(req, plan):
                assert plan is not None
                found = (change, update, costs, plan)
                break
            if update and plan is not None and (
                    lightest is None or plan.memory.total < lightest[1].memory.total):
                lightest = (change, plan)
        if found is None:
            failures.append((model, first, lightest))
            continue
        change, update, costs, plan = found
        bigger = next(((m, p, light) for m, p, light in reversed(failures)
                       if m.params > model.params), None)
        limit = _("the largest catalog model")
        if bigger:
            limit = _why_not(req, bigger[0], bigger[1]) + _still_not(bigger[2], len(probes) > 1)
        return ModelFit.build(
            method=req.method, model=model.name, display=model.display, params=model.params,
            verdict=plan.verdict, tokens_per_s=(plan.speed.decode_tokens_per_s if req.is_serving
                                                else plan.speed.train_tokens_per_s),
            recipe=_(change) if change else "", recipe_update=dict(update),
            recipe_costs=_(costs) if costs else "",
            host_ram_gb=plan.memory.host_offload / 1e9 if change else 0.0,
            next_model=bigger[0].name if bigger else None, limit=limit), model
    smallest = failures[-1] if failures else None
    return ModelFit.build(method=req.method, model=None,
                          next_model=smallest[0].name if smallest else None,
                          limit=_why_not(req, smallest[0], smallest[1])
                          + _still_not(smallest[2], len(probes) > 1) if smallest else ""), None


def _still_not(lightest: tuple[str, Plan] | None, tried: bool) -> str:
    """What the memory-saving recipe that comes closest still needs (none tried: nothing)."""
    if lightest is not None and lightest[1].verdict == "no":
        m = lightest[1].memory
        return _(", and {recipe} still needs {need:.1f} GiB").format(recipe=_(lightest[0]),
                                                              need=m.total / GIB)
    return _(", nor with any of the memory-saving recipes tried") if tried else ""


def _why_not(req: Request, model: ModelSpec, plan: Plan | None) -> str:
    """Why a model's forward answer on the box does not run (or misses the service level or the
    deadline)."""
    size = model.params / 1e9
    if plan is None:
        return _("{model} ({size:.1f}B) has no valid sharding on these cards").format(
            model=model.display, size=size)
    m = plan.memory
    if plan.verdict == "no":
        return _("{model} ({size:.1f}B) needs {need:.1f} GiB per GPU, over the {card:.0f} GiB "
                 "card").format(model=model.display, size=size, need=m.total / GIB,
                                card=m.capacity / GIB)
    misses = _("; ").join(plan.service.misses) if plan.service and plan.service.misses else ""
    days = _epoch_days(plan)
    if req.is_training and req.tokens is None and days is not None:
        return _("{model} ({size:.1f}B) runs but one assumed {tokens}-token epoch takes {days:,.0f} "
                 "days, over the {deadline:g} allowed (tokens= and days= set them)").format(
            model=model.display, size=size, tokens=tokens_text(ASSUMED_EPOCH_TOKENS), days=days,
            deadline=req.deadline_days)
    if req.is_training:
        return _("{model} ({size:.1f}B) runs but misses the deadline: {misses}").format(
            model=model.display, size=size, misses=misses or _("too slow"))
    return _("{model} ({size:.1f}B) runs but misses the service level: {misses}").format(
        model=model.display, size=size, misses=misses or _("too slow"))


def training_capacity(spec: ModelSpec, req: Request, gpu: GpuSpec, today: date,
                      book: PriceBook, prepare: Prepare = _as_asked,
                      original: Request | None = None, known: ModelFit | None = None) -> Capacity:
    """The largest model each training method runs on the box (`known`: the one already found
    for MODEL largest), and the asked model's recipes, the fastest that fits first, with what
    stops a faster one."""
    base = original or req
    if known is not None and known.recipe_update:  # the other methods start from the recipe asked
        base = base.model_copy(update={k: Request.model_fields[k].default
                                       for k in known.recipe_update})
    largest = [known if known is not None and known.method == name else
               largest_fit(_at(base, method=name), today, book, prepare)[0]
               for name in LARGEST_METHODS]
    recipes = fastest_recipes(spec, req, gpu, today, book)
    fastest = recipes[0] if recipes else None
    tight = next((r for r in recipes if r.verdict == "tight"), None)  # the fastest tight one
    box = f"{req.gpus} x {gpu.display}"
    parts = [(_("{method}: up to {model}").format(method=method_name(f.method), model=f.display)
              + (_(" ({recipe}, {gb:,.0f} GB of host RAM per GPU)").format(
                  recipe=f.recipe, gb=f.host_ram_gb) if f.recipe and f.host_ram_gb
                 else _(" ({recipe})").format(recipe=f.recipe) if f.recipe else ""))
             if f.model else _("{method}: no catalog model").format(method=method_name(f.method))
             for f in largest]
    text = _("{box} trains {list}").format(box=box, list=_("; ").join(parts))
    fastest_limit = ""
    if fastest is None:  # the model asked: why no recipe runs, from its own forward answer
        text += _("; ") + _why_not(req, spec, forward_answer(spec, today, book)(_at(req)))
    else:
        text += _("; {model} fastest with {change} at {rate:,.0f} tokens/s").format(
            model=spec.display, change=fastest.change, rate=fastest.tokens_per_s)
        fastest_limit = _faster_limit(spec, req, fastest, today, book)
        if (fastest.verdict == "fits" and tight is not None
                and tight.tokens_per_s > fastest.tokens_per_s):
            fastest_limit = _("faster, but only tight (under the headroom kept): {change} at "
                              "{rate:,.0f} tokens/s").format(
                change=tight.change, rate=tight.tokens_per_s) + _("; ") + fastest_limit
    shown = recipes[:5] + [r for r in recipes[5:] if r is tight]
    return Capacity.build(gpu=gpu.name, gpus=req.gpus or 1, largest=largest, fastest=fastest,
                          recipes=shown, fastest_limit=fastest_limit, text=text)


def _faster_limit(spec: ModelSpec, req: Request, fastest: Recipe, today: date,
                  book: PriceBook) -> str:
    """What stops a faster recipe than `fastest`: the next step on each knob that speeds
    training (a doubled micro-batch, less recomputation), read from its forward answer."""
    s = fastest.settings
    checkpointing = s.checkpointing or "none"
    steps: list[dict[str, object]] = []
    if (s.batch or 1) < RECIPE_KNOBS[1][1][-1]:
        steps.append({"batch": (s.batch or 1) * 2})
    order = RECIPE_KNOBS[0][1]
    if checkpointing in order and order.index(checkpointing) > 0:
        steps.append({"checkpointing": order[order.index(checkpointing) - 1]})
    said = []
    forward = forward_answer(spec, today, book)
    for step in steps:
        knobs = {"checkpointing": checkpointing, "batch": s.batch or 1,
                 "offload": s.offload or "none", "zero": s.zero if (req.gpus or 1) > 1 else None,
                 **step}
        plan = forward(_at(req, **knobs))
        name = ", ".join(f"{k}={v}" for k, v in step.items())
        if plan is None or plan.verdict == "no":
            need = plan.memory.total / GIB if plan is not None else 0.0
            card = plan.memory.capacity / GIB if plan is not None else 0.0
            said.append(_("{change} needs {need:.1f} GiB per GPU, over the {card:.0f} GiB "
                          "card").format(change=name, need=need, card=card))
        elif plan.verdict == "tight" and fastest.verdict == "fits":
            said.append(_("{change} runs only tight ({need:.1f} of {card:.0f} GiB, under the "
                          "headroom kept)").format(change=name, need=plan.memory.total / GIB,
                                                   card=plan.memory.capacity / GIB))
    if not said:
        return _("the fastest of the recipes tried (micro-batch up to {batch})").format(
            batch=RECIPE_KNOBS[1][1][-1])
    return _("a faster recipe does not fit: {steps}").format(steps=_("; ").join(said))


def fastest_recipes(spec: ModelSpec, req: Request, gpu: GpuSpec, today: date,
                    book: PriceBook) -> list[Recipe]:
    """Recipes of the asked method that run on the box, fastest first: those that fit with the
    headroom kept before those that run only tight. On several cards the sharding is a knob too
    (the forward answer's own choice and each ZeRO stage), unless zero= was given."""
    forward = forward_answer(spec, today, book)
    zeros: tuple[int | None, ...] = ((None, *ZERO_STAGES) if (req.gpus or 1) > 1
                                     and req.zero is None else (req.zero,))
    # an offload the request chose that the knob does not vary (a recipe's activations) stays
    offloads = RECIPE_KNOBS[2][1] + ((req.offload,) if req.offload is not None
                                     and req.offload not in RECIPE_KNOBS[2][1] else ())
    found: list[Recipe] = []
    seen: set[tuple[object, ...]] = set()
    for zero in zeros:
        for checkpointing in RECIPE_KNOBS[0][1]:
            for batch in RECIPE_KNOBS[1][1]:
                for offload in offloads:
                    if offload != "none" and any(
                            (r.settings.checkpointing, r.settings.batch) == (checkpointing, batch)
                            and (zero is None or r.settings.zero == zero) for r in found):
                        continue  # offloading pays only where the recipe does not run without it
                    plan = forward(_at(req, checkpointing=checkpointing, batch=batch,
                                       offload=offload, zero=zero))
                    if (plan is None or plan.verdict == "no"
                            or not plan.speed.train_tokens_per_s):
                        continue
                    st = plan.settings
                    key = (st.zero, st.tp, st.pp, st.checkpointing, st.batch, st.offload)
                    if key in seen:
                        continue  # the forward answer's own choice, found again as a stage
                    seen.add(key)
                    found.append(Recipe.build(change=recipe_words(plan, req),
                                              settings=plan.settings,
                                              tokens_per_s=plan.speed.train_tokens_per_s,
                                              verdict=plan.verdict))
    found.sort(key=lambda r: (r.verdict != "fits", -r.tokens_per_s))
    return found


def recipe_words(plan: Plan, req: Request) -> str:
    """The recipe as the key=value words that ask for it."""
    st = plan.settings
    words = []
    if (req.gpus or 1) > 1:
        if st.tp > 1:
            words.append(f"tp={st.tp}")
        words.append(f"zero={st.zero or 0}")
    words += [f"checkpointing={st.checkpointing}", f"batch={st.batch}", f"offload={st.offload}"]
    return " ".join(words)


def at_capacity(spec: ModelSpec, req: Request, cap: Capacity | None, today: date,
                book: PriceBook, users_given: bool) -> tuple[Request, Plan] | None:
    """A serving box asked about without users= (`users_given`: the asker gave them; users
    requests= implies do not count): the request and forward plan at the most users it serves
    at the context asked (what the commands launch, and what its API comparison serves the
    traffic, or typical requests, with: the box is paid for whole)."""
    if cap is None or not req.is_serving or users_given or not cap.rows:
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


def capacity(spec: ModelSpec, req: Request, today: date, book: PriceBook,
             prepare: Prepare = _as_asked, original: Request | None = None,
             largest: ModelFit | None = None) -> Capacity | None:
    """The reverse answer for a box given by gpu= and gpus=; None otherwise. `original` is the
    request as asked (before the model's own defaults), for probing other models; `largest`: the
    model is the largest the box runs (MODEL largest), said first."""
    if not (req.gpu and req.gpus):
        return None
    if req.is_training and req.method not in LARGEST_METHODS and largest is None:
        # pre-training sizes a cluster for one model: which other catalog models the cluster
        # could fine-tune answers nothing asked, and costs a forward answer per model
        return None
    gpu = catalog.gpus()[req.gpu]
    if req.is_serving:
        cap = serving_capacity(spec, req, gpu, today, book)
        if largest is not None:
            cap = cap.model_copy(update={"largest": [largest]})
    else:
        cap = training_capacity(spec, req, gpu, today, book, prepare, original, largest)
    if largest is None:
        return cap
    return cap.model_copy(update={"text": largest_text(req, gpu, largest) + _("; ") + cap.text})


def largest_text(req: Request, gpu: GpuSpec, fit: ModelFit) -> str:
    """The answer to MODEL largest: the model, how it runs, and what stops the next larger."""
    box = f"{req.gpus} x {gpu.display}"
    if req.is_serving:
        text = _("the largest catalog model {box} serves at {floor:g} tokens/s per user to {users} "
                 "at {context} tokens is {model} ({params:.1f}B)").format(
            box=box, floor=req.decode_floor, users=users_text(req.users), context=_k(req.context),
            model=fit.display, params=(fit.params or 0) / 1e9)
    else:
        text = _("the largest catalog model {box} trains with {method} is {model} ({params:.1f}B, "
                 "{verdict})").format(box=box, method=method_name(req.method), model=fit.display,
                                      params=(fit.params or 0) / 1e9,
                                      verdict=_(FIT_WORDS.get(fit.verdict or "", "")))
        if req.tokens is None:
            text += _(", finishing one assumed {tokens}-token epoch within {days:g} days").format(
                tokens=tokens_text(ASSUMED_EPOCH_TOKENS), days=req.deadline_days)
        if fit.recipe:
            text += _(" {recipe}, about {rate:,.0f} tokens/s ({costs})").format(
                recipe=fit.recipe, rate=fit.tokens_per_s or 0.0, costs=fit.recipe_costs)
            if fit.host_ram_gb:
                text += _(", with {gb:,.0f} GB of host RAM per GPU").format(gb=fit.host_ram_gb)
    if fit.next_model:
        text += _("; the next larger does not: {why}").format(why=fit.limit)
    return text
