"""The red team's security and limit attacks of issue 26 (items 6 and 7), repeated against the
real parts with the figures printed: tried / held. Everything on loopback: a throwaway
redis-server, the Slack Web API stand-in, Hub stand-ins and the bot as a real process
(tests/harness.py); imports by `gpusize prices import`.

 1. Slack Connect: a member whose users.info says is_admin, of another organisation, tries the
    admin-only actions;
 2. a feed URL carrying api_key, a password and a token path: what the digest and `price` show;
 3. HF_TOKEN and a Hub that redirects to another origin;
 4. a Hub that trickles config.json a byte at a time: threads and sockets left after the deadline;
 5. one member opens 500 threads in a burst: how many open, another member's ack;
 6. `prices import --team` with 50,000 rows; then 600 rows;
 7. a global history of 20,097 records: what a feed's refresh keeps, and `price` after;
 8. a 100 MB import: peak memory, and a 50,000-row one;
 9. 1,000 half-open connections to /metrics: the bot's threads, then a scrape;
10. `quote H100 buy 20000000000`: acknowledged and answered?;
11. signed interactive payloads in shapes Slack never sends: any 5xx?

Run: .venv/bin/python bench/attacks_platform.py
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import redis as redis_py
from redis.asyncio import Redis
from slack_sdk.web.async_client import AsyncWebClient

from bot import feeds, pricestore
from bot.digest import Digests
from bot.pricestore import GLOBAL, MAX_QUOTES, PriceRecord, PriceStore
from tests.bot.test_limits import MALFORMED_ACTIONS
from tests.bot.test_price_limits import csv_rows, peak_kib
from tests.harness import SECRET, TEAM, TOKEN, Bot, RedisServer, SlackStub, free_port, serve_stub

ROWS: list[tuple[str, str, str]] = []
BROKEN: list[str] = []


def row(attack: str, tried: str, held: str, ok: bool) -> None:
    ROWS.append((attack, tried, held))
    if not ok:
        BROKEN.append(attack)
    print(f"{'held' if ok else 'NOT HELD'}  {attack}: tried {tried}; {held}", flush=True)


def wait_for(check: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.05)
    return None


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return -1


def slack_connect(bot: Bot, slack: SlackStub, redis_url: str) -> None:
    """Each admin-only action by an admin of another organisation, held when Redis is unchanged
    by it: the workspace's language, someone else's digest and quote."""
    slack.admins |= {"U0GUEST"}
    slack.home_teams["U0GUEST"] = "T0OTHERORG"
    db = redis_py.Redis.from_url(redis_url, decode_responses=True)
    for user in ("U0GUEST", "U0ALICE"):
        db.set(f"gpusize:v1:locale:{TEAM}:{user}", "en")
    subs, quotes = f"gpusize:v1:digest:subs:{TEAM}", f"gpusize:v1:prices:{TEAM}"
    bot.command("digest subscribe <#C0DIGEST|prices> weekly mon 09:00", user="U0ALICE",
                response_url=slack.response_url("own"))
    bot.command('quote H100 buy 200k vendor="V"', user="U0ALICE",
                response_url=slack.response_url("own2"))
    wait_for(lambda: db.hlen(subs) and db.hlen(quotes))
    quote_id = next(iter(db.hkeys(quotes)))

    def state() -> tuple[Any, ...]:
        return (db.hget(f"gpusize:v1:lang:{TEAM}", "workspace"), db.hgetall(subs),
                db.hgetall(quotes))

    tries = ["lang zh workspace", "digest unsubscribe <#C0DIGEST|prices>",
             "digest subscribe <#C0DIGEST|prices> daily 08:00", f"quote remove {quote_id}"]
    held = 0
    for n, text in enumerate(tries):
        before, replies = state(), len(slack.of("response_url"))
        bot.command(text, user="U0GUEST", response_url=slack.response_url(f"g{n}"))
        wait_for(lambda r=replies: len(slack.of("response_url")) > r)
        held += state() == before
    row("admin of another organisation (Slack Connect)", f"{len(tries)} admin-only actions",
        f"held {held} (Redis unchanged by each)", held == len(tries))


def feed_secrets(redis_url: str, slack: SlackStub) -> None:
    url = ("https://svc:hunter2pw@feeds.example/v1/Tok3nTok3nTok3nTok3n/prices.json"
           "?api_key=sk_live_0123456789&region=cn")
    secrets = ("hunter2pw", "Tok3nTok3nTok3nTok3n", "sk_live_0123456789")
    body = json.dumps({"prices": [{"item": "h100-sxm", "kind": "rent_card_hour",
                                   "amount": 2.49, "currency": "USD",
                                   "quoted": str(date.today())}]}).encode()

    async def go() -> str:
        redis = Redis.from_url(redis_url, decode_responses=True)
        store = PriceStore(redis)
        records = feeds.parse_feed(body, url=url)
        await store.add(GLOBAL, records)
        await redis.hset("gpusize:v1:feeds", url, json.dumps(
            {"ok": False, "error": "HTTP 500", "at": "2026-12-01"}))
        digests = Digests(redis, AsyncWebClient(token=TOKEN, base_url=slack.url), store)
        sections, _ = await digests.compose(TEAM, None, now=datetime.now(UTC))
        from bot import pricecommands
        shown = await pricecommands.handle(store, team=TEAM, user="U0ALICE", text="price h100",
                                           today=date.today(), is_admin=False)
        stored = json.dumps(await redis.hgetall("gpusize:v1:prices:global"))
        await redis.aclose()
        return "\n".join(sections + shown) + stored

    text = asyncio.run(go())
    leaks = sum(s in text for s in secrets)
    row("feed URL with a password, a token path and api_key", "digest, `price h100`, stored records",
        f"{len(secrets) - leaks} of {len(secrets)} secrets hidden everywhere", leaks == 0)


def hub_attacks() -> None:
    import huggingface_hub
    import huggingface_hub.constants as constants

    from engine import hub
    from engine.resolve import UnknownModel
    from tests.engine.test_hub_security import TOKEN as HUB_TOKEN
    from tests.engine.test_hub_security import TRICKLE, server

    cache = tempfile.mkdtemp()
    os.environ["GPUSIZE_CACHE"] = cache
    constants.HF_HUB_OFFLINE = False
    huggingface_hub.get_token = lambda: HUB_TOKEN
    other, elsewhere = server({})
    tries = 10
    plan = {f"/org/m{n}/resolve/main/config.json":
            f"http://127.0.0.1:{other.server_port}/cdn/{n}/config.json" for n in range(tries)}
    hub_server, _ = server(plan)

    def point(found: Any) -> None:
        url = f"http://127.0.0.1:{found.server_port}"
        os.environ["HF_ENDPOINT"] = url
        constants.ENDPOINT = url
        constants.HUGGINGFACE_CO_URL_TEMPLATE = url + "/{repo_id}/resolve/{revision}/{filename}"

    point(hub_server)
    for n in range(tries):
        hub.lookup(f"org/m{n}")
    leaked = sum(auth is not None for _, auth in elsewhere.seen)
    row("HF_TOKEN and an HF_ENDPOINT redirect to another host", f"{tries} redirected look-ups",
        f"token sent to the other host {leaked} times ({len(elsewhere.seen)} requests there)",
        leaked == 0 and len(elsewhere.seen) == tries)
    os.environ["HUB_TIMEOUT_S"] = "1"
    slow, handler = server({f"/org/slow{n}/resolve/main/config.json": TRICKLE for n in range(20)})
    point(slow)
    before = threading.active_count()
    took = []
    for n in range(20):
        start = time.monotonic()
        with contextlib.suppress(UnknownModel):
            hub.lookup(f"org/slow{n}")
        took.append(time.monotonic() - start)
    time.sleep(0.5)
    left = threading.active_count() - before
    row("a Hub trickling config.json a byte per 0.2 s (HUB_TIMEOUT_S 1)", "20 look-ups",
        f"longest {max(took):.2f} s, threads left {left}, server saw its socket closed: "
        f"{handler.closed.is_set()}", max(took) < 2 and left <= 0 and handler.closed.is_set())
    for found in (other, hub_server, slow):
        found.shutdown()
        found.server_close()


def thread_flood(bot: Bot, slack: SlackStub, redis_url: str) -> None:
    """500 new threads from one member, 16 at a time, while another member asks questions
    one after another: how many open, and the other member's acks during the burst."""
    redis_py.Redis.from_url(redis_url).flushall()
    limit = 30
    acks: list[str] = []
    others: list[tuple[float, int, str]] = []
    done = threading.Event()
    start = time.monotonic()

    def send(n: int) -> None:
        acks.append(bot.command(f"{7 + n % 60}B lora", user="U0SCRIPT", channel=f"C{n:04d}")[1])

    def other_member() -> None:
        while not done.is_set():  # a new member each time: none of them near their limit
            t0 = time.monotonic()
            status, body = bot.command("13B lora", user=f"U0OTHER{len(others)}",
                                       channel="C0OTHERS")
            others.append((time.monotonic() - t0, status, body))
            time.sleep(0.1)

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(17) as pool:
        probe = pool.submit(other_member)
        list(pool.map(send, range(500)))
        done.set()
        probe.result()
    flood_s = time.monotonic() - start
    opened = 500 - sum("more new threads" in a for a in acks)
    ms = sorted(t * 1000 for t, _status, _body in others)
    row("one member opens 500 threads in a burst", f"500 in {flood_s:.1f} s",
        f"{opened} opened (limit {limit} an hour), {500 - opened} refused in the ack; another "
        f"member's {len(ms)} acks during it p50 {ms[len(ms) // 2]:.0f} ms, max {ms[-1]:.0f} ms, "
        f"statuses {sorted({status for _t, status, _b in others})}",
        opened <= limit and all(status == 200 and "more new threads" not in body
                                for _t, status, body in others))


