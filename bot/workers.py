"""Answers are computed in worker processes, so the event loop that acknowledges Slack within
3 s never waits behind engine work (Python threads would share one interpreter lock).

Each job takes the thread's Draft (picklable) and returns what the dialog posts.

A worker killed from outside (the OOM killer, a crash in matplotlib) breaks a process pool for
good: `run` builds a new pool and retries the job once, `ready` tells /readyz whether a working
pool can be had, and a metric counts the rebuilds. Workers never outlive the bot: each asks the
kernel for SIGKILL when its parent dies (PR_SET_PDEATHSIG) and also watches its parent's pid.

GPUSIZE_TEST_ANSWER_DELAY_S (tests and benches only, never set in production): each answer waits
this long in its worker, so tests can hold answers in flight while they stop or kill the bot."""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from prometheus_client import Counter, Gauge

from bot.once import current_owner
from bot.settings import WorkerSettings
from engine import hub, size
from engine.i18n import language
from engine.parse import build_request
from engine.prices import PriceBook
from engine.request import Draft
from engine.schema import Answer
from present import blockkit, slack

log = logging.getLogger(__name__)
SHUTDOWN_WAIT_S = 3  # workers finish their current answer or are killed
POOL_REBUILDS = Counter("gpusize_worker_pool_rebuilds_total",
                        "answer-worker pools rebuilt after a worker died")
POOL_UP = Gauge("gpusize_worker_pool_up", "1 while the answer workers answer")
PR_SET_PDEATHSIG = 1  # linux/prctl.h
GATE_OWNERS_KEPT = 10_000  # members remembered for the pool's turn order
_executor: Executor | None = None
_healthy = True  # the last job ran, or no job has failed for want of a pool


def _answer(draft: Draft, book: PriceBook | None) -> Answer:
    return size(build_request(draft), hub=hub.lookup, book=book)


def _test_delay() -> None:
    """Test-only: hold the answer in flight (GPUSIZE_TEST_ANSWER_DELAY_S, unset in production)."""
    delay = WorkerSettings().gpusize_test_answer_delay_s
    if delay > 0:
        time.sleep(delay)


def answer_message(draft: Draft, card: slack.CardInput, book: PriceBook | None = None,
                   lang: str = "en") -> dict[str, Any]:
    """An answer card: its blocks and one-line fallback, the recommendation in numbers (to
    compare the next answer with), whether it is the same as the card it follows (and the line
    that says so), the thread root's verdict line, and the card it recommends (the digest
    follows the cards a workspace asks about)."""
    _test_delay()
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


def detail_sections(draft: Draft, kind: str, book: PriceBook | None = None,
                    lang: str = "en") -> list[str]:
    """A detail opened from the card (present.actions.MODAL_DETAILS), as sections."""
    _test_delay()
    with language(lang):
        return slack.detail_sections(_answer(draft, book), kind)


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


def price_chart_no_alt(records: list[Any], card: str, lang: str = "en") -> tuple[bytes, str]:
    """The price chart shaped as the memory chart's (PNG, alt text); the caller writes the alt."""
    return price_chart_png(records, card, lang), ""


def _warm() -> None:
    _answer(Draft({"model": "7B", "method": "lora"}), None)  # imports and catalogs loaded now


def _ping() -> int:
    return os.getpid()


