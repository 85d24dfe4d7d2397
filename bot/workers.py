"""Answers are computed in worker processes, so the event loop that acknowledges Slack within
3 s never waits behind engine work (Python threads would share one interpreter lock)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from bot import render, views
from engine import hub
from engine.answer import Answer
from engine.i18n import language
from engine.parse import Fields, build_request
from engine.plan import estimate
from engine.prices import PriceBook
from engine.resolve import resolve_model

_executor: Executor | None = None


def answer(fields: Fields, book: PriceBook | None = None) -> Answer:
    req = build_request(fields)
    spec, notes = resolve_model(req.model, hub=hub.lookup)
    return estimate(spec, req, model_notes=notes, book=book)


def compose(fields: Fields, version: int, changes: list[str] | None, user: str | None,
            book: PriceBook | None = None, lang: str = "en") -> dict[str, Any]:
    """An answer message: engine answer, Block Kit blocks, the plain-text fallback, and the
    card it recommends (the digest follows the cards a workspace asks about)."""
    with language(lang):
        ans = answer(fields, book)
        view = views.answer_view(ans, version=version, changes=changes, user=user,
                                 goal=str(fields.options.get("goal", "cost")))
        return {"blocks": render.blocks("answer.json.j2", v=view),
                "text": render.fallback(views.answer_fallback(ans)),
                "top_gpu": ans.plans[0].gpu if ans.plans else None}


def breakdown(fields: Fields, book: PriceBook | None = None, lang: str = "en") -> list[str]:
    with language(lang):
        return views.breakdown_sections(answer(fields, book))


def rent_vs_buy(fields: Fields, book: PriceBook | None = None, lang: str = "en") -> list[str]:
    with language(lang):
        return views.rent_vs_buy_sections(answer(fields, book))


def memory_chart(fields: Fields, book: PriceBook | None = None, lang: str = "en") -> bytes:
    from gpusize.charts import memory_chart as draw

    with language(lang):
        return draw(answer(fields, book), lang=lang)


def price_chart(records: list[Any], card: str, lang: str = "en") -> bytes:
    from gpusize.charts import price_history_chart

    with language(lang):
        return price_history_chart(records, card=card, lang=lang)


def _warm() -> None:
    answer(Fields(model="7B", method="lora"))  # imports and catalogs loaded before the first ask


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
