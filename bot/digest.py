"""The scheduled price digest: subscriptions, due slots in any IANA time zone, and exactly one
post per subscription per period however many replicas or triggers run.

Once per period: check the period's done-key, take a lock (SET NX PX, released by compare-and-
delete: redis-py's Lock), check again, post, set the done-key, release. A missed slot (the bot
was down at Monday 09:00) posts once when the bot is back, marked late: only the latest due slot
is ever posted, never one per missed week. The clock is a parameter, so tests move it.
"""

from __future__ import annotations

import contextlib
import json
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel
from redis.asyncio import Redis
from redis.exceptions import LockError
from slack_sdk.web.async_client import AsyncWebClient

from bot import keys, pricetables
from bot.pricestore import PriceRecord, PriceStore, newest
from bot.pricetables import DEFAULT_CARDS
from engine import catalog
from engine.cost import CostInputs, plan_cost
from engine.i18n import N_, _, money, set_language
from engine.parse import ParseError
from engine.prices import STALE_DAYS, price_book
from present import blockkit
from present.blockkit import channel_ref
from present.labels import columns

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
LATE_AFTER = timedelta(minutes=30)
DONE_TTL_S = 40 * 86400
MOVERS_SHOWN = 12
WEEKDAY_NAMES = (N_("Monday"), N_("Tuesday"), N_("Wednesday"), N_("Thursday"), N_("Friday"),
                 N_("Saturday"), N_("Sunday"))
USAGE = N_("`/gpusize digest subscribe #channel weekly mon 09:00 Asia/Shanghai` (or `daily 08:30 "
         "Europe/Berlin`), `/gpusize digest unsubscribe [#channel]`, `/gpusize digest preview`")


class Subscription(BaseModel):
    team: str
    channel: str
    frequency: Literal["daily", "weekly"]
    weekday: int = 0
    at: str = "09:00"
    tz: str = "UTC"
    created_by: str
    created_at: datetime

    def describe(self) -> str:
        when = (_("every {day}").format(day=_(WEEKDAY_NAMES[self.weekday]))
                if self.frequency == "weekly" else _("every day"))
        return _("{when} at {time} {tz} in {channel}").format(
            when=when, time=self.at, tz=self.tz, channel=channel_ref(self.channel))


def parse_subscribe(words: list[str], *, team: str, channel: str, user: str,
                    now: datetime) -> Subscription:
    """`subscribe [#channel] daily|weekly [mon] [HH:MM] [Area/City]`."""
    target, frequency, weekday, at, tz = channel, None, 0, "09:00", "UTC"
    for word in words:
        low = word.lower()
        if m := re.fullmatch(r"<#([CG][A-Z0-9]+)(\|[^>]*)?>", word):
            target = m.group(1)
        elif low in ("daily", "weekly"):
            frequency = low
        elif low[:3] in WEEKDAYS and low.isalpha():
            weekday = WEEKDAYS.index(low[:3])
            frequency = frequency or "weekly"
        elif re.fullmatch(r"\d{1,2}:\d{2}", word):
            hour, minute = map(int, word.split(":"))
            if hour > 23 or minute > 59:
                raise ParseError(_("time {word} is not a clock time (00:00-23:59).").format(
                    word=word), token=word)
            at = f"{hour:02d}:{minute:02d}"
        elif "/" in word or word.upper() == "UTC":
            try:
                ZoneInfo(word)
            except (ZoneInfoNotFoundError, ValueError):
                raise ParseError(_("unknown time zone {word}: use an IANA name like "
                                   "Asia/Shanghai.").format(word=word[:40]), token=word) from None
            tz = word
        elif word.startswith("#"):
            raise ParseError(_("pick the channel from Slack's autocomplete ({word} came through "
                               "as text), or leave it out for this channel.").format(
                                 word=word[:40]), token=word)
        else:
            raise ParseError(_("unexpected {word}. {usage}").format(word=word[:40],
                                                                     usage=_(USAGE)), token=word)
    if frequency is None:
        raise ParseError(_("daily or weekly? {usage}").format(usage=_(USAGE)))
    return Subscription(team=team, channel=target, frequency=frequency, weekday=weekday, at=at,
                        tz=tz, created_by=user, created_at=now)