def imports(redis_url: str, tmp: Path) -> None:
    db = redis_py.Redis.from_url(redis_url)
    db.flushall()
    big = tmp / "team.csv"
    big.write_text(csv_rows(50_000))
    status, _, tail = peak_kib("prices", "import", str(big), "--team=T0TEAM", redis_url=redis_url)
    small = tmp / "team600.csv"
    small.write_text(csv_rows(600))
    status2, _, _ = peak_kib("prices", "import", str(small), "--team=T0TEAM", redis_url=redis_url)
    stored = db.hlen("gpusize:v1:prices:T0TEAM")
    row("`prices import --team` with 50,000 rows, then 600", "2 imports",
        f"exit {status} and {status2}, stored {stored} (cap {MAX_QUOTES})",
        status == 2 and status2 == 2 and stored <= MAX_QUOTES)

    async def history() -> tuple[int, int, float]:
        redis = Redis.from_url(redis_url, decode_responses=True)
        store = PriceStore(redis)
        await store.seed_catalog()
        day = date.today() - timedelta(days=400)
        old = [PriceRecord(id=f"h{n}", item="h100-sxm", kind="rent_card_hour", low=2.5, high=2.5,
                           currency="USD", source="feed x", origin="feed",
                           entered_by=f"feed-{n % 40}", quoted=day + timedelta(days=n % 390),
                           recorded_at=datetime.now(UTC)) for n in range(20_097)]
        await redis.hset("gpusize:v1:prices:global",
                         mapping={r.id: r.model_dump_json() for r in old})  # as before retention
        before = await store.count(GLOBAL)
        await store.add(GLOBAL, old[:1])  # any feed refresh or import prunes
        after = await store.count(GLOBAL)
        from bot import pricecommands
        start = time.monotonic()
        await pricecommands.handle(store, team=TEAM, user="U1", text="price h100",
                                   today=date.today(), is_admin=False)
        took = time.monotonic() - start
        await redis.aclose()
        return before, after, took

    before, after, took = asyncio.run(history())
    row("a global history of 20,097 records", "one feed refresh, then `price h100`",
        f"{before} -> {after} records (catalog + at most {pricestore.HISTORY_MAX}), "
        f"`price` {took:.2f} s", after <= before and after - 200 <= pricestore.HISTORY_MAX)
    db.flushall()
    hundred = tmp / "100mb.csv"
    with hundred.open("w") as out:
        block = csv_rows(20_000)[len("item,kind,amount,currency,quoted,region\n"):]
        out.write("item,kind,amount,currency,quoted,region\n")
        while out.tell() < 100 * 1024 * 1024:
            out.write(block)
    small10 = tmp / "ten.csv"
    small10.write_text(csv_rows(10))
    _, base, _ = peak_kib("prices", "import", str(small10), redis_url=redis_url)
    status, peak, tail = peak_kib("prices", "import", str(hundred), redis_url=redis_url)
    fifty = tmp / "fifty.csv"
    fifty.write_text(csv_rows(50_000))
    start = time.monotonic()
    status50, peak50, _ = peak_kib("prices", "import", str(fifty), redis_url=redis_url)
    took50 = time.monotonic() - start
    row("a 100 MB import (pod limit 384 MiB)", f"{hundred.stat().st_size >> 20} MiB CSV",
        f"exit {status} ({tail.strip().splitlines()[-1][:70] if tail.strip() else ''}), peak "
        f"{peak >> 10} MiB (10 rows: {base >> 10} MiB); 50,000 rows: exit {status50}, peak "
        f"{peak50 >> 10} MiB, {took50:.0f} s",
        status == 2 and status50 == 0 and max(peak, peak50) < 384 * 1024 // 2)


def metrics_flood(bot: Bot) -> None:
    port = int(bot.env["METRICS_PORT"])
    pid = bot.process.pid
    before = threads_of(pid)
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(1000)]
    time.sleep(1)
    during = threads_of(pid)
    time.sleep(6)  # past the 5 s deadline
    after = threads_of(pid)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        scrape = r.status
    for s in held:
        s.close()
    row("1,000 half-open connections to /metrics", "1,000 sockets",
        f"bot threads {before} before, {during} during (cap 16), {after} after 6 s; scrape {scrape}",
        during - before <= 16 and scrape == 200)


