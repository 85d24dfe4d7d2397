"""From plans that fit to a recommendation: cost, ranking, budget, the seeds' advice, a trial.

Ranking: rank=cost (default) orders by the cheaper of buying and renting over months=, at
hours= use per month; rank=time by training hours for tokens= (or tokens/s), or by aggregate
decode speed when serving. budget= keeps plans whose capex (buy) or monthly rent fits it.
"""

from __future__ import annotations

from datetime import date

from engine import i18n
from engine.answer import BuyCost, Cost, JobCost, Plan, RentCost, Trial
from engine.architecture import ModelSpec
from engine.catalog import GpuSpec
from engine.cost import CostInputs, PlanCost, plan_cost
from engine.i18n import _
from engine.prices import PriceBook
from engine.request import Request

DEFAULT_EPOCH_TOKENS = 50_000_000  # a fine-tuning set of ~25k examples x 2k tokens


def cost_inputs(req: Request, today: date) -> CostInputs:
    return CostInputs(currency=req.answer_currency, months=req.months,
                      hours_per_month=req.hours_per_month, region=req.region,
                      power_price=req.power_price, today=today)


def budget_in(req: Request, book: PriceBook) -> float | None:
    if req.budget is None:
        return None
    source = req.budget.currency or req.answer_currency
    return book.convert(req.budget.amount, source, req.answer_currency)


def cost_doc(pc: PlanCost, req: Request, gpus: int, train_hours: float | None,
             book: PriceBook) -> Cost:
    budget = budget_in(req, book)
    buy_ok = pc.capex is not None and (budget is None or pc.capex <= budget)
    rent_ok = pc.rent_monthly is not None and (budget is None or pc.rent_monthly <= budget)
    mode = None
    options = []
    if buy_ok and pc.monthly_ops is not None:
        options.append(("buy", pc.capex + (pc.monthly_ops + pc.monthly_power) * req.months))
    if rent_ok:
        options.append(("rent", pc.rent_monthly * req.months))
    total = None
    if options:
        mode, total = min(options, key=lambda o: o[1])
    job = JobCost()
    if train_hours is not None:
        rent_job = pc.rent_per_gpu_hour * gpus * train_hours if pc.rent_per_gpu_hour else None
        share = None
        if pc.monthly_buy_total is not None:
            # owning cost per hour of use at hours= per month, times the job's hours
            share = pc.monthly_buy_total / req.hours_per_month * train_hours
        job = JobCost(hours=round(train_hours, 2), rent=_r(rent_job), buy_share=_r(share))
    return Cost(
        currency=pc.currency, hours_per_month=req.hours_per_month, months=req.months,
        buy=BuyCost(capex=_r(pc.capex), monthly_depreciation=_r(pc.monthly_depreciation),
                    monthly_power=round(pc.monthly_power), monthly_ops=_r(pc.monthly_ops),
                    monthly_total=_r(pc.monthly_buy_total)),
        rent=RentCost(per_gpu_hour=None if pc.rent_per_gpu_hour is None
                      else round(pc.rent_per_gpu_hour, 3), monthly=_r(pc.rent_monthly)),
        break_even_hours_per_month=None if pc.break_even_hours is None
        else round(pc.break_even_hours, 1),
        job=job, mode=mode, horizon_total=_r(total),
        within_budget=None if budget is None else bool(options),
        price_sources=list(pc.sources), stale=list(pc.stale), notes=list(pc.notes))


def _r(value: float | None) -> float | None:
    return None if value is None else round(value)


def price_plan(gpu: GpuSpec, gpus: int, req: Request, today: date,
               train_hours: float | None, book: PriceBook) -> Cost:
    return cost_doc(plan_cost(book, gpu, gpus, cost_inputs(req, today)), req, gpus,
                    train_hours, book)


def score(plan: Plan, req: Request) -> tuple[float, float]:
    """Lower is better. Unpriced or over-budget plans sort last."""
    total = plan.cost.horizon_total if plan.cost else None
    cost = total if total is not None else float("inf")
    sp = plan.speed
    if req.method == "inference":
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
                                               used=m.total / 1024**3,
                                               capacity=m.capacity / 1024**3, free=free))
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
    if req.method == "inference" and sp.decode_tokens_per_s:
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


def method_name(method: str) -> str:
    return {"full-finetune": _("full fine-tune"), "lora": "LoRA", "qlora": "QLoRA",
            "inference": _("serving"), "pretrain": _("pre-training")}.get(method, method)


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
    if req.method == "inference":
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
    from engine.catalog import gpus

    return gpus()[plan.gpu].has_nvlink


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
    return Trial(gpu=plan.gpu, gpus=plan.gpus, epoch_tokens=tokens, hours=round(hours, 2),
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


def cost_summary(c: Cost) -> list[str]:
    """One line per cost fact, shared by the terminal and Slack renderings."""
    lines = []
    m = lambda amount: money(amount, c.currency)  # noqa: E731
    if c.buy.capex is not None:
        lines.append(_("buy {capex} up front, then {monthly}/month (depreciation {dep}, power "
                       "{power}, operations {ops})").format(
            capex=m(c.buy.capex), monthly=m(c.buy.monthly_total),
            dep=m(c.buy.monthly_depreciation), power=m(c.buy.monthly_power),
            ops=m(c.buy.monthly_ops)))
    if c.rent.per_gpu_hour is not None:
        lines.append(_("rent {rate:.2f} {currency} per GPU-hour = {monthly}/month").format(
            rate=c.rent.per_gpu_hour, currency=c.currency, monthly=m(c.rent.monthly)))
    if c.break_even_hours_per_month is not None:
        lines.append(_("buying is cheaper above {hours:.0f} h/month of use (the guides claim "
                       "{claim:.0f} h/month)").format(hours=c.break_even_hours_per_month,
                                                      claim=c.seeds_claim_hours_per_month))
    if c.job.hours is not None:
        lines.append(_("this job: {hours:,.1f} h, {rent} rented, {share} of owning cost").format(
            hours=c.job.hours, rent=m(c.job.rent), share=m(c.job.buy_share)))
    if c.stale:
        lines.append(_("{count} price(s) older than 90 days: get fresh quotes").format(
            count=len(c.stale)))
    return lines


def speed_summary(plan: Plan, *, per_user: bool = True) -> str:
    sp = plan.speed
    if sp.decode_tokens_per_s:
        if not per_user:
            return f"{sp.decode_tokens_per_s:,.0f} tok/s"
        return _("{rate:,.0f} tok/s per user").format(rate=sp.decode_tokens_per_s)
    if sp.train_hours is not None:
        return f"{sp.train_hours:,.0f} h"
    if sp.train_tokens_per_s:
        return f"{sp.train_tokens_per_s:,.0f} tok/s"
    return "-"