def latest_slot(sub: Subscription, now: datetime) -> tuple[datetime, str]:
    """The most recent scheduled time at or before `now` (aware, UTC) and its period key.

    Slots are wall-clock times in the subscription's zone, so 09:00 stays 09:00 across a
    daylight-saving change (the UTC instant moves)."""
    zone = ZoneInfo(sub.tz)
    local = now.astimezone(zone)
    hour, minute = map(int, sub.at.split(":"))

    def at_day(day: date) -> datetime:
        return datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)

    if sub.frequency == "daily":
        slot = at_day(local.date())
        if slot > local:
            slot = at_day(local.date() - timedelta(days=1))
        return slot.astimezone(UTC), slot.date().isoformat()
    back = (local.weekday() - sub.weekday) % 7
    slot = at_day(local.date() - timedelta(days=back))
    if slot > local:
        slot = at_day(local.date() - timedelta(days=7))
    year, week, _day = slot.isocalendar()
    return slot.astimezone(UTC), f"{year}-W{week:02d}"


class Digests:
    def __init__(self, redis: Redis, client: AsyncWebClient, prices: PriceStore) -> None:
        self.redis = redis
        self.client = client
        self.prices = prices

    # -- subscriptions --------------------------------------------------------------------------

    async def subscribe(self, sub: Subscription) -> None:
        await self.redis.hset(keys.digest_subscriptions(sub.team), sub.channel,
                              sub.model_dump_json())
        await self.redis.sadd(keys.digest_teams(), sub.team)
        # the period already under way is not owed: the first digest comes at the next slot
        _slot, period = latest_slot(sub, sub.created_at)
        await self.redis.set(keys.digest_done(sub.team, sub.channel, period), "skipped",
                             ex=DONE_TTL_S)
        await self._snapshot(sub, await self.prices.visible(sub.team))

    async def unsubscribe(self, team: str, channel: str) -> bool:
        return bool(await self.redis.hdel(keys.digest_subscriptions(team), channel))

    async def subscriptions(self, team: str) -> list[Subscription]:
        raw = await self.redis.hgetall(keys.digest_subscriptions(team))
        return [Subscription.model_validate_json(v) for v in raw.values()]

    # -- running --------------------------------------------------------------------------------

    async def run_due(self, now: datetime) -> list[str]:
        """Post every digest whose latest slot has passed and is not yet posted."""
        posted = []
        for team in sorted(await self.redis.smembers(keys.digest_teams())):
            lang = await self.redis.hget(keys.language(team), "workspace") or "en"
            set_language(lang)  # a digest speaks the workspace's language (/gpusize lang)
            for sub in await self.subscriptions(team):
                slot, period = latest_slot(sub, now)
                if slot < sub.created_at:
                    continue
                if await self._post_once(sub, period, late=now - slot > LATE_AFTER, now=now):
                    posted.append(f"{team}/{sub.channel}/{period}")
        return posted

    async def _post_once(self, sub: Subscription, period: str, *, late: bool,
                         now: datetime) -> bool:
        done = keys.digest_done(sub.team, sub.channel, period)
        if await self.redis.exists(done):
            return False
        lock = self.redis.lock(keys.digest_lock(sub.team, sub.channel, period), timeout=120,
                               blocking=False)
        if not await lock.acquire():
            return False
        try:
            if await self.redis.exists(done):  # another trigger finished while we waited
                return False
            sections, fallback = await self.compose(sub.team, sub.channel, now=now, late=late,
                                                    period=period)
            await self.client.chat_postMessage(
                channel=sub.channel, text=blockkit.fallback(fallback),
                blocks=blockkit.blocks("digest.json.j2", d={"sections": [
                    part for section in sections for part in blockkit.sections(section)],
                                                          "title": fallback[:150]}))
            await self.redis.set(done, now.isoformat(), ex=DONE_TTL_S)
            await self._snapshot(sub, await self.prices.visible(sub.team))
            return True
        finally:
            with contextlib.suppress(LockError):  # expired: nothing of ours to release
                await lock.release()

    # -- content ------------------------------------------------------------------------------

    async def compose(self, team: str, channel: str | None, *, now: datetime, late: bool = False,
                      period: str = "") -> tuple[list[str], str]:
        records = await self.prices.visible(team)
        best = newest(records)
        today = now.date()
        previous = {}
        if channel is not None:
            raw = await self.redis.hgetall(keys.digest_snapshot(team, channel))
            previous = {k: json.loads(v) for k, v in raw.items()}
        currency = pricetables.workspace_currency(await self.prices.records(team))
        sections = [_movers(best, previous, currency)]
        cards = await self.prices.most_asked(team) or list(DEFAULT_CARDS)
        sections.append(_cheapest(best, cards, records, today, currency))
        stale = sorted((r for r in best.values() if (today - r.quoted).days > STALE_DAYS),
                       key=lambda r: r.quoted)
        if stale:
            sections.append(_("*Stale* ({count} current prices older than {days} days: ask "
                              "vendors for fresh quotes)").format(count=len(stale), days=STALE_DAYS)
                            + "\n" + "\n".join(
                                f"• {pricetables.display(r.item, 40)} · "
                                f"{_(pricetables.KIND_TITLES[r.kind]).lower()}: {r.quoted}"
                                for r in stale[:10])
                            + ("\n" + _("… and {count} more").format(count=len(stale) - 10)
                               if len(stale) > 10 else ""))
        failures = {u: s for u, s in (await self.prices.feed_status()).items() if not s["ok"]}
        if failures:
            sections.append(_("*Feeds that failed* (their previous prices are kept)") + "\n"
                            + "\n".join(
                f"• {url[:120]}: {s['error']} ({s['at']})" for url, s in list(failures.items())[:10]))
        title = (_("GPU price digest") + (_(" (late)") if late else "")
                 + (f" · {period}" if period else ""))
        return sections, title

    async def _snapshot(self, sub: Subscription, records: list[PriceRecord]) -> None:
        key = keys.digest_snapshot(sub.team, sub.channel)
        mapping = {f"{item}|{kind}": json.dumps({"amount": _mid(r), "currency": r.currency})
                   for (item, kind), r in newest(records).items()}
        if mapping:
            await self.redis.delete(key)
            await self.redis.hset(key, mapping=mapping)


