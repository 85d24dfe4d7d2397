"""From plans to a recommendation: ranking, the verdict a buyer reads first, the seeds' advice
(reconciled with the verdict), a trial run.

Ranking, best first: plans that run before plans that don't; then those that meet the service
level (serving) or the deadline (training with tokens=); then, with a budget, those known to fit
it, then those over it, then those without a price; for serving, fewer servers before more (a
model served across servers waits on their network for every token); then clusters of PCIe-only
servers after the rest (the guides: PCIe cards scale poorly across cards, and such boxes seldom
have the RoCE or InfiniBand a multi-server job needs); then those that keep the headroom free
before tight ones; then by goal: cost (serving: the cheaper of buying and renting over months=;
training: that cost per token trained, since a slower plan needs more of its hours for the same
work) or time.
"""

from __future__ import annotations

import math

from engine import catalog, i18n, memory
from engine.architecture import ModelSpec
from engine.cost import HOURS_PER_MONTH
from engine.i18n import _
from engine.market import market_word
from engine.methods import method
from engine.request import Request
from engine.schema import Plan, Trial

DEFAULT_EPOCH_TOKENS = 50_000_000  # a fine-tuning set of ~25k examples x 2k tokens
GPUS_PER_SERVER = 8
money = i18n.money


def cost_metric(plan: Plan, req: Request) -> float:
    """What rank=cost minimises: the horizon cost when serving (the work is fixed by users= and
    the service level), the cost per token when training."""
    c = plan.cost
    if c is None or c.horizon_total is None:
        return math.inf
    if req.is_serving or not plan.speed.train_tokens_per_s:
        return c.horizon_total
    tokens = plan.speed.train_tokens_per_s * 3600 * c.hours_per_month * c.months
    return c.horizon_total / tokens


def time_metric(plan: Plan, req: Request) -> float:
    sp = plan.speed
    if req.is_serving:
        return -(sp.decode_tokens_per_s or 0.0)
    if sp.train_hours is not None:
        return sp.train_hours
    return -(sp.train_tokens_per_s or 0.0)


