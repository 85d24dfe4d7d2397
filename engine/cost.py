"""Buy, rent and power cost of a plan, and the break-even use between buying and renting.

All amounts in the answer's currency; each price used is cited with its source and date, and
flagged when stale (engine/prices.py). Prices come from the asker's market only
(engine/market.py): a US list price says nothing about what a team in China pays, and a Chinese
cloud's rate nothing about renting in Virginia. A card the market sells only second-hand is
priced from that market's quotes; one it cannot get at all is never priced.

Prices by scale: each price kind covers the size of plan it was quoted for.
  purchase()    a server's price x servers, else cards / the share of a server's price the
                cards make up (60-70% per seed 003; 65% used)
  rent_offer()  up to one server (8 GPUs): the cheapest newest per-card listing
                (rent_card_hour, billed by the hour), else a dedicated server-month, else a
                reserved-cluster rate; when the listing and the dedicated server-month differ
                by more than RANGE_FACTOR the offer carries both (`span`) and the answer shows
                the range. More than one server: a reserved-cluster rate (rent_cluster_hour,
                with its minimum term and where such capacity is rented), else dedicated
                server-months x servers; never a per-card listing, which rents one machine.
Formulas:
  power/month    (GPU TDP x count + host) x PUE x hours/month x price/kWh
  ops/month      the seeds' self-built running cost less its power, per unit of capex
  rent/month     hourly kinds: rate x GPUs x hours/month; server-months: servers x the month
  rent for a job max(job hours, the quote's minimum term) at the quote's rate: hourly kinds
                 rate x GPUs, server-months the servers' month / 730 h; no minimum term is
                 assumed where the quote states none (the answer asks for it)
  break-even     hours/month where (capex/months + ops + power/h x h) = rent/h x h; only for
                 rent billed by the hour (a dedicated month costs the same at any use)

A budget is money to spend: a purchase must fit it up front, renting must fit it over the job:
tokens=, or for a fine-tune without it one assumed epoch of ASSUMED_EPOCH_TOKENS, for
pre-training TOKENS_PER_PARAM tokens per parameter (both said in the answer); a served model
rents over `months`.
"""

from __future__ import annotations

from datetime import date
from functools import lru_cache
from typing import Any, NamedTuple

from engine.catalog import GPUS_PER_SERVER, GpuSpec
from engine.i18n import N_, _, counted, current, money
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
# a per-card listing and a dedicated server-month this far apart per GPU-hour: show both
RANGE_FACTOR = 2.0
# A fine-tune without tokens=: one epoch of a fine-tuning set of ~25k examples x 2k tokens.
ASSUMED_EPOCH_TOKENS = 50_000_000
# Pre-training without tokens=: compute-optimal 20 tokens per parameter (Hoffmann et al. 2022).
TOKENS_PER_PARAM = 20


# prices.toml's `where` texts (who rents capacity at cluster scale), marked for translation;
# tests/engine/test_prices_data.py checks every row's `where` is one of these
WHERE_TEXT = (N_("AI computing centres (智算中心)"), N_("reserved GPU clusters (Hyperstack)"),
              N_("reserved GPU clusters (Hyperstack, SF Compute)"))


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


class Purchase(NamedTuple):
    """What buying `gpus` cards costs up front, and how that figure was reached."""

    total: float  # in the answer's currency
    rows: tuple[Price, ...]
    how: str  # "2 x server price" / "cards / 65% (cards' share of a server)"


