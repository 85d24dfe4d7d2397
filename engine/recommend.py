"""From plans to a recommendation: ranking, the verdict a buyer reads first, the seeds' advice
(reconciled with the verdict), a trial run.

Ranking, best first (rank_plans): plans that run before plans that don't; then those that meet
the service level (serving) or the deadline (training with tokens=); then, with a budget, those
known to fit it, then those over it by the least money, then those without a price; for
serving, fewer servers before more (a model served across servers waits on their network for
every token); then clusters of PCIe-only servers after the rest (the guides: PCIe cards scale
poorly across cards, and such boxes seldom have the RoCE or InfiniBand a multi-server job
needs); then training sharded over several PCIe-only cards after every plan that runs on one
card (ZeRO-3 over consumer cards only when one card cannot do it); then those that keep the
headroom free before tight ones, unless a published run on that model size, method and card
shows it runs (engine/runs.py); then by goal: cost (serving: the cheaper of buying and renting
over months=; training: that cost per token trained, since a slower plan needs more of its hours
for the same work) or time. Plans within NEAR_COST of each other's cost are a tie, decided by
fewer servers, then fewer cards, then less time, then the card's name (so equal plans keep one
order whatever order the catalog lists them in). One test decides a tie everywhere (near_cost):
the ranking, the comparison with the runner-up and the reason the runner-up ranks lower.

One card's count (best_option): the same order; for a training job of known size (tokens=, or
pre-training's assumed tokens) on NVLink cards, more cards in the same server at the same cost
per token finish sooner and are taken (a 7B pre-training run on 8 GPUs for 9 days, not 1 GPU
for 69 at the same price); on PCIe cards fewer cards are kept.
"""

from __future__ import annotations

import math
import re

from engine import catalog, i18n, memory, runs
from engine.architecture import ModelSpec
from engine.catalog import GPUS_PER_SERVER
from engine.cost import ASSUMED_EPOCH_TOKENS, break_even_phrase, dedicated_phrase
from engine.i18n import _, counted, seconds
from engine.market import ACCESS_WORDS, STATUS_TEXT, WHERE_WORDS, market_word
from engine.methods import method
from engine.request import Request
from engine.schema import Alternative, Cost, Plan, Trial

DEFAULT_EPOCH_TOKENS = ASSUMED_EPOCH_TOKENS  # the trial's epoch: the same assumption
NEAR_COST = 0.05  # costs this close are a tie: fewer servers, fewer cards, less time decide
money = i18n.money


def near_cost(a: float, b: float) -> bool:
    """Two costs the ranking calls a tie: within NEAR_COST of the cheaper. The ranking, the
    comparison with the runner-up and the reason it ranks lower all use this one test, so the
    answer never calls two plans 'about the same' and one of them 'dearer'."""
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= NEAR_COST * min(a, b)


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


