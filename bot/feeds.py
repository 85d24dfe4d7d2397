"""Price feeds: URLs a team re-publishes price lists at, fetched on a schedule.

Format (JSON):  {"source": "Provider price list", "prices": [
                  {"item": "h100-sxm", "kind": "rent_card_hour", "low": 2.49, "high": 2.49,
                   "currency": "USD", "quoted": "2026-11-01", "gpus": 1, "region": "global"}]}
Format (CSV):   a header row item,kind,low,high,currency,quoted[,gpus,region,note], then rows.
`amount` may stand for low = high. A feed is taken whole or not at all: a timeout, an oversized
body, a redirect, a parse error or one invalid row rejects it, is recorded as a failure (shown in
the digest) and never touches the prices already stored. A row is invalid when it breaks the rule
every price obeys (engine.prices.check_price: dated at most tomorrow, a catalog card or a server
of them, low <= high, a plausible amount); its text fields lose control and bidi characters.

A feed URL may carry a credential (?api_key=..., user:password@, a token as a path segment): what
is stored beside a price and what members or the digest see is `public_url`, never the URL itself.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import ValidationError

from bot import keys
from bot.pricestore import GLOBAL, PriceRecord, PriceStore
from engine.prices import PriceRejected
from present.blockkit import clean_field

MAX_BYTES = 1 << 20  # 1 MiB
TIMEOUT_S = 10.0
MAX_ROWS = 5000


class FeedError(ValueError):
    pass


URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>|()\"']+")
# a path segment that looks like a key or a capability (long, letters and digits mixed)
TOKEN_LIKE = re.compile(r"(?=[A-Za-z0-9_\-.~]*[0-9])(?=[A-Za-z0-9_\-.~]*[A-Za-z])[A-Za-z0-9_\-.~]{16,}")
HIDDEN = "***"


def public_url(url: str) -> str:
    """A feed URL as others may see it: no user or password, every query value and token-like
    path segment hidden, no fragment. Enough to tell feeds apart, never enough to call one."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return HIDDEN
    path = "/".join(HIDDEN if TOKEN_LIKE.fullmatch(seg) else seg for seg in parts.path.split("/"))
    # a parameter's name is kept (it tells feeds apart) unless it is a bare value or token-like
    shown = [f"{name}={HIDDEN}" if sep and not TOKEN_LIKE.fullmatch(name) else HIDDEN
             for name, sep, _ in (p.partition("=") for p in parts.query.split("&") if p)]
    query = "?" + "&".join(dict.fromkeys(shown)) if shown else ""
    return f"{parts.scheme}://{host}{port}{path}{query}"


def redact_urls(text: str) -> str:
    """Every URL in `text` as public_url shows it (stored sources, older records included)."""
    return URL.sub(lambda m: public_url(m.group(0)), text)


def parse_feed(body: bytes, *, url: str, content_type: str = "",
               today: date | None = None) -> list[PriceRecord]:
    """Rows of a feed as validated records, or FeedError naming what is wrong."""
    today = today or datetime.now(UTC).date()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FeedError("not UTF-8 text") from err
    stripped = text.lstrip()
    rows: list[dict[str, Any]]
    source = public_url(url)
    if "json" in content_type or stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except ValueError as err:
            raise FeedError(f"invalid JSON ({err.msg} at line {err.lineno})") from None
        if isinstance(data, dict):
            source = redact_urls(clean_field(data.get("source") or "", 200)) or public_url(url)
            data = data.get("prices")
        if not isinstance(data, list):
            raise FeedError('JSON must be a list of prices or {"prices": [...]}')
        rows = data
    else:
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames or not {"item", "kind", "currency", "quoted"} <= set(
                reader.fieldnames):
            raise FeedError("CSV needs a header with item, kind, low/high or amount, currency, "
                            "quoted")
        rows = list(reader)
    if not rows:
        raise FeedError("no prices in the feed")
    if len(rows) > MAX_ROWS:
        raise FeedError(f"{len(rows)} rows; at most {MAX_ROWS}")
    now = datetime.now(UTC)
    return [_record(row, number, url=url, source=source, now=now, today=today)
            for number, row in enumerate(rows, 1)]


def _record(row: Any, number: int, *, url: str, source: str, now: datetime,
            today: date) -> PriceRecord:
    """One row of a feed or an import as a checked record, or FeedError naming the row."""
    if not isinstance(row, dict):
        raise FeedError(f"row {number} is not an object")
    row = {k: v for k, v in row.items() if v not in ("", None)}
    if "amount" in row:
        row.setdefault("low", row["amount"])
        row.setdefault("high", row["amount"])
    row.setdefault("high", row.get("low"))
    digest = hashlib.sha1(json.dumps([url, row], sort_keys=True, default=str).encode())
    try:
        record = PriceRecord(
            id=f"feed-{digest.hexdigest()[:16]}", item=str(row.get("item", "")),
            kind=row.get("kind"), gpus=row.get("gpus", 1), low=row.get("low"),
            high=row.get("high"), currency=str(row.get("currency", "")).upper(),
            region=row.get("region", "global"),
            source=f"feed {source} ({public_url(url)})"[:500], origin="feed",
            entered_by=public_url(url)[:80], quoted=row.get("quoted"), recorded_at=now,
            note=redact_urls(str(row.get("note", "")))[:500])
    except ValidationError as err:
        first = err.errors()[0]
        raise FeedError(f"row {number}: {'.'.join(map(str, first['loc']))} "
                        f"{first['msg'].lower()}") from None
    try:
        record.check(today)
    except PriceRejected as err:
        raise FeedError(f"row {number}: {err}") from None
    return record


