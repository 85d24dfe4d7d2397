"""From plans that fit to a recommendation: cost, ranking, budget, the seeds' advice, a trial.

Ranking: rank=cost (default) orders by the cheaper of buying and renting over months=, at
hours= use per month; rank=time by training hours for tokens= (or tokens/s), or by aggregate
decode speed when serving. budget= keeps plans whose capex (buy) or monthly rent fits it.
"""

from __future__ import annotations

from engine import catalog, i18n, memory
from engine.architecture import ModelSpec
from engine.cost import budget_in
from engine.i18n import _
from engine.methods import method
from engine.prices import PriceBook
from engine.request import Request
from engine.schema import Plan, Trial

DEFAULT_EPOCH_TOKENS = 50_000_000  # a fine-tuning set of ~25k examples x 2k tokens


def score(plan: Plan, req: Request) -> tuple[float, float]:
    """Lower is better. Unpriced or over-budget plans sort last."""
    total = plan.cost.horizon_total if plan.cost else None
    cost = total if total is not None else float("inf")
    sp = plan.speed
    if req.is_serving:
        slowness = -(sp.decode_tokens_per_s_aggregate or 0.0)
    elif sp.train_hours is not None:
        slowness = sp.train_hours
    else:
        slowness = -(sp.train_tokens_per_s or 0.0)
    if not plan.memory.fits or (plan.cost is not None and plan.cost.within_budget is False):
        return (float("inf"), float("inf"))
    return (cost, slowness) if req.goal == "cost" else (slowness, cost)


money = i18n.money


def recommendation(plan: Plan, req: Request, runner_up: Plan | None) -> str:
    c = plan.cost
    m = plan.memory
    parts = [f"{plan.gpus} x {plan.gpu_display} ({plan.strategy})"]
    free = 1 - m.total / m.capacity
    parts.append(_("it holds the {method} at {used:.1f} GiB of {capacity:.1f} GiB per GPU "
                   "({free:.0%} free)").format(method=method_name(req.method),
                                               used=m.total / memory.GIB,
                                               capacity=m.capacity / memory.GIB, free=free))
    if c is not None and c.mode == "buy":
        parts.append(_("buying costs {capex} up front and {monthly}/month with power and "
                       "operations").format(capex=money(c.buy.capex, c.currency),
                                            monthly=money(c.buy.monthly_total, c.currency)))
    elif c is not None and c.mode == "rent":
        parts.append(_("renting costs {monthly}/month at {hours:g} h").format(
            monthly=money(c.rent.monthly, c.currency), hours=c.hours_per_month))
    if c is not None and c.break_even_hours_per_month is not None:
        side = _("buy") if c.hours_per_month > c.break_even_hours_per_month else _("rent")
        parts.append(_("buying pays off above {hours:.0f} h/month of use (you said {use:g} h: "
                       "{side})").format(hours=c.break_even_hours_per_month,
                                         use=c.hours_per_month, side=side))
    sp = plan.speed
    if req.is_serving and sp.decode_tokens_per_s:
        parts.append(_("about {per:.0f} tokens/s per user, {total:.0f} in total at {users} "
                       "user(s)").format(per=sp.decode_tokens_per_s,
                                         total=sp.decode_tokens_per_s_aggregate, users=req.users))
    elif sp.train_hours is not None:
        parts.append(_("{tokens:g}B tokens take {hours:,.1f} h").format(
            tokens=req.tokens / 1e9, hours=sp.train_hours))
    elif sp.train_tokens_per_s:
        parts.append(_("trains at about {rate:,.0f} tokens/s").format(rate=sp.train_tokens_per_s))
    if runner_up is not None and runner_up.cost and c and runner_up.cost.horizon_total and \
            c.horizon_total:
        diff = runner_up.cost.horizon_total - c.horizon_total
        text = (_("{amount} less over {months} months than the next option ({other})") if diff >= 0
                else _("{amount} more over {months} months than the next option ({other})"))
        parts.append(text.format(amount=money(abs(diff), c.currency), months=req.months,
                                 other=f"{runner_up.gpus} x {runner_up.gpu_display}"))
    goal = _("cheapest over the horizon") if req.goal == "cost" else _("fastest")
    return _("Recommended ({goal}): ").format(goal=goal) + _("; ").join(parts) + _(".")


def method_name(name: str) -> str:
    return _(method(name).label)


