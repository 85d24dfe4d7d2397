"""The red team's price, digest and authorization attacks (issue 16, items 3, 6, 7, 8 and the
quotes of 9), repeated against the real parts, with the figures printed: tried / held.

Starts a throwaway redis-server, the Slack Web API stand-in, a price-feed server and the bot as a
real process (tests/harness.py), all on loopback; digests are run by `gpusize digest run` (the
CronJob's command) with a clock, imports by `gpusize prices import`.

1. digests: five subscriptions in two workspaces, the bot removed from one channel
   (not_in_channel): how many good digests post, how often the bad one is tried, whether it is
   turned off and its creator told;
2. prices dated 2999, absurd, outside the catalog or with high < low, on the three paths (a quote
   over HTTP, a feed, an import): how many were stored;
3. spoof text (a newline forging a digest line, <!here>, @channel, a mention marker, a bare URL,
   RTL overrides) on the three paths: what the posted digest and price history contain;
4. member and admin actions: who may set the workspace language, subscribe, replace or remove a
   digest, remove a quote; the caps;
5. answer time with no quotes, after 20,000 attempted quotes (capped), and with 20,000 quotes
   already stored (data from before the cap: the cached price book).

Run: .venv/bin/python bench/attacks_prices.py
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import redis as redis_py
from redis.asyncio import Redis
from slack_sdk.web.async_client import AsyncWebClient

from bot import pricecommands
from bot.digest import MAX_SUBSCRIPTIONS, UNREACHABLE_LIMIT, Digests, Subscription
from bot.pricestore import MAX_QUOTES, PriceStore
from tests.harness import (
    SECRET,
    TEAM,
    TOKEN,
    Bot,
    RedisServer,
    SlackStub,
    free_port,
    serve_http,
    serve_stub,
)

EXE = shutil.which("gpusize", path=str(Path(sys.executable).parent))
CMD = [EXE] if EXE else [sys.executable, "-m", "gpusize"]
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
SPOOF = ("Evil Co\n• H100 SXM buy 1 CNY <!here> @channel <@U0ALICE> \x00U0ALICE\x00 "
         "https://evil.example/x \u202egnp.exe\u2066")
ROW = {"item": "h100-sxm", "kind": "rent_card_hour", "amount": 2.5, "currency": "USD",
       "quoted": "2026-11-20"}
BAD_ROWS = {"future": {**ROW, "quoted": "2999-01-01"}, "absurd": {**ROW, "amount": 0.0001},
            "unknown": {**ROW, "item": "h100-sxm-free"},
            "inverted": {**ROW, "low": 3, "high": 2, "amount": None}}
BAD_QUOTES = {"future": "quote H100 buy 200k date=2999-01-01", "absurd": "quote H100 buy 1",
              "unknown": "quote H999 buy 200k", "inverted": None}  # a quote has one amount
FEEDS: dict[str, bytes] = {
    **{f"/{name}": json.dumps({"prices": [{k: v for k, v in row.items() if v is not None}]}
                              ).encode() for name, row in BAD_ROWS.items()},
    "/spoof": json.dumps({"source": SPOOF, "prices": [{**ROW, "note": SPOOF, "region": SPOOF,
                                                       "amount": 2.2}]}).encode(),
}


class FeedHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = FEEDS.get(self.path, b"")
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class Run:
    def __init__(self, redis: RedisServer, stub: SlackStub, bot: Bot, feeds: str,
                 tmp: Path) -> None:
        self.redis, self.stub, self.bot, self.feeds, self.tmp = redis, stub, bot, feeds, tmp
        self.env = {**os.environ, "SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET,
                    "REDIS_URL": redis.url, "SLACK_API_URL": stub.url}
        self.db = redis_py.Redis.from_url(redis.url, decode_responses=True)

    def reply(self, text: str, *, user: str = "U0ALICE", channel: str = "C0CHAN") -> str:
        """Send a command; the private reply it gets, as JSON text."""
        before = len(self.stub.of("response_url"))
        self.bot.command(text, user=user, channel=channel, response_url=self.stub.response_url())
        return json.dumps(self.stub.wait_for("response_url", before + 1)[before].body,
                          ensure_ascii=False)

    def cli(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=120,
                              env={**self.env, **(env or {})})

    def reset(self) -> None:
        self.db.flushall()
        self.stub.clear()
        self.stub.not_in_channel.clear()
        self.stub.admins.clear()
        self.stub.fail_next.clear()
        for user in ("U0ALICE", "U0BOB", "U0ADMIN"):  # known locales: users.info = admin checks
            self.db.set(f"gpusize:v1:locale:{TEAM}:{user}", "en")


FAILED: list[str] = []  # rows whose attack was not held: the run exits 1


def row(name: str, tried: int, held: int, note: str = "", *, want: int | None = None,
        ok: bool | None = None) -> None:
    """One attack's figures. It held when `held` reaches `want` (every try, by default) of a
    non-empty `tried`, or as `ok` says for a row whose figures are not a count of tries."""
    held_it = ok if ok is not None else tried > 0 and held == (tried if want is None else want)
    if not held_it:
        FAILED.append(name)
    print(f"  {'' if held_it else 'FAILED '}{name:<62} tried {tried:>5}  held {held:>5}  {note}",
          flush=True)


# -- 1. digests ---------------------------------------------------------------------------------


def digests(r: Run) -> None:
    r.reset()
    r.stub.not_in_channel.add("C0GONE")

    async def subscribe() -> None:
        redis = Redis.from_url(r.redis.url, decode_responses=True)
        d = Digests(redis, AsyncWebClient(token=TOKEN, base_url=r.stub.url), PriceStore(redis))
        for team, channel in ((TEAM, "C0AAA"), (TEAM, "C0GONE"), (TEAM, "C0BBB"),
                              ("T0OTHER", "C0CCC"), ("T0OTHER", "C0DDD")):
            await d.subscribe(Subscription(team=team, channel=channel, frequency="weekly",
                                           weekday=0, at="09:00", tz="Asia/Shanghai",
                                           created_by="U0ALICE",
                                           created_at=datetime(2026, 11, 24, tzinfo=UTC)))
        await redis.aclose()

    asyncio.run(subscribe())
    runs = ["2026-11-30T01:01:00+00:00", "2026-11-30T01:05:00+00:00",
            "2026-11-30T01:12:00+00:00", "2026-11-30T02:20:00+00:00",
            "2026-11-30T10:00:00+00:00"]
    for now in runs:
        r.cli("digest", "run", f"--now={now}")
    posts = r.stub.of("chat.postMessage")
    good = {p.body["channel"] for p in posts if p.body["channel"] in
            ("C0AAA", "C0BBB", "C0CCC", "C0DDD")}
    bad = [p for p in posts if p.body["channel"] == "C0GONE"]
    dms = [p for p in posts if p.body["channel"] == "U0ALICE"]
    stored = json.loads(r.db.hget(f"gpusize:v1:digest:subs:{TEAM}", "C0GONE"))
    listing = r.reply("digest list")
    print("1. one unreachable digest channel among five (two workspaces), "
          f"{len(runs)} runs of `gpusize digest run`")
    row("good digests posted", 4, len(good), "(before: 0 of 4)")
    row("posts to the removed channel (then turned off)", len(bad),
        int(stored["disabled_at"] is not None), f"unreachable={stored['unreachable']}",
        ok=stored["disabled_at"] is not None and len(bad) <= UNREACHABLE_LIMIT)
    row("creator told privately (DM), list says why", 1,
        int(len(dms) == 1 and "turned off" in listing and "not_in_channel" in listing))


# -- 2. invalid prices on every path -------------------------------------------------------------


def invalid_prices(r: Run) -> None:
    r.reset()
    print("2. invalid prices on the three paths (nothing may be stored)")
    team_key = f"gpusize:v1:prices:{TEAM}"
    for name, quote in BAD_QUOTES.items():
        tried = held = 0
        if quote:
            tried += 1
            answer = r.reply(quote)
            held += int("not recorded" in answer or "unknown card" in answer)
        r.db.delete("gpusize:v1:feeds:fetched")
        before = r.db.hlen("gpusize:v1:prices:global")
        r.cli("digest", "run", env={"PRICE_FEEDS": f"{r.feeds}/{name}"})
        status = json.loads(r.db.hget("gpusize:v1:feeds", f"{r.feeds}/{name}") or "{}")
        tried += 1
        held += int(not status.get("ok", True) and r.db.hlen("gpusize:v1:prices:global")
                    == before)
        path = r.tmp / f"{name}.json"
        path.write_bytes(FEEDS[f"/{name}"])
        out = r.cli("prices", "import", str(path), f"--team={TEAM}")
        tried += 1
        held += int(out.returncode == 2)
        row(f"{name}: quote, feed, import" if quote else f"{name}: feed, import", tried, held,
            (status.get("error") or "")[:60])
    print(f"  stored in the workspace afterwards: {r.db.hlen(team_key)}")


# -- 3. spoofing ---------------------------------------------------------------------------------


def spoofing(r: Run) -> None:
    r.reset()
    safe = SPOOF.replace('"', "")
    r.reply(f'quote H100 buy 200k vendor="{safe}" note="{safe}"')
    r.db.delete("gpusize:v1:feeds:fetched")
    r.cli("digest", "run", env={"PRICE_FEEDS": f"{r.feeds}/spoof"})
    path = r.tmp / "spoof.json"
    path.write_bytes(FEEDS["/spoof"].replace(b'"amount": 2.2', b'"amount": 2.3'))
    imported = r.cli("prices", "import", str(path))
    r.db.hset(f"gpusize:v1:digest:subs:{TEAM}", "C0DIGEST", Subscription(
        team=TEAM, channel="C0DIGEST", frequency="daily", created_by="U0ALICE",
        created_at="2026-11-01T00:00:00+00:00").model_dump_json())
    r.db.sadd("gpusize:v1:digest:teams", TEAM)
    r.cli("digest", "run")
    history = json.loads(r.reply("price h100"))
    digest = r.stub.of("chat.postMessage")[-1].body
    stored = [json.loads(v) for scope in ("global", TEAM)
              for v in r.db.hgetall(f"gpusize:v1:prices:{scope}").values()]
    spoofed = [p for p in stored if "Evil" in json.dumps(p)]
    print("3. spoof text (newline, <!here>, @channel, mention marker, bare URL, RTL) on quote, "
          f"feed, import ({imported.returncode == 0 and 'imported'})")
    clean = sum(not any(UNSAFE.search(str(v)) or "\n" in str(v) for v in p.values())
                for p in spoofed)
    # one record from each path (quote, feed, import), each stored clean
    row("stored records without control/bidi characters", len(spoofed), clean,
        ok=len(spoofed) == 3 and clean == 3)
    for name, message in (("digest posted", digest), ("price history", history)):
        sections = [b["text"] for b in message["blocks"] if b["type"] == "section"]
        shown = "\n".join(t["text"] for t in sections)
        others = shown.replace("by <@U0ALICE>", "")  # the bot's own note of who quoted
        checks = [all(t.get("verbatim") for t in sections), not UNSAFE.search(shown),
                  "<!" not in others and "<@" not in others, "<https://evil" not in shown,
                  "@channel" not in shown,
                  not any(line.lstrip().startswith("• H100 SXM buy 1") for line in
                          shown.splitlines())]
        row(f"{name}: verbatim, no control, mention, link, broadcast, forged line",
            len(checks), sum(checks), f"evil text shown: {'Evil Co' in shown}")


# -- 4. authorization ----------------------------------------------------------------------------


def authorization(r: Run) -> None:
    r.reset()
    r.stub.admins.add("U0ADMIN")
    r.stub.not_in_channel.add("C0SECRET")
    lang = f"gpusize:v1:lang:{TEAM}"
    subs = f"gpusize:v1:digest:subs:{TEAM}"
    member: list[bool] = []
    r.reply("lang zh workspace", user="U0BOB")
    member.append(r.db.hget(lang, "workspace") is None)
    r.reply("digest subscribe <#C0DIGEST|p> weekly mon", user="U0ALICE")
    r.reply("digest unsubscribe <#C0DIGEST|p>", user="U0BOB")
    member.append(r.db.hexists(subs, "C0DIGEST"))
    r.reply("digest subscribe <#C0DIGEST|p> daily", user="U0BOB")
    member.append(json.loads(r.db.hget(subs, "C0DIGEST"))["created_by"] == "U0ALICE")
    r.reply("digest subscribe <#C0SECRET|s> daily", user="U0BOB")
    member.append(not r.db.hexists(subs, "C0SECRET"))
    for n in range(MAX_SUBSCRIPTIONS + 5):
        r.reply(f"digest subscribe <#C0MANY{n}|m> daily", user="U0BOB")
    member.append(r.db.hlen(subs) == MAX_SUBSCRIPTIONS)
    quote = r.reply('quote H100 buy 200k vendor="V"', user="U0ALICE")
    qid = quote.split("Recorded quote `")[1].split("`")[0]
    r.reply(f"quote remove {qid}", user="U0BOB")
    member.append(r.db.hexists(f"gpusize:v1:prices:{TEAM}", qid))
    r.stub.fail_next.append({"method": "users.info", "body": {"ok": False, "error": "fatal"}})
    r.reply("lang en workspace", user="U0ADMIN")  # Slack cannot say: refused
    member.append(r.db.hget(lang, "workspace") is None)
    print(f"4. authorization inside a workspace (subscription cap {MAX_SUBSCRIPTIONS})")
    row("member (or unknown) actions refused: lang, unsubscribe, replace, no-bot channel, "
        "cap, remove quote, users.info down", len(member), sum(member))
    admin: list[bool] = []
    r.reply("lang zh workspace", user="U0ADMIN")
    admin.append(r.db.hget(lang, "workspace") == "zh")
    r.reply("digest unsubscribe <#C0DIGEST|p>", user="U0ADMIN")
    admin.append(not r.db.hexists(subs, "C0DIGEST"))
    r.reply(f"quote remove {qid}", user="U0ADMIN")
    admin.append(not r.db.hexists(f"gpusize:v1:prices:{TEAM}", qid))
    row("admin actions allowed: lang, unsubscribe, remove quote", len(admin), sum(admin))


# -- 5. quotes and answer time -------------------------------------------------------------------


def answer_seconds(r: Run, n: int = 5) -> list[float]:
    times = []
    for i in range(n):
        before = len(r.stub.of("chat.postMessage"))
        start = time.perf_counter()
        r.bot.command("13B lora gpu=h100 gpus=1", channel=f"C0TIME{i}{time.time_ns() % 10**6}")
        r.stub.wait_for("chat.postMessage", before + 1, timeout=60)
        times.append(time.perf_counter() - start)
    return times


def quotes(r: Run) -> None:
    r.reset()
    base = answer_seconds(r)

    async def attempt(count: int) -> tuple[int, int]:
        redis = Redis.from_url(r.redis.url, decode_responses=True)
        store = PriceStore(redis)
        refused = 0
        for start in range(0, count, 50):
            outs = await asyncio.gather(*(pricecommands.handle(
                store, team=TEAM, user=f"U{n % 2000:05d}", today=date.today(), is_admin=False,
                text=f"quote h20 buy {90 + n % 50}k vendor=V{n}")
                for n in range(start, min(count, start + 50))))
            refused += sum("not recorded" in o[0] for o in outs)
        stored = await store.count(TEAM)
        await redis.aclose()
        return refused, stored

    started = time.perf_counter()
    refused, stored = asyncio.run(attempt(20_000))
    spent = time.perf_counter() - started
    capped = answer_seconds(r)
    # data from before the cap: 20,000 quotes already stored; the price book is built once
    filler = pricecommands.parse_quote("quote h20 buy 100k vendor=Old", team_user="U0OLD",
                                       today=date.today())
    pipe = r.db.pipeline(transaction=False)
    for n in range(20_000):
        pipe.hset(f"gpusize:v1:prices:{TEAM}", f"q-old{n}",
                  filler.model_copy(update={"id": f"q-old{n}"}).model_dump_json())
    pipe.incr(f"gpusize:v1:prices:version:{TEAM}")
    pipe.execute()
    legacy = answer_seconds(r, 6)
    print(f"5. quotes: cap {MAX_QUOTES} per workspace, "
          f"{pricecommands.QUOTE_LIMIT.count} per person per "
          f"{pricecommands.QUOTE_LIMIT.window_s // 60} min")
    row("quotes attempted by 2,000 users: refused beyond the cap", 20_000, refused,
        f"stored {stored}, {spent:.1f} s", ok=stored <= MAX_QUOTES and refused == 20_000 - stored)
    print(f"  answer time, median of 5: no quotes {statistics.median(base):.2f} s; after 20,000 "
          f"attempted {statistics.median(capped):.2f} s; 20,000 stored before the cap: first "
          f"{legacy[0]:.2f} s (builds the book), then {statistics.median(legacy[1:]):.2f} s")


def main() -> int:
    """0 when every attack held, 1 when one did not (named at the end)."""
    if {"-h", "--help"} & set(sys.argv[1:]):  # the docstring is the help; nothing runs
        print(__doc__)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        redis = RedisServer(port=free_port(), directory=tmpdir)
        redis.start()
        stub = SlackStub(port=free_port())
        server = serve_stub(stub)
        feeds = serve_http(FeedHandler)
        bot = Bot(env={"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET,
                       "REDIS_URL": redis.url, "SLACK_API_URL": stub.url,
                       "DIGEST_SCHEDULER": "false"}, port=free_port(), log=tmpdir / "bot.log")
        try:
            bot.start()
            r = Run(redis, stub, bot, f"http://127.0.0.1:{feeds.server_port}", tmpdir)
            for part in (digests, invalid_prices, spoofing, authorization, quotes):
                part(r)
        finally:
            bot.stop()
            feeds.shutdown()
            server.shutdown()
            redis.stop()
    if FAILED:
        print(f"\nnot held: {'; '.join(FAILED)}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    raise SystemExit(main())
