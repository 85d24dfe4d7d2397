"""Terminal commands for operators: `gpusize digest run` (for an external scheduler such as a
Kubernetes CronJob) and `gpusize prices import FILE` / `gpusize prices export`."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from bot import feeds
from bot.app import redis_client, web_client
from bot.digest import Digests
from bot.pricestore import GLOBAL, MAX_QUOTES, PriceRecord, PriceStore, QuotaFull
from bot.settings import load_settings

IMPORT_BATCH = 1000  # records per Redis write of an import


def digest_run(args: list[str]) -> int:
    """Post every due digest once and exit. `--now ISO-TIME` runs as if it were then."""
    now = datetime.now(UTC)
    for arg in args:
        if arg.startswith("--now="):
            now = datetime.fromisoformat(arg.split("=", 1)[1])
            if now.tzinfo is None:
                now = now.replace(tzinfo=UTC)
        else:
            print(f"gpusize digest run: unknown option {arg[:40]}; options: --now=ISO-TIME",
                  file=sys.stderr)
            return 2
    settings = load_settings()

    async def main() -> list[str]:
        redis = redis_client(settings)
        prices = PriceStore(redis)
        await feeds.refresh_due(prices, settings.feed_urls,
                                interval_s=settings.feed_interval_minutes * 60)
        posted = await Digests(redis, web_client(settings), prices).run_due(now)
        await redis.aclose()
        return posted

    posted = asyncio.run(main())
    print(f"digests posted: {len(posted)}" + (f" ({', '.join(posted)})" if posted else ""))
    return 0


def prices(args: list[str]) -> int:
    """`prices import FILE [--team T]` adds records (JSON or CSV, the feed format);
    `prices export [--team T]` prints the history as JSON."""
    if not args or args[0] not in ("import", "export"):
        print("usage: gpusize prices import FILE [--team=T] | gpusize prices export [--team=T]",
              file=sys.stderr)
        return 2
    team = next((a.split("=", 1)[1] for a in args if a.startswith("--team=")), None)
    scope = team or GLOBAL
    settings = load_settings()

    async def run() -> int:
        redis = redis_client(settings)
        store = PriceStore(redis)
        try:
            if args[0] == "export":
                records = await store.visible(team) if team else await store.records(GLOBAL)
                if not records:
                    await store.seed_catalog()
                    records = await store.records(GLOBAL)
                print(json.dumps({"prices": [json.loads(r.model_dump_json()) for r in
                                             sorted(records, key=lambda r: (r.item, r.quoted))]},
                                 indent=2, ensure_ascii=False))
                return 0
            files = [a for a in args[1:] if not a.startswith("--")]
            if len(files) != 1:
                print("gpusize prices import: give one FILE", file=sys.stderr)
                return 2
            path = Path(files[0])
            url = f"file:{path.name}"
            # taken whole or not at all, in bounded memory: a first pass checks every row
            # without keeping it, a second stores them a batch at a time, the global history
            # pruned after each batch so it never holds (nor reads back) more than a batch over
            # its retention
            try:
                count = sum(1 for _ in feeds.read_file(path, url=url))
            except (OSError, feeds.FeedError) as err:
                print(f"gpusize prices import: {path.name}: {err}", file=sys.stderr)
                return 2
            if team and count > MAX_QUOTES:  # a workspace's prices are under the quote cap
                print(f"gpusize prices import: {path.name}: {count} rows; a workspace keeps at "
                      f"most {MAX_QUOTES} prices and quotes", file=sys.stderr)
                return 2
            batch: list[PriceRecord] = []
            try:
                for record in feeds.read_file(path, url=url):
                    batch.append(record.model_copy(update={"origin": "import",
                                                           "entered_by": "cli"}))
                    if len(batch) == (MAX_QUOTES if team else IMPORT_BATCH):
                        await store.add(scope, batch)
                        batch = []
                await store.add(scope, batch)
            except QuotaFull as err:
                print(f"gpusize prices import: {err}", file=sys.stderr)
                return 2
            kept = await store.count(scope)
            print(f"imported {count} price records into {scope} ({kept} kept: the history's "
                  f"retention keeps the newest)" if not team else
                  f"imported {count} price records into {scope}")
            return 0
        finally:
            await redis.aclose()

    return asyncio.run(run())
