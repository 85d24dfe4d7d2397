"""What would fit: when the pinned card, every card or the budget says no, the changes a
practitioner would try next, each reported with its memory, cost and time.

Three searches, one table of changes (`Recipe`, below) each:

- On the buyer's own cards (`same_card`): when gpu= names cards that do not hold the request,
  the ways to run on those same cards come first: a run someone published on that model size,
  method and card (engine/runs.py), then 8-bit paged AdamW, the optimizer step fused into
  backward, chunked loss, activation offload, LoRA or QLoRA, 4-bit serving, a shorter context,
  each with what it costs in speed (the speed model's figure against the recipe as asked).
  Other cards come after.
- Within the budget (`budget_search`): before an answer says "over budget", the plans the budget
  can pay for: a tight fit (fewer cards, less than the 20% headroom free), a lighter optimizer,
  optimizer offload, fewer cards with a longer run. Each plan found carries its change in
  Plan.change, so the headline can name it.
- The method's own variants (engine/methods.py) when nothing runs at all.

Adding a change: a Recipe row in RECIPES (methods it applies to, the request fields it sets,
its speed cost in words); the searches pick it up.
"""

from __future__ import annotations

from datetime import date
from typing import Any, NamedTuple

from engine import memory, runs
from engine.architecture import ModelSpec
from engine.i18n import N_, _, money
from engine.plan import ranked_plans, usable
from engine.prices import PriceBook
from engine.quant import weight_bytes
from engine.recommend import rank_plans, stale_purchase_text
from engine.request import Request
from engine.schema import Alternative, Plan
from engine.traffic import request_lengths

SAME_CARD_LIMIT = 4  # ways to run on the asked cards shown before other cards
LIMIT = 5


class Recipe(NamedTuple):
    change: str  # marked for translation: "with 8-bit paged AdamW"
    update: dict[str, Any]  # request fields it sets
    methods: tuple[str, ...]  # the methods it applies to
    costs: str  # what it costs, in words (marked for translation)


_FULL = ("full-finetune", "pretrain")
_TRAIN = ("full-finetune", "pretrain", "lora", "qlora")
_ADAPTERS = ("lora", "qlora")
_PAGED = {"optimizer": "paged-adamw-8bit"}
_FUSED = {**_PAGED, "fused_step": True}

