"""`/gpusize price [CARD]`, `/gpusize quote CARD buy|rent AMOUNT vendor="..."`, `quote list`,
`quote remove ID`: prices as a team sees them, and the team's own vendor quotes (the seeds' step 4:
get three local quotes)."""

from __future__ import annotations

import re
import shlex
from datetime import UTC, date, datetime

from pydantic import ValidationError

from bot import feeds, pricetables
from bot.limits import Limit, allow
from bot.permissions import ADMIN_UNKNOWN
from bot.pricestore import PriceRecord, PriceStore, QuotaFull, new_id
from engine import catalog
from engine.i18n import N_, _
from engine.parse import ParseError, parse_money, validation_problem
from engine.prices import KIND_TEXT, STALE_DAYS, PriceRejected, price_book
from present.blockkit import clean_field, user_ref

KINDS = {"buy": "buy_card", "purchase": "buy_card", "buy-card": "buy_card",
         "buy-server": "buy_server", "server": "buy_server",
         "rent": "rent_card_hour", "rent-hour": "rent_card_hour", "hourly": "rent_card_hour",
         "rent-month": "rent_server_month", "monthly": "rent_server_month",
         "cluster": "rent_cluster_hour", "rent-cluster": "rent_cluster_hour",
         "reserved": "rent_cluster_hour"}
SUBCOMMANDS = ("price", "prices", "quote", "quotes")
# one person entering quotes in a loop must not fill the workspace's MAX_QUOTES in a minute
QUOTE_LIMIT = Limit(name="quote", count=20, window_s=600)
QUOTE_USAGE = N_('`/gpusize quote CARD buy|rent|buy-server|rent-month|cluster AMOUNT '
               'vendor="Name"` (e.g. `/gpusize quote H100 buy 230k vendor="Chengdu IDC A"`, '
               '`/gpusize quote 8xa800 buy-server 1.2M vendor="X"`, `/gpusize quote 4090 rent 2.5`, '
               '`/gpusize quote a800 cluster 12 vendor="智算中心"`)')


def _words(text: str) -> list[str]:
    text = text.replace("“", '"').replace("”", '"').replace("‘", "'").replace("’", "'")
    try:
        return shlex.split(text)
    except ValueError as err:
        raise ParseError(_("cannot read the quote ({error}): check the quotes.").format(
            error=err)) from None


def item_for(word: str) -> str:
    """`H100` -> h100-sxm; `8xa800` / `8x A800` -> server:8xa800."""
    m = re.fullmatch(r"(\d+)\s*x\s*(.+)", word.lower())
    card_text = m.group(2) if m else word
    gpu = catalog.find_gpu(card_text)
    if gpu is None:
        near = catalog.closest_gpus(card_text, n=1)
        raise ParseError(_("unknown card {word}; known cards: {cards}.").format(
                             word=word[:40], cards=", ".join(catalog.gpus())),
                         token=word, suggestion=near[0] if near else None)
    return f"server:{int(m.group(1))}x{gpu.name}" if m else gpu.name


def parse_quote(text: str, *, team_user: str, today: date,
                quote_id: str | None = None) -> PriceRecord:
    words = _words(text)[1:]  # drop "quote"
    if len(words) < 3:
        raise ParseError(_("a quote needs a card, a kind and an amount: {usage}").format(
            usage=_(QUOTE_USAGE)))
    card, kind_word, amount_word, *rest = words
    item = item_for(card)
    kind = KINDS.get(kind_word.lower())
    if kind is None:
        raise ParseError(_("quote kind {word} is not one of buy, rent, buy-server, rent-month, "
                           "cluster. "
                           "{usage}").format(word=kind_word[:20], usage=_(QUOTE_USAGE)),
                         token=kind_word)
    if kind in ("buy_server", "rent_server_month") and not item.startswith("server:"):
        item = f"server:1x{item}"
    if kind in ("buy_card", "rent_card_hour", "rent_cluster_hour") and item.startswith("server:"):
        raise ParseError(_("{card} is a server: use buy-server or rent-month for it.").format(
            card=card), token=card)
    money = parse_money("amount", amount_word.lower())
    options: dict[str, str] = {}
    for word in rest:
        key, sep, value = word.partition("=")
        if not sep or key.lower() not in ("vendor", "date", "currency", "note"):
            raise ParseError(_("unexpected {word} in a quote: {usage}").format(
                word=word[:40], usage=_(QUOTE_USAGE)), token=word)
        options[key.lower()] = clean_field(value, 120 if key.lower() == "vendor" else 500)
    currency = (money.currency or options.get("currency", "CNY")).upper()
    if currency == "RMB":
        currency = "CNY"
    if currency not in ("CNY", "USD"):
        raise ParseError(_("currency {currency} is not CNY or USD.").format(
            currency=currency[:10]), token=currency)
    quoted = today
    if "date" in options:
        try:
            quoted = date.fromisoformat(options["date"])
        except ValueError:
            raise ParseError(_("date={date} is not YYYY-MM-DD.").format(
                date=options["date"][:20])) from None
    gpus = int(item.split(":")[1].split("x")[0]) if item.startswith("server:") else 1
    try:
        record = PriceRecord(id=quote_id or new_id("q"), item=item, kind=kind, gpus=gpus,
                             low=money.amount, high=money.amount, currency=currency,
                             region="china" if currency == "CNY" else "global",
                             source=f"vendor quote: {options.get('vendor') or 'unnamed vendor'}",
                             origin="quote", vendor=options.get("vendor", ""),
                             entered_by=team_user, quoted=quoted, recorded_at=datetime.now(UTC),
                             note=options.get("note", ""))
    except ValidationError as err:  # an amount past any price (buy 20000000000): said, not lost
        first = err.errors()[0]
        field = "amount" if first["loc"] and first["loc"][0] in ("low", "high") else \
            ".".join(map(str, first["loc"]))
        raise ParseError(_("quote not recorded: {reason}").format(
            reason=f"{field} {validation_problem(str(first['type']), first.get('ctx') or {})}"),
            token=amount_word if field == "amount" else "") from None
    try:
        record.check(today)
    except PriceRejected as err:
        raise ParseError(_("quote not recorded: {reason}").format(reason=err)) from None
    return record


