"""The answer workers' turn order (bot.workers.FairGate): a member with many answers ready never
queues ahead of another member inside the pool."""

from __future__ import annotations

import asyncio

from bot.workers import FairGate


async def _settle() -> None:
    """Let every task that can run reach its next wait (no wall-clock sleeps: a loaded CI
    machine stretches those past the answers they were meant to overlap)."""
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_newcomer_gets_the_next_worker_before_a_members_backlog() -> None:
    async def run() -> list[str]:
        gate, order = FairGate(), []
        running = asyncio.Event()  # a0 holds the only worker until this is set

        async def answer(owner: str, name: str) -> None:
            await gate.enter(owner, slots=1)
            order.append(name)
            if name == "a0":
                await running.wait()
            await asyncio.sleep(0)
            gate.leave(slots=1)

        flood = [asyncio.create_task(answer("A", f"a{n}")) for n in range(5)]
        await _settle()  # a0 runs, a1..a4 wait
        other = asyncio.create_task(answer("B", "b"))
        await _settle()
        running.set()
        await asyncio.gather(*flood, other)
        return order

    order = asyncio.run(run())
    assert order[:2] == ["a0", "b"]  # b waited for the running answer only
    assert sorted(order) == ["a0", "a1", "a2", "a3", "a4", "b"]


def test_a_cancelled_waiter_passes_its_turn_on() -> None:
    async def run() -> tuple[list[str], int]:
        gate, order = FairGate(), []
        running = asyncio.Event()

        async def answer(owner: str) -> None:
            await gate.enter(owner, slots=1)
            order.append(owner)
            if owner == "A":
                await running.wait()
            gate.leave(slots=1)

        first = asyncio.create_task(answer("A"))
        await _settle()
        cancelled = asyncio.create_task(answer("B"))
        last = asyncio.create_task(answer("C"))
        await _settle()
        cancelled.cancel()
        await _settle()
        running.set()
        await asyncio.gather(first, last, return_exceptions=True)
        return order, gate.busy

    order, busy = asyncio.run(run())
    assert order == ["A", "C"] and busy == 0
