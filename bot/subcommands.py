"""The `/gpusize` sub-commands: one table that the listener, the help and the metrics read.

A row says the words that call it (English and Chinese), its help line, who may run it and its
handler. The listener (bot/listeners/commands/gpusize.py) finds the row by the command's first
word, records it as a job before the ack and runs `row.run` after it; `help_message` lists every
row's usage; `gpusize_commands_total` counts it under `row.name`. Anything that is not a row is a
sizing question in the grammar the CLI uses.

Adding a sub-command: a row here, a handler (`async (Call) -> list[str]`, the sections of the
private reply; refuse with any UserError (engine/errors.py: ParseError, permissions.Refused...),
which the asker reads as is) and a test.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple

from bot import pricecommands, pricetables
from bot.digest import Digests
from bot.digestcommands import digest_command
from bot.language import Languages
from bot.once import once
from bot.permissions import AdminUnknown, Permissions
from bot.pricestore import PriceRecord, PriceStore
from bot.replies import Notice
from engine.i18n import _
from engine.prices import KIND_TEXT
from present import blockkit, slack, views
from present.actions import View
from present.blockkit import user_ref


class Who(StrEnum):
    """Who may run a sub-command (the handler checks it: bot/permissions.py)."""

    ANYONE = "anyone"
    # anyone for their own; someone else's (a quote, a subscription) for a workspace admin
    OWNER_OR_ADMIN = "owner-or-admin"
    # anyone for themselves; the workspace-wide form (`... workspace`) for admins and owners
    ADMIN_FOR_WORKSPACE = "admin-for-workspace"


@dataclass(frozen=True)
class Call:
    """What a sub-command's handler gets: the command as Slack sent it and the bot's parts."""

    command: dict[str, Any]  # team_id, channel_id, user_id, response_url
    text: str  # the whole command text, its first word included
    prices: PriceStore
    digests: Digests
    languages: Languages
    permissions: Permissions
    quote_id: str | None = None  # fixed at the ack: a re-run of the job stores the quote once

    @property
    def team(self) -> str:
        return str(self.command["team_id"])

    @property
    def user(self) -> str:
        return str(self.command["user_id"])


Handler = Callable[[Call], Awaitable[list[str]]]


class Subcommand(NamedTuple):
    name: str  # the canonical word, and the metric's label
    words: tuple[str, ...]  # English spellings of the first word (lower case)
    zh_words: tuple[str, ...]  # Chinese spellings
    usage: str  # its line in /gpusize help (code, the same in every language)
    who: Who
    run: Handler


async def _lang(call: Call) -> list[str]:
    return [await call.languages.choose(call.team, call.user, call.text.split()[1:],
                                        permissions=call.permissions)]


async def _prices(call: Call) -> list[str]:
    """`price` and `quote`: prices as the workspace sees them, and its vendor quotes. A quote
    just recorded is announced in the channel it was typed in: the team sees the price its
    answers now use, not only the person who typed it."""
    known = {r.id for r in await call.prices.records(call.team)} if call.quote_id else set()
    sections = await pricecommands.handle(
        call.prices, team=call.team, user=call.user, text=call.text,
        today=datetime.now(UTC).date(), is_admin=await _quote_admin(call),
        quote_id=call.quote_id)
    if call.quote_id and call.quote_id not in known:
        added = next((r for r in await call.prices.records(call.team) if r.id == call.quote_id),
                     None)
        if added is not None:
            await _announce(call, added)
    return sections


async def _announce(call: Call, record: PriceRecord) -> None:
    """Best effort: a channel the bot cannot post in still has the private confirmation."""
    channel = str(call.command.get("channel_id") or "")
    if not channel:
        return
    note = Notice(_("{user} recorded a quote: {item} {kind} {amount} from {vendor}, dated "
                    "{date}. This workspace's answers use it from now on; `/gpusize price "
                    "{card}` shows the card's prices.").format(
        user=user_ref(record.entered_by), item=pricetables.display(record.item, 40),
        kind=_(KIND_TEXT[record.kind]), amount=pricecommands.amount_text(record),
        vendor=record.vendor or _("an unnamed vendor"), date=record.quoted,
        card=pricetables.card_of(record.item)))
    async def post() -> None:
        await call.digests.client.chat_postMessage(channel=channel, text=note.text,
                                                   blocks=note.blocks)

    with contextlib.suppress(Exception):
        await once("announce", post)


async def _quote_admin(call: Call) -> bool | None:
    """Only asked when removing a quote (admins may remove anyone's); None: Slack cannot say."""
    if not any(w in call.text.lower().split() for w in ("remove", "delete", "rm")):
        return False
    try:
        return await call.permissions.is_admin(team=call.team, user=call.user)
    except AdminUnknown:
        return None


async def _digest(call: Call) -> list[str]:
    return await digest_command(call.digests, call.permissions, call.command, call.text)


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand(name="price", words=("price", "prices"), zh_words=(),
               usage="`/gpusize price [CARD]`", who=Who.ANYONE, run=_prices),
    Subcommand(name="quote", words=("quote", "quotes"), zh_words=(),
               usage="`/gpusize quote ...`", who=Who.OWNER_OR_ADMIN, run=_prices),
    Subcommand(name="digest", words=("digest",), zh_words=(),
               usage="`/gpusize digest ...`", who=Who.OWNER_OR_ADMIN, run=_digest),
    Subcommand(name="lang", words=("lang", "language"), zh_words=("语言",),
               usage="`/gpusize lang zh|en|auto [workspace]`", who=Who.ADMIN_FOR_WORKSPACE,
               run=_lang),
)
# `/gpusize help` (and a bare `/gpusize`): the whole text, answered in the ack itself
HELP_WORDS = ("", "help", "-h", "--help", "?", "帮助")


def find(text: str) -> Subcommand | None:
    """The sub-command a command's text calls, by its first word; None: a sizing question."""
    first = text.split(maxsplit=1)[0].lower() if text.strip() else ""
    return next((row for row in SUBCOMMANDS if first in row.words or first in row.zh_words),
                None)


def _usages() -> str:
    return _(", ").join(row.usage for row in SUBCOMMANDS)


def help_message() -> Notice:
    """/gpusize help: four lines and three buttons (the form, every option, the prices)."""
    return Notice(slack.short_help(also=_usages()), buttons=slack.help_buttons())


def all_options_view() -> dict[str, Any]:
    """Help's "All options": every method and key the grammar reads, in a modal."""
    return views.modal(_("All options"), [views.section(part) for part in blockkit.sections(
        slack.help_text(also=_usages()))], callback_id=View.KEYS)
