"""The bundled price catalog (engine/data/prices.toml): dated prices with their sources.

Every figure keeps its currency; conversion uses the catalog's dated CNY/USD fixing and says so.
A rent quoted more than STALE_DAYS (90) before the answer's date is flagged stale, a purchase
price more than BUY_STALE_DAYS (365): rents move monthly, list prices yearly.

Price kinds (`Kind`), each the price of one way to get cards, at the scale it covers:

  buy_card           one card, bought (new, or second-hand where the market only has that)
  buy_server         one whole server (cards, CPUs, RAM, chassis), bought
  rent_card_hour     an on-demand or spot listing per GPU-hour: what one server's worth of cards
                     rents for, by the hour; it says nothing about renting several servers
  rent_server_month  a dedicated whole server for a month, whatever the use; `min_hours` the
                     shortest term billed when the quote states one
  rent_cluster_hour  reserved multi-server capacity with a fabric between the servers, per
                     GPU-hour: `min_gpus` is the smallest cluster quoted, `min_hours` the shortest
                     term billed, `where` says who rents such capacity

engine/cost.py chooses among them by the size of a plan (its module docstring says how); the
bill of materials and API-vs-self-hosting comparisons read the same rows through
`PriceBook.candidates(item, kind)` and engine.cost's `purchase()` and `rent_offer()`.
"""

from __future__ import annotations

import statistics
from datetime import date, timedelta
from functools import cache
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, PrivateAttr

from engine import catalog, datacache
from engine.errors import UserError
from engine.i18n import N_, _

Kind = Literal["buy_card", "buy_server", "rent_card_hour", "rent_server_month",
               "rent_cluster_hour"]
KINDS: tuple[Kind, ...] = get_args(Kind)
Currency = Literal["CNY", "USD"]
STALE_DAYS = 90  # a rent older than this is flagged
BUY_STALE_DAYS = 365  # a purchase price older than this is flagged
# the kinds as a price line names them (the same words as the bot's price commands)
KIND_TEXT = {"buy_card": N_("buy per card"), "buy_server": N_("buy per server"),
             "rent_card_hour": N_("rent per GPU-hour"),
             "rent_server_month": N_("rent per server-month"),
             "rent_cluster_hour": N_("rent per GPU-hour in a reserved cluster")}
CARD_ITEM_KINDS = frozenset({"buy_card", "rent_card_hour", "rent_cluster_hour"})
SERVER_ITEM_KINDS = frozenset({"buy_server", "rent_server_month"})


def item_text(item: str) -> str:
    """A priced item as people name it: `a800` -> A800 SXM4 80GB, `server:8xa800` ->
    8 x A800 SXM4 80GB (ids the catalog does not know stay as they are)."""
    count, _sep, card = item.removeprefix("server:").partition("x") if item.startswith(
        "server:") else ("", "", item)
    gpu = catalog.gpus().get(card)
    name = gpu.display if gpu else card
    return f"{count} x {name}" if count else name


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)


class Price(_Row):
    item: str
    kind: Kind
    gpus: int
    low: float
    high: float
    currency: Currency
    region: str = "global"
    source: str
    quoted: date
    note: str = ""
    # a quote the team got from its own vendor: evidence the team can buy or rent the item in
    # its market, whatever the public availability data says
    team_quote: bool = False
    # rent_cluster_hour: the smallest cluster the quote is for, the shortest term billed (hours
    # per GPU; rent_server_month too, when its quote states one), and who rents such capacity
    # ("AI computing centres (智算中心)")
    min_gpus: int = 1
    min_hours: float = 0.0
    where: str = ""

    @property
    def mid(self) -> float:
        return (self.low + self.high) / 2

    @property
    def is_purchase(self) -> bool:
        return self.kind.startswith("buy")

    def age_days(self, today: date) -> int:
        return (today - self.quoted).days

    def stale_after(self) -> int:
        return BUY_STALE_DAYS if self.is_purchase else STALE_DAYS

    def is_stale(self, today: date) -> bool:
        return self.age_days(today) > self.stale_after()

    def cite(self, today: date) -> str:
        span = f"{self.low:,.0f}" if self.low == self.high else f"{self.low:,.0f}-{self.high:,.0f}"
        if self.high < 100:
            span = f"{self.low:g}" if self.low == self.high else f"{self.low:g}-{self.high:g}"
        stale = ""
        if self.is_stale(today):
            stale = (_(", STALE: a purchase price {days} days old (over 12 months)")
                     if self.is_purchase else _(", STALE ({days} days old)")).format(
                days=self.age_days(today))
        return _("{item} {kind} {span} {currency} ({source}, {date}{stale})").format(
            item=item_text(self.item), kind=_(KIND_TEXT[self.kind]), span=span,
            currency=self.currency, source=self.source, date=self.quoted, stale=stale)