class RentOffer(NamedTuple):
    """What renting `gpus` cards costs, from the price kind a plan of that size needs."""

    kind: str  # rent_card_hour | rent_server_month | rent_cluster_hour
    per_gpu_hour: float  # answer currency; a server-month spread over 730 h and its GPUs
    hourly: bool  # billed per hour of use; False: whole server-months whatever the use
    min_hours: float  # the shortest term billed, per GPU (hourly kinds)
    servers: int
    month_per_server: float | None  # rent_server_month: one server's month
    span: tuple[float, float] | None  # per GPU-hour, listing vs dedicated when > RANGE_FACTOR
    where: str  # at cluster scale: who rents such capacity
    rows: tuple[Price, ...]

    def monthly(self, gpus: int, hours: float) -> float:
        """Rent for a month at `hours` of use."""
        if self.hourly:
            return self.per_gpu_hour * gpus * hours
        return (self.month_per_server or 0.0) * self.servers

    def job(self, gpus: int, hours: float) -> float:
        """Rent for one job of `hours` wall-clock hours at the rate's own basis: the hours run,
        or the minimum term when the quote states one (a run is never charged a month that no
        quote asked for, so runs on clusters and on dedicated servers compare alike)."""
        billed = max(hours, self.min_hours)
        if self.hourly:
            return self.per_gpu_hour * gpus * billed
        # whole servers are rented, whatever share of the last one the plan uses
        return (self.month_per_server or 0.0) * self.servers * billed / HOURS_PER_MONTH

    def monthly_span(self, gpus: int, hours: float) -> tuple[float, float] | None:
        """The range a month of renting costs across listing and dedicated server prices."""
        if self.span is None:
            return None
        low, high = self.span
        # the listing is billed by use, the dedicated server by the month
        return low * gpus * hours, high * gpus * HOURS_PER_MONTH


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
    rent: RentOffer | None = None
    power_per_hour: float = 0.0
    stale_purchases: tuple[str, ...] = ()  # purchase prices over 12 months old, cited
    purchase_sources: tuple[str, ...] = ()  # the purchase prices behind capex, cited

    def horizon_total(self, months: int) -> float | None:
        """Cheaper of owning (capex + running) and renting over the horizon."""
        options = []
        if self.capex is not None and self.monthly_ops is not None:
            options.append(self.capex + (self.monthly_ops + self.monthly_power) * months)
        if self.rent_monthly is not None:
            options.append(self.rent_monthly * months)
        return min(options) if options else None


def _newest_cheapest(book: PriceBook, rows: list[Price], currency: str) -> Price | None:
    if not rows:
        return None
    newest = max(r.quoted for r in rows)
    return min((r for r in rows if r.quoted == newest),
               key=lambda r: book.convert(r.mid, r.currency, currency))


class _Same:
    """A cache key that is its object, hashed and compared by identity: a PriceBook or a card is
    frozen, and pydantic's hash and equality walk every field. While the cache holds the key it
    holds the object, so the id cannot be reused by another."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj


def _price(book: PriceBook, item: str, kind: str, currency: str, market: str) -> Price | None:
    """The newest quote from the asker's market (the cheapest of that date), or None."""
    return _price_in(_Same(book), item, kind, currency, market)


@lru_cache(maxsize=4096)  # every plan of every card asks again for the same few rows
def _price_in(same: _Same, item: str, kind: str, currency: str, market: str) -> Price | None:
    book = same.obj
    return _newest_cheapest(book, [r for r in book.candidates(item, kind)
                                   if market_of(r.region) == market], currency)


def quote(book: PriceBook, item: str, kind: str, currency: str, market: str) -> Price | None:
    """The price the cost of a plan uses for `item` and `kind` in `market` (or None)."""
    return _price(book, item, kind, currency, market)


