"""The answer workers' turn order (bot.workers.FairGate): a member with many answers ready never
queues ahead of another member inside the pool."""

from __future__ import annotations

import asyncio

from bot.workers import FairGate


def test_a_newcomer_gets_the_next_worker_before_a_members_backlog() -> None:
    async def run() -> list[str]:
        gate, order = FairGate(), []

        async def answer(owner: str, name: str) -> None:
            await gate.enter(owner, slots=1)
            order.append(name)
            await asyncio.sleep(0.01)
            gate.leave(slots=1)

        flood = [asyncio.create_task(answer("A", f"a{n}")) for n in range(5)]
        await asyncio.sleep(0.005)  # a0 runs, a1..a4 wait
        other = asyncio.create_task(answer("B", "b"))
        await asyncio.gather(*flood, other)
        return order

    order = asyncio.run(run())
    assert order[:2] == ["a0", "b"]  # b waited for the running answer only
    assert sorted(order) == ["a0", "a1", "a2", "a3", "a4", "b"]


def test_a_cancelled_waiter_passes_its_turn_on() -> None:
    async def run() -> tuple[list[str], int]:
        gate, order = FairGate(), []

        async def answer(owner: str) -> None:
            await gate.enter(owner, slots=1)
            order.append(owner)
            await asyncio.sleep(0.01)
            gate.leave(slots=1)

        first = asyncio.create_task(answer("A"))
        await asyncio.sleep(0.001)
        cancelled = asyncio.create_task(answer("B"))
        last = asyncio.create_task(answer("C"))
        await asyncio.sleep(0.001)
        cancelled.cancel()
        await asyncio.gather(first, last, return_exceptions=True)
        return order, gate.busy

    order, busy = asyncio.run(run())
    assert order == ["A", "C"] and busy == 0