# A JSON document is parsed whole (about 10x its size in memory): past this, a file must be CSV or
# JSON Lines, read a row at a time. A 100 MB import peaked at 2,030 MiB in a 384 MiB pod.
MAX_JSON_FILE_BYTES = 8 << 20
MAX_IMPORT_ROWS = 50_000  # an import of more is refused whole: retention keeps HISTORY_MAX anyway


def read_file(path: Path, *, url: str, today: date | None = None) -> Iterator[PriceRecord]:
    """The records of an import file, one at a time, in memory bounded by a row (CSV, JSON
    Lines: .jsonl/.ndjson) or by MAX_JSON_FILE_BYTES (a .json document); FeedError at the first
    bad row or past MAX_IMPORT_ROWS. Read twice (check, then store) to take a file whole."""
    today = today or datetime.now(UTC).date()
    now = datetime.now(UTC)
    source = public_url(url)
    suffix = path.suffix.lower()
    with path.open("rb") as raw:
        first = raw.read(1024).lstrip()[:1]
    rows: Iterator[Any]
    if suffix in (".jsonl", ".ndjson"):
        rows = (_json_line(line, n) for n, line in enumerate(_lines(path), 1) if line.strip())
    elif suffix == ".json" or first in (b"{", b"["):
        size = path.stat().st_size
        if size > MAX_JSON_FILE_BYTES:
            raise FeedError(f"a JSON file is read whole and this one is {size} bytes (at most "
                            f"{MAX_JSON_FILE_BYTES}): give CSV or JSON Lines (.jsonl), read a row "
                            f"at a time")
        yield from parse_feed(path.read_bytes(), url=url, content_type="json", today=today)
        return
    else:
        reader = csv.DictReader(_lines(path))
        if not reader.fieldnames or not {"item", "kind", "currency", "quoted"} <= set(
                reader.fieldnames):
            raise FeedError("CSV needs a header with item, kind, low/high or amount, currency, "
                            "quoted")
        rows = iter(reader)
    count = 0
    for count, row in enumerate(rows, 1):
        if count > MAX_IMPORT_ROWS:
            raise FeedError(f"more than {MAX_IMPORT_ROWS} rows; split the file")
        yield _record(row, count, url=url, source=source, now=now, today=today)
    if not count:
        raise FeedError("no prices in the file")


def _lines(path: Path) -> Iterator[str]:
    try:
        with path.open(encoding="utf-8", newline="") as text:
            yield from text
    except UnicodeDecodeError as err:
        raise FeedError("not UTF-8 text") from err


def _json_line(line: str, number: int) -> Any:
    try:
        return json.loads(line)
    except ValueError as err:
        raise FeedError(f"line {number}: invalid JSON ({err.msg})") from None


async def fetch(session: aiohttp.ClientSession, url: str) -> list[PriceRecord]:
    try:
        async with session.get(url, allow_redirects=False,
                               timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as resp:
            if 300 <= resp.status < 400:
                raise FeedError(f"redirected ({resp.status}); give the final URL")
            if resp.status != 200:
                raise FeedError(f"HTTP {resp.status}")
            declared = resp.content_length
            if declared is not None and declared > MAX_BYTES:
                raise FeedError(f"{declared} bytes; at most {MAX_BYTES}")
            body = await resp.content.read(MAX_BYTES + 1)
            if len(body) > MAX_BYTES:
                raise FeedError(f"more than {MAX_BYTES} bytes")
            return parse_feed(body, url=url, content_type=resp.headers.get("Content-Type", ""))
    except TimeoutError:
        raise FeedError(f"no answer within {TIMEOUT_S:g} s") from None
    except aiohttp.ClientError as err:
        raise FeedError(f"{type(err).__name__}") from None


async def refresh_due(store: PriceStore, urls: list[str], *, interval_s: float) -> bool:
    """Fetch the feeds unless another process or run did within the interval (a cron job
    running every few minutes still fetches on FEED_INTERVAL_MINUTES)."""
    if not urls:
        return False
    claimed = await store.redis.set(keys.feeds_fetched(), datetime.now(UTC).isoformat(),
                                    nx=True, ex=max(1, int(interval_s)))
    if not claimed:
        return False
    await refresh(store, urls)
    return True


async def refresh(store: PriceStore, urls: list[str]) -> dict[str, dict[str, Any]]:
    """Fetch every feed; store good ones, record every outcome."""
    results: dict[str, dict[str, Any]] = {}
    async with aiohttp.ClientSession() as session:
        for url in urls:
            at = datetime.now(UTC).isoformat(timespec="seconds")
            try:
                records = await fetch(session, url)
            except FeedError as err:
                results[url] = {"ok": False, "error": str(err), "at": at}
                continue
            await store.add(GLOBAL, records)
            results[url] = {"ok": True, "rows": len(records), "at": at}
    if results:
        await store.redis.hset(keys.feed_status(),
                               mapping={u: json.dumps(r) for u, r in results.items()})
    return results