class Power(_Row):
    region: str
    low: float
    high: float
    currency: Currency
    source: str
    quoted: date

    @property
    def mid(self) -> float:
        return (self.low + self.high) / 2


class Fx(_Row):
    cny_per_usd: float
    date: date
    source: str


class Assumption(_Row):
    value: float
    unit: str
    source: str
    quoted: date


class Claim(_Row):
    name: str
    low: float
    high: float
    unit: str = ""
    source: str


class PriceBook(_Row):
    fx: Fx
    prices: tuple[Price, ...]
    power: tuple[Power, ...]
    pue: Assumption
    host_power_w: Assumption
    depreciation_months: Assumption
    claims: dict[str, Claim]
    _by_item: dict[tuple[str, str], tuple[Price, ...]] = PrivateAttr(default_factory=dict)
    _team: frozenset[tuple[str, str]] = PrivateAttr(default_factory=frozenset)

    def model_post_init(self, _context: object) -> None:
        index: dict[tuple[str, str], list[Price]] = {}
        team: set[tuple[str, str]] = set()
        for row in self.prices:
            index.setdefault((row.item, row.kind), []).append(row)
            if row.team_quote:
                card = row.item.removeprefix("server:").split("x", 1)[1] if row.item.startswith(
                    "server:") else row.item
                team.add((card, "buy" if row.kind.startswith("buy") else "rent"))
        self._by_item = {k: tuple(v) for k, v in index.items()}
        self._team = frozenset(team)

    def convert(self, amount: float, source: str, target: str) -> float:
        if source == target:
            return amount
        if source == "USD":
            return amount * self.fx.cny_per_usd
        return amount / self.fx.cny_per_usd

    def with_prices(self, prices: tuple[Price, ...]) -> PriceBook:
        """The same assumptions and exchange rate over another set of prices."""
        return PriceBook(fx=self.fx, prices=prices, power=self.power, pue=self.pue,
                         host_power_w=self.host_power_w,
                         depreciation_months=self.depreciation_months, claims=self.claims)

    def candidates(self, item: str, kind: str) -> tuple[Price, ...]:
        return self._by_item.get((item, kind), ())

    def team_quoted(self, card: str, kind: str) -> bool:
        """Whether the team has its own vendor quote to buy ("buy") or rent ("rent") `card`,
        as a card or in a server."""
        return (card, kind) in self._team

    def power_price(self, region: str) -> Power | None:
        for row in self.power:
            if row.region == region:
                return row
        return None


def _load_text(text: str) -> PriceBook:
    import tomllib  # only when the cached catalog is missing or out of date

    data = tomllib.loads(text)
    a = data["assumptions"]
    return PriceBook(
        fx=Fx(**data["fx"]),
        prices=tuple(Price(**row) for row in data["price"]),
        power=tuple(Power(**row) for row in data["power"]),
        pue=Assumption(**a["pue"]),
        host_power_w=Assumption(**a["host_power_w"]),
        depreciation_months=Assumption(**a["depreciation_months"]),
        claims={c["name"]: Claim(**c) for c in a["claim"]},
    )


def load_price_book() -> PriceBook:
    """engine/data/prices.toml, every row validated."""
    return _load_text(datacache.data_text("prices.toml"))


@cache
def price_book() -> PriceBook:
    return datacache.load("prices", data=("prices.toml",), code=("prices.py",),
                          build=load_price_book)


# -- validation: one rule for every way a price comes in (a quote, a feed, an import) ----------

MAX_AGE_DAYS = 5 * 365  # older than five years says more about a typo than about the market
PLAUSIBLE_FACTOR = 20.0  # within 1/20 .. 20x the bundled catalog's price for the card
HOURS_PER_MONTH = 730
MAX_SERVER_GPUS = 64
# Per GPU, in CNY, for a card the catalog has no price of that sort for: a card costs more than a
# phone and less than a flat; renting a GPU for an hour costs between a coffee and a dinner for
# forty.
ABSOLUTE_BANDS_CNY = {"buy": (1_000.0, 3_000_000.0), "rent": (0.1, 500.0)}


class PriceRejected(UserError, ValueError):
    """A price that must not be stored; the message says which rule it broke."""


def _family(kind: str) -> str:
    return "buy" if kind.startswith("buy") else "rent"


def _units(kind: str, gpus: int) -> float:
    """How many per-GPU (buy) or per-GPU-hour (rent) units an amount of `kind` covers."""
    return {"buy_card": 1.0, "buy_server": float(gpus), "rent_card_hour": 1.0,
            "rent_server_month": float(gpus * HOURS_PER_MONTH), "rent_cluster_hour": 1.0}[kind]


