"""Answers are computed in worker processes, so the event loop that acknowledges Slack within
3 s never waits behind engine work (Python threads would share one interpreter lock).

Each job takes the thread's Draft (picklable) and returns what the dialog posts."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from engine import hub, size
from engine.i18n import language
from engine.parse import build_request
from engine.prices import PriceBook
from engine.request import Draft
from engine.schema import Answer
from present import blockkit, slack

_executor: Executor | None = None


def _answer(draft: Draft, book: PriceBook | None) -> Answer:
    return size(build_request(draft), hub=hub.lookup, book=book)


def answer_message(draft: Draft, card: slack.CardInput, book: PriceBook | None = None,
                   lang: str = "en") -> dict[str, Any]:
    """An answer card: its blocks and one-line fallback, the recommendation in numbers (to
    compare the next answer with), whether it is the same as the card it follows (and the line
    that says so), the thread root's verdict line, and the card it recommends (the digest
    follows the cards a workspace asks about)."""
    with language(lang):
        req = build_request(draft)
        ans = size(req, hub=hub.lookup, book=book)
        view = slack.answer_view(ans, card, req=req, given=draft.values)
        result = slack.result_of(ans)
        same = card.previous is not None and slack.same_result(card.previous, result)
        return {"blocks": blockkit.blocks("answer.json.j2", v=view),
                "text": blockkit.fallback(slack.answer_fallback(ans, card, req=req)),
                "result": result, "same": same,
                "same_line": slack.same_line(card.changes, result, card.previous or {},
                                             req.answer_currency) if same else "",
                "verdict": slack.verdict_line(ans),
                "top_gpu": ans.plans[0].gpu if ans.plans else None}


def breakdown_sections(draft: Draft, book: PriceBook | None = None,
                       lang: str = "en") -> list[str]:
    with language(lang):
        return slack.breakdown_sections(_answer(draft, book))


def rent_vs_buy_sections(draft: Draft, book: PriceBook | None = None,
                         lang: str = "en") -> list[str]:
    with language(lang):
        return slack.rent_vs_buy_sections(_answer(draft, book))


def notes_sections(draft: Draft, kind: str, book: PriceBook | None = None,
                   lang: str = "en") -> list[str]:
    """The assumptions, or the guides' advice (with the trial run and the warnings)."""
    with language(lang):
        ans = _answer(draft, book)
        return slack.assumptions_sections(ans) if kind == "assumptions" \
            else slack.advice_sections(ans)


def memory_chart_png(draft: Draft, book: PriceBook | None = None, lang: str = "en") -> bytes:
    from present.charts import memory_chart  # matplotlib: only when a chart is asked for

    with language(lang):
        return memory_chart(_answer(draft, book), lang=lang)


def memory_chart_with_alt(draft: Draft, book: PriceBook | None = None,
                          lang: str = "en") -> tuple[bytes, str]:
    """The memory chart and what it shows in words (its alt text)."""
    from present.charts import memory_chart

    with language(lang):
        ans = _answer(draft, book)
        return memory_chart(ans, lang=lang), slack.memory_chart_alt(ans)


def price_chart_png(records: list[Any], card: str, lang: str = "en") -> bytes:
    from present.charts import price_history_chart

    with language(lang):
        return price_history_chart(records, card=card, lang=lang)


def _warm() -> None:
    _answer(Draft({"model": "7B", "method": "lora"}), None)  # imports and catalogs loaded now


def start(workers: int | None = None) -> Executor:
    """Start the pool (GPUSIZE_WORKERS processes; 0 runs answers in a thread instead)."""
    global _executor
    if _executor is None:
        count = int(os.environ.get("GPUSIZE_WORKERS", workers if workers is not None
                                   else max(1, (os.cpu_count() or 2) - 1)))
        if count <= 0:
            _executor = ThreadPoolExecutor(max_workers=4)
        else:
            _executor = ProcessPoolExecutor(max_workers=count,
                                            mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_warm)
    return _executor


async def run(fn: Any, *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(start(), fn, *args)


def warm_up() -> None:
    """Start every worker now rather than on the first question."""
    executor = start()
    if isinstance(executor, ProcessPoolExecutor):
        futures = [executor.submit(_warm) for _n in range(executor._max_workers)]
        for future in futures:
            future.result(timeout=120)