def server_layout(gpu: GpuSpec, gpus: int) -> tuple[int, int]:
    """(servers, GPUs per server): 8-GPU servers, smaller counts in one server."""
    per = min(gpus, GPUS_PER_SERVER)
    return max(1, -(-gpus // per)), per


def purchase(book: PriceBook, gpu: GpuSpec, gpus: int, currency: str, market: str = "china"
             ) -> Purchase | None:
    """Buying `gpus` cards in `market`: servers at their catalog price, else cards over their
    share of a server; None without a purchase price there."""
    servers, per = server_layout(gpu, gpus)
    server = _price(book, f"server:{per}x{gpu.name}", "buy_server", currency, market)
    if server is not None:
        each = book.convert(server.mid, server.currency, currency)
        return Purchase(each * servers, (server,),
                        _("{servers} x server price").format(servers=servers))
    card = _price(book, gpu.name, "buy_card", currency, market)
    if card is not None:
        cards = book.convert(card.mid, card.currency, currency) * gpus
        return Purchase(cards / CARD_SHARE, (card,),
                        _("cards / {share:.0%} (cards' share of a server)").format(
                            share=CARD_SHARE))
    return None


def capex(book: PriceBook, gpu: GpuSpec, gpus: int, currency: str, market: str = "china"
          ) -> tuple[float | None, list[Price], str]:
    """purchase() as (total, rows, how); how says why there is none."""
    bought = purchase(book, gpu, gpus, currency, market)
    if bought is None:
        return None, [], _("no purchase price from the {market} market in the catalog").format(
            market=market_word(market))
    return bought.total, list(bought.rows), bought.how


def _dedicated(book: PriceBook, gpu: GpuSpec, per: int, currency: str, market: str
               ) -> tuple[Price, int] | None:
    """A dedicated server-month row and its GPU count: the plan's server size first."""
    for size in dict.fromkeys((per, GPUS_PER_SERVER, 1)):
        row = _price(book, f"server:{size}x{gpu.name}", "rent_server_month", currency, market)
        if row is not None:
            return row, size
    return None


def _cluster(book: PriceBook, gpu: GpuSpec, gpus: int, currency: str, market: str
             ) -> Price | None:
    rows = [r for r in book.candidates(gpu.name, "rent_cluster_hour")
            if market_of(r.region) == market and r.min_gpus <= max(gpus, GPUS_PER_SERVER)]
    return _newest_cheapest(book, rows, currency)


def rent_offer(book: PriceBook, gpu: GpuSpec, gpus: int, currency: str, market: str = "china"
               ) -> RentOffer | None:
    """What renting `gpus` cards costs in `market`, from the kind a plan of that size needs (the
    module docstring); None when the market has no such price for the card."""
    servers, per = server_layout(gpu, gpus)
    convert = book.convert
    listing = _price(book, gpu.name, "rent_card_hour", currency, market)
    dedicated = _dedicated(book, gpu, per, currency, market)
    cluster = _cluster(book, gpu, gpus, currency, market)
    listing_rate = convert(listing.mid, listing.currency, currency) if listing else None
    month = (convert(dedicated[0].mid, dedicated[0].currency, currency) / dedicated[1]
             if dedicated else None)  # per GPU-month
    dedicated_rate = month / HOURS_PER_MONTH if month is not None else None
    span = None
    if listing_rate and dedicated_rate and max(listing_rate, dedicated_rate) > (
            RANGE_FACTOR * min(listing_rate, dedicated_rate)):
        span = (min(listing_rate, dedicated_rate), max(listing_rate, dedicated_rate))
    one_server = gpus <= GPUS_PER_SERVER
    if one_server and listing is not None and listing_rate is not None:
        rows = (listing,) + ((dedicated[0],) if span and dedicated else ())
        return RentOffer("rent_card_hour", listing_rate, True, 0.0, servers, None, span, "",
                         rows)
    if cluster is not None and (not one_server or dedicated is None):
        return RentOffer("rent_cluster_hour", convert(cluster.mid, cluster.currency, currency),
                         True, cluster.min_hours, servers, None, None,
                         _(cluster.where) if cluster.where else _("reserved GPU clusters"),
                         (cluster,))
    if dedicated is not None and month is not None:
        where = "" if one_server else _(
            "dedicated {per}-GPU servers rented by the month ({where}); ask the provider for "
            "RoCE or InfiniBand between them").format(
            per=GPUS_PER_SERVER, where=_(dedicated[0].where) if dedicated[0].where
            else _("the quote's provider"))
        return RentOffer("rent_server_month", month / HOURS_PER_MONTH, False,
                         dedicated[0].min_hours, servers, month * per, None, where,
                         (dedicated[0],))
    return None


def rent_per_gpu_hour(book: PriceBook, gpu: GpuSpec, gpus: int, currency: str,
                      market: str = "china") -> tuple[float | None, list[Price]]:
    """rent_offer()'s rate per GPU-hour and the rows behind it."""
    offer = rent_offer(book, gpu, gpus, currency, market)
    return (None, []) if offer is None else (offer.per_gpu_hour, list(offer.rows))


def host_power_w(book: PriceBook, gpu: GpuSpec, gpus: int) -> float:
    """Watts the servers draw besides their GPUs (CPUs, RAM, fans, NICs), all servers together."""
    servers, per = server_layout(gpu, gpus)
    if gpu.form_factor in ("sxm", "oam"):
        return book.host_power_w.value * per / 8 * servers  # HGX host scales with its board
    return PCIE_HOST_W * servers


def power_per_hour(book: PriceBook, gpu: GpuSpec, gpus: int, inputs: CostInputs
                   ) -> tuple[float, str]:
    """Cost of one hour of the whole plan running at TDP, with host and cooling (PUE)."""
    host_w = host_power_w(book, gpu, gpus)
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


def _rent_note(offer: RentOffer, gpu: GpuSpec, gpus: int, inputs: CostInputs) -> str:
    """Which kind of rent the plan's size uses, and the range when listing and dedicated
    server prices differ by more than RANGE_FACTOR."""
    cur = inputs.currency
    if offer.kind == "rent_card_hour":
        text = _("rent: a per-card listing ({rate:.3g} {currency}/GPU-h), valid up to one "
                 "server").format(rate=offer.per_gpu_hour, currency=cur)
    elif offer.kind == "rent_cluster_hour":
        text = _("rent: reserved cluster capacity at {rate:.3g} {currency}/GPU-h ({where}"
                 "{term})").format(rate=offer.per_gpu_hour, currency=cur, where=offer.where,
                                   term=_("; at least {hours:g} h billed").format(
                                       hours=offer.min_hours) if offer.min_hours else "")
    else:
        text = _("rent: {servers} by the month, dedicated, whatever the use").format(
            servers=counted(offer.servers, "server"))
        if offer.where:
            text += _(" ({where})").format(where=offer.where)
        if offer.min_hours:
            text += _("; at least {hours:g} h billed").format(hours=offer.min_hours)
    if offer.span is not None:
        low, high = offer.span
        text += _("; listings and dedicated servers differ more than {factor:g}x: {low:.3g}-"
                  "{high:.3g} {currency}/GPU-h").format(factor=RANGE_FACTOR, low=low, high=high,
                                                        currency=cur)
    return text


def plan_cost(book: PriceBook, gpu: GpuSpec, gpus: int, inputs: CostInputs) -> PlanCost:
    """What `gpus` cards cost to buy, power and rent. Worked out once per book, card, count,
    inputs and language (its notes are translated): an answer's searches price the same few
    boxes over and over (each recipe, context and user count probed)."""
    return _plan_cost(_Same(book), _Same(gpu), gpus, inputs, current())


@lru_cache(maxsize=2048)
def _plan_cost(same_book: _Same, same_gpu: _Same, gpus: int, inputs: CostInputs,
               lang: str) -> PlanCost:
    book, gpu = same_book.obj, same_gpu.obj
    cur = inputs.currency
    used: list[Price] = []
    notes: list[str] = []
    bought = purchase(book, gpu, gpus, cur, inputs.market)
    if bought is not None:
        used += bought.rows
    per_hour_power, power_text = power_per_hour(book, gpu, gpus, inputs)
    monthly_power = per_hour_power * inputs.hours_per_month
    notes.append(_("power: {power} x {hours:g} h/month").format(power=power_text,
                                                                 hours=inputs.hours_per_month))
    offer = rent_offer(book, gpu, gpus, cur, inputs.market)
    if offer is not None:
        used += offer.rows
    cap = bought.total if bought is not None else None
    depreciation = ops = buy_total = None
    if cap is not None:
        depreciation = cap / inputs.months
        ops = cap * OPS_SHARE_PER_MONTH
        buy_total = depreciation + ops + monthly_power
        notes.append(_("capex: {how}; depreciation over {months} months; operations {ops:.1%} "
                       "of capex a month (a buying guide's running cost)").format(
            how=bought.how if bought else "", months=inputs.months, ops=OPS_SHARE_PER_MONTH))
    else:
        notes.append(_("buy: no purchase price from the {market} market in the catalog for "
                       "{card}").format(market=market_word(inputs.market), card=gpu.display))
    if offer is None:
        notes.append(_("rent: no rental price from the {market} market in the catalog for "
                       "{card} at {gpus}").format(market=market_word(inputs.market),
                                                   card=gpu.display, gpus=counted(gpus, "GPU")))
    else:
        notes.append(_rent_note(offer, gpu, gpus, inputs))
    rent_monthly = offer.monthly(gpus, inputs.hours_per_month) if offer else None
    break_even = None
    if cap is not None and offer is not None and ops is not None and offer.hourly:
        margin = offer.per_gpu_hour * gpus - per_hour_power
        if margin > 0:
            break_even = (cap / inputs.months + ops) / margin
    stale = tuple(r.cite(inputs.today) for r in used if r.is_stale(inputs.today))
    stale_buys = tuple(r.cite(inputs.today) for r in used
                       if r.is_purchase and r.is_stale(inputs.today))
    return PlanCost(currency=cur, capex=cap, monthly_depreciation=depreciation,
                    monthly_power=monthly_power, monthly_ops=ops, monthly_buy_total=buy_total,
                    rent_per_gpu_hour=offer.per_gpu_hour if offer else None,
                    rent_monthly=rent_monthly, break_even_hours=break_even,
                    sources=tuple(r.cite(inputs.today) for r in used), stale=stale,
                    notes=tuple(notes), rent=offer, power_per_hour=per_hour_power,
                    stale_purchases=stale_buys,
                    purchase_sources=tuple(r.cite(inputs.today) for r in used if r.is_purchase))


def break_even_phrase(hours: float | None, *, said: float | None = None,
                      listing: bool = False) -> str | None:
    """The break-even use as every rendering words it: a month has HOURS_PER_MONTH hours, so a
    break-even above that says renting stays cheaper, never "pays off above 1,319 h/month".
    `said`: the hours= the asker gave, to say which side of the line they are on. `listing`:
    the rent is a per-card listing that a dedicated server costs far more than
    (dedicated_phrase follows), so the phrase says which rate it holds at."""
    if hours is None:
        return None
    if listing:
        plain = break_even_phrase(hours, said=said)
        return _("at the per-card listing's rate, {phrase}").format(phrase=plain)
    if hours > HOURS_PER_MONTH:
        text = _("renting stays cheaper at any use (buying would pay off only above "
                 "{hours:,.0f} h/month, more than the {month} h a month has)").format(
            hours=hours, month=HOURS_PER_MONTH)
        if said is not None:
            text += _(" at the {use:g} h/month you said too").format(use=said)
        return text
    if said is not None:
        side = _("buy") if said > hours else _("rent")
        return _("buying pays off above {hours:,.0f} h/month of use (you said {use:g} h: "
                 "{side})").format(hours=hours, use=said, side=side)
    return _("buying pays off above {hours:,.0f} h/month of use").format(hours=hours)


def dedicated_phrase(c: Cost) -> str | None:
    """Beside a break-even against a per-card listing, the month-to-month comparison with the
    dedicated server the same cards rent as (a dedicated month costs the same at any use):
    where owning costs less a month, buying wins whatever the listing's break-even says."""
    high, own = c.rent.monthly_high, c.buy.monthly_total
    if high is None or own is None or not c.buy_allowed or own >= high:
        return None
    return _("against a dedicated server at {high}/month, owning at {own}/month (depreciation "
             "over {months} months, power, operations) is cheaper").format(
        high=money(high, c.currency), own=money(own, c.currency), months=c.months)


# -- the cost document of a plan ---------------------------------------------------------------


def cost_inputs(req: Request, today: date) -> CostInputs:
    return CostInputs(currency=req.answer_currency, months=req.months,
                      hours_per_month=req.hours_per_month, region=req.region,
                      power_price=req.power_price, today=today,
                      market=req.market_choice.market)


def budget_in(req: Request, book: PriceBook) -> float | None:
    """The budget in the answer's currency (a dollar budget converted at the dated fixing)."""
    if req.budget is None:
        return None
    source = req.budget.currency or req.answer_currency
    return book.convert(req.budget.amount, source, req.answer_currency)


def job_tokens(req: Request, params: float | None = None) -> tuple[int | None, bool]:
    """(tokens the training job is sized for, whether that is an assumption): tokens=, else one
    assumed epoch for a fine-tune, TOKENS_PER_PARAM x parameters for pre-training; (None,
    False) when serving."""
    if req.is_serving:
        return None, False
    if req.tokens is not None:
        return req.tokens, False
    if req.spec.pretraining:  # to two significant figures: 139B, not 138.794B
        if not params:
            return None, False
        tokens = TOKENS_PER_PARAM * params
        scale = 10 ** max(0, len(str(int(tokens))) - 2)
        return round(tokens / scale) * scale, True
    return ASSUMED_EPOCH_TOKENS, True


def cost_doc(pc: PlanCost, req: Request, gpus: int, train_hours: float | None,
             book: PriceBook, access: Access | None = None, card: str = "", *,
             tokens_per_s: float | None = None, params: float | None = None) -> Cost:
    """The plan's cost document: the market decides which ways are open (and mode= narrows
    them), the budget which of those fit, and the cheaper over `months` is the mode."""
    budget = budget_in(req, book)
    buy_allowed = req.mode != "rent" and (access is None or access.can_buy
                                          or book.team_quoted(card, "buy"))
    rent_allowed = req.mode != "buy" and (access is None or access.can_rent
                                          or book.team_quoted(card, "rent"))
    if owns(req, card, gpus):
        return _owned_doc(pc, req, train_hours, (buy_allowed, rent_allowed),
                          tokens_per_s=tokens_per_s, params=params)
    offer = pc.rent if rent_allowed else None
    capex_ = pc.capex if buy_allowed else None
    rent_monthly = pc.rent_monthly if rent_allowed else None
    rent_hourly = pc.rent_per_gpu_hour if rent_allowed else None
    tokens, assumed = job_tokens(req, params)
    hours = train_hours
    if hours is None and tokens and tokens_per_s:
        hours = tokens / tokens_per_s / 3600
    job = JobCost.build()
    rent_job = None
    if hours is not None:
        rent_job = offer.job(gpus, hours) if offer is not None else None
        share = None
        if pc.monthly_buy_total is not None and buy_allowed:
            # owning cost per hour of use at hours= per month, times the job's hours
            share = pc.monthly_buy_total / req.hours_per_month * hours
        job = JobCost.build(hours=round(hours, 2), rent=_r(rent_job), buy_share=_r(share),
                            tokens=tokens, assumed_tokens=assumed)
    # what renting costs against a budget: the job (tokens=, or the assumption said in the
    # answer) when training, the horizon when serving
    rent_total = rent_job if rent_job is not None else (
        rent_monthly * req.months if rent_monthly is not None and req.is_serving else None)
    buy_total = (capex_ + (pc.monthly_ops + pc.monthly_power) * req.months
                 if capex_ is not None and pc.monthly_ops is not None else None)
    priced = [o for o in (("buy", buy_total), ("rent", rent_monthly * req.months
                                                 if rent_monthly is not None else None))
              if o[1] is not None]
    within = [o for o in priced if budget is None
              or (o[0] == "buy" and capex_ is not None and capex_ <= budget)
              or (o[0] == "rent" and rent_total is not None and rent_total <= budget)]
    mode, total = min(within or priced, key=lambda o: o[1]) if priced else (None, None)
    span = offer.monthly_span(gpus, req.hours_per_month) if offer is not None else None
    return Cost.build(
        currency=pc.currency, hours_per_month=req.hours_per_month, months=req.months,
        buy=BuyCost.build(capex=_r(capex_), monthly_depreciation=_r(pc.monthly_depreciation)
                          if buy_allowed else None,
                          monthly_power=round(pc.monthly_power),
                          monthly_ops=_r(pc.monthly_ops) if buy_allowed else None,
                          monthly_total=_r(pc.monthly_buy_total) if buy_allowed else None),
        rent=RentCost.build(per_gpu_hour=None if rent_hourly is None else round(rent_hourly, 3),
                            monthly=_r(rent_monthly),
                            kind=offer.kind if offer else None,
                            hourly=offer.hourly if offer else None,
                            monthly_low=_r(span[0]) if span else None,
                            monthly_high=_r(span[1]) if span else None,
                            min_hours=offer.min_hours if offer and offer.min_hours else None,
                            servers=offer.servers if offer else None,
                            where=offer.where if offer else ""),
        break_even_hours_per_month=None if pc.break_even_hours is None or not (
            buy_allowed and rent_allowed) else round(pc.break_even_hours, 1),
        job=job, mode=mode, horizon_total=_r(total),
        within_budget=None if budget is None or not priced else bool(within),
        budget=_r(budget), rent_horizon_total=_r(rent_total),
        buy_allowed=buy_allowed, rent_allowed=rent_allowed,
        price_sources=list(pc.sources), stale=list(pc.stale), notes=list(pc.notes),
        stale_purchases=list(pc.stale_purchases) if buy_allowed else [])


def owns(req: Request, card: str, gpus: int) -> bool:
    """The plan runs on cards the team said it has (owned=true, gpu=, at most gpus=)."""
    return bool(req.owned and req.gpu and card == req.gpu and (req.gpus is None or gpus <= req.gpus))


def _owned_doc(pc: PlanCost, req: Request, train_hours: float | None,
               allowed: tuple[bool, bool], *, tokens_per_s: float | None,
               params: float | None) -> Cost:
    """Cards the team has: nothing to buy or rent, only the running cost: power from the
    catalog's power model, and operations at OPS_SHARE_PER_MONTH of what the cards would cost
    (a buying guide's running cost; unknown without a purchase price)."""
    running = pc.monthly_power + (pc.monthly_ops or 0.0)
    tokens, assumed = job_tokens(req, params)
    hours = train_hours
    if hours is None and tokens and tokens_per_s:
        hours = tokens / tokens_per_s / 3600
    job = JobCost.build()
    if hours is not None:
        job = JobCost.build(hours=round(hours, 2), rent=None,
                            buy_share=_r(running / req.hours_per_month * hours),
                            tokens=tokens, assumed_tokens=assumed)
    return Cost.build(
        currency=pc.currency, hours_per_month=req.hours_per_month, months=req.months,
        buy=BuyCost.build(capex=None, monthly_depreciation=None,
                          monthly_power=round(pc.monthly_power), monthly_ops=_r(pc.monthly_ops),
                          monthly_total=_r(running)),
        rent=RentCost.build(per_gpu_hour=None, monthly=None),
        break_even_hours_per_month=None, job=job, mode="owned",
        horizon_total=_r(running * req.months), within_budget=None, budget=None,
        rent_horizon_total=None, buy_allowed=allowed[0], rent_allowed=allowed[1],
        # operations are counted from the purchase price: its citation stays, the rent's goes
        price_sources=list(pc.purchase_sources) if pc.monthly_ops is not None else [], stale=[],
        notes=[pc.notes[0]]  # the power note (_plan_cost writes it first)
        + ([_("operations: {ops:.1%} of the cards' purchase price a month (a buying guide's "
              "running cost)").format(ops=OPS_SHARE_PER_MONTH)] if pc.monthly_ops is not None
           else [_("operations: no purchase price in the catalog to count them from; power "
                   "only")]))


def _r(value: float | None) -> float | None:
    return None if value is None else round(value)


def price_plan(gpu: GpuSpec, gpus: int, req: Request, today: date,
               train_hours: float | None, book: PriceBook, access: Access | None = None, *,
               tokens_per_s: float | None = None, params: float | None = None) -> Cost:
    return cost_doc(plan_cost(book, gpu, gpus, cost_inputs(req, today)), req, gpus,
                    train_hours, book, access, gpu.name, tokens_per_s=tokens_per_s,
                    params=params)
