"""What would fit: when the pinned card, every card or the budget says no, try the changes a
practitioner would try next and report each with its memory, cost and time."""

from __future__ import annotations

from datetime import date
from typing import Any

from engine.answer import Alternative, Plan
from engine.architecture import ModelSpec
from engine.i18n import N_, _
from engine.prices import PriceBook
from engine.request import Request

# (description, changes to the request), cheapest-in-effort first, per method
VARIANTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "full-finetune": [
        (N_("with LoRA"), {"method": "lora"}),
        (N_("with QLoRA"), {"method": "qlora", "quant": None}),
        (N_("with full checkpointing + 8-bit AdamW"), {"checkpointing": "full",
                                                    "optimizer": "adamw-8bit"}),
        (N_("with optimizer offload to CPU"), {"offload": "optimizer", "zero": None}),
    ],
    "pretrain": [
        (N_("with full checkpointing + 8-bit AdamW"), {"checkpointing": "full",
                                                    "optimizer": "adamw-8bit"}),
    ],
    "lora": [
        (N_("with QLoRA"), {"method": "qlora", "quant": None}),
        (N_("with full checkpointing and chunked loss"), {"checkpointing": "full", "loss": "chunked"}),
    ],
    "qlora": [
        (N_("with full checkpointing and chunked loss"), {"checkpointing": "full", "loss": "chunked"}),
    ],
    "inference": [
        (N_("with 4-bit AWQ weights"), {"quant": "awq"}),
        (N_("with an fp8 KV cache"), {"kv": "fp8"}),
        (N_("with GGUF Q4_K_M in llama.cpp"), {"quant": "q4_k_m"}),
    ],
}


def _describe(change: str, plan: Plan, base: Plan | None) -> str:
    m = plan.memory
    text = _("{change}: fits {n} x {card} ({used:.1f} of {capacity:.1f} GiB)").format(
        change=_(change), n=plan.gpus, card=plan.gpu_display, used=m.total / 1024**3,
        capacity=m.capacity / 1024**3)
    c = plan.cost
    if c is not None:
        from engine.recommend import money

        parts = []
        if c.buy.capex is not None:
            parts.append(_("{amount} to buy").format(amount=money(c.buy.capex, c.currency)))
        if c.rent.monthly is not None:
            parts.append(_("{amount}/month to rent").format(
                amount=money(c.rent.monthly, c.currency)))
        if parts:
            text += _(", ") + _(" or ").join(parts)
    if base is not None:
        slow = _time_ratio(plan, base)
        if slow is not None:
            text += _(", {ratio:.2g}x the time of {n} x {card} as asked").format(
                ratio=slow, n=base.gpus, card=base.gpu_display)
    return text


def _time_ratio(plan: Plan, base: Plan) -> float | None:
    a, b = plan.speed, base.speed
    # the same work on both: time scales with 1 / tokens per second of the whole plan
    if a.train_tokens_per_s and b.train_tokens_per_s:
        return b.train_tokens_per_s / a.train_tokens_per_s
    if a.decode_tokens_per_s and b.decode_tokens_per_s:
        return b.decode_tokens_per_s / a.decode_tokens_per_s
    return None


def alternatives(spec: ModelSpec, req: Request, *, today: date,
                 book: PriceBook) -> list[Alternative]:
    from engine.plan import estimate
    from engine.recommend import score

    def usable(r: Request) -> Plan | None:
        ans = estimate(spec, r, today=today, with_alternatives=False, book=book)
        top = ans.plans[0] if ans.plans else None
        return top if top is not None and score(top, r)[0] != float("inf") else None

    base_ans = estimate(spec, req, today=today, with_alternatives=False, book=book)
    base = base_ans.plans[0] if base_ans.plans else None
    out: list[Alternative] = []
    for change, update in VARIANTS[req.method]:
        if all(getattr(req, k) == v for k, v in update.items()):
            continue
        try:
            variant = Request(**{**req.model_dump(), **update})
        except ValueError:
            continue
        plan = usable(variant)
        if plan is not None:
            out.append(Alternative(change=_describe(change, plan, base), plan=plan))
    if req.gpu or req.gpus:  # another card or count
        plan = usable(req.model_copy(update={"gpu": None, "gpus": None}))
        if plan is not None:
            out.append(Alternative(change=_describe(N_("on other cards"), plan, base), plan=plan))
    return out[:4]