def _mid(rec: PriceRecord) -> float:
    return (rec.low + rec.high) / 2


def _fmt(amount: float) -> str:
    return f"{amount:,.0f}" if amount >= 100 else f"{amount:.3g}"


def _movers(best: dict[tuple[str, str], PriceRecord], previous: dict[str, Any],
            currency: str = "CNY") -> str:
    moves = []
    for (item, kind), rec in best.items():
        before = previous.get(f"{item}|{kind}")
        if not before or before["currency"] != rec.currency or before["amount"] == _mid(rec):
            continue
        pct = (_mid(rec) - before["amount"]) / before["amount"]
        moves.append((abs(pct), pct, rec, before["amount"]))
    if not moves:
        return _("*Price changes since the last digest*") + "\n" + _("No price changed.")
    moves.sort(key=lambda m: m[0], reverse=True)
    lines = [_("*Price changes since the last digest*") + " "
             + _("({count}, biggest first, in {currency})").format(count=len(moves),
                                                                   currency=currency)]
    lines += pricetables.movers_table(moves[:MOVERS_SHOWN], currency=currency, book=price_book())
    if len(moves) > MOVERS_SHOWN:
        lines.append(_("… and {count} smaller changes").format(count=len(moves) - MOVERS_SHOWN))
    return "\n".join(lines)


def _cheapest(best: dict[tuple[str, str], PriceRecord], cards: list[str],
              records: list[PriceRecord], today: date, currency: str = "CNY") -> str:
    book = price_book().with_prices(tuple(r.to_price() for r in records))
    rows = [[_("card"), currency + "/h", _("buy"), _("pays off")]]
    for name in cards[:6]:
        gpu = catalog.gpus().get(name)
        if gpu is None:
            continue
        rent = best.get((name, "rent_card_hour"))
        buy = best.get((name, "buy_card"))
        count = 8 if gpu.form_factor in ("sxm", "oam") else 1
        pc = plan_cost(book, gpu, count, CostInputs(today=today))
        rows.append([pricetables.display(name),
                     f"{book.convert(_mid(rent), rent.currency, currency):,.2f}" if rent else "-",
                     money(book.convert(_mid(buy), buy.currency, currency), currency).replace(
                         " " + currency, "") if buy else "-",
                     _("> {hours:.0f} h/mo").format(hours=pc.break_even_hours)
                     if pc.break_even_hours is not None else "-"])
    return "\n".join([_("*The cards this workspace asks about*") + " " + _(
        "(rent per GPU-hour, buy per card, and the use a month above which buying a server "
        "of them pays off)"), "```", *columns(rows, right=(1, 2, 3)), "```"])