# Ways to run on the same cards, least intrusive first. Each is tried on its own; the
# cumulative rows are the combinations published recipes use (torchtune's low-memory recipe is
# 8-bit paged AdamW + fused step + chunked loss).
RECIPES: tuple[Recipe, ...] = (
    Recipe(N_("with 8-bit paged AdamW"), _PAGED, _TRAIN,
           N_("optimizer states live in host RAM and page in under pressure: a few percent "
              "slower, more when the GPU is full")),
    Recipe(N_("with 8-bit paged AdamW and the optimizer step fused into backward"), _FUSED,
           _FULL, N_("no gradient accumulation across micro-batches; about the same speed")),
    Recipe(N_("with 8-bit paged AdamW, a fused optimizer step and chunked loss"),
           {**_FUSED, "loss": "chunked"}, _FULL,
           N_("logits computed in chunks: a few percent slower")),
    Recipe(N_("with chunked loss"), {"loss": "chunked"}, _ADAPTERS,
           N_("logits computed in chunks: a few percent slower")),
    Recipe(N_("with 8-bit paged AdamW, a fused step, chunked loss and activations offloaded"),
           {**_FUSED, "loss": "chunked", "offload": "activations"}, _FULL,
           N_("saved activations copied to host RAM and back: slower, by the PCIe link")),
    Recipe(N_("with chunked loss and activations offloaded to CPU"),
           {"loss": "chunked", "offload": "activations"}, _ADAPTERS,
           N_("saved activations copied to host RAM and back: slower, by the PCIe link")),
    Recipe(N_("with adapters on attention only (targets=attn)"), {"targets": "attn"}, _ADAPTERS,
           N_("far fewer trainable parameters; the MLP (a MoE's experts) keeps its weights: "
              "less adaptation capacity")),
    Recipe(N_("with QLoRA parameters offloaded to CPU (FSDP)"),
           {"zero": 3, "offload": "all"}, ("qlora",),
           N_("weights stream from host RAM every step: much slower, and needs host RAM")),
    Recipe(N_("with LoRA"), {"method": "lora", "optimizer": None}, ("full-finetune",),
           N_("trains adapters, not the whole model")),
    Recipe(N_("with QLoRA"), {"method": "qlora", "quant": None, "optimizer": None},
           ("full-finetune", "lora"),
           N_("a 4-bit base: adapters only, some quality loss, slower matmuls")),
    Recipe(N_("with a shorter sequence (seq=1024)"), {"seq": 1024}, _TRAIN,
           N_("long examples must be cut or split")),
    Recipe(N_("with an fp8 KV cache"), {"kv": "fp8"}, ("inference",),
           N_("half the KV memory; barely measurable quality loss")),
    Recipe(N_("with FP8 weights"), {"quant": "fp8"}, ("inference",),
           N_("half the weight memory; needs an FP8 checkpoint or on-the-fly quantization")),
    Recipe(N_("with 4-bit AWQ weights"), {"quant": "awq"}, ("inference",),
           N_("a quarter of the weight memory; some quality loss")),
    Recipe(N_("with GGUF Q4_K_M in llama.cpp"), {"quant": "q4_k_m", "engine": "llama.cpp"},
           ("inference",), N_("4-bit weights, layers split over the cards: slower decode, "
                              "little batching")),
    # the context is searched: the longest that runs (_longest_context), not a fixed one
    Recipe(N_("with a shorter context (context={context})"), {"context": None}, ("inference",),
           N_("prompts and replies together within {context} tokens")),
    # when no single change is enough: the lightest weights and cache, then the longest context
    Recipe(N_("with 4-bit AWQ weights, an fp8 KV cache and a shorter context (context={context})"),
           {"quant": "awq", "kv": "fp8", "context": None}, ("inference",),
           N_("prompts and replies together within {context} tokens; some quality loss")),
)
SHORTEST_CONTEXT = 2048  # below this a chat's prompt and answer no longer fit together

# Changes that cost the buyer less money, tried before an answer says "over budget".
BUDGET_CHANGES: tuple[Recipe, ...] = (
    Recipe(N_("accepting a tight fit (less than the advised headroom free)"), {"headroom": 0.0},
           (*_TRAIN, "inference"), N_("less room for longer batches")),
    Recipe(N_("with 8-bit AdamW"), {"optimizer": "adamw-8bit"}, _FULL,
           N_("8-bit optimizer states; about the same speed")),
    Recipe(N_("with 8-bit paged AdamW"), {**_PAGED, "headroom": 0.0}, _TRAIN,
           N_("optimizer states paged to host RAM")),
    Recipe(N_("with 8-bit paged AdamW and the optimizer step fused into backward"),
           {**_FUSED, "headroom": 0.0}, _FULL, N_("about the same speed")),
    Recipe(N_("with optimizer states offloaded to CPU"), {"offload": "optimizer", "zero": None,
                                                           "headroom": 0.0},
           _TRAIN, N_("optimizer step on the CPU: slower")),
    Recipe(N_("with fewer cards and a longer run"), {"days": 3650.0}, _TRAIN,
           N_("the run takes longer than the deadline")),
    Recipe(N_("with FP8 weights"), {"quant": "fp8"}, ("inference",),
           N_("half the weight memory")),
    Recipe(N_("with 4-bit AWQ weights"), {"quant": "awq"}, ("inference",),
           N_("some quality loss")),
    Recipe(N_("with an fp8 KV cache"), {"kv": "fp8"}, ("inference",),
           N_("half the KV memory; barely measurable quality loss")),
    # the users asked at the longest context the budget still pays for (_budget_context)
    Recipe(N_("with FP8 weights, an fp8 KV cache and a shorter context (context={context})"),
           {"quant": "fp8", "kv": "fp8", "context": None}, ("inference",),
           N_("prompts and replies together within {context} tokens")),
)


