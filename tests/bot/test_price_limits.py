"""Issue 26 item 7, prices: `prices import --team` stays under the workspace's quote cap, the
global history has a retention, and an import is read in bounded memory."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bot import pricestore
from bot.pricestore import GLOBAL, MAX_QUOTES, PriceRecord, PriceStore, QuotaFull, newest
from tests.bot.test_prices import CMD

TEAM = "T0LIMITS"
HEADER = "item,kind,amount,currency,quoted,region\n"


def record(n: int, *, quoted: date, source: str = "feed-a", item: str = "h100-sxm") -> PriceRecord:
    return PriceRecord(id=f"r{n}-{source}", item=item, kind="rent_card_hour", low=2 + n / 1000,
                       high=2 + n / 1000, currency="USD", source=f"feed {source}",
                       origin="feed", entered_by=source, quoted=quoted,
                       recorded_at=datetime.now(UTC))


def csv_rows(count: int, *, start: date = date(2026, 1, 1)) -> str:
    return HEADER + "".join(
        f"h100-sxm,rent_card_hour,{2 + n / 100000:.5f},USD,"
        f"{start + timedelta(days=n % 300)},region-{n}\n" for n in range(count))


def cli(*args: str, redis_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SLACK_BOT_TOKEN": "xoxb-t",
                               "SLACK_SIGNING_SECRET": "s", "REDIS_URL": redis_url})


def test_a_workspace_import_is_held_to_the_quote_cap(redis_url: str) -> None:
    async def go() -> tuple[int, int]:
        store = PriceStore(Redis.from_url(redis_url, decode_responses=True))
        await store.add(TEAM, [record(n, quoted=date(2026, 11, 1)) for n in range(MAX_QUOTES - 10)])
        with pytest.raises(QuotaFull):  # 20 more would pass the cap: none stored
            await store.add(TEAM, [record(n, quoted=date(2026, 11, 2), source="b")
                                   for n in range(20)])
        before = await store.count(TEAM)
        # records already there are replaced, not counted again
        await store.add(TEAM, [record(n, quoted=date(2026, 11, 1)) for n in range(MAX_QUOTES - 10)])
        return before, await store.count(TEAM)

    assert asyncio.run(go()) == (MAX_QUOTES - 10, MAX_QUOTES - 10)


@pytest.mark.slow  # `gpusize prices import --team` as a command
def test_prices_import_team_refuses_past_the_cap(redis_url: str, tmp_path: Path) -> None:
    big = tmp_path / "team.csv"
    big.write_text(csv_rows(MAX_QUOTES + 1))
    out = cli("prices", "import", str(big), f"--team={TEAM}", redis_url=redis_url)
    assert out.returncode == 2 and f"at most {MAX_QUOTES}" in out.stderr, out.stderr
    small = tmp_path / "small.csv"
    small.write_text(csv_rows(40))
    assert cli("prices", "import", str(small), f"--team={TEAM}", redis_url=redis_url).returncode == 0
    from redis import Redis as SyncRedis
    assert SyncRedis.from_url(redis_url).hlen(f"gpusize:v1:prices:{TEAM}") == 40


def test_the_global_history_keeps_a_bounded_newest_set(redis_url: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pricestore, "HISTORY_MAX", 60)

    async def go() -> tuple[list[PriceRecord], list[PriceRecord]]:
        store = PriceStore(Redis.from_url(redis_url, decode_responses=True))
        await store.seed_catalog()
        catalog = await store.count(GLOBAL)
        day = date(2026, 1, 1)
        # one feed's series, 30 months deep; then 80 other feeds, 1 record each
        await store.add(GLOBAL, [record(n, quoted=day + timedelta(days=10 * n)) for n in range(30)])
        await store.add(GLOBAL, [record(n, quoted=day + timedelta(days=n), source=f"f{n}",
                                        item="a100-80g") for n in range(80)])
        everything = await store.records(GLOBAL)
        assert len([r for r in everything if r.origin == "catalog"]) == catalog  # never pruned
        return everything, [r for r in everything if r.origin != "catalog"]

    _everything, history = asyncio.run(go())
    assert len(history) == 60
    series_a = sorted((r for r in history if r.entered_by == "feed-a"), key=lambda r: r.quoted)
    assert len(series_a) <= pricestore.HISTORY_PER_SERIES
    assert series_a[-1].quoted == date(2026, 1, 1) + timedelta(days=290)  # the newest is kept
    # the newest fed price of each item's kind is still there (answers take the newest of all)
    kept = newest(history)
    assert kept[("h100-sxm", "rent_card_hour")].quoted == series_a[-1].quoted
    assert kept[("a100-80g", "rent_card_hour")].quoted == date(2026, 1, 1) + timedelta(days=79)


PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.stderr[-300:])
"""


def peak_kib(*args: str, redis_url: str) -> tuple[int, int, str]:
    """Exit status and peak resident memory (KiB) of `gpusize ARGS`, measured by a parent of
    its own (this test process has had larger children)."""
    out = subprocess.run([sys.executable, "-c", PEAK, *CMD, *args], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "SLACK_BOT_TOKEN": "xoxb-t",
                                           "SLACK_SIGNING_SECRET": "s", "REDIS_URL": redis_url})
    status, peak, tail = out.stdout.split(" ", 2)
    return int(status), int(peak), tail


@pytest.mark.slow  # a 40,000-row import, then one past the row cap
def test_a_large_import_is_streamed_in_bounded_memory(redis_url: str, tmp_path: Path) -> None:
    small = tmp_path / "small.csv"
    small.write_text(csv_rows(10))
    base_status, base, _ = peak_kib("prices", "import", str(small), redis_url=redis_url)
    large = tmp_path / "large.csv"
    large.write_text(csv_rows(40_000))
    status, peak, tail = peak_kib("prices", "import", str(large), redis_url=redis_url)
    assert base_status == 0 and status == 0, tail
    # reading it whole held every record at once (a 100 MB file: 2,030 MiB)
    assert peak - base < 48 * 1024, f"peak {peak} KiB against {base} KiB for 10 rows"
    from redis import Redis as SyncRedis
    stored = SyncRedis.from_url(redis_url).hlen("gpusize:v1:prices:global")
    assert stored <= pricestore.HISTORY_MAX + 1000  # the catalog, plus the retained history
    huge_json = tmp_path / "huge.json"
    huge_json.write_text('{"prices": [' + " " * (9 << 20) + "]}")
    status, _, tail = peak_kib("prices", "import", str(huge_json), redis_url=redis_url)
    assert status == 2 and "JSON Lines" in tail
