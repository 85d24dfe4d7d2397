"""The bundled price catalog (engine/data/prices.toml): dated prices with their sources.

Every figure keeps its currency; conversion uses the catalog's dated CNY/USD fixing and says so.
A price quoted more than STALE_DAYS before the answer's date is flagged stale.
"""

from __future__ import annotations

from datetime import date
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

from engine import catalog, datacache
from engine.i18n import N_, _

Kind = Literal["buy_card", "buy_server", "rent_card_hour", "rent_server_month"]
Currency = Literal["CNY", "USD"]
STALE_DAYS = 90
# the kinds as a price line names them (the same words as the bot's price commands)
KIND_TEXT = {"buy_card": N_("buy per card"), "buy_server": N_("buy per server"),
             "rent_card_hour": N_("rent per GPU-hour"),
             "rent_server_month": N_("rent per server-month")}


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

    @property
    def mid(self) -> float:
        return (self.low + self.high) / 2

    def age_days(self, today: date) -> int:
        return (today - self.quoted).days

    def is_stale(self, today: date) -> bool:
        return self.age_days(today) > STALE_DAYS

    def cite(self, today: date) -> str:
        span = f"{self.low:,.0f}" if self.low == self.high else f"{self.low:,.0f}-{self.high:,.0f}"
        if self.high < 100:
            span = f"{self.low:g}" if self.low == self.high else f"{self.low:g}-{self.high:g}"
        stale = (_(", STALE ({days} days old)").format(days=self.age_days(today))
                 if self.is_stale(today) else "")
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
