"""The scheduled price digest: subscriptions, due slots in any IANA time zone, and exactly one
post per subscription per period however many replicas or triggers run.

Once per period: check the period's done-key, take a lock (SET NX PX, released by compare-and-
delete: redis-py's Lock), check again, post, set the done-key, release. A missed slot (the bot
was down at Monday 09:00) posts once when the bot is back, marked late: only the latest due slot
is ever posted, never one per missed week. The clock is a parameter, so tests move it.

Each subscription is posted on its own: one that fails (the bot removed from its channel, the
channel archived or deleted, Slack down) never stops another subscription or workspace. A failure
is recorded on the subscription (how many in a row, the last error and when) and the next try
waits a while (RETRY_AFTER); after UNREACHABLE_LIMIT failures in a row that say the channel is
gone or closed to the bot, the subscription is turned off (kept, shown by `digest list`) and its
creator is told privately how to subscribe again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel
from redis.asyncio import Redis
from redis.exceptions import LockError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import feeds, keys, pricetables
from bot.pricestore import PriceRecord, PriceStore, newest
from bot.pricetables import DEFAULT_CARDS
from engine import catalog
from engine.cost import HOURS_PER_MONTH, CostInputs, plan_cost
from engine.errors import UserError
from engine.i18n import N_, _, money, set_language
from engine.parse import ParseError
from engine.prices import STALE_DAYS, price_book
from present import blockkit
from present.blockkit import channel_ref, user_ref
from present.labels import columns

log = logging.getLogger(__name__)
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
LATE_AFTER = timedelta(minutes=30)
DONE_TTL_S = 40 * 86400
MOVERS_SHOWN = 12
WEEKDAY_NAMES = (N_("Monday"), N_("Tuesday"), N_("Wednesday"), N_("Thursday"), N_("Friday"),
                 N_("Saturday"), N_("Sunday"))
MAX_SUBSCRIPTIONS = 10  # per workspace: each one is a public post on a schedule
# Slack's answers that mean the channel will not take the post until a person acts
UNREACHABLE = frozenset({"channel_not_found", "is_archived", "not_in_channel"})
UNREACHABLE_LIMIT = 3  # in a row, then the subscription is turned off and its creator told
RETRY_AFTER = (timedelta(minutes=10), timedelta(hours=1), timedelta(hours=6))
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
    # delivery record: failures in a row (any), of them in a row saying the channel is gone,
    # the last error and when, when to try again, when it was turned off
    failures: int = 0
    unreachable: int = 0
    last_error: str = ""
    last_failed_at: datetime | None = None
    retry_at: datetime | None = None
    disabled_at: datetime | None = None

    def describe(self) -> str:
        when = (_("every {day}").format(day=_(WEEKDAY_NAMES[self.weekday]))
                if self.frequency == "weekly" else _("every day"))
        return _("{when} at {time} {tz} in {channel}").format(
            when=when, time=self.at, tz=self.tz, channel=channel_ref(self.channel))

    def status(self) -> str:
        """`digest list`'s line: the schedule, who set it up, and whether it is delivered."""
        line = self.describe() + " " + _("(by {user})").format(user=user_ref(self.created_by))
        if self.disabled_at is not None:
            return line + " · " + _("*turned off* on {date}: Slack answered `{error}` {count} "
                                    "times in a row. Invite the bot to the channel, then "
                                    "subscribe again.").format(
                date=self.disabled_at.date(), error=self.last_error, count=self.unreachable)
        if self.failures and self.last_failed_at is not None:
            return line + " · " + _("the last {count} posts failed (`{error}`, {at}); it will "
                                    "try again.").format(
                count=self.failures, error=self.last_error,
                at=self.last_failed_at.strftime("%Y-%m-%d %H:%M UTC"))
        return line


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


