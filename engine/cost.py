"""Buy, rent and power cost of a plan, and the break-even utilisation between buying and renting.

All amounts in the answer's currency; each price used is cited with its source and date, and
flagged when stale. Formulas:
  capex          the server's catalog price, else cards / share of a server's price the cards
                 make up (60-70% per seed 003; 65% used)
  power/month    (GPU TDP x count + host) x PUE x hours/month x price/kWh
  ops/month      the seeds' self-built running cost less its power, per unit of capex
  rent/month     price per GPU-hour x GPUs x hours/month
  break-even     hours/month where (capex/months + ops + power/h x h) = rent/h x h
"""

from __future__ import annotations

from datetime import date
from typing import NamedTuple

from engine.catalog import GpuSpec
from engine.prices import Price, PriceBook
from engine.request import Request
from engine.schema import BuyCost, Cost, JobCost, RentCost

CARD_SHARE = 0.65  # cards are 60-70% of a server's price (seed 003): the midpoint
# Operations (machine room, network, staff): seed 000's self-built 8x A800 runs 30-50k CNY/month,
# of which power is 5-10k, against 1.0-1.5M capex: (40k - 7.5k) / 1.25M = 2.6% of capex a month.
OPS_SHARE_PER_MONTH = 0.026
PCIE_HOST_W = 500  # a 2-socket PCIe GPU server's CPUs, RAM, fans under load (365 W idle floor)
DEFAULT_POWER_REGION = {"CNY": "china", "USD": "global"}
PRICE_REGION = {"CNY": "china", "USD": "global"}
HOURS_PER_MONTH = 730


class CostInputs(NamedTuple):
    currency: str = "CNY"
    months: int = 36
    hours_per_month: float = HOURS_PER_MONTH
    region: str | None = None
    power_price: float | None = None  # per kWh in `currency`, overrides the region's
    today: date = date(2026, 11, 30)


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


def _price(book: PriceBook, item: str, kind: str, currency: str) -> Price | None:
    """Prefer quotes from the answer's market (China for CNY), else any, converted."""
    region = PRICE_REGION[currency]
    rows = book.candidates(item, kind)
    local = [r for r in rows if r.region == region]
    chosen = local or rows
    if not chosen:
        return None
    newest = max(r.quoted for r in chosen)
    return min((r for r in chosen if r.quoted == newest),
               key=lambda r: book.convert(r.mid, r.currency, currency))


def server_layout(gpu: GpuSpec, gpus: int) -> tuple[int, int]:
    """(servers, GPUs per server): 8-GPU servers, smaller counts in one server."""
    per = min(gpus, 8)
    return max(1, -(-gpus // per)), per


def capex(book: PriceBook, gpu: GpuSpec, gpus: int, currency: str
          ) -> tuple[float | None, list[Price], str]:
    servers, per = server_layout(gpu, gpus)
    server = _price(book, f"server:{per}x{gpu.name}", "buy_server", currency)
    if server is not None:
        each = book.convert(server.mid, server.currency, currency)
        return each * servers, [server], f"{servers} x server price"
    card = _price(book, gpu.name, "buy_card", currency)
    if card is not None:
        cards = book.convert(card.mid, card.currency, currency) * gpus
        return cards / CARD_SHARE, [card], f"cards / {CARD_SHARE:.0%} (cards' share of a server)"
    return None, [], "no purchase price in the catalog"


def rent_per_gpu_hour(book: PriceBook, gpu: GpuSpec, gpus: int, currency: str
                      ) -> tuple[float | None, list[Price]]:
    hourly = _price(book, gpu.name, "rent_card_hour", currency)
    if hourly is not None:
        return book.convert(hourly.mid, hourly.currency, currency), [hourly]
    _servers, per = server_layout(gpu, gpus)
    for size in sorted({per, 1, 8}):
        monthly = _price(book, f"server:{size}x{gpu.name}", "rent_server_month", currency)
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
        text = f"{kw:.1f} kW x {inputs.power_price:g} {inputs.currency}/kWh (power_price=)"
        return kw * inputs.power_price, text
    region = inputs.region or DEFAULT_POWER_REGION[inputs.currency]
    row = book.power_price(region) or book.power_price(DEFAULT_POWER_REGION[inputs.currency])
    assert row is not None  # the catalog always has the defaults
    price = book.convert(row.mid, row.currency, inputs.currency)
    return kw * price, (f"{kw:.1f} kW (TDP {gpu.tdp_w} W x {gpus} + host {host_w:.0f} W, "
                        f"x PUE {book.pue.value:g}) x {price:.3g} {inputs.currency}/kWh ({row.region})")


def plan_cost(book: PriceBook, gpu: GpuSpec, gpus: int, inputs: CostInputs) -> PlanCost:
    cur = inputs.currency
    used: list[Price] = []
    notes: list[str] = []
    cap, cap_rows, cap_how = capex(book, gpu, gpus, cur)
    used += cap_rows
    per_hour_power, power_text = power_per_hour(book, gpu, gpus, inputs)
    monthly_power = per_hour_power * inputs.hours_per_month
    notes.append(f"power: {power_text} x {inputs.hours_per_month:g} h/month")
    rent, rent_rows = rent_per_gpu_hour(book, gpu, gpus, cur)
    used += rent_rows
    depreciation = ops = buy_total = None
    if cap is not None:
        depreciation = cap / inputs.months
        ops = cap * OPS_SHARE_PER_MONTH
        buy_total = depreciation + ops + monthly_power
        notes.append(f"capex: {cap_how}; depreciation over {inputs.months} months; operations "
                     f"{OPS_SHARE_PER_MONTH:.1%} of capex a month (seed 000's running cost)")
    else:
        notes.append(f"buy: {cap_how} for {gpu.name}")
    rent_monthly = rent * gpus * inputs.hours_per_month if rent is not None else None
    if rent is None:
        notes.append(f"rent: no rental price in the catalog for {gpu.name}")
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
    job = JobCost.build()
    if train_hours is not None:
        rent_job = pc.rent_per_gpu_hour * gpus * train_hours if pc.rent_per_gpu_hour else None
        share = None
        if pc.monthly_buy_total is not None:
            # owning cost per hour of use at hours= per month, times the job's hours
            share = pc.monthly_buy_total / req.hours_per_month * train_hours
        job = JobCost.build(hours=round(train_hours, 2), rent=_r(rent_job), buy_share=_r(share))
    return Cost.build(
        currency=pc.currency, hours_per_month=req.hours_per_month, months=req.months,
        buy=BuyCost.build(capex=_r(pc.capex), monthly_depreciation=_r(pc.monthly_depreciation),
                    monthly_power=round(pc.monthly_power), monthly_ops=_r(pc.monthly_ops),
                    monthly_total=_r(pc.monthly_buy_total)),
        rent=RentCost.build(per_gpu_hour=None if pc.rent_per_gpu_hour is None
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