# Settings whose values go from the most memory to the least: a recipe never swaps what the
# question asked for a heavier value (loss=fused asked; "with chunked loss" would hold more logits).
LIGHTER_LATER: dict[str, tuple[str, ...]] = {"loss": ("full", "chunked", "fused")}


def _same(req: Request, key: str, value: Any) -> bool:
    if key == "optimizer" and value is not None:
        return req.optimizer_used == value
    order = LIGHTER_LATER.get(key, ())
    if value in order and getattr(req, key) in order:
        return order.index(getattr(req, key)) >= order.index(value)
    return bool(getattr(req, key) == value)


def _variant(req: Request, update: dict[str, Any]) -> Request | None:
    if all(_same(req, k, v) for k, v in update.items()):
        return None
    update = {k: v for k, v in update.items() if not _same(req, k, v) or k not in LIGHTER_LATER}
    try:
        return Request(**{**req.model_dump(), **update})
    except ValueError:
        return None


def speed_text(plan: Plan) -> str | None:
    """How fast the plan is, in tokens/s or days: never a ratio, since the plan it would be a
    ratio of may not run at all."""
    sp = plan.speed
    if sp.train_hours is not None:
        return _("{days:,.1f} days for the tokens asked").format(days=sp.train_hours / 24)
    if sp.train_tokens_per_s:
        return _("about {rate:,.0f} tokens/s").format(rate=sp.train_tokens_per_s)
    if sp.decode_tokens_per_s:
        return _("about {rate:,.0f} tokens/s per user").format(rate=sp.decode_tokens_per_s)
    return None


def _describe(change: str, plan: Plan, base: Plan | None, costs: str = "",
              run: runs.Run | None = None) -> str:
    m = plan.memory
    verdict = {"fits": _("fits"), "tight": _("runs tight on"), "no": _("does not fit")}[
        plan.verdict]
    text = _("{change}: {verdict} {n} x {card} ({used:.1f} of {capacity:.1f} GiB)").format(
        change=change, verdict=verdict, n=plan.gpus, card=plan.gpu_display,
        used=m.total / memory.GIB, capacity=m.capacity / memory.GIB)
    c = plan.cost
    if c is not None:
        parts = []
        if c.buy.capex is not None:
            parts.append(_("{amount} to buy").format(amount=money(c.buy.capex, c.currency)))
        if c.rent.monthly is not None:
            parts.append(_("{amount}/month to rent").format(
                amount=money(c.rent.monthly, c.currency)))
        if parts:
            text += _(", ") + _(" or ").join(parts)
    speed = speed_text(plan)
    if speed is not None:
        text += _(", ") + speed
        # beside the request as asked only when that runs: a speed it never reaches is no yardstick
        asked = speed_text(base) if base is not None and base.verdict != "no" else None
        if asked is not None and asked != speed:
            text += _(" (as asked: {speed})").format(speed=asked)
    if plan.service is not None and plan.service.misses:
        text += _(" ({misses})").format(misses=_("; ").join(plan.service.misses))
    if costs:
        text += _(" ({costs})").format(costs=_(costs))
    if run is not None:
        text += _("; published: {run}").format(run=run.text())
    return text


STATED_GAP = 1.10  # the sizing this far above a stated figure: say where the gap is


