"""Buy, rent and power cost of a plan, and the break-even utilisation between buying and renting.

All amounts in the answer's currency; each price used is cited with its source and date, and
flagged when stale. Formulas:
  capex          the server's catalog price, else cards / share of a server's price the cards
                 make up (60-70% per seed 003; 65% used)
  power/month    (GPU TDP x count + host) x PUE x hours/month x price/kWh
  ops/month      the seeds' self-built running cost less its power, per unit of capex
  rent/month     price per GPU-hour x GPUs x hours/month
  break-even     hours/month where (capex/months + ops + power/h x h) = rent/h x h

Prices come from the asker's market only (engine/market.py): a US list price says nothing about
what a team in Chinese pays, and a Chinese cloud's rate nothing about renting in Virginia. A card
the market sells only second-hand is priced from that market's quotes; one it cannot get at all
is never priced. A budget is money to spend: a purchase must fit it up front, renting must fit it
over the job (tokens=) or over `months`.
"""

from __future__ import annotations

from datetime import date
from typing import NamedTuple

from engine.catalog import GpuSpec
from engine.i18n import _
from engine.market import CHINA_REGIONS, Access, market_word
from engine.prices import Price, PriceBook
from engine.request import Request
from engine.schema import BuyCost, Cost, JobCost, RentCost

CARD_SHARE = 0.65  # cards are 60-70% of a server's price (seed 003): the midpoint
# Operations (machine room, network, staff): seed 000's self-built 8x A800 runs 30-50k CNY/month,
# of which power is 5-10k, against 1.0-1.5M capex: (40k - 7.5k) / 1.25M = 2.6% of capex a month.
OPS_SHARE_PER_MONTH = 0.026
PCIE_HOST_W = 500  # a 2-socket PCIe GPU server's CPUs, RAM, fans under load (365 W idle floor)
DEFAULT_POWER_REGION = {"china": "china", "global": "global"}
HOURS_PER_MONTH = 730


def market_of(region: str) -> str:
    """The market a price row was quoted in."""
    return "china" if region in CHINA_REGIONS else "global"


class CostInputs(NamedTuple):
    currency: str = "CNY"
    months: int = 36
    hours_per_month: float = HOURS_PER_MONTH
    region: str | None = None
    power_price: float | None = None  # per kWh in `currency`, overrides the region's
    today: date = date(2026, 11, 30)
    market: str = "china"


class PlanCost(NamedTuple):
    currency: str
    capex: float | None
    monthly_depreciation: float | None
    monthly_power: float
    monthly_ops: float | None
    monthly_buy_total: float | None
    rent_per_gpu_hour: float | None
    rent_monthly: float | None
    break_even_hours: float | None
    sources: tuple[str, ...]
    stale: tuple[str, ...]
    notes: tuple[str, ...]

    def horizon_total(self, months: int) -> float | None:
        """Cheaper of owning (capex + running) and renting over the horizon."""
        options = []
        if self.capex is not None and self.monthly_ops is not None:
            options.append(self.capex + (self.monthly_ops + self.monthly_power) * months)
        if self.rent_monthly is not None:
            options.append(self.rent_monthly * months)
        return min(options) if options else None


def _price(book: PriceBook, item: str, kind: str, currency: str, market: str) -> Price | None:
    """The newest quote from the asker's market (the cheapest of that date), or None."""
    chosen = [r for r in book.candidates(item, kind) if market_of(r.region) == market]
    if not chosen:
        return None
    newest = max(r.quoted for r in chosen)
    return min((r for r in chosen if r.quoted == newest),
               key=lambda r: book.convert(r.mid, r.currency, currency))


