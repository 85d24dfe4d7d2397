"""Answer cards: a Draft answered in a worker process with the workspace's prices.

The thread flow (bot/dialog.py) asks for a card and posts it; the details (bot/details.py) use
the same price book. A model the Hub has not been asked about yet is looked up first
(bot/intake.py), and a model it does not know is told to the asker, not raised.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError

from bot import workers
from bot.intake import Intake
from bot.observability import ENGINE_SECONDS, REDIS_ERRORS
from bot.pricestore import PriceStore
from engine import UserError
from engine.i18n import current
from engine.prices import PriceBook
from engine.request import Draft
from present import blockkit, slack


class Cards:
    def __init__(self, prices: PriceStore, intake: Intake) -> None:
        self.prices = prices
        self.intake = intake

    async def book(self, team: str) -> PriceBook | None:
        """This workspace's prices (catalog, feeds, its quotes); the bundled catalog if Redis
        cannot be read."""
        try:
            return await self.prices.book_for(team)
        except RedisError:
            REDIS_ERRORS.labels("prices").inc()
            return None

    async def compute(self, team: str, draft: Draft, card: slack.CardInput) -> dict[str, Any]:
        """An answer card for `draft`, computed in a worker with this workspace's prices."""
        book = await self.book(team)
        priced = frozenset(p.item for p in book.prices) if book is not None else frozenset()
        start = time.perf_counter()
        message = await workers.run(workers.answer_message, draft,
                                    card._replace(priced=priced), book, current())
        ENGINE_SECONDS.observe(time.perf_counter() - start)
        top = message.pop("top_gpu")
        if top:
            with contextlib.suppress(RedisError):
                await self.prices.note_asked(team, top)
        return message

    async def answer(self, team: str, draft: Draft, card: slack.CardInput, *,
                     tell: Callable[[str], Awaitable[Any]]) -> dict[str, Any] | None:
        """`compute`, after the Hub look-up; a model the Hub does not know (or the limit on new
        ones) is told to the asker privately: then None."""
        try:
            await self.intake.look_up(team, card.user, draft)
            return await self.compute(team, draft, card)
        except UserError as err:
            await tell(str(err))
            return None


def live_card(ts: str, version: int, message: dict[str, Any]) -> dict[str, Any]:
    """The thread record's fields for its live answer: where it is, the version its buttons
    carry, its blocks without buttons (to retire it when a newer one lands), its result."""
    return {"answer_ts": ts, "card_version": version,
            "card": {"blocks": blockkit.without_actions(message["blocks"]),
                     "text": message["text"]},
            "result": message["result"]}

