"""bot.outbox without Redis: the journal a stopping process leaves for the next one holds only
jobs whose people were not told they were given up on (issue 26: a journal kept on a volume
across restarts must not answer someone already told "not recorded")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.job import Job, Submitted
from bot.outbox import Dedupe, Outbox


def test_close_tells_and_forgets_what_redis_never_confirmed(tmp_path: Path) -> None:
    told: list[str] = []

    async def never_confirmed(_job: Job, _dedupe: Dedupe, _timeout: float) -> Submitted:
        return Submitted.HELD  # Redis stays asleep

    async def scenario() -> int:
        outbox = Outbox(never_confirmed, tmp_path)
        job = Job(kind="command", payload={}, owner="T0:U0")

        async def tell() -> None:
            told.append(job.id)

        assert await outbox.hold(job, [], tell)
        assert [p.stem for p in tmp_path.glob("*.json")] == [job.id]  # journaled while held
        return await outbox.close()

    assert asyncio.run(scenario()) == 1
    assert len(told) == 1
    assert not list(tmp_path.glob("*.json"))  # nothing left for a restart to resubmit
    assert Outbox(never_confirmed, tmp_path).restore() == 0


def test_a_journal_left_by_a_killed_process_is_restored(tmp_path: Path) -> None:
    async def never_confirmed(_job: Job, _dedupe: Dedupe, _timeout: float) -> Submitted:
        return Submitted.HELD

    async def killed() -> str:
        outbox = Outbox(never_confirmed, tmp_path)
        job = Job(kind="command", payload={"channel": "C0"}, owner="T0:U0")
        await outbox.hold(job, [("gpusize:v1:recorded:x", 60)], None)
        if outbox._task is not None:  # killed: no close(), the journal stays
            outbox._task.cancel()
        return job.id

    job_id = asyncio.run(killed())

    async def restarted() -> list[str]:
        outbox = Outbox(never_confirmed, tmp_path)
        restored = outbox.restore()
        held = list(outbox.held)
        if outbox._task is not None:
            outbox._task.cancel()
        assert restored == 1
        return held

    assert asyncio.run(restarted()) == [job_id]


def test_an_unreadable_journal_restores_nothing_and_the_bot_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache volume the pod cannot read (a claim its fsGroup never reached; podman's tmpfs on
    the image's 0700 folder) made the bot's start-up raise PermissionError: it failed to start."""
    async def never_confirmed(_job: Job, _dedupe: Dedupe, _timeout: float) -> Submitted:
        return Submitted.HELD

    def denied(self: Path) -> bool:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_dir", denied)
    assert Outbox(never_confirmed, tmp_path / "outbox").restore() == 0