def reconcile(run: runs.Run, plan: Plan, spec: ModelSpec, req: Request, today: date,
              book: PriceBook) -> str:
    """Where the engine's sizing of a published recipe is well above the figure published for
    it, which part the figure cannot hold. The frozen base cannot shrink; adapters on every
    linear layer (each routed expert of a MoE included) with their gradients and optimizer
    states can, by targeting attention only, which a figure below base + adapters implies."""
    if plan.memory.total <= run.memory_bytes * STATED_GAP or plan.gpus != 1 or (
            not req.spec.adapters):
        return ""
    m = plan.memory
    base = weight_bytes(spec, plan.settings.quant).total_bytes
    adapters = m.weights - base + m.gradients + m.optimizer
    text = _("this sizing of that recipe: {total:.1f} GiB, of which the frozen base {base:.1f} "
             "GiB and {trainable:.0f}M rank-{rank} adapter parameters with their gradients and "
             "optimizer states {adapters:.1f} GiB").format(
        total=m.total / memory.GIB, base=base / memory.GIB, adapters=adapters / memory.GIB,
        trainable=memory.lora_params(spec, req.rank, req.targets) / 1e6, rank=req.rank)
    if req.targets == "all" and base + adapters > run.memory_bytes:
        where = (_("every expert's projections") if spec.is_moe else _("every linear layer"))
        attn = _variant(req, {"targets": "attn"})
        lighter = _top(spec, attn, today, book) if attn is not None else None
        text += _(": the stated {memory:g} {unit} cannot hold adapters on {where}").format(
            memory=run.memory, unit=run.unit, where=where)
        if lighter is not None and lighter.verdict != "no":
            text += _("; with adapters on attention only (targets=attn): {total:.1f} GiB").format(
                total=lighter.memory.total / memory.GIB)
    return text


def _top(spec: ModelSpec, req: Request, today: date, book: PriceBook) -> Plan | None:
    plans, _misses, _excluded = ranked_plans(spec, req, today=today, book=book)
    return plans[0] if plans else None


def same_card(spec: ModelSpec, req: Request, base: Plan | None, *, today: date,
              book: PriceBook) -> list[Alternative]:
    """Ways to run on the cards the buyer named (gpu=, and gpus= when given), published runs
    first, then RECIPES in order; at most SAME_CARD_LIMIT."""
    assert req.gpu
    out: list[Alternative] = []
    seen: set[tuple] = set()
    counts = (req.gpus,) if req.gpus else (None,)
    published = [r for n in counts for r in runs.runs()
                 if r.method == req.method and (n is None or r.gpus == n)
                 and runs.matching(spec, req.method, req.gpu, r.gpus, quant=r.settings.get(
                     "quant")) is r]
    tries: list[tuple[str, dict[str, Any], str, runs.Run | None]] = [
        ((_("as {who} describes it") if r.stated else _("as {who} ran it")).format(who=r.who),
         {**r.settings, "gpus": req.gpus or r.gpus}, "", r) for r in published]
    tries += [(_(r.change), r.update, r.costs, None) for r in RECIPES if req.method in r.methods]
    for change, update, costs, run in tries:
        if update.get("context", 0) is None:
            rest = {k: v for k, v in update.items() if k != "context"}
            context = _longest_context(spec, req, rest, today=today, book=book)
            if context is None:
                continue
            update = {**rest, **_cut_to(req, context)}
            change, costs = (change.format(context=context),
                             _(costs).format(context=f"{context:,}"))
        variant = _variant(req, update)
        if variant is None:
            continue
        plan = _top(spec, variant, today, book)
        if plan is None or plan.verdict == "no":  # runs; a missed service level is said
            continue
        key = (plan.gpus, plan.memory.total // 2**28, plan.settings.optimizer, plan.method,
               plan.settings.quant)
        if key in seen:
            continue
        seen.add(key)
        plan = plan.model_copy(update={"change": change, "published": run.text() if run else ""})
        text = _describe(change, plan, base, costs, run)
        gap = reconcile(run, plan, spec, variant, today, book) if run is not None else ""
        if gap:
            text += _("; ") + gap
        out.append(Alternative.build(change=text, plan=plan))
        if len(out) >= SAME_CARD_LIMIT:
            break
    return out