def advice(spec: ModelSpec, req: Request, plans: list[Plan]) -> list[str]:
    """The seeds' advice where it applies to this request (DOMAIN.md)."""
    out = []
    billions = spec.params / 1e9
    if billions < 7:
        out.append(_("< 7B tier (seed 000): one RTX 4090 serves it; 2x 4090 or one 48 GB card "
                     "for light fine-tuning"))
    elif billions <= 70:
        out.append(_("7B-70B tier (seed 000): train on several GPUs in parallel rather than one "
                     "big card"))
    else:
        out.append(_("> 70B tier (seed 000): rent cluster time (supercomputing / AI computing "
                     "centres) rather than building a machine room; rent first"))
    top = plans[0] if plans else None
    if top and req.is_training and top.gpus > 1 and not _nvlink(top):
        out.append(_("PCIe-only cards (RTX 4090 and similar) scale poorly for multi-card "
                     "training: gradient and shard traffic crosses PCIe through the host"))
    if top and top.gpus >= 8:
        out.append(_("an 8-GPU server draws 8-12 kW and needs real cooling (seed 000); in an "
                     "ordinary room prefer 4-GPU servers"))
    if top and top.gpus > 8:
        out.append(_("multi-server: NVMe of at least 2 TB per server and RoCE or InfiniBand "
                     "between servers, or the GPUs wait (seeds)"))
    if req.is_serving:
        if req.users < 10:
            out.append(_("< 10 concurrent users (seed 000): one card, or a 4-bit AWQ/GPTQ model "
                         "on one card for 70B"))
        elif req.users <= 50:
            out.append(_("10-50 concurrent users (seed 000): several cards load-balanced, vLLM "
                         "continuous batching"))
        else:
            out.append(_("> 50 concurrent users (seed 000): H20/H200-class cards with "
                         "TensorRT-LLM, or a public-cloud API"))
    if top and top.cost and top.cost.job.hours is not None and top.cost.job.hours < 730:
        out.append(_("a job shorter than a month: rent it (seeds: rent first for short "
                     "projects)"))
    return out


def _nvlink(plan: Plan) -> bool:
    return catalog.gpus()[plan.gpu].has_nvlink


def trial(plan: Plan, req: Request) -> Trial | None:
    """Seeds' step 5: rent the top plan's cards for one real epoch, measure, then decide."""
    if not req.is_training or not plan.speed.train_tokens_per_s:
        return None
    tokens = req.tokens or DEFAULT_EPOCH_TOKENS
    hours = tokens / plan.speed.train_tokens_per_s / 3600
    rate = plan.cost.rent.per_gpu_hour if plan.cost else None
    currency = plan.cost.currency if plan.cost else req.answer_currency
    rent = rate * plan.gpus * hours if rate is not None else None
    epoch = ("tokens=" if req.tokens else _("an assumed {millions:.0f}M-token epoch").format(
        millions=DEFAULT_EPOCH_TOKENS / 1e6))
    return Trial.build(gpu=plan.gpu, gpus=plan.gpus, epoch_tokens=tokens, hours=round(hours, 2),
                 rent=None if rent is None else round(rent), currency=currency,
                 note=_("rent {n} x {card} for one epoch ({epoch}): about {hours:,.1f} h, "
                        "{cost}; measure throughput and stability before buying (the seeds' "
                        "step 5)").format(n=plan.gpus, card=plan.gpu_display, epoch=epoch,
                                           hours=hours, cost=money(rent, currency)))


def over_budget(plans: list[Plan], req: Request, book: PriceBook) -> str:
    """What the cheapest fitting plan would cost, against the budget."""
    priced = [p for p in plans if p.memory.fits and p.cost
              and (p.cost.buy.capex is not None or p.cost.rent.monthly is not None)]
    budget = budget_in(req, book)
    currency = req.answer_currency
    if not priced:
        return _("no plan that fits has a price in the catalog.")
    cheapest = min(priced, key=lambda p: min(x for x in (p.cost.buy.capex, p.cost.rent.monthly)
                                             if x is not None))
    c = cheapest.cost
    return _("the cheapest plan that fits is {n} x {card}: {buy} to buy or {rent}/month to rent, "
             "against a budget of {budget}.").format(
        n=cheapest.gpus, card=cheapest.gpu_display, buy=money(c.buy.capex, currency),
        rent=money(c.rent.monthly, currency), budget=money(budget, currency))