def amount_text(rec: PriceRecord) -> str:
    value = f"{rec.low:,.4g}" if rec.low < 100 else f"{rec.low:,.0f}"
    if rec.high != rec.low:
        value += f"-{rec.high:,.4g}" if rec.high < 100 else f"-{rec.high:,.0f}"
    return f"{value} {rec.currency}"


def _age(rec: PriceRecord, today: date) -> str:
    days = (today - rec.quoted).days
    stale = " " + _("*stale*") if days > STALE_DAYS else ""
    return _("{days} d old").format(days=days) + stale


def _origin(rec: PriceRecord) -> str:
    if rec.origin == "quote":
        return _("quote from {vendor} by {user} (id `{id}`)").format(
            vendor=rec.vendor or _("a vendor"), user=user_ref(rec.entered_by), id=rec.id)
    return feeds.redact_urls(rec.source)[:120]  # a feed URL's credentials stay hidden


def current_prices(records: list[PriceRecord], today: date, *, currency: str = "CNY",
                   cards: list[str] | None = None) -> list[str]:
    """Per kind, a table of cards cheapest first, in `currency` (the quote in brackets when it
    was in another), each with its age and source; only `cards` when given."""
    sections = pricetables.price_tables(records, today, currency=currency, book=price_book(),
                                        cards=cards)
    if cards is not None:
        names = ", ".join(pricetables.display(c) for c in cards)
        sections.append(_("The cards this workspace asks about ({cards}). `/gpusize price all` "
                          "lists every card, `/gpusize price CARD` one card's history, "
                          "`/gpusize price usd` in dollars.").format(cards=names))
    return sections


def history(records: list[PriceRecord], item: str, today: date, *,
            currency: str = "CNY") -> list[str]:
    """A card's price history: one table per kind (bot/pricetables.py)."""
    return pricetables.history_tables(records, item.split(":")[-1], today, currency=currency,
                                      book=price_book())


async def handle(store: PriceStore, *, team: str, user: str, text: str, today: date,
                 is_admin: bool | None, quote_id: str | None = None) -> list[str]:
    """Run a price/quote subcommand; returns the sections of an ephemeral reply. `is_admin`
    None: Slack could not say (removing someone else's quote is then refused, saying so)."""
    words = text.split()
    head = words[0].lower()
    if head in ("price", "prices"):
        records = await store.visible(team)
        flags = {w.lower() for w in words[1:]} & {"all", "usd", "cny", "rmb"}
        rest = [w for w in words[1:] if w.lower() not in flags]
        currency = ("USD" if "usd" in flags else "CNY" if flags & {"cny", "rmb"}
                    else pricetables.workspace_currency(await store.records(team)))
        if rest:
            return history(records, item_for(rest[0]), today, currency=currency)
        cards = None if "all" in flags else (await store.most_asked(team)
                                              or list(pricetables.DEFAULT_CARDS))
        return current_prices(records, today, currency=currency, cards=cards)
    if len(words) == 1 or words[1].lower() == "list":
        mine = sorted(await store.records(team), key=lambda r: r.quoted, reverse=True)
        if not mine:
            return [_("No quotes in this workspace yet. {usage}").format(usage=_(QUOTE_USAGE))]
        return [_("*This workspace's quotes*") + "\n" + "\n".join(
            f"• `{r.id}` {pricetables.display(r.item, 40)} {_(KIND_TEXT[r.kind])} "
            f"{amount_text(r)} · {r.quoted} · "
            f"{r.vendor or _('unnamed vendor')} · {user_ref(r.entered_by)}" for r in mine[:80])]
    if words[1].lower() in ("remove", "delete", "rm"):
        if len(words) < 3:
            raise ParseError(_("which quote? `/gpusize quote remove ID` (ids: `/gpusize quote "
                               "list`)"))
        outcome = await store.remove(team, words[2], user=user, is_admin=bool(is_admin))
        if outcome == "forbidden" and is_admin is None:
            return [_(ADMIN_UNKNOWN)]
        return [{"removed": _("Removed quote `{id}`.").format(id=words[2]),
                 "missing": _("No quote `{id}` in this workspace.").format(id=words[2][:40]),
                 "forbidden": _("Only the person who added a quote, or a workspace admin, can "
                                "remove it.")}[outcome]]
    record = parse_quote(text, team_user=user, today=today, quote_id=quote_id)
    verdict = await allow(store.redis, limit=QUOTE_LIMIT, team=team, subject=user)
    if not verdict.allowed:
        return [_("Quote not recorded: at most {count} quotes per person every {minutes} "
                  "minutes. Try again in {seconds} s.").format(
            count=QUOTE_LIMIT.count, minutes=QUOTE_LIMIT.window_s // 60,
            seconds=verdict.retry_after_s)]
    try:
        await store.add_quote(team, record)
    except QuotaFull as err:
        return [str(err)]
    return [_("Recorded quote `{id}`: {item} {kind} {amount} from {vendor}, dated {date}. This "
              "workspace's answers use it from now on (newest price per card wins); `/gpusize "
              "quote remove {id}` takes it back.").format(
        id=record.id, item=pricetables.display(record.item, 40), kind=_(KIND_TEXT[record.kind]),
        amount=amount_text(record),
        vendor=record.vendor or _("an unnamed vendor"), date=record.quoted)]