def _cut_to(req: Request, context: int) -> dict[str, Any]:
    """A shorter context keeps the request's split where it fits: a reasoning model's 32k
    answer cut to 8k would otherwise leave a 1-token prompt (and a 0.0 s first token)."""
    prompt, answer = request_lengths(req)
    if prompt + answer <= context:
        return {"context": context}
    keep = min(prompt, context // 2)
    return {"context": context, "prompt": keep, "output": context - keep}


def _longest_context(spec: ModelSpec, req: Request, update: dict[str, Any], *, today: date,
                     book: PriceBook) -> int | None:
    """The longest power-of-two context below the one asked at which the same cards run the
    same users (with `update`'s other changes): the smallest cut that turns the "no" into a
    "yes"."""
    context = 1 << (max(req.context - 1, 1)).bit_length() - 1  # the power of two below
    while context >= SHORTEST_CONTEXT:
        variant = _variant(req, {**update, **_cut_to(req, context)})
        plan = _top(spec, variant, today, book) if variant is not None else None
        if plan is not None and plan.verdict != "no":
            return context
        context //= 2
    return None


def budget_search(spec: ModelSpec, req: Request, *, today: date, book: PriceBook,
                  keep_context: bool = False) -> list[Plan]:
    """Plans the budget pays for that the request as asked does not reach: each with its
    change in Plan.change (BUDGET_CHANGES), ranked; empty when none is within the budget.
    `keep_context`: the asker gave context=, a requirement the search never cuts (a default
    context, such as a reasoning model's, may be)."""
    if req.budget is None:
        return []
    found: list[Plan] = []
    seen: set[tuple[str, int]] = set()
    for recipe in BUDGET_CHANGES:
        if req.method not in recipe.methods or (keep_context and "context" in recipe.update):
            continue
        if "days" in recipe.update and req.tokens is None:
            continue  # no tokens=, no deadline to relax: its plans would be those as asked
        change = _(recipe.change)
        if recipe.update.get("context", 0) is None:
            searched = _budget_context(spec, req, recipe.update, today=today, book=book)
            if searched is None:
                continue
            context, variant, plans = searched
            change = change.format(context=context)
        else:
            variant = _variant(req, recipe.update)
            if variant is None:
                continue
            plans, _misses, _excluded = ranked_plans(spec, variant, today=today, book=book)
        for plan in plans:
            if not usable(plan, variant) or (plan.gpu, plan.gpus) in seen:
                continue
            seen.add((plan.gpu, plan.gpus))
            found.append(plan.model_copy(update={"change": change,
                                                  "verdict": verdict_as_asked(plan, req)}))
    return rank_plans(found, req, spec)


def _budget_context(spec: ModelSpec, req: Request, update: dict[str, Any], *, today: date,
                    book: PriceBook) -> tuple[int, Request, list[Plan]] | None:
    """The longest power-of-two context below the one asked at which `update` runs the users
    asked within the budget, with that request and its plans; None when even the shortest
    context a chat needs does not."""
    context = 1 << (max(req.context - 1, 1)).bit_length() - 1  # the power of two below
    while context >= SHORTEST_CONTEXT:
        variant = _variant(req, {**update, **_cut_to(req, context)})
        if variant is not None:
            plans, _misses, _excluded = ranked_plans(spec, variant, today=today, book=book)
            if any(usable(p, variant) and p.cost is not None and p.cost.within_budget
                   for p in plans):
                return context, variant, plans
        context //= 2
    return None


def verdict_as_asked(plan: Plan, req: Request) -> str:
    """A plan found with the headroom waived (headroom=0) is tight by the asker's rule, and is
    called so: 'fits' at 31.7 of 31.8 GiB would read as room to spare."""
    m = plan.memory
    if plan.verdict == "fits" and m.total * (1 + req.headroom) > m.capacity:
        return "tight"
    return plan.verdict


BUY_LIMIT = 3  # purchases shown beside a rented recommendation


def buy_within_budget(spec: ModelSpec, req: Request, top: Plan | None, *, today: date,
                      book: PriceBook, keep_context: bool = False) -> list[Alternative]:
    """A budget is money to spend, and renting is only one way to spend it: when the
    recommendation rents and mode= does not rule buying out, the purchases the budget covers
    up front (as asked, then with the lighter recipes of `budget_search`), cheapest per token
    first, at most BUY_LIMIT, each with its price, fit and speed."""
    if (req.budget is None or req.mode is not None or top is None or top.cost is None
            or top.cost.mode != "rent"):
        return []
    to_buy = req.model_copy(update={"mode": "buy"})
    plans, _misses, _excluded = ranked_plans(spec, to_buy, today=today, book=book)
    found = [p for p in plans if usable(p, to_buy)]
    found += budget_search(spec, to_buy, today=today, book=book, keep_context=keep_context)
    bought = [p for p in rank_plans(found, to_buy, spec)
              if p.cost is not None and p.cost.mode == "buy" and p.cost.buy.capex is not None]
    # the cheapest per token first; the recipe as asked next when a changed one leads
    as_asked = next((p for p in bought if not p.change), None)
    if as_asked is not None and bought.index(as_asked) > 0:
        bought.remove(as_asked)
        bought.insert(1, as_asked)
    out: list[Alternative] = []
    seen: set[tuple[str, int]] = set()
    for plan in bought:
        c = plan.cost
        assert c is not None and c.buy.capex is not None
        if (plan.gpu, plan.gpus) in seen:
            continue
        seen.add((plan.gpu, plan.gpus))
        change = plan.change or _("with the recipe as asked")
        text = _("buy {n} x {card} {change} for {capex} up front ({strategy}; {used:.1f} of "
                 "{capacity:.1f} GiB per GPU, {verdict})").format(
            n=plan.gpus, card=plan.gpu_display, change=change,
            capex=money(c.buy.capex, c.currency), strategy=plan.strategy,
            used=plan.memory.total / memory.GIB, capacity=plan.memory.capacity / memory.GIB,
            verdict={"fits": _("fits"), "tight": _("tight"), "no": _("does not fit")}[
                plan.verdict])
        speed = speed_text(plan)
        if speed is not None:
            text += _(", ") + speed
        if c.stale_purchases:
            text += _("; ") + stale_purchase_text(c)
        out.append(Alternative.build(change=text, plan=plan))
        if len(out) >= BUY_LIMIT:
            break
    return out


def alternatives(spec: ModelSpec, req: Request, *, today: date,
                 book: PriceBook) -> list[Alternative]:
    """What would fit: on the buyer's own cards first when gpu= names them, then the method's
    variants (engine/methods.py), then other cards when the card or count was pinned."""
    base = _top(spec, req, today, book)
    out: list[Alternative] = []
    obtainable = base is None or base.access is None or base.access.can_buy or (
        base.access.can_rent)
    # a card the market cannot get: other cards only, unless the team named how many it has
    # (one H100 of its own still gets the shorter context that runs on it, unpriced)
    if req.gpu and (obtainable or req.gpus):
        out += same_card(spec, req, base, today=today, book=book)
    if not out:
        for change, update in req.spec.variants:
            variant = _variant(req, update)
            if variant is None:
                continue
            plan = _top(spec, variant, today, book)
            if usable(plan, variant) and plan is not None:
                out.append(Alternative.build(change=_describe(_(change), plan, base), plan=plan))
                if len(out) >= LIMIT:
                    break  # the list is full: later ones would be cut below
    if (req.gpu or req.gpus) and len(out) < LIMIT:  # another card or count
        other = req.model_copy(update={"gpu": None, "gpus": None})
        plan = _top(spec, other, today, book)
        if usable(plan, other) and plan is not None:
            out.append(Alternative.build(change=_describe(_("on other cards"), plan, base),
                                         plan=plan))
    return out[:LIMIT]
