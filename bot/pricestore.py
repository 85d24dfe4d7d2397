"""Prices as a dated history in Redis: the bundled catalog (seeded once), feeds, and each
workspace's own vendor quotes. Answers use the newest price per (item, kind); a workspace's
quotes are visible to that workspace only.

Every add or remove bumps a version counter per scope in Redis; `book_for` keeps the PriceBook it
built per workspace in this process and rebuilds only when the global or the workspace's version
moved, so answers do not re-read thousands of records each time and every replica sees a change
at once. A workspace holds at most MAX_QUOTES live quotes (checked and added in one step, an
import with --team as much as a quote). The global history (feeds, imports) keeps the newest
HISTORY_PER_SERIES records of each series and at most HISTORY_MAX records in all (never the newest
of an item's kind, never the bundled catalog): every `price` and every price book reads it all."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import OrderedDict
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from redis.asyncio import Redis

from bot import keys
from engine.cost import market_of
from engine.errors import UserError
from engine.i18n import _
from engine.prices import Currency, Kind, Price, PriceBook, check_price, price_book
from present.blockkit import clean_field

GLOBAL = "global"
MAX_QUOTES = 500  # live quotes per workspace: each one is read into every answer's price book
# Retention of the global history. 12 per series is a year of monthly feed prices (the digest's
# movers compare with their own snapshot, not with this history); 5,000 in all keeps a full read
# (`price`, a price book rebuild) near 0.1 s where 20,097 records took 0.4 s (issue 26).
HISTORY_PER_SERIES = 12
HISTORY_MAX = 5000
BOOKS_CACHED = 256  # workspaces whose price book one process keeps
Origin = Literal["catalog", "quote", "feed", "import"]


class PriceRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    item: str = Field(min_length=1, max_length=80)
    kind: Kind
    gpus: int = Field(1, ge=1, le=1024)
    low: float = Field(gt=0, lt=1e10)
    high: float = Field(gt=0, lt=1e10)
    currency: Currency
    region: str = "global"
    source: str = Field(max_length=500)
    origin: Origin
    vendor: str = Field("", max_length=120)
    entered_by: str = Field("", max_length=80)
    quoted: date
    recorded_at: datetime
    note: str = Field("", max_length=500)

    @field_validator("item", "region", "source", "vendor", "entered_by", "note", mode="before")
    @classmethod
    def _one_clean_line(cls, value: object) -> object:
        """Stored text is shown to the whole workspace (the digest): no control or bidi
        characters, no line breaks, whatever path it came by and whenever it was stored."""
        return clean_field(value) if isinstance(value, str) else value

    def check(self, today: date) -> None:
        """engine.prices.check_price on this record: raises PriceRejected with the rule."""
        check_price(item=self.item, kind=self.kind, gpus=self.gpus, low=self.low, high=self.high,
                    currency=self.currency, quoted=self.quoted, today=today)

    def to_price(self) -> Price:
        source = self.source
        if self.origin == "quote":
            source = f"quote from {self.vendor or 'a vendor'} entered by {self.entered_by}"
        return Price(item=self.item, kind=self.kind, gpus=self.gpus, low=self.low,
                     high=max(self.low, self.high), currency=self.currency, region=self.region,
                     source=source, quoted=self.quoted, note=self.note,
                     team_quote=self.origin == "quote")

    @property
    def key(self) -> tuple[str, str]:
        return self.item, self.kind


def catalog_records(book: PriceBook | None = None) -> list[PriceRecord]:
    """The bundled catalog as records with stable ids (seeding twice adds nothing)."""
    book = book or price_book()
    now = datetime.now(UTC)
    out = []
    for row in book.prices:
        digest = hashlib.sha1(row.model_dump_json().encode()).hexdigest()[:16]
        out.append(PriceRecord(id=f"cat-{digest}", item=row.item, kind=row.kind, gpus=row.gpus,
                               low=row.low, high=row.high, currency=row.currency,
                               region=row.region, source=row.source, origin="catalog",
                               entered_by="catalog", quoted=row.quoted, recorded_at=now,
                               note=row.note))
    return out


def answer_rows(prices: tuple[Price, ...], book: PriceBook) -> tuple[Price, ...]:
    """What answers can use of a price history, however long it is: per item, kind and market the
    row engine.cost picks (the newest date's cheapest), and per item and kind the newest team
    quote (PriceBook.team_quoted). The engine reads prices only through those two, so answers are
    the same, and the book a worker process gets stays small."""
    best: dict[tuple[str, str, str], Price] = {}
    team: dict[tuple[str, str], Price] = {}
    for row in prices:
        key = (row.item, row.kind, market_of(row.region))
        current = best.get(key)
        if current is None or (row.quoted, -book.convert(row.mid, row.currency, "CNY")) > (
                current.quoted, -book.convert(current.mid, current.currency, "CNY")):
            best[key] = row
        if row.team_quote and ((row.item, row.kind) not in team
                               or row.quoted > team[(row.item, row.kind)].quoted):
            team[(row.item, row.kind)] = row
    kept = list(best.values())
    chosen = {id(row) for row in kept}
    kept += [row for row in team.values() if id(row) not in chosen]
    return tuple(kept)


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def newest(records: list[PriceRecord]) -> dict[tuple[str, str], PriceRecord]:
    """Newest record per (item, kind); among the same date, the cheapest."""
    best: dict[tuple[str, str], PriceRecord] = {}
    for rec in records:
        current = best.get(rec.key)
        if current is None or (rec.quoted, -rec.low) > (current.quoted, -current.low):
            best[rec.key] = rec
    return best


# KEYS[1] records, KEYS[2] version. ARGV[1] cap, then id, json pairs: all stored, or none when the
# hash would hold more than the cap (ids already there are replaced and do not count).
ADD_MANY_CAPPED = """
local fresh = 0
for i = 2, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then fresh = fresh + 1 end
end
if redis.call('HLEN', KEYS[1]) + fresh > tonumber(ARGV[1]) then
  return -1
end
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('INCR', KEYS[2])
return fresh
"""

# KEYS[1] the workspace's records, KEYS[2] its version. ARGV[1] the cap, ARGV[2] id, ARGV[3] JSON.
ADD_CAPPED = """
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('INCR', KEYS[2])
return 1
"""


def retention_victims(records: list[PriceRecord], *, per_series: int, total: int) -> list[str]:
    """Ids to drop: past the newest `per_series` of a series (one item, kind, size, region,
    currency and source), then the oldest until `total` remain, never the newest of an item's
    kind (what answers use)."""
    def age(r: PriceRecord) -> tuple[date, datetime]:
        return (r.quoted, r.recorded_at)

    series: dict[tuple[str, ...], list[PriceRecord]] = {}
    for r in records:
        series.setdefault((r.item, r.kind, str(r.gpus), r.region, r.currency, r.origin,
                           r.entered_by), []).append(r)
    doomed: list[str] = []
    kept: list[PriceRecord] = []
    for group in series.values():
        group.sort(key=age, reverse=True)
        kept += group[:per_series]
        doomed += [r.id for r in group[per_series:]]
    if len(kept) > total:
        newest_ids = {r.id for r in newest(kept).values()}
        spare = sorted((r for r in kept if r.id not in newest_ids), key=age)
        doomed += [r.id for r in spare[:len(kept) - total]]
    return doomed


class QuotaFull(UserError):
    """The workspace already holds MAX_QUOTES quotes; nothing was stored."""


class PriceStore:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        # team -> ((global version, team version), its price book), least recently used first
        self._books: OrderedDict[str, tuple[tuple[str, str], PriceBook]] = OrderedDict()

    async def _bump(self, scope: str) -> None:
        await self.redis.incr(keys.prices_version(scope))

    async def seed_catalog(self) -> int:
        """Copy the bundled catalog into the global history once per catalog version."""
        records = catalog_records()
        version = hashlib.sha1("".join(r.id for r in records).encode()).hexdigest()
        if await self.redis.get(keys.prices_seeded()) == version:
            return 0
        added = 0
        for rec in records:
            added += await self.redis.hsetnx(keys.price_records(GLOBAL), rec.id,
                                             rec.model_dump_json())
        await self.redis.set(keys.prices_seeded(), version)
        if added:
            await self._bump(GLOBAL)
        return added

    async def add(self, scope: str, records: list[PriceRecord], *, prune: bool = True) -> None:
        """Store records that have passed PriceRecord.check (feeds, imports). A workspace's
        records count against MAX_QUOTES as its quotes do: all stored or none (QuotaFull). The
        global history is pruned after (unless `prune=False`)."""
        if not records:
            return
        if scope != GLOBAL:
            pairs = [v for r in records for v in (r.id, r.model_dump_json())]
            stored = await self.redis.eval(ADD_MANY_CAPPED, 2, keys.price_records(scope),
                                           keys.prices_version(scope), str(MAX_QUOTES), *pairs)
            if int(stored) < 0:
                raise QuotaFull(_("Not recorded: this workspace would hold more than {cap} "
                                  "prices and quotes, the most it keeps. Remove old ones first "
                                  "(`/gpusize quote list`, `/gpusize quote remove ID`).").format(
                    cap=MAX_QUOTES))
            return
        await self.redis.hset(keys.price_records(scope),
                              mapping={r.id: r.model_dump_json() for r in records})
        await self._bump(scope)
        if prune:
            await self.prune()

    async def prune(self) -> int:
        """Apply the global history's retention (HISTORY_PER_SERIES, HISTORY_MAX); the number
        of records removed."""
        records = [r for r in await self.records(GLOBAL) if r.origin != "catalog"]
        doomed = retention_victims(records, per_series=HISTORY_PER_SERIES, total=HISTORY_MAX)
        for start in range(0, len(doomed), 1000):
            await self.redis.hdel(keys.price_records(GLOBAL), *doomed[start:start + 1000])
        if doomed:
            await self._bump(GLOBAL)
        return len(doomed)

    async def add_quote(self, team: str, record: PriceRecord) -> None:
        """Store one workspace quote unless the workspace holds MAX_QUOTES already (QuotaFull)."""
        stored = await self.redis.eval(ADD_CAPPED, 2, keys.price_records(team),
                                       keys.prices_version(team), str(MAX_QUOTES), record.id,
                                       record.model_dump_json())
        if not int(stored):
            raise QuotaFull(_("Quote not recorded: this workspace already holds {cap} quotes, the "
                              "most it keeps. Remove old ones first (`/gpusize quote list`, "
                              "`/gpusize quote remove ID`).").format(cap=MAX_QUOTES))

    async def count(self, scope: str) -> int:
        return int(await self.redis.hlen(keys.price_records(scope)))

    async def records(self, scope: str) -> list[PriceRecord]:
        raw = await self.redis.hgetall(keys.price_records(scope))
        return [PriceRecord.model_validate_json(v) for v in raw.values()]

    async def visible(self, team: str) -> list[PriceRecord]:
        """What a workspace sees: the global history plus its own quotes. Records dated after
        tomorrow (stored before prices were checked) stay stored but are never used: "newest
        wins" must not let a date in 2999 win for ever."""
        if not await self.redis.exists(keys.price_records(GLOBAL)):
            await self.seed_catalog()  # first use on a fresh Redis
        latest = datetime.now(UTC).date() + timedelta(days=1)
        return [r for r in await self.records(GLOBAL) + await self.records(team)
                if r.quoted <= latest]

    async def book_for(self, team: str) -> PriceBook:
        """The workspace's price book, rebuilt only when its prices or the global ones changed
        (the version counters, one read)."""
        version_keys = (keys.prices_version(GLOBAL), keys.prices_version(team))
        raw = await self.redis.mget(*version_keys)
        if raw[0] is None and not await self.redis.exists(keys.price_records(GLOBAL)):
            await self.seed_catalog()  # a fresh Redis: seed first, so the version read holds
            raw = await self.redis.mget(*version_keys)
        versions = tuple(v or "0" for v in raw)
        cached = self._books.get(team)
        if cached is not None and cached[0] == versions:
            self._books.move_to_end(team)
            return cached[1]
        records = await self.visible(team)
        base = price_book()
        book = (base.with_prices(answer_rows(tuple(r.to_price() for r in records), base))
                if records else base)
        self._books[team] = (versions, book)  # type: ignore[assignment]
        self._books.move_to_end(team)
        while len(self._books) > BOOKS_CACHED:
            self._books.popitem(last=False)
        return book

    async def remove(self, team: str, record_id: str, *, user: str, is_admin: bool) -> str:
        raw = await self.redis.hget(keys.price_records(team), record_id)
        if raw is None:
            return "missing"
        rec = PriceRecord.model_validate_json(raw)
        if rec.entered_by != user and not is_admin:
            return "forbidden"
        await self.redis.hdel(keys.price_records(team), record_id)
        await self._bump(team)
        return "removed"

    async def note_asked(self, team: str, card: str) -> None:
        await self.redis.zincrby(keys.asked_cards(team), 1, card)

    async def most_asked(self, team: str, n: int = 5) -> list[str]:
        return list(await self.redis.zrevrange(keys.asked_cards(team), 0, n - 1))

    async def feed_status(self) -> dict[str, dict]:
        raw = await self.redis.hgetall(keys.feed_status())
        return {url: json.loads(v) for url, v in raw.items()}