def servers(plan: Plan) -> int:
    return -(-plan.gpus // GPUS_PER_SERVER)


def sharded_over_pcie(plan: Plan, req: Request) -> bool:
    """Training spread over several consumer or workstation cards (GDDR boards that talk only
    over PCIe, no NVLink)."""
    card = catalog.gpus()[plan.gpu]
    return (req.is_training and plan.gpus > 1 and not card.has_nvlink
            and card.memory_kind == "gddr")


def overspend(plan: Plan) -> float:
    """How much more than the budget the cheaper way of getting the plan costs (0 within it)."""
    c = plan.cost
    if c is None or c.budget is None:
        return 0.0
    least = [x for x in (c.buy.capex, c.rent_horizon_total) if x is not None]
    return max(0.0, min(least) - c.budget) if least else math.inf


def _tier(plan: Plan, req: Request, single_runs: bool) -> tuple:
    """Everything rank_key compares before cost and time."""
    c = plan.cost
    unpriced = c is None or c.horizon_total is None
    # with a budget, a plan without a price cannot be shown to fit it: after those that do,
    # and after those that miss it by a known amount (least over first)
    budget_tier = (0 if c is not None and c.within_budget else 2 if unpriced else 1) \
        if req.budget is not None else 0
    return (plan.verdict == "no",
            not (plan.service.meets if plan.service else True),
            budget_tier,
            overspend(plan) if budget_tier == 1 else 0.0,
            unpriced,
            servers(plan) if req.is_serving else 0,  # serving: fewer servers first
            plan.gpus > GPUS_PER_SERVER and not _nvlink(plan),  # clusters of PCIe boxes last
            single_runs and sharded_over_pcie(plan, req),  # ZeRO-3 over PCIe: only if needed
            plan.verdict == "tight" and not plan.published)  # a published run: known to run


def rank_key(plan: Plan, req: Request, *, single_runs: bool = False) -> tuple:
    """Lower is better (see the module's docstring)."""
    return _key(plan, req, _tier(plan, req, single_runs), cost_metric(plan, req),
                time_metric(plan, req))


def _key(plan: Plan, req: Request, tier: tuple, cost: float, time: float) -> tuple:
    return (*tier, *((cost, time) if req.goal == "cost" else (time, cost)),
            plan.gpus * plan.memory.capacity,
            plan.gpu, plan.change)  # last: the same order whatever order the catalog lists


def with_published(plan: Plan, spec: ModelSpec) -> Plan:
    """The plan with the published run that shows it runs, if one does (engine/runs.py)."""
    if plan.published:
        return plan
    run = runs.matching(spec, plan.method, plan.gpu, plan.gpus, quant=plan.settings.quant,
                        settings=plan.settings)
    return plan if run is None else plan.model_copy(update={"published": run.text()})


def rank_plans(plans: list[Plan], req: Request, spec: ModelSpec | None = None) -> list[Plan]:
    """Plans best first (the module's docstring)."""
    if spec is not None:
        plans = [with_published(p, spec) for p in plans]
    if len(plans) < 2:  # one card's single count, mostly (best_option): nothing to order
        return list(plans)
    single = any(p.gpus == 1 and p.verdict != "no" for p in plans)
    # each plan's tier and metrics once: the near-cost grouping compares them pair by pair
    tiers = [_tier(p, req, single) for p in plans]
    costs = [cost_metric(p, req) for p in plans]
    times = [time_metric(p, req) for p in plans]
    ordered = sorted(range(len(plans)),
                     key=lambda i: _key(plans[i], req, tiers[i], costs[i], times[i]))
    if req.goal != "cost":
        return [plans[i] for i in ordered]
    out: list[Plan] = []
    rest = ordered
    while rest:
        anchor = rest[0]
        tier, cheapest = tiers[anchor], costs[anchor]
        near = [i for i in rest if tiers[i] == tier and near_cost(costs[i], cheapest)]
        if not near:
            near = [anchor]
        near.sort(key=lambda i: (servers(plans[i]), plans[i].gpus, times[i], costs[i],
                                 plans[i].gpu, plans[i].change))
        out += [plans[i] for i in near]
        taken = set(near)
        rest = [i for i in rest if i not in taken]
    return out


def best_option(options: list[Plan], req: Request, spec: ModelSpec) -> Plan:
    """Which of one card's counts to show (the module's docstring)."""
    ranked = rank_plans(options, req, spec)
    first = ranked[0]
    sized = req.tokens is not None or req.spec.pretraining
    if not (req.is_training and sized and req.goal == "cost" and _nvlink(first)):
        return first
    single = any(p.gpus == 1 and p.verdict != "no" for p in ranked)
    tier, cheapest = _tier(first, req, single), cost_metric(first, req)
    same = [p for p in ranked if _tier(p, req, single) == tier and servers(p) == servers(first)
            and (not math.isfinite(cheapest) or near_cost(cost_metric(p, req), cheapest))]
    return min(same, key=lambda p: time_metric(p, req))


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
        ttft = (_(", {ttft} s to the first token at {context} tokens").format(
            ttft=seconds(sv.ttft_s), context=sv.prompt or req.context)
            if sv and sv.ttft_s is not None else "")
        held = (_("; its KV cache holds {held} at {context:,} tokens").format(
            held=counted(sv.users_held, "user"), context=sv.context or req.context)
            if sv and sv.users_held is not None else "")
        return _("about {per:,.0f} tokens/s per user for {users}{ttft}").format(
            per=sp.decode_tokens_per_s, users=counted(req.users, "user"), ttft=ttft) + held
    if sp.train_hours is not None and req.tokens:
        # a run under a day in hours (or minutes): "0.0 days (0 h)" said nothing
        if sp.train_hours < 1:
            return _("the {tokens} tokens take about {minutes:,.0f} min").format(
                tokens=tokens_text(req.tokens), minutes=max(1.0, sp.train_hours * 60))
        if sp.train_hours < 24:
            return _("the {tokens} tokens take {hours:,.1f} h").format(
                tokens=tokens_text(req.tokens), hours=sp.train_hours)
        return _("the {tokens} tokens take {days:,.1f} days ({hours:,.0f} h)").format(
            tokens=tokens_text(req.tokens), days=sp.train_hours / 24, hours=sp.train_hours)
    if sp.train_tokens_per_s:
        text = _("trains at about {rate:,.0f} tokens/s").format(rate=sp.train_tokens_per_s)
        job = plan.cost.job if plan.cost else None
        if req.spec.pretraining and job is not None and job.hours and job.tokens:
            # pre-training's assumed tokens make a run of a known length: say it, a buyer
            # should see a six-year run before the price of its cards
            text += _(" (the assumed {tokens} tokens take {days:,.0f} days)").format(
                tokens=tokens_text(job.tokens), days=job.hours / 24)
        return text
    return None


def _use_text(req: Request, hours: float) -> str:
    if req.hours is not None:
        return _("at the {hours:g} h/month you said").format(hours=hours)
    if req.is_serving:
        return _("around the clock")
    return _("at {hours:g} h/month (the default: the guides note most teams use under 30% of "
             "their cards; set hours=)").format(hours=hours)


def access_phrase(plan: Plan) -> str:
    """"second-hand in China": how the card can be had where the asker is."""
    a = plan.access
    if a is None:
        return ""
    return _("{status} {where}").format(
        status=_(ACCESS_WORDS.get(a.status, ACCESS_WORDS["unknown"])),
        where=_(WHERE_WORDS.get(a.market, a.market)))


def _job_text(plan: Plan, req: Request) -> str:
    """The run a rent is counted for: tokens=, or the assumption and how to replace it."""
    job = plan.cost.job if plan.cost else None
    if job is None or job.tokens is None:
        return _("for the run")
    if not job.assumed_tokens:
        return _("for the {tokens} tokens").format(tokens=tokens_text(job.tokens))
    if req.spec.pretraining:
        return _("for {tokens} tokens (an assumed 20 per parameter, compute-optimal; set tokens=)"
                 ).format(tokens=tokens_text(job.tokens))
    return _("for one assumed {tokens}-token epoch (set tokens= to your data's size)").format(
        tokens=tokens_text(job.tokens))


def rent_clause(plan: Plan, req: Request) -> list[str]:
    """What renting costs, counted the way the plan's size rents: a training job's cost and a
    month's rent are separate clauses, each saying which it is."""
    c = plan.cost
    assert c is not None
    r = c.rent
    if req.is_training and c.job.rent is not None:
        text = _("renting costs about {job} {span}").format(job=money(c.job.rent, c.currency),
                                                           span=_job_text(plan, req))
        if req.hours is not None and r.monthly is not None:
            text += _(", {monthly}/month {use}").format(
                monthly=money(r.monthly, c.currency), use=_use_text(req, c.hours_per_month))
        if r.hourly is False:
            # the run's share of the servers' month, the basis every other plan's run uses
            text += _(" (dedicated servers at {monthly}/month, counted for the hours run)").format(
                monthly=money(r.monthly, c.currency))
        if r.min_hours and c.job.hours is not None and c.job.hours < r.min_hours:
            text += _(" (the quote's minimum term of {hours:g} h is billed)").format(
                hours=r.min_hours)
    else:
        text = _("renting costs {monthly}/month {use}").format(
            monthly=money(r.monthly, c.currency), use=_use_text(req, c.hours_per_month))
    if r.where:
        text += _(", from {where}").format(where=r.where)
    if r.kind in ("rent_cluster_hour", "rent_server_month") and not r.min_hours:
        text += _(" (the rate states no minimum term: ask for one)")
    out = [text]
    if r.monthly_low is not None and r.monthly_high is not None:
        # a month's rent, never in the job's sentence: the two are different amounts
        if req.is_training and c.job.rent is not None:
            out.append(_("rented by the month instead: {low}/month from per-card listings at "
                         "{hours:g} h/month, {high}/month for a dedicated server").format(
                low=money(r.monthly_low, c.currency), high=money(r.monthly_high, c.currency),
                hours=c.hours_per_month))
        else:  # the clause above is already a month's rent: only the dedicated one is new
            out[0] += _(" (per-card listings: a dedicated server rents for {high}/month)").format(
                high=money(r.monthly_high, c.currency))
    return out


def cost_clause(plan: Plan, req: Request) -> list[str]:
    """What the chosen way of getting the cards costs, and when the other way would be better."""
    c = plan.cost
    if c is None:
        return []
    out = []
    if c.mode == "owned":
        return owned_clause(plan, req)
    if c.mode == "buy":
        out.append(_("buying costs {capex} up front, then {monthly}/month with power and "
                     "operations").format(capex=money(c.buy.capex, c.currency),
                                          monthly=money(c.buy.monthly_total, c.currency)))
        if c.stale_purchases:
            out.append(stale_purchase_text(c))
        if (c.budget is not None and c.rent_horizon_total is not None
                and c.rent_horizon_total > c.budget):
            # bought because renting the whole job would not fit the budget, whatever the
            # break-even says about a month of use
            out.append(_("bought, not rented: renting {span} would cost {rent}, over the budget"
                         ).format(span=_job_text(plan, req) if req.is_training else _(
                             "over {months} months").format(months=req.months),
                                  rent=money(c.rent_horizon_total, c.currency)))
    elif c.mode == "rent":
        out += rent_clause(plan, req)
    else:
        out.append(_("no {market} price for it in the catalog: add a vendor quote with "
                     "`/gpusize quote` (or prices import)").format(
            market=market_word(req.market_choice.market)))
    be = c.break_even_hours_per_month
    if be is not None and c.buy.capex is not None and c.rent.monthly is not None:
        out.append(break_even_phrase(be, said=req.hours,
                                     listing=dedicated_phrase(c) is not None))
    dedicated = dedicated_phrase(c)
    if dedicated is not None:
        out.append(dedicated)
    if c.budget is not None and c.within_budget:
        out.append(_("within the budget of {budget}").format(budget=money(c.budget, c.currency)))
    return out


def owned_clause(plan: Plan, req: Request) -> list[str]:
    """Cards the team has: what running them costs (power, operations), never a purchase,
    a rent or a break-even."""
    c = plan.cost
    assert c is not None
    b = c.buy
    if b.monthly_ops is not None:
        text = _("running them costs about {total}/month ({power} power, {ops} operations, at "
                 "{hours:g} h/month); nothing to buy or rent").format(
            total=money(b.monthly_total, c.currency), power=money(b.monthly_power, c.currency),
            ops=money(b.monthly_ops, c.currency), hours=c.hours_per_month)
    else:
        text = _("running them costs about {power}/month in power at {hours:g} h/month (no "
                 "purchase price to count operations from); nothing to buy or rent").format(
            power=money(b.monthly_power, c.currency), hours=c.hours_per_month)
    out = [text]
    if req.is_training and c.job.hours is not None and c.job.buy_share is not None:
        out.append(_("the run's share of that is about {share} {span}").format(
            share=money(c.job.buy_share, c.currency), span=_job_text(plan, req)))
    return out


def stale_purchase_text(c: Cost) -> str:
    """The buy figure rests on a price over 12 months old: said where the price is read."""
    dates = _quoted_dates(c.stale_purchases)
    if not dates:
        return _("the purchase price is over 12 months old: get a fresh quote before buying")
    return _("the purchase price is over 12 months old (quoted {oldest}): get a fresh quote "
             "before buying").format(oldest=min(dates))


def _quoted_dates(cites: list[str]) -> list[str]:
    """The dates in price citations ("..., 2022-10-12, STALE ...")."""
    return [m.group(0) for cite in cites for m in [re.search(r"\d{4}-\d{2}-\d{2}", cite)] if m]


def sentence_gap(before: str) -> str:
    """What separates two sentences: a space in English, nothing after a Chinese full stop."""
    return "" if before.endswith(("。", "）", "！", "？")) else " "


def _what(plan: Plan) -> str:
    """"8 x A800 SXM4 80GB (second-hand in the china market)"."""
    access = access_phrase(plan)
    name = f"{plan.gpus} x {plan.gpu_display}"
    return _("{name} ({access})").format(name=name, access=access) if access else name


def recommendation(plan: Plan, req: Request, runner_up: Plan | None) -> str:
    """The verdict a buyer reads first: what to get and how, whether it fits, how fast, what
    it costs. It always names `plan`, the answer's plans[0]."""
    c = plan.cost
    owned = c is not None and c.mode == "owned"
    # cards the team has need no access phrase: where they can be bought is beside the point
    what = f"{plan.gpus} x {plan.gpu_display}" if owned else _what(plan)
    head = {"buy": _("Buy {what}"), "rent": _("Rent {what}"), "owned": _("Run on {what}")}.get(
        c.mode if c else None, _("Get {what}")).format(what=what)
    parts = [_("{action} ({strategy})").format(action=head, strategy=plan.strategy),
             _fit_clause(plan)]
    if plan.published:
        parts.append(_("published: {run}").format(run=plan.published))
    speed = speed_clause(plan, req)
    if speed:
        parts.append(speed)
    parts += cost_clause(plan, req)
    if (runner_up is not None and c and runner_up.cost and runner_up.verdict != "no"
            and (runner_up.service is None or runner_up.service.meets)):
        parts += _compare(plan, runner_up, req)
    a = plan.access
    if owned:
        lead = (_("On the cards you have, {change}: ").format(change=plan.change) if plan.change
                else _("On the cards you have: "))
    elif a is not None and not (a.can_buy or a.can_rent):
        # a card the market cannot get is sized, never recommended (unobtainable_text says why)
        lead = _("Sized as asked, not a recommendation: ")
    elif req.gpu and req.gpus and not plan.change:
        lead = _("As asked: ")
    else:
        goal = (_("fastest") if req.goal == "time" else _("cheapest that meets the service level")
                if req.is_serving else _("cheapest per token trained"))
        lead = _("Recommended ({goal}): ").format(goal=goal)
        if plan.change:
            lead = _("Recommended ({goal}), {change}: ").format(goal=goal, change=plan.change)
    return lead + _("; ").join(parts) + _(".")


def _compare(plan: Plan, other: Plan, req: Request) -> list[str]:
    """How much the recommendation saves against the next plan, or why it costs more."""
    c, o = plan.cost, other.cost
    by_run = False
    if c.within_budget and o.within_budget is False:
        # the budget ranks before cost: what the next plan costs per token is beside the point
        return [_("the next option ({other}) is over the budget").format(
            other=f"{other.gpus} x {other.gpu_display}")]
    if req.is_training and c.job.rent is not None and o.job.rent is not None and (
            c.mode == "rent" and o.mode == "rent"):
        mine, theirs = c.job.rent, o.job.rent
        span = _("for the run")
        by_run = True
    elif req.is_training and plan.speed.train_tokens_per_s and other.speed.train_tokens_per_s:
        # the ranking's own measure: what a token trained costs, owning or renting over months=
        mine, theirs = cost_metric(plan, req), cost_metric(other, req)
        if not (math.isfinite(mine) and math.isfinite(theirs)) or min(mine, theirs) <= 0:
            return []
        name = f"{other.gpus} x {other.gpu_display}"
        if near_cost(mine, theirs):
            return [_("about the same cost per token trained as {other}, which is {why}").format(
                other=name, why=_why_not(other, req, plan))]
        if theirs > mine:
            return [_("{share:.0%} cheaper per token trained than the next option ({other})"
                      ).format(share=1 - mine / theirs, other=name)]
        return [_("{share:.0%} dearer per token trained than {other}, which is {why}").format(
            share=mine / theirs - 1, other=name, why=_why_not(other, req, plan))]
    elif c.horizon_total and o.horizon_total:
        mine, theirs = c.horizon_total, o.horizon_total
        span = _("over {months} months").format(months=req.months)
    else:
        return []
    name = f"{other.gpus} x {other.gpu_display}"
    if near_cost(mine, theirs):
        return [_("about the same cost {span} as {other}, which is {why}").format(
            span=span, other=name, why=_why_not(other, req, plan, by_run=by_run))]
    if theirs >= mine:
        return [_("{amount} less {span} than the next option ({other})").format(
            amount=money(theirs - mine, c.currency), span=span, other=name)]
    return [_("{amount} more {span} than {other}, which is {why}").format(
        amount=money(mine - theirs, c.currency), span=span, other=name,
        why=_why_not(other, req, plan, by_run=by_run))]


def _why_not(plan: Plan, req: Request, chosen: Plan | None = None, *,
             by_run: bool = False) -> str:
    """Why `plan` ranks after `chosen`, in the order rank_plans weighs it. `by_run`: the sentence
    compared the two by the run's rent, so a per-token reason names its own basis (the cost of
    owning or renting over months=), and 'about the same for the run' never meets a bare
    'dearer'."""
    c = plan.cost
    if c is not None and c.within_budget is False:
        return _("over the budget")
    mine = cost_metric(chosen, req) if chosen is not None else math.inf
    theirs = cost_metric(plan, req)
    if chosen is not None and req.is_training and req.goal == "cost" and (
            theirs > mine) and not near_cost(theirs, mine):
        return (_("dearer per token trained over {months} months of use").format(
            months=req.months) if by_run else _("dearer per token trained"))
    if servers(plan) > 1 and (chosen is None or servers(chosen) < servers(plan)):
        return (_("more than one server") if chosen is None or servers(chosen) == 1
                else _("more servers ({theirs} against {mine})").format(
                    theirs=servers(plan), mine=servers(chosen)))
    if chosen is not None and sharded_over_pcie(plan, req) and chosen.gpus == 1:
        return _("sharded over PCIe cards where one card does")
    if plan.verdict == "tight" and not plan.published:
        return _("tight on memory")
    if chosen is not None and plan.gpus > chosen.gpus:
        return _("more cards")
    if chosen is not None:
        if time_metric(plan, req) > time_metric(chosen, req):
            return _("slower")
        # the last tie-breaks: cost within the tie, then the card's name
        return _("a little dearer") if theirs > mine else _("an exact tie, listed second")
    return _("slower") if time_metric(plan, req) > 0 or req.is_serving else _("dearer per token")


def pinned_text(plan: Plan, req: Request) -> str:
    """The configuration asked about runs but falls short of the service level, deadline or
    budget: the verdict first, then what it misses."""
    c = plan.cost
    over = c is not None and c.within_budget is False and c.budget is not None
    text = recommendation(plan, req, None)
    if over:
        text = _("Over budget: ") + text
    short = list(plan.service.misses) if plan.service else []
    if over:
        short.append(_("{over} over the budget of {budget}").format(
            over=money(overspend(plan), c.currency), budget=money(c.budget, c.currency)))
    if short:
        text += sentence_gap(text) + _("It falls short of what was asked: {misses}.").format(
            misses=_("; ").join(short))
    return text


def unobtainable_text(plan: Plan, req: Request) -> str:
    """A card the asker's market gets only through grey channels, or not at all: said first."""
    a = plan.access
    assert a is not None
    # the row's note is English data (availability.toml): another language gets the status in
    # its own words and the date the fact held
    note = a.note.rstrip(".") if i18n.current() == "en" else _("{status}, as of {as_of}").format(
        status=_(STATUS_TEXT.get(a.status, STATUS_TEXT["unknown"])), as_of=a.as_of)
    return _("{card}: {status} {where}, so gpusize neither prices nor recommends it there "
             "({note}).").format(
        card=plan.gpu_display, status=_(ACCESS_WORDS.get(a.status, ACCESS_WORDS["unknown"])),
        where=_(WHERE_WORDS.get(a.market, a.market)), note=note)


def no_plan_text(plans: list[Plan], req: Request, same_card: Alternative | None = None,
                 misses: list[str] | None = None) -> str:
    """The lead line when nothing can be recommended: why, in the buyer's terms; it names
    plans[0] whenever it names a plan, and when the asked cards do not hold the request as
    asked but another recipe runs on them (`same_card`), it says so before other cards.
    `misses`: why each card was left out; with gpu= pinned, the one card's reason is the answer."""
    top = plans[0] if plans else None
    if top is None and req.gpu and misses:
        return misses[0].rstrip(".") + ("。" if i18n.current() == "zh" else ".")
    if top is None:
        return _("No card in the {market} market can hold this configuration.").format(
            market=market_word(req.market_choice.market))
    if top.verdict == "no":
        m = top.memory
        text = _("Does not fit {n} x {card} as asked: needs {need:.1f} GiB per GPU, the card has "
                 "{capacity:.1f} GiB ({usable:.1f} usable).").format(
            n=top.gpus, card=top.gpu_display, need=m.total / memory.GIB,
            capacity=m.capacity / memory.GIB, usable=(m.usable or m.capacity) / memory.GIB)
        if same_card is not None:
            return text + sentence_gap(text) + _("It runs on the same cards {change}: see below.").format(
                change=same_card.plan.change)
        return text + sentence_gap(text) + _("What would fit is listed below.")
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
    """How far plans[0], the plan that misses the budget by the least, is from it."""
    top = plans[0]
    c = top.cost
    if c is None or c.horizon_total is None:
        return _("No plan that runs has a price in the {market} market: add vendor quotes with "
                 "`/gpusize quote`.").format(market=market_word(req.market_choice.market))
    options = []
    if c.buy.capex is not None:
        options.append(_("{capex} to buy").format(capex=money(c.buy.capex, c.currency)))
    if c.rent_horizon_total is not None:
        span = (_job_text(top, req) if req.is_training and c.job.rent is not None
                else _("over {months} months").format(months=req.months))
        options.append(_("{total} to rent {span}").format(
            total=money(c.rent_horizon_total, c.currency), span=span))
    # with a service level asked, the cheapest plan that meets it, not merely one that runs;
    # and what the budget does buy, with what it misses
    asked = req.is_serving or req.days is not None  # training meets a level only with days=
    meets = asked and top.service is not None and top.service.meets
    lead = (_("Over budget: the cheapest plan that meets the service level is {what} "
              "({strategy}), {options}: {over} more than the budget of {budget}.") if meets
            else _("Over budget: the cheapest plan that runs is {what} ({strategy}), {options}: "
                   "{over} more than the budget of {budget}."))
    text = lead.format(
        what=_what(top), strategy=top.strategy, options=_(" or ").join(options),
        over=money(overspend(top), c.currency), budget=money(c.budget, c.currency))
    affordable = [p for p in plans[1:] if meets and p.service is not None
                  and not p.service.meets and p.cost is not None and p.cost.within_budget]
    if affordable:
        within = min(affordable, key=lambda p: min(
            x for x in (p.cost.buy.capex, p.cost.rent_horizon_total, math.inf) if x is not None))
        text += sentence_gap(text) + _("Within the budget, {what} runs it but misses it: "
                                       "{misses}.").format(
            what=_what(within), misses="; ".join(within.service.misses))
    if top.change:
        text += sentence_gap(text) + _("That is {change}.").format(change=top.change)
    if c.rent.monthly and c.budget and req.is_serving and c.budget >= c.rent.monthly:
        text += sentence_gap(text) + _("The budget rents it for {months:.0f} months, {use}.").format(
            months=c.budget // c.rent.monthly, use=_use_text(req, c.hours_per_month))
    return text


ONE_CARD_TIER_B = 80  # the guides' "< 10 users: one card (4-bit for 70B)" speaks of <= 70B


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
    elif mode != "owned":  # rent-or-build advice is moot on cards the team has
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
    # the guides' rules by concurrent users apply when the users were said (users=, or the
    # traffic's), and their "one card" only up to the 70B tier they speak of: under a
    # 16-card DeepSeek plan, "one card is enough" contradicts the answer
    if req.is_serving and ("users" in req.model_fields_set or req.requests is not None):
        if req.users < 10 and billions <= ONE_CARD_TIER_B:
            out.append(_("< 10 concurrent users (buying guide): one card, or a 4-bit AWQ/GPTQ model "
                         "on one card for 70B"))
        elif 10 <= req.users <= 50:
            out.append(_("10-50 concurrent users (buying guide): several cards load-balanced, vLLM "
                         "continuous batching"))
        elif req.users > 50:
            out.append(_("> 50 concurrent users (buying guide): H20/H200-class cards with "
                         "TensorRT-LLM, or a public-cloud API"))
    if (top and top.cost and top.cost.job.hours is not None and top.cost.job.hours < 730
            and mode != "owned"):
        line = _("a job shorter than a month: rent it (buying guides: rent first for short projects)")
        if mode == "buy" and top.cost.rent.per_gpu_hour is None:
            # the card has no rental price; other cards may: the cheapest rented job is named
            line += _(" (this answer buys {card} only because no rental price is known for it in "
                      "this market)").format(card=top.gpu_display)
            rented = next((p for p in plans if p.verdict != "no" and p.cost is not None
                           and p.cost.job.rent is not None and p.cost.job.hours is not None
                           and (p.service is None or p.service.meets)), None)
            if rented is not None and rented.cost is not None:
                line += _("; renting {n} x {card} for the job instead costs {cost} ({hours:,.0f} "
                          "h)").format(n=rented.gpus, card=rented.gpu_display,
                                       cost=money(rented.cost.job.rent, rented.cost.currency),
                                       hours=rented.cost.job.hours)
        out.append(line)
    return out


def _nvlink(plan: Plan) -> bool:
    return catalog.gpus()[plan.gpu].has_nvlink


def trial(plan: Plan, req: Request) -> Trial | None:
    """Seeds' step 5: rent the top plan's cards for one real epoch, measure, then decide."""
    if not req.is_training or not plan.speed.train_tokens_per_s:
        return None
    rate = plan.cost.rent.per_gpu_hour if plan.cost else None
    # pre-training's tokens= is the whole run, not an epoch: "rent it for one epoch before
    # buying" would be the run itself (293 h for 7B on 100B tokens); and a card this market
    # does not rent cannot be tried that way
    if req.spec.pretraining or rate is None:
        return None
    tokens = req.tokens or DEFAULT_EPOCH_TOKENS
    hours = tokens / plan.speed.train_tokens_per_s / 3600
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
