"""Details on demand: the memory breakdown, rent vs buy, the assumptions, the buying guides'
advice, the bill of materials and how to run it open in a modal for the presser (the thread
keeps the decision and its changes); charts are PNG uploads into the thread, with what they
show in words.

Each is computed in a worker from the thread's stored inputs; a chart is cached in Redis for
`chart_cache_s` keyed by its inputs, so repeated presses cost a Redis read, not a worker.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from typing import Any

from prometheus_client import Counter
from redis.exceptions import RedisError

from bot import keys, workers
from bot.cards import Cards
from bot.conversation import Conversation
from bot.pricecommands import KIND_TEXT
from bot.replies import Replies
from bot.store import ConversationStore
from engine.i18n import _, current
from present import slack, views
from present.actions import Detail

CHART_CACHE = Counter("gpusize_chart_cache_total", "chart PNGs reused or drawn", ["outcome"])


class Details:
    def __init__(self, replies: Replies, store: ConversationStore, cards: Cards, *,
                 chart_cache_s: int = 120) -> None:
        self.replies = replies
        self.store = store
        self.cards = cards
        self.chart_cache_s = chart_cache_s

    async def sections(self, team: str, conv: Conversation, kind: Detail) -> list[str]:
        """A detail of the thread's answer, worked out in a worker."""
        return await workers.run(workers.detail_sections, conv.inputs, str(kind),
                                 await self.cards.book(team), current())

    async def deliver(self, *, channel: str, thread_ts: str, user: str, kind: Detail,
                      sections: list[str], refusal: str = "", view_id: str = "") -> None:
        """A detail (or why there is none) for the presser alone: in the modal the press opened
        (`view_id`), or privately in the thread when no modal could be opened."""
        if view_id:
            await self.replies.update_view(view_id, views.notice_view("gpusize", refusal)
                                           if refusal else views.detail_view(kind, sections))
        else:
            await self.replies.private(channel, user, refusal or "\n".join(sections), thread_ts)

    async def tell(self, channel: str, user: str, thread_ts: str, view_id: str,
                   text: str) -> None:
        """Say something to the presser: in the modal their press opened, else privately."""
        if view_id:
            await self.replies.update_view(view_id, views.notice_view("gpusize", text))
        else:
            await self.replies.private(channel, user, text, thread_ts)

    async def chart(self, *, team: str, channel: str, thread_ts: str, kind: str,
                    card: str = "", user: str = "", quiet: bool = False) -> None:
        """Upload a PNG into the thread, with what it shows in words (alt text and a comment):
        the memory of the options ("memory"), or a card's price history ("prices"). `quiet`: no
        price history, no word about it."""
        conv = await self.store.get(team, channel, thread_ts)
        if conv is None or conv.inputs.method is None:
            return
        lang = current()
        if kind == "memory":
            png, alt = await self._cached_chart(
                ["memory", team, lang, json.dumps(conv.inputs.values, sort_keys=True)],
                workers.memory_chart_with_alt, conv.inputs, await self.cards.book(team), lang)
            name, title = "memory.png", _("Memory per GPU, per option")
        else:
            records = sorted((r for r in await self.cards.prices.visible(team) if r.item == card),
                             key=lambda r: (r.quoted, r.recorded_at))
            if not records:
                if user and not quiet:  # said to the presser only: nothing to show the channel
                    await self.replies.private(channel, user, _(
                        "No prices recorded for {card}.").format(card=card), thread_ts)
                return
            png, _alt = await self._cached_chart(
                ["prices", team, lang, card, repr(records)], workers.price_chart_no_alt,
                records, card, lang)
            name, title = f"prices-{card}.png", _("Price history of {card}").format(card=card)
            alt = slack.price_chart_alt(card, [(str(r.quoted), _(KIND_TEXT.get(r.kind, r.kind)),
                                                (r.low + r.high) / 2, r.currency)
                                               for r in records])
        await self.replies.upload(channel, thread_ts, content=png, filename=name, title=title,
                                  alt_text=alt, comment=f"{title}: {alt}")

    async def _cached_chart(self, inputs: list[str], job: Any, *args: Any) -> tuple[bytes, str]:
        """A chart and its alt text, reused for `chart_cache_s` for the same inputs: repeated
        clicks on one thread cost a Redis read, not a worker's time."""
        key = keys.chart_cache(hashlib.sha256("\x1f".join(inputs).encode()).hexdigest()[:32])
        redis = self.store.redis
        if self.chart_cache_s:
            with contextlib.suppress(RedisError, OSError, ValueError, KeyError, TypeError):
                hit = await redis.get(key)
                if hit:
                    cached = json.loads(hit)
                    CHART_CACHE.labels("hit").inc()
                    return base64.b64decode(cached["png"]), cached["alt"]
        png, alt = await workers.run(job, *args)
        CHART_CACHE.labels("miss").inc()
        if self.chart_cache_s:
            with contextlib.suppress(RedisError, OSError):
                await redis.set(key, json.dumps(
                    {"png": base64.b64encode(png).decode(), "alt": alt}), ex=self.chart_cache_s)
        return png, alt
