"""Prices as people read them in Slack: one table per kind of price, cards by their display names,
amounts in the workspace's currency (the quoted amount in brackets when it was another), each row
pointing to its source, listed under the table as a short link.

Tables are monospaced code blocks (a message takes one Block Kit table, a price list has up to
four kinds), narrow enough for a phone; `/gpusize price` and the digest share them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

from bot.pricestore import PriceRecord, newest
from engine import catalog
from engine.i18n import N_, _, money
from engine.prices import STALE_DAYS, PriceBook
from present.blockkit import short_link, user_ref
from present.labels import columns, short_card

# The cards a workspace sees before it has asked about any (the China market's common ones).
DEFAULT_CARDS = ("rtx-4090", "l40s", "a100-80gb", "h100-sxm", "h20")
KIND_TITLES = {"rent_card_hour": N_("Rent per GPU-hour"), "rent_server_month": N_("Rent per server-month"),
               "rent_cluster_hour": N_("Rent per GPU-hour in a reserved cluster"),
               "buy_card": N_("Buy per card"), "buy_server": N_("Buy per server")}
CARD_WIDTH = 16  # a phone shows about 40 monospaced characters: card, price, age, source
_URL = re.compile(r"https?://[^\s;,)]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def card_of(item: str) -> str:
    """The card an item is about: `server:8xh800` -> h800."""
    return item.split("x", 1)[1] if item.startswith("server:") and "x" in item else item


def display(item: str, width: int = CARD_WIDTH) -> str:
    """An item by the name people use: `rtx-4090` -> RTX 4090, `server:8xh800` -> 8×H800 SXM…"""
    gpu = catalog.gpus().get(card_of(item))
    name = gpu.display if gpu else card_of(item)
    if item.startswith("server:"):
        count = item.removeprefix("server:").split("x", 1)[0]
        return short_card(f"{count}×{short_card(name, 60)}", width)
    return short_card(name, width)


def workspace_currency(own: Iterable[PriceRecord], lang: str = "en") -> str:
    """The currency a workspace's price lists use: the one most of its own quotes are in, else
    CNY (the buying guides' market, and the market answers default to)."""
    counts: dict[str, int] = {}
    for rec in own:
        counts[rec.currency] = counts.get(rec.currency, 0) + 1
    return max(counts, key=lambda c: counts[c]) if counts else "CNY"


class Sources:
    """Footnotes: each distinct source once, numbered in the order rows cite it."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def cite(self, rec: PriceRecord) -> str:
        note = _source_note(rec)
        if note not in self.notes:
            self.notes.append(note)
        return f"[{self.notes.index(note) + 1}]"

    def lines(self) -> list[str]:
        return [" · ".join(f"[{n}] {note}" for n, note in enumerate(self.notes, 1))] \
            if self.notes else []


def _source_note(rec: PriceRecord) -> str:
    """Where a price comes from, as a reader can follow it: a team quote by its vendor and who
    entered it, the catalog's sources as whole links (never cut: a cut link is a 404), a feed by
    its site's name; no internal ids (`/gpusize quote list` has them, for removing one)."""
    if rec.origin == "quote":
        return _("quote from {vendor} by {user}").format(
            vendor=_CONTROL.sub("", rec.vendor)[:60] or _("a vendor"),
            user=user_ref(rec.entered_by))
    source = _CONTROL.sub("", rec.source)
    if source.startswith("seed:"):
        return _("a buying guide")
    url = _URL.search(source)
    if url and rec.origin == "catalog":
        return short_link(url.group(0))  # the bundled catalog's own sources: a live link
    if url:  # a feed's or an import's words: the site's name, not a link
        return url.group(0).split("://", 1)[1].split("/", 1)[0].removeprefix("www.")
    return source[:60]


def _amount(value: float, kind: str, currency: str) -> str:
    if kind == "rent_card_hour":
        return f"{value:,.2f}"
    return money(value, currency).replace(" " + currency, "")


def _cell(rec: PriceRecord, currency: str, book: PriceBook) -> tuple[float, str]:
    """(the midpoint in the workspace currency, the cell: it, and the quote when converted)."""
    mid = (rec.low + rec.high) / 2
    shown = book.convert(mid, rec.currency, currency)
    cell = _amount(shown, rec.kind, currency)
    if rec.currency != currency:
        cell += f" ({_amount(mid, rec.kind, rec.currency)} {rec.currency})"
    return shown, cell


def _age(rec: PriceRecord, today: date) -> str:
    days = (today - rec.quoted).days
    return f"{days} d" + ("!" if days > STALE_DAYS else "")


def kind_table(rows: list[PriceRecord], kind: str, *, currency: str, book: PriceBook,
               today: date, sources: Sources) -> str:
    """One kind of price as a table, cheapest first."""
    priced = sorted(((*_cell(r, currency, book), r) for r in rows), key=lambda t: t[0])
    head = [_("card"), currency + ("/h" if kind == "rent_card_hour" else ""), _("age"), _("src")]
    body = [[display(r.item), cell, _age(r, today), sources.cite(r)] for _v, cell, r in priced]
    title = f"*{_(KIND_TITLES[kind])}*"
    return "\n".join([title, "```", *columns([head, *body], right=(1, 2)), "```"])


def price_tables(records: list[PriceRecord], today: date, *, currency: str, book: PriceBook,
                 cards: Iterable[str] | None = None) -> list[str]:
    """`/gpusize price`: per kind, the newest price of each card (of `cards`, or every card)."""
    wanted = set(cards) if cards is not None else None
    best = [r for r in newest(records).values()
            if wanted is None or card_of(r.item) in wanted]
    sources = Sources()
    parts = [kind_table([r for r in best if r.kind == kind], kind, currency=currency, book=book,
                        today=today, sources=sources)
             for kind in KIND_TITLES if any(r.kind == kind for r in best)]
    if not parts:
        return [_("No prices recorded yet.")]
    notes = sources.lines()
    if any((today - r.quoted).days > STALE_DAYS for r in best):
        notes.append(_("! older than {days} days: ask vendors for fresh quotes.").format(
            days=STALE_DAYS))
    return ["\n\n".join(parts) + "\n" + "\n".join(notes)]


def movers_table(moves: list[tuple[float, float, PriceRecord, float]], *, currency: str,
                 book: PriceBook) -> list[str]:
    """The digest's changes: (size, change, record, the amount before in its currency)."""
    rows = [[_("card"), _("price"), _("before"), _("now"), "%"]]
    for _size, pct, rec, old in moves:
        before = _cell(rec.model_copy(update={"low": old, "high": old}), currency, book)[1]
        now = _cell(rec, currency, book)[1]
        rows.append([display(rec.item), _(KIND_SHORT[rec.kind]), before.split(" (")[0],
                     now.split(" (")[0], f"{pct:+.1%}"])
    return ["```", *columns(rows, right=(2, 3, 4)), "```"]


KIND_SHORT = {"rent_card_hour": N_("rent/h"), "rent_server_month": N_("rent/mo"),
              "rent_cluster_hour": N_("cluster/h"),
              "buy_card": N_("buy"), "buy_server": N_("server")}


def history_tables(records: list[PriceRecord], card: str, today: date, *, currency: str,
                   book: PriceBook, limit: int = 30) -> list[str]:
    """`/gpusize price CARD`: the card's prices, one table per kind (newest first): the date,
    the price in the workspace's currency with the quote as given when it was another, where it
    comes from (a link that works, or the vendor), and its age."""
    rows = [r for r in records if card_of(r.item) == card]
    if not rows:
        return [_("No prices recorded for {card}.").format(card=display(card, 40))]
    parts = [_("*Price history of {card}* (newest first, in {currency})").format(
        card=display(card, 40), currency=currency)]
    for kind in KIND_TITLES:
        mine = sorted((r for r in rows if r.kind == kind),
                      key=lambda r: (r.quoted, r.recorded_at), reverse=True)
        if not mine:
            continue
        lines = [f"*{_(KIND_TITLES[kind])}*"]
        for rec in mine[:limit]:
            _shown, cell = _cell(rec, currency, book)
            what = display(rec.item, 40) + " · " if rec.item.startswith("server:") else ""
            lines.append(f"• {rec.quoted} · {what}{cell} · {_source_note(rec)} · "
                         f"{_age(rec, today)}")
        if len(mine) > limit:
            lines.append(_("… and {count} older").format(count=len(mine) - limit))
        parts.append("\n".join(lines))
    if any((today - r.quoted).days > STALE_DAYS for r in rows):
        parts.append(_("! older than {days} days: ask vendors for fresh quotes.").format(
            days=STALE_DAYS))
    return ["\n\n".join(parts)]