# KEYS[1] the workspace's subscriptions. ARGV[1] channel, ARGV[2] cap, ARGV[3] JSON. Replacing a
# channel's subscription is always room; a new channel needs the workspace under the cap.
SUBSCRIBE_CAPPED = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""
# KEYS[1] the subscriptions. ARGV[1] channel, ARGV[2] the JSON read, ARGV[3] the new JSON: write
# only if nobody unsubscribed or re-subscribed meanwhile (a failure record never resurrects one).
REPLACE_IF_SAME = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
"""


class SubscriptionsFull(UserError):
    """The workspace holds MAX_SUBSCRIPTIONS already; nothing was stored (the message says so)."""


class Digests:
    def __init__(self, redis: Redis, client: AsyncWebClient, prices: PriceStore) -> None:
        self.redis = redis
        self.client = client
        self.prices = prices

    # -- subscriptions --------------------------------------------------------------------------

    async def subscribe(self, sub: Subscription) -> None:
        """Store `sub` (replacing the channel's previous one); SubscriptionsFull beyond the cap."""
        stored = await self.redis.eval(SUBSCRIBE_CAPPED, 1, keys.digest_subscriptions(sub.team),
                                       sub.channel, str(MAX_SUBSCRIPTIONS), sub.model_dump_json())
        if not int(stored):
            raise SubscriptionsFull(_(
                "This workspace already has {cap} digest subscriptions, the most it keeps. "
                "`/gpusize digest list` shows them; `/gpusize digest unsubscribe #channel` "
                "removes one.").format(cap=MAX_SUBSCRIPTIONS))
        await self.redis.sadd(keys.digest_teams(), sub.team)
        # the period already under way is not owed: the first digest comes at the next slot
        _slot, period = latest_slot(sub, sub.created_at)
        await self.redis.set(keys.digest_done(sub.team, sub.channel, period), "skipped",
                             ex=DONE_TTL_S)
        await self._snapshot(sub, await self.prices.visible(sub.team))

    async def unsubscribe(self, team: str, channel: str) -> bool:
        return bool(await self.redis.hdel(keys.digest_subscriptions(team), channel))

    async def subscription(self, team: str, channel: str) -> Subscription | None:
        raw = await self.redis.hget(keys.digest_subscriptions(team), channel)
        return Subscription.model_validate_json(raw) if raw else None

    async def subscriptions(self, team: str) -> list[Subscription]:
        raw = await self.redis.hgetall(keys.digest_subscriptions(team))
        out = []
        for channel, value in raw.items():
            try:
                out.append(Subscription.model_validate_json(value))
            except ValueError:  # one unreadable record must not hide the others
                log.warning("unreadable digest subscription %s/%s", team, channel)
        return out

    # -- running --------------------------------------------------------------------------------

    async def run_due(self, now: datetime) -> list[str]:
        """Post every digest whose latest slot has passed and is not yet posted. Each workspace
        and each subscription on its own: a failure is recorded and the run goes on."""
        posted = []
        for team in sorted(await self.redis.smembers(keys.digest_teams())):
            try:
                lang = await self.redis.hget(keys.language(team), "workspace") or "en"
                set_language(lang)  # a digest speaks the workspace's language (/gpusize lang)
                subs = await self.subscriptions(team)
            except Exception:
                log.exception("digests of workspace %s skipped this run", team)
                continue
            for sub in subs:
                if sub.disabled_at is not None or (sub.retry_at and now < sub.retry_at):
                    continue
                slot, period = latest_slot(sub, now)
                if slot < sub.created_at:
                    continue
                try:
                    if await self._post_once(sub, period, late=now - slot > LATE_AFTER,
                                             now=now):
                        posted.append(f"{team}/{sub.channel}/{period}")
                except SlackApiError as err:
                    await self._failed(sub, str(err.response.get("error") or "slack_error"),
                                       now=now)
                except Exception as err:  # a timeout, a bug: recorded, the others still run
                    log.exception("digest %s/%s failed", team, sub.channel)
                    await self._failed(sub, type(err).__name__, now=now)
        return posted

    async def _failed(self, sub: Subscription, error: str, *, now: datetime) -> None:
        """Record a failed post on the subscription; turn it off after UNREACHABLE_LIMIT
        channel-gone answers in a row and tell its creator."""
        try:
            await self._record_failure(sub, error, now=now)
        except Exception:  # Redis down: the next run tries (and records) again
            log.exception("could not record the failure of digest %s/%s", sub.team, sub.channel)

    async def _record_failure(self, sub: Subscription, error: str, *, now: datetime) -> None:
        before = await self.redis.hget(keys.digest_subscriptions(sub.team), sub.channel)
        if before is None:
            return
        current = Subscription.model_validate_json(before)
        failures = current.failures + 1
        unreachable = current.unreachable + 1 if error in UNREACHABLE else current.unreachable
        disabled = unreachable >= UNREACHABLE_LIMIT
        updated = current.model_copy(update={
            "failures": failures, "unreachable": unreachable, "last_error": error[:60],
            "last_failed_at": now, "disabled_at": now if disabled else None,
            "retry_at": now + RETRY_AFTER[min(failures, len(RETRY_AFTER)) - 1]})
        replaced = await self.redis.eval(REPLACE_IF_SAME, 1,
                                         keys.digest_subscriptions(sub.team), sub.channel,
                                         before, updated.model_dump_json())
        log.warning("digest %s/%s failed (%s, %d in a row)%s", sub.team, sub.channel, error,
                    failures, ", turned off" if disabled else "")
        if disabled and int(replaced):
            await self._tell_creator(updated)

    async def _tell_creator(self, sub: Subscription) -> None:
        """A direct message to whoever subscribed (a user id as channel is the DM with the app)."""
        text = _("The GPU price digest {when} is turned off: Slack answered `{error}` {count} "
                 "times in a row, so the bot cannot post there (it was removed from the channel, "
                 "or the channel was archived or deleted). To get it back, invite the bot to "
                 "the channel (`/invite @gpusize`) and run `/gpusize digest subscribe` there "
                 "again.").format(when=sub.describe(), error=sub.last_error,
                                  count=sub.unreachable)
        try:
            await self.client.chat_postMessage(channel=sub.created_by,
                                               text=blockkit.fallback(text))
        except Exception as err:  # the creator left, DMs closed: the list still says why
            log.warning("could not tell %s that digest %s/%s is off: %s", sub.created_by,
                        sub.team, sub.channel, type(err).__name__)

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
                channel=sub.channel, text=blockkit.fallback(fallback), unfurl_links=False,
                unfurl_media=False,
                blocks=blockkit.blocks("digest.json.j2", d={"sections": [
                    part for section in sections for part in blockkit.sections(section)],
                                                          "title": fallback[:150]}))
            await self.redis.set(done, now.isoformat(), ex=DONE_TTL_S)
            await self._delivered(sub)
            await self._snapshot(sub, await self.prices.visible(sub.team))
            return True
        finally:
            with contextlib.suppress(LockError):  # expired: nothing of ours to release
                await lock.release()

    async def _delivered(self, sub: Subscription) -> None:
        """A post went through: the failure record starts again from nothing."""
        if not sub.failures:
            return
        key = keys.digest_subscriptions(sub.team)
        before = await self.redis.hget(key, sub.channel)
        if before is None:
            return
        cleared = Subscription.model_validate_json(before).model_copy(update={
            "failures": 0, "unreachable": 0, "retry_at": None})
        await self.redis.eval(REPLACE_IF_SAME, 1, key, sub.channel, before,
                              cleared.model_dump_json())

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
                f"• {feeds.public_url(url)[:120]}: {s['error']} ({s['at']})"
                for url, s in list(failures.items())[:10]))
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
                     ("-" if pc.break_even_hours is None else _("never: rent")
                      if pc.break_even_hours > HOURS_PER_MONTH  # more hours than a month has
                      else _("> {hours:.0f} h/mo").format(hours=pc.break_even_hours))])
    return "\n".join([_("*The cards this workspace asks about*") + " " + _(
        "(rent per GPU-hour, buy per card, and the use a month above which buying a server "
        "of them pays off)"), "```", *columns(rows, right=(1, 2, 3)), "```"])