def split_item(item: str) -> tuple[str, int | None]:
    """`h100-sxm` -> (h100-sxm, None); `server:8xh100-sxm` -> (h100-sxm, 8)."""
    if not item.startswith("server:"):
        return item, None
    count, sep, card = item.removeprefix("server:").partition("x")
    if not sep or not count.isdigit():
        return item, 0
    return card, int(count)


@cache
def catalog_references() -> dict[tuple[str, str], float]:
    """(card, "buy" | "rent") -> the bundled catalog's median price per GPU (per GPU-hour for
    rent) in CNY. Only the bundled catalog counts: a feed or a quote cannot move the band."""
    book = price_book()
    samples: dict[tuple[str, str], list[float]] = {}
    for row in book.prices:
        card, _count = split_item(row.item)
        per_unit = book.convert(row.mid, row.currency, "CNY") / _units(row.kind, row.gpus)
        samples.setdefault((card, _family(row.kind)), []).append(per_unit)
    return {k: statistics.median(v) for k, v in samples.items()}


def plausible_range(*, item: str, kind: str, gpus: int, currency: str) -> tuple[float, float,
                                                                                 float | None]:
    """(lowest, highest, the catalog's price it derives from or None) for an amount of `kind`
    for `item`, in `currency`."""
    book = price_book()
    card, _count = split_item(item)
    units = _units(kind, gpus)
    reference = catalog_references().get((card, _family(kind)))
    if reference is None:
        low, high = ABSOLUTE_BANDS_CNY[_family(kind)]
        return (book.convert(low * units, "CNY", currency),
                book.convert(high * units, "CNY", currency), None)
    ref = book.convert(reference * units, "CNY", currency)
    return ref / PLAUSIBLE_FACTOR, ref * PLAUSIBLE_FACTOR, ref


def _figure(amount: float) -> str:
    return f"{amount:,.0f}" if amount >= 100 else f"{amount:.3g}"


def check_price(*, item: str, kind: str, gpus: int, low: float, high: float, currency: str,
                quoted: date, today: date) -> None:
    """Raise PriceRejected unless the price may be stored: dated no later than tomorrow and no
    more than MAX_AGE_DAYS ago, for a catalog card or a server of them, low <= high, and both
    within the plausible range for the card and kind (see plausible_range). Every path that
    stores a price calls this."""
    if quoted > today + timedelta(days=1):
        raise PriceRejected(_("date {date} is in the future: a price can be dated at most "
                              "tomorrow ({latest}).").format(date=quoted,
                                                             latest=today + timedelta(days=1)))
    if quoted < today - timedelta(days=MAX_AGE_DAYS):
        raise PriceRejected(_("date {date} is more than {years} years ago.").format(
            date=quoted, years=MAX_AGE_DAYS // 365))
    card, count = split_item(item)
    if card not in catalog.gpus():
        raise PriceRejected(_("{item} is not a card in the catalog (nor a server of them, "
                              "written server:8xh100-sxm).").format(item=item[:40]))
    if kind in CARD_ITEM_KINDS and count is not None:
        raise PriceRejected(_("{item} is a server: its prices are buy_server or "
                              "rent_server_month.").format(item=item[:40]))
    if kind in SERVER_ITEM_KINDS and count is None:
        raise PriceRejected(_("{item} is a card: its prices are buy_card, rent_card_hour or "
                              "rent_cluster_hour.").format(item=item[:40]))
    if count is not None and not (1 <= count <= MAX_SERVER_GPUS and gpus == count):
        raise PriceRejected(_("a server holds 1 to {most} cards and its gpus must say how many "
                              "({item}, gpus {gpus}).").format(most=MAX_SERVER_GPUS,
                                                               item=item[:40], gpus=gpus))
    if count is None and gpus != 1:
        raise PriceRejected(_("a card's price covers 1 GPU, not {gpus}.").format(gpus=gpus))
    if not 0 < low <= high:
        raise PriceRejected(_("low {low} must be above 0 and at most high {high}.").format(
            low=_figure(low), high=_figure(high)))
    lowest, highest, reference = plausible_range(item=item, kind=kind, gpus=gpus,
                                                 currency=currency)
    if lowest <= low and high <= highest:
        return
    amount = _figure(low) if low == high else f"{_figure(low)}-{_figure(high)}"
    if reference is None:
        rule = _("the catalog has no such price for the card, so the band for any card applies")
    else:
        rule = _("1/{factor:g} to {factor:g} times the catalog's {reference} {currency}").format(
            factor=PLAUSIBLE_FACTOR, reference=_figure(reference), currency=currency)
    raise PriceRejected(_("{amount} {currency} is not a plausible {kind} price for {item}: it "
                          "must lie between {lowest} and {highest} {currency} ({rule}).").format(
        amount=amount, currency=currency, kind=_(KIND_TEXT[kind]), item=item_text(item),
        lowest=_figure(lowest), highest=_figure(highest), rule=rule))