def quote_and_payloads(bot: Bot, slack: SlackStub) -> None:
    before = len(slack.of("response_url"))
    status, _ = bot.command("quote H100 buy 20000000000", response_url=slack.response_url("q"))
    reply = wait_for(lambda: slack.of("response_url")[before:] or None, timeout=20)
    said = json.dumps(reply[0].body) if reply else ""
    row("`quote H100 buy 20000000000`", "1", f"ack {status}, answered: "
        f"{'quote not recorded' in said}", status == 200 and "quote not recorded" in said)
    codes = [bot.post(urlencode({"payload": json.dumps(p)}).encode(),
                      "application/x-www-form-urlencoded")[0] for p in MALFORMED_ACTIONS]
    row("signed interactive payloads in shapes Slack never sends", f"{len(codes)}",
        f"5xx: {sum(c >= 500 for c in codes)}; statuses {sorted(set(codes))}",
        all(c < 500 for c in codes))


def main() -> int:
    if {"-h", "--help"} & set(sys.argv[1:]):  # the docstring is the help; nothing runs
        print(__doc__)
        return 0
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        redis = RedisServer(port=free_port(), directory=tmp)
        redis.start()
        slack = SlackStub(port=free_port())
        stub = serve_stub(slack)
        bot = Bot(env={"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET,
                       "REDIS_URL": redis.url, "SLACK_API_URL": slack.url,
                       "DIGEST_SCHEDULER": "false"}, port=free_port(), log=tmp / "bot.log").start()
        try:
            slack_connect(bot, slack, redis.url)
            feed_secrets(redis.url, slack)
            hub_attacks()
            thread_flood(bot, slack, redis.url)
            quote_and_payloads(bot, slack)
            metrics_flood(bot)
            imports(redis.url, tmp)
        finally:
            bot.stop()
            stub.shutdown()
            redis.stop()
    print("\n| attack | tried | held |\n|---|---|---|")
    for attack, tried, held in ROWS:
        print(f"| {attack} | {tried} | {held} |")
    if BROKEN:
        print("NOT HELD: " + "; ".join(BROKEN))
    return 1 if BROKEN else 0


if __name__ == "__main__":
    sys.exit(main())