def server_layout(gpu: GpuSpec, gpus: int) -> tuple[int, int]:
    """(servers, GPUs per server): 8-GPU servers, smaller counts in one server."""
    per = min(gpus, 8)
    return max(1, -(-gpus // per)), per


def capex(book: PriceBook, gpu: GpuSpec, gpus: int, currency: str, market: str = "china"
          ) -> tuple[float | None, list[Price], str]:
    servers, per = server_layout(gpu, gpus)
    server = _price(book, f"server:{per}x{gpu.name}", "buy_server", currency, market)
    if server is not None:
        each = book.convert(server.mid, server.currency, currency)
        return each * servers, [server], _("{servers} x server price").format(servers=servers)
    card = _price(book, gpu.name, "buy_card", currency, market)
    if card is not None:
        cards = book.convert(card.mid, card.currency, currency) * gpus
        return cards / CARD_SHARE, [card], _("cards / {share:.0%} (cards' share of a server)"
                                             ).format(share=CARD_SHARE)
    return None, [], _("no purchase price from the {market} market in the catalog").format(
        market=market_word(market))


def rent_per_gpu_hour(book: PriceBook, gpu: GpuSpec, gpus: int, currency: str,
                      market: str = "china") -> tuple[float | None, list[Price]]:
    hourly = _price(book, gpu.name, "rent_card_hour", currency, market)
    if hourly is not None:
        return book.convert(hourly.mid, hourly.currency, currency), [hourly]
    _servers, per = server_layout(gpu, gpus)
    for size in sorted({per, 1, 8}):
        monthly = _price(book, f"server:{size}x{gpu.name}", "rent_server_month", currency,
                         market)
        if monthly is not None:
            per_hour = book.convert(monthly.mid, monthly.currency, currency) / HOURS_PER_MONTH / size
            return per_hour, [monthly]
    return None, []


def power_per_hour(book: PriceBook, gpu: GpuSpec, gpus: int, inputs: CostInputs
                   ) -> tuple[float, str]:
    """Cost of one hour of the whole plan running at TDP, with host and cooling (PUE)."""
    servers, per = server_layout(gpu, gpus)
    if gpu.form_factor in ("sxm", "oam"):
        host_w = book.host_power_w.value * per / 8 * servers  # HGX host scales with its board
    else:
        host_w = PCIE_HOST_W * servers
    kw = (gpu.tdp_w * gpus + host_w) * book.pue.value / 1000
    if inputs.power_price is not None:
        text = _("{kw:.1f} kW x {price:g} {currency}/kWh (power_price=)").format(
            kw=kw, price=inputs.power_price, currency=inputs.currency)
        return kw * inputs.power_price, text
    region = inputs.region or DEFAULT_POWER_REGION[inputs.market]
    row = book.power_price(region) or book.power_price(DEFAULT_POWER_REGION[inputs.market])
    assert row is not None  # the catalog always has the defaults
    price = book.convert(row.mid, row.currency, inputs.currency)
    return kw * price, _("{kw:.1f} kW (TDP {tdp} W x {gpus} + host {host:.0f} W, x PUE {pue:g}) "
                         "x {price:.3g} {currency}/kWh ({region})").format(
        kw=kw, tdp=gpu.tdp_w, gpus=gpus, host=host_w, pue=book.pue.value, price=price,
        currency=inputs.currency, region=market_word(row.region))


def plan_cost(book: PriceBook, gpu: GpuSpec, gpus: int, inputs: CostInputs) -> PlanCost:
    cur = inputs.currency
    used: list[Price] = []
    notes: list[str] = []
    cap, cap_rows, cap_how = capex(book, gpu, gpus, cur, inputs.market)
    used += cap_rows
    per_hour_power, power_text = power_per_hour(book, gpu, gpus, inputs)
    monthly_power = per_hour_power * inputs.hours_per_month
    notes.append(_("power: {power} x {hours:g} h/month").format(power=power_text,
                                                                 hours=inputs.hours_per_month))
    rent, rent_rows = rent_per_gpu_hour(book, gpu, gpus, cur, inputs.market)
    used += rent_rows
    depreciation = ops = buy_total = None
    if cap is not None:
        depreciation = cap / inputs.months
        ops = cap * OPS_SHARE_PER_MONTH
        buy_total = depreciation + ops + monthly_power
        notes.append(_("capex: {how}; depreciation over {months} months; operations {ops:.1%} "
                       "of capex a month (a buying guide's running cost)").format(
            how=cap_how, months=inputs.months, ops=OPS_SHARE_PER_MONTH))
    else:
        notes.append(_("buy: {how} for {card}").format(how=cap_how, card=gpu.display))
    rent_monthly = rent * gpus * inputs.hours_per_month if rent is not None else None
    if rent is None:
        notes.append(_("rent: no rental price from the {market} market in the catalog for "
                       "{card}").format(market=market_word(inputs.market), card=gpu.display))
    break_even = None
    if cap is not None and rent is not None and ops is not None:
        margin = rent * gpus - per_hour_power
        if margin > 0:
            break_even = (cap / inputs.months + ops) / margin
    stale = tuple(r.cite(inputs.today) for r in used if r.is_stale(inputs.today))
    return PlanCost(currency=cur, capex=cap, monthly_depreciation=depreciation,
                    monthly_power=monthly_power, monthly_ops=ops, monthly_buy_total=buy_total,
                    rent_per_gpu_hour=rent, rent_monthly=rent_monthly, break_even_hours=break_even,
                    sources=tuple(r.cite(inputs.today) for r in used), stale=stale,
                    notes=tuple(notes))


# -- the cost document of a plan ---------------------------------------------------------------


def cost_inputs(req: Request, today: date) -> CostInputs:
    return CostInputs(currency=req.answer_currency, months=req.months,
                      hours_per_month=req.hours_per_month, region=req.region,
                      power_price=req.power_price, today=today,
                      market=req.market_choice.market)


def budget_in(req: Request, book: PriceBook) -> float | None:
    if req.budget is None:
        return None
    source = req.budget.currency or req.answer_currency
    return book.convert(req.budget.amount, source, req.answer_currency)


def cost_doc(pc: PlanCost, req: Request, gpus: int, train_hours: float | None,
             book: PriceBook, access: Access | None = None, card: str = "") -> Cost:
    """The plan's cost document: the market decides which ways are open (and mode= narrows
    them), the budget which of those fit, and the cheaper over `months` is the mode."""
    budget = budget_in(req, book)
    buy_allowed = req.mode != "rent" and (access is None or access.can_buy
                                          or book.team_quoted(card, "buy"))
    rent_allowed = req.mode != "buy" and (access is None or access.can_rent
                                          or book.team_quoted(card, "rent"))
    capex_ = pc.capex if buy_allowed else None
    rent_monthly = pc.rent_monthly if rent_allowed else None
    rent_hourly = pc.rent_per_gpu_hour if rent_allowed else None
    job = JobCost.build()
    rent_job = None
    if train_hours is not None:
        rent_job = rent_hourly * gpus * train_hours if rent_hourly else None
        share = None
        if pc.monthly_buy_total is not None and buy_allowed:
            # owning cost per hour of use at hours= per month, times the job's hours
            share = pc.monthly_buy_total / req.hours_per_month * train_hours
        job = JobCost.build(hours=round(train_hours, 2), rent=_r(rent_job), buy_share=_r(share))
    # what renting costs against a budget: the job when tokens= sizes one, else the horizon
    rent_total = rent_job if rent_job is not None else (
        rent_monthly * req.months if rent_monthly is not None else None)
    buy_total = (capex_ + (pc.monthly_ops + pc.monthly_power) * req.months
                 if capex_ is not None and pc.monthly_ops is not None else None)
    priced = [o for o in (("buy", buy_total), ("rent", rent_monthly * req.months
                                                 if rent_monthly is not None else None))
              if o[1] is not None]
    within = [o for o in priced if budget is None
              or (o[0] == "buy" and capex_ is not None and capex_ <= budget)
              or (o[0] == "rent" and rent_total is not None and rent_total <= budget)]
    mode, total = min(within or priced, key=lambda o: o[1]) if priced else (None, None)
    return Cost.build(
        currency=pc.currency, hours_per_month=req.hours_per_month, months=req.months,
        buy=BuyCost.build(capex=_r(capex_), monthly_depreciation=_r(pc.monthly_depreciation)
                          if buy_allowed else None,
                          monthly_power=round(pc.monthly_power),
                          monthly_ops=_r(pc.monthly_ops) if buy_allowed else None,
                          monthly_total=_r(pc.monthly_buy_total) if buy_allowed else None),
        rent=RentCost.build(per_gpu_hour=None if rent_hourly is None else round(rent_hourly, 3),
                            monthly=_r(rent_monthly)),
        break_even_hours_per_month=None if pc.break_even_hours is None or not (
            buy_allowed and rent_allowed) else round(pc.break_even_hours, 1),
        job=job, mode=mode, horizon_total=_r(total),
        within_budget=None if budget is None or not priced else bool(within),
        budget=_r(budget), rent_horizon_total=_r(rent_total),
        buy_allowed=buy_allowed, rent_allowed=rent_allowed,
        price_sources=list(pc.sources), stale=list(pc.stale), notes=list(pc.notes))


def _r(value: float | None) -> float | None:
    return None if value is None else round(value)


def price_plan(gpu: GpuSpec, gpus: int, req: Request, today: date,
               train_hours: float | None, book: PriceBook, access: Access | None = None) -> Cost:
    return cost_doc(plan_cost(book, gpu, gpus, cost_inputs(req, today)), req, gpus,
                    train_hours, book, access, gpu.name)