def _die_with_parent(parent: int) -> None:
    """In a worker: exit when the bot does, even when it is SIGKILLed (no cleanup runs then)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(0)

    def watch() -> None:  # the fallback where prctl is missing (macOS) or was reset
        while True:
            time.sleep(1)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _init_worker(parent: int) -> None:
    _die_with_parent(parent)
    _warm()


def _broken(executor: Executor | None) -> bool:
    return isinstance(executor, ProcessPoolExecutor) and bool(getattr(executor, "_broken", False))


def start(workers: int | None = None) -> Executor:
    """Start the pool (`workers` processes, the GPUSIZE_WORKERS setting; None: CPUs - 1; 0 runs
    answers in threads instead)."""
    global _executor
    if _executor is None:
        count = workers if workers is not None else WorkerSettings().gpusize_workers
        if count is None:
            count = max(1, (os.cpu_count() or 2) - 1)
        if count <= 0:
            _executor = ThreadPoolExecutor(max_workers=4)
        else:
            _executor = ProcessPoolExecutor(max_workers=count,
                                            mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_init_worker,
                                            initargs=(os.getpid(),))
    return _executor


def _rebuild(broken: Executor) -> None:
    """Replace a broken pool (once, however many jobs saw it break)."""
    global _executor
    if _executor is not broken:
        return
    _executor = None
    with contextlib.suppress(Exception):
        broken.shutdown(wait=False, cancel_futures=True)
    POOL_REBUILDS.inc()
    log.warning("an answer worker died; the worker pool was rebuilt")


class FairGate:
    """At most as many answers handed to the pool as it has workers; a free worker goes to the
    waiting member served longest ago (the running job's owner), so one member's answers never
    queue ahead of another's inside the pool: another member waits for the answer now running,
    never for the first member's backlog."""

    def __init__(self) -> None:
        self.busy = 0
        self.lanes: dict[str, collections.deque[asyncio.Future[None]]] = {}
        self.served: dict[str, float] = {}  # owner -> when they last got a worker

    def _grant(self, owner: str) -> None:
        self.busy += 1
        if len(self.served) > GATE_OWNERS_KEPT:
            self.served.clear()  # bounded memory; order restarts fair
        self.served[owner] = time.monotonic()

    async def enter(self, owner: str, slots: int) -> None:
        if self.busy < slots and not self.lanes:
            self._grant(owner)
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.lanes.setdefault(owner, collections.deque()).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.leave(slots)  # the turn came with the cancellation: pass it on
            raise

    def leave(self, slots: int) -> None:
        self.busy -= 1
        while self.busy < slots and self.lanes:
            owner = min(self.lanes, key=lambda o: self.served.get(o, -1.0))
            lane = self.lanes[owner]
            turn = lane.popleft()
            if not lane:
                del self.lanes[owner]
            if not turn.done():  # a cancelled waiter's turn goes to the next
                self._grant(owner)
                turn.set_result(None)


_gate = FairGate()


def _slots(executor: Executor) -> int:
    return max(1, int(getattr(executor, "_max_workers", 1) or 1))


async def run(fn: Any, *args: Any) -> Any:
    """Run `fn` in a worker, in its turn (FairGate). If the pool is broken (a worker was
    killed), build a new one and retry once; a second failure is raised (the job apologises)."""
    global _healthy
    loop = asyncio.get_running_loop()
    owner = current_owner()
    for attempt in (1, 2):
        executor = start()
        slots = _slots(executor)
        await _gate.enter(owner, slots)
        try:
            result = await loop.run_in_executor(executor, fn, *args)
        except BrokenProcessPool:
            _rebuild(executor)
            if attempt == 2:
                _healthy = False
                POOL_UP.set(0)
                raise
            continue
        finally:
            _gate.leave(slots)
        _healthy = True
        POOL_UP.set(1)
        return result
    raise AssertionError("unreachable")


async def ready(*, timeout_s: float = 10) -> bool:
    """Whether answers can be computed: trusted while jobs succeed; after a failure, or with the
    pool broken, a no-op job must get through a (rebuilt) pool."""
    if _healthy and not _broken(_executor):
        return True
    try:
        await asyncio.wait_for(run(_ping), timeout_s)
    except Exception:
        return False
    return True


def shutdown() -> None:
    """Stop the workers (the bot is exiting); queued answers are dropped, running ones end."""
    global _executor
    executor, _executor = _executor, None
    if executor is None:
        return
    with contextlib.suppress(Exception):
        executor.shutdown(wait=False, cancel_futures=True)
    # wait briefly for the workers to take their stop signal, kill any that do not, then let the
    # pool's manager thread close its queues: exiting without that leaks the queues' semaphores
    # (the resource tracker's warning on every stop)
    processes = list((getattr(executor, "_processes", None) or {}).values())
    deadline = time.monotonic() + SHUTDOWN_WAIT_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(1)
    manager = getattr(executor, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(SHUTDOWN_WAIT_S)


atexit.register(shutdown)


def warm_up() -> None:
    """Start every worker now rather than on the first question."""
    executor = start()
    if isinstance(executor, ProcessPoolExecutor):
        futures = [executor.submit(_warm) for _n in range(executor._max_workers)]
        try:
            for future in futures:
                future.result(timeout=120)
            POOL_UP.set(1)
        except BrokenProcessPool:  # the bot starts anyway; /readyz says whether it can answer
            log.error("answer workers failed to start")
            _rebuild(executor)
