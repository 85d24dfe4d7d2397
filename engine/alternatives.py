"""What would fit: when the pinned card, every card or the budget says no, try the changes a
practitioner would try next and report each with its memory, cost and time."""

from __future__ import annotations

from datetime import date

from engine import memory
from engine.architecture import ModelSpec
from engine.i18n import N_, _, money
from engine.plan import ranked_plans, usable
from engine.prices import PriceBook
from engine.request import Request
from engine.schema import Alternative, Plan


def _describe(change: str, plan: Plan, base: Plan | None) -> str:
    m = plan.memory
    text = _("{change}: fits {n} x {card} ({used:.1f} of {capacity:.1f} GiB)").format(
        change=_(change), n=plan.gpus, card=plan.gpu_display, used=m.total / memory.GIB,
        capacity=m.capacity / memory.GIB)
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
    """Up to four changes that make a plan usable, each with that plan; the method's variants
    (engine/methods.py) first, then other cards when the card or count was pinned."""

    def top(r: Request) -> Plan | None:
        plans, _misses, _excluded = ranked_plans(spec, r, today=today, book=book)
        return plans[0] if plans else None

    base = top(req)
    out: list[Alternative] = []
    for change, update in req.spec.variants:
        if all(getattr(req, k) == v for k, v in update.items()):
            continue
        try:
            variant = Request(**{**req.model_dump(), **update})
        except ValueError:
            continue
        plan = top(variant)
        if usable(plan, variant):
            out.append(Alternative.build(change=_describe(change, plan, base), plan=plan))
    if req.gpu or req.gpus:  # another card or count
        other = req.model_copy(update={"gpu": None, "gpus": None})
        plan = top(other)
        if usable(plan, other):
            out.append(Alternative.build(change=_describe(N_("on other cards"), plan, base), plan=plan))
    return out[:4]