def rank_key(plan: Plan, req: Request) -> tuple:
    """Lower is better (see the module's docstring)."""
    c = plan.cost
    cost, time = cost_metric(plan, req), time_metric(plan, req)
    unpriced = c is None or c.horizon_total is None
    # with a budget, a plan without a price cannot be shown to fit it: after those that do,
    # and after those that miss it by a known amount
    budget_tier = (0 if c is not None and c.within_budget else 2 if unpriced else 1) \
        if req.budget is not None else 0
    return (plan.verdict == "no",
            not (plan.service.meets if plan.service else True),
            budget_tier,
            unpriced,
            -(-plan.gpus // GPUS_PER_SERVER) if req.is_serving else 0,  # servers: fewer first
            plan.gpus > GPUS_PER_SERVER and not _nvlink(plan),  # clusters of PCIe boxes last
            plan.verdict == "tight",
            *((cost, time) if req.goal == "cost" else (time, cost)),
            plan.gpus * plan.memory.capacity)


def tokens_text(tokens: int) -> str:
    """2T, 300B, 50M: token counts as papers write them."""
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if tokens >= scale:
            return f"{tokens / scale:g}{unit}"
    return f"{tokens:,}"


def method_name(name: str) -> str:
    return _(method(name).label)


def _fit_clause(plan: Plan) -> str:
    m = plan.memory
    verdict = {"fits": _("fits"), "tight": _("tight"), "no": _("does not fit")}[plan.verdict]
    return _("{used:.1f} of {capacity:.1f} GiB per GPU ({verdict}, {free:.0%} free)").format(
        used=m.total / memory.GIB, capacity=m.capacity / memory.GIB, verdict=verdict,
        free=max(0.0, 1 - m.total / m.capacity))


def speed_clause(plan: Plan, req: Request) -> str | None:
    sp, sv = plan.speed, plan.service
    if req.is_serving and sp.decode_tokens_per_s:
        ttft = (_(", {ttft:.1f} s to the first token at {context} tokens").format(
            ttft=sv.ttft_s, context=sv.prompt or req.context)
            if sv and sv.ttft_s is not None else "")
        held = (_("; its KV cache holds {held:,} users at {context:,} tokens").format(
            held=sv.users_held, context=sv.context or req.context)
            if sv and sv.users_held is not None else "")
        return _("about {per:,.0f} tokens/s per user for {users} users{ttft}").format(
            per=sp.decode_tokens_per_s, users=req.users, ttft=ttft) + held
    if sp.train_hours is not None and req.tokens:
        return _("the {tokens} tokens take {days:,.1f} days ({hours:,.0f} h)").format(
            tokens=tokens_text(req.tokens), days=sp.train_hours / 24, hours=sp.train_hours)
    if sp.train_tokens_per_s:
        return _("trains at about {rate:,.0f} tokens/s").format(rate=sp.train_tokens_per_s)
    return None


def _use_text(req: Request, hours: float) -> str:
    if req.hours is not None:
        return _("at the {hours:g} h/month you said").format(hours=hours)
    if req.is_serving:
        return _("around the clock")
    return _("at {hours:g} h/month (the default: the guides note most teams use under 30% of "
             "their cards; set hours=)").format(hours=hours)


def cost_clause(plan: Plan, req: Request) -> list[str]:
    """What the chosen way of getting the cards costs, and when the other way would be better."""
    c = plan.cost
    if c is None:
        return []
    out = []
    if c.mode == "buy":
        out.append(_("buying costs {capex} up front, then {monthly}/month with power and "
                     "operations").format(capex=money(c.buy.capex, c.currency),
                                          monthly=money(c.buy.monthly_total, c.currency)))
    elif c.mode == "rent":
        if req.tokens and c.job.rent is not None:
            out.append(_("renting costs about {job} for the run").format(
                job=money(c.job.rent, c.currency)))
        else:
            out.append(_("renting costs {monthly}/month {use}").format(
                monthly=money(c.rent.monthly, c.currency), use=_use_text(req, c.hours_per_month)))
    else:
        out.append(_("no {market} price for it in the catalog: add a vendor quote with "
                     "`/gpusize quote` (or prices import)").format(
            market=market_word(req.market_choice.market)))
    be = c.break_even_hours_per_month
    if be is not None and c.buy.capex is not None and c.rent.monthly is not None:
        if be > HOURS_PER_MONTH:
            out.append(_("renting stays cheaper at any use (buying would pay off only above "
                         "{hours:,.0f} h/month, more than a month has)").format(hours=be))
        elif req.hours is not None:
            side = _("buy") if c.hours_per_month > be else _("rent")
            out.append(_("buying pays off above {hours:.0f} h/month of use (you said {use:g} h: "
                         "{side})").format(hours=be, use=c.hours_per_month, side=side))
        else:
            out.append(_("buying pays off above {hours:.0f} h/month of use").format(hours=be))
    if c.budget is not None and c.within_budget:
        out.append(_("within the budget of {budget}").format(budget=money(c.budget, c.currency)))
    return out


def recommendation(plan: Plan, req: Request, runner_up: Plan | None) -> str:
    """The verdict a buyer reads first: what to get and how, whether it fits, how fast, what
    it costs."""
    c = plan.cost
    what = f"{plan.gpus} x {plan.gpu_display}"
    head = {"buy": _("Buy {what}"), "rent": _("Rent {what}")}.get(
        c.mode if c else None, _("Get {what}")).format(what=what)
    parts = [_("{action} ({strategy})").format(action=head, strategy=plan.strategy),
             _fit_clause(plan)]
    speed = speed_clause(plan, req)
    if speed:
        parts.append(speed)
    parts += cost_clause(plan, req)
    if (runner_up is not None and c and runner_up.cost and runner_up.verdict != "no"
            and (runner_up.service is None or runner_up.service.meets)):
        parts += _compare(plan, runner_up, req)
    if req.gpu and req.gpus:
        lead = _("As asked: ")
    else:
        goal = (_("fastest") if req.goal == "time" else _("cheapest that meets the service level")
                if req.is_serving else _("cheapest per token trained"))
        lead = _("Recommended ({goal}): ").format(goal=goal)
    return lead + _("; ").join(parts) + _(".")


def _compare(plan: Plan, other: Plan, req: Request) -> list[str]:
    """How much the recommendation saves against the next plan, or why it costs more."""
    c, o = plan.cost, other.cost
    if req.tokens and c.job.rent is not None and o.job.rent is not None:
        mine, theirs = c.job.rent, o.job.rent
        span = _("for the run")
    elif c.horizon_total and o.horizon_total:
        mine, theirs = c.horizon_total, o.horizon_total
        span = _("over {months} months").format(months=req.months)
    else:
        return []
    name = f"{other.gpus} x {other.gpu_display}"
    if theirs >= mine:
        return [_("{amount} less {span} than the next option ({other})").format(
            amount=money(theirs - mine, c.currency), span=span, other=name)]
    return [_("{amount} more {span} than {other}, which is {why}").format(
        amount=money(mine - theirs, c.currency), span=span, other=name,
        why=_why_not(other, req))]


def _why_not(plan: Plan, req: Request) -> str:
    c = plan.cost
    if c is not None and c.within_budget is False:
        return _("over the budget")
    if plan.gpus > GPUS_PER_SERVER:
        return _("more than one server")
    if plan.verdict == "tight":
        return _("tight on memory")
    return _("slower") if time_metric(plan, req) > 0 or req.is_serving else _("dearer per token")


def pinned_text(plan: Plan, req: Request) -> str:
    """The configuration asked about runs but falls short of the service level, deadline or
    budget: the verdict first, then what it misses."""
    text = recommendation(plan, req, None)
    short = list(plan.service.misses) if plan.service else []
    c = plan.cost
    if c is not None and c.within_budget is False and c.budget is not None:
        least = min(x for x in (c.buy.capex, c.rent_horizon_total) if x is not None)
        short.append(_("{over} over the budget of {budget}").format(
            over=money(least - c.budget, c.currency), budget=money(c.budget, c.currency)))
    if short:
        text += " " + _("It falls short of what was asked: {misses}.").format(
            misses=_("; ").join(short))
    return text


def no_plan_text(plans: list[Plan], req: Request) -> str:
    """The lead line when nothing can be recommended: why, in the buyer's terms."""
    top = plans[0] if plans else None
    if top is None:
        return _("No card in the {market} market can hold this configuration.").format(
            market=market_word(req.market_choice.market))
    if top.verdict == "no":
        m = top.memory
        return _("Does not fit {n} x {card}: needs {need:.1f} GiB per GPU, the card has "
                 "{capacity:.1f} GiB ({usable:.1f} usable). What would fit is listed below."
                 ).format(n=top.gpus, card=top.gpu_display, need=m.total / memory.GIB,
                          capacity=m.capacity / memory.GIB, usable=(m.usable or m.capacity)
                          / memory.GIB)
    if top.service and not top.service.meets:
        lead = (_("No configuration meets the service level") if req.is_serving
                else _("No configuration finishes within the deadline"))
        speed = speed_clause(top, req)
        return _("{lead} ({misses}). The closest: {n} x {card} ({strategy}), {speed}. Ask for "
                 "less (min_speed=, ttft=, days=) or see what would help below.").format(
            lead=lead, misses="; ".join(top.service.misses), n=top.gpus, card=top.gpu_display,
            strategy=top.strategy, speed=speed or "")
    return over_budget(plans, req)


def over_budget(plans: list[Plan], req: Request) -> str:
    """How far the cheapest plan that runs is from the budget, as the buyer holds it."""
    priced = [p for p in plans if p.verdict != "no" and p.cost and p.cost.horizon_total]
    if not priced:
        return _("No plan that runs has a price in the {market} market: add vendor quotes with "
                 "`/gpusize quote`.").format(market=market_word(req.market_choice.market))
    cheapest = min(priced, key=lambda p: min(x for x in (p.cost.buy.capex,
                                                          p.cost.rent_horizon_total)
                                             if x is not None))
    c = cheapest.cost
    options = []
    if c.buy.capex is not None:
        options.append(_("{capex} to buy").format(capex=money(c.buy.capex, c.currency)))
    if c.rent_horizon_total is not None:
        span = (_("for the run") if req.tokens and c.job.rent is not None
                else _("over {months} months").format(months=req.months))
        options.append(_("{total} to rent {span}").format(
            total=money(c.rent_horizon_total, c.currency), span=span))
    least = min(x for x in (c.buy.capex, c.rent_horizon_total) if x is not None)
    text = _("Over budget: the cheapest plan that runs is {n} x {card}, {options}: {over} more "
             "than the budget of {budget}.").format(
        n=cheapest.gpus, card=cheapest.gpu_display, options=_(" or ").join(options),
        over=money(least - (c.budget or 0), c.currency), budget=money(c.budget, c.currency))
    if c.rent.monthly and c.budget and not req.tokens and c.budget >= c.rent.monthly:
        text += " " + _("The budget rents it for {months:.0f} months at {use}.").format(
            months=c.budget // c.rent.monthly, use=_use_text(req, c.hours_per_month))
    return text


def advice(spec: ModelSpec, req: Request, plans: list[Plan]) -> list[str]:
    """The seeds' advice where it applies to this request (DOMAIN.md), saying where the
    recommendation departs from it and why."""
    out = []
    billions = spec.params / 1e9
    top = plans[0] if plans else None
    mode = top.cost.mode if top and top.cost else None
    if billions < 7:
        out.append(_("< 7B tier (buying guide): one RTX 4090 serves it; 2x 4090 or one 48 GB card "
                     "for light fine-tuning"))
    elif billions <= 70:
        out.append(_("7B-70B tier (buying guide): train on several GPUs in parallel rather than one "
                     "big card"))
    else:
        line = _("> 70B tier (buying guide): rent cluster time (supercomputing / AI computing "
                 "centres) rather than building a machine room; rent first")
        if mode == "buy":
            line += _(" (this answer buys because buying is cheaper at the use per month "
                      "assumed; rent if the cards would sit idle)")
        out.append(line)
    if top and req.is_training and top.gpus > 1 and not _nvlink(top):
        out.append(_("PCIe-only cards (RTX 4090 and similar) scale poorly for multi-card "
                     "training: gradient and shard traffic crosses PCIe through the host"))
    if top and top.gpus >= 8:
        out.append(_("an 8-GPU server draws 8-12 kW and needs real cooling (buying guide); in an "
                     "ordinary room prefer 4-GPU servers"))
    if top and top.gpus > 8:
        out.append(_("multi-server: NVMe of at least 2 TB per server and RoCE or InfiniBand "
                     "between servers, or the GPUs wait (buying guides)"))
    if req.is_serving:
        if req.users < 10:
            out.append(_("< 10 concurrent users (buying guide): one card, or a 4-bit AWQ/GPTQ model "
                         "on one card for 70B"))
        elif req.users <= 50:
            out.append(_("10-50 concurrent users (buying guide): several cards load-balanced, vLLM "
                         "continuous batching"))
        else:
            out.append(_("> 50 concurrent users (buying guide): H20/H200-class cards with "
                         "TensorRT-LLM, or a public-cloud API"))
    if top and top.cost and top.cost.job.hours is not None and top.cost.job.hours < 730:
        line = _("a job shorter than a month: rent it (buying guides: rent first for short projects)")
        if mode == "buy":
            line += _(" (this answer buys only because no rental price is known in this market)")
        out.append(line)
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
                              "{cost}; measure throughput and stability before buying (the "
                              "buying guides' step 5)").format(n=plan.gpus, card=plan.gpu_display,
                                                       epoch=epoch, hours=hours,
                                                       cost=money(rent, currency)))
