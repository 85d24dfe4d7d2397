"""Prices as a dated history in Redis: the bundled catalog (seeded once), feeds, and each
workspace's own vendor quotes. Answers use the newest price per (item, kind); a workspace's
quotes are visible to that workspace only."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from redis.asyncio import Redis

from bot import keys
from engine.prices import Currency, Kind, Price, PriceBook, price_book

GLOBAL = "global"
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


class PriceStore:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis

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
        return added

    async def add(self, scope: str, records: list[PriceRecord]) -> None:
        if records:
            await self.redis.hset(keys.price_records(scope),
                                  mapping={r.id: r.model_dump_json() for r in records})

    async def records(self, scope: str) -> list[PriceRecord]:
        raw = await self.redis.hgetall(keys.price_records(scope))
        return [PriceRecord.model_validate_json(v) for v in raw.values()]

    async def visible(self, team: str) -> list[PriceRecord]:
        """What a workspace sees: the global history plus its own quotes."""
        if not await self.redis.exists(keys.price_records(GLOBAL)):
            await self.seed_catalog()  # first use on a fresh Redis
        return await self.records(GLOBAL) + await self.records(team)

    async def book_for(self, team: str) -> PriceBook:
        records = await self.visible(team)
        if not records:
            return price_book()
        return price_book().with_prices(tuple(r.to_price() for r in records))

    async def remove(self, team: str, record_id: str, *, user: str, is_admin: bool) -> str:
        raw = await self.redis.hget(keys.price_records(team), record_id)
        if raw is None:
            return "missing"
        rec = PriceRecord.model_validate_json(raw)
        if rec.entered_by != user and not is_admin:
            return "forbidden"
        await self.redis.hdel(keys.price_records(team), record_id)
        return "removed"

    async def note_asked(self, team: str, card: str) -> None:
        await self.redis.zincrby(keys.asked_cards(team), 1, card)

    async def most_asked(self, team: str, n: int = 5) -> list[str]:
        return list(await self.redis.zrevrange(keys.asked_cards(team), 0, n - 1))

    async def feed_status(self) -> dict[str, dict]:
        raw = await self.redis.hgetall(keys.feed_status())
        return {url: json.loads(v) for url, v in raw.items()}
