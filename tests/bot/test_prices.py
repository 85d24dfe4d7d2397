"""Price history in Redis, team quotes (isolated per workspace), feeds and the CLI tools."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from slack_sdk.web.async_client import AsyncWebClient

import engine
from bot import feeds, pricecommands, pricetables
from bot.digest import Digests, Subscription
from bot.pricestore import GLOBAL, MAX_QUOTES, PriceStore, catalog_records, newest
from engine.parse import ParseError, parse
from engine.prices import check_price, price_book
from engine.resolve import resolve_model
from engine.sizing import answer_for
from present import blockkit
from tests.harness import TOKEN, Bot, SlackStub, serve_http

TODAY = date(2026, 11, 30)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def store_for(url: str) -> PriceStore:
    return PriceStore(Redis.from_url(url, decode_responses=True))


def test_catalog_seeds_once(redis_url: str) -> None:
    async def go() -> tuple[int, int, int]:
        store = await store_for(redis_url)
        first = await store.seed_catalog()
        again = await store.seed_catalog()
        return first, again, len(await store.records(GLOBAL))

    first, again, total = run(go())
    assert first == total == len(catalog_records()) and again == 0


def test_quotes_are_isolated_between_workspaces_and_used_in_answers(redis_url: str) -> None:
    async def go() -> tuple[Any, Any]:
        store = await store_for(redis_url)
        await pricecommands.handle(store, team="TA", user="U1", today=TODAY, is_admin=False,
                                   text='quote H20 buy 150k vendor="Chengdu IDC A"')
        return await store.book_for("TA"), await store.book_for("TB")

    book_a, book_b = run(go())
    spec, _ = resolve_model("llama-3.1-70b")
    req = parse("llama-3.1-70b lora gpu=h20 gpus=4")
    plan_a = answer_for(spec, req, book=book_a, today=TODAY).plans[0]
    plan_b = answer_for(spec, req, book=book_b, today=TODAY).plans[0]
    assert any("Chengdu IDC A" in s for s in plan_a.cost.price_sources)
    assert not any("Chengdu IDC A" in s for s in plan_b.cost.price_sources)
    # 4 cards x 150k / 0.65 (cards' share of a server)
    assert plan_a.cost.buy.capex == pytest.approx(4 * 150_000 / 0.65, rel=1e-3)
    assert plan_b.cost.buy.capex != plan_a.cost.buy.capex


def test_quote_grammar_and_errors() -> None:
    rec = pricecommands.parse_quote('quote 8xA800 buy-server 1.2M vendor="X Ltd" date=2026-11-01',
                                    team_user="U1", today=TODAY)
    assert (rec.item, rec.kind, rec.gpus, rec.low, rec.vendor) == (
        "server:8xa800", "buy_server", 8, 1_200_000, "X Ltd")
    rent = pricecommands.parse_quote("quote 4090 rent $0.4", team_user="U1", today=TODAY)
    assert (rent.kind, rent.currency, rent.low) == ("rent_card_hour", "USD", 0.4)
    smart = pricecommands.parse_quote("quote h20 buy 90k vendor=“Smart Quotes”", team_user="U1",
                                      today=TODAY)
    assert smart.vendor == "Smart Quotes"
    for bad in ("quote H100 buy", "quote H999 buy 1k", "quote H100 lease 1k",
                "quote H100 buy abc", 'quote H100 buy 1k vendor="open', "quote 8xa800 buy 1k",
                "quote h100 buy 1k date=yesterday"):
        with pytest.raises(ParseError):
            pricecommands.parse_quote(bad, team_user="U1", today=TODAY)


def test_only_the_author_or_an_admin_removes_a_quote(redis_url: str) -> None:
    async def go() -> list[str]:
        store = await store_for(redis_url)
        out = await pricecommands.handle(store, team="TA", user="U1", today=TODAY,
                                         is_admin=False, text="quote h100 buy 200k vendor=V")
        qid = out[0].split("`")[1]
        results = []
        for user, admin in (("U2", False), ("U3", True)):
            results += await pricecommands.handle(store, team="TB", user=user, today=TODAY,
                                                  is_admin=admin, text=f"quote remove {qid}")
        results += await pricecommands.handle(store, team="TA", user="U2", today=TODAY,
                                              is_admin=False, text=f"quote remove {qid}")
        results += await pricecommands.handle(store, team="TA", user="U1", today=TODAY,
                                              is_admin=False, text=f"quote remove {qid}")
        return results

    other_team, other_team_admin, not_author, author = run(go())
    assert "No quote" in other_team and "No quote" in other_team_admin  # another workspace's
    assert "Only the person" in not_author and "Removed" in author


def test_price_listing_and_history(redis_url: str) -> None:
    async def go() -> tuple[list[str], list[str]]:
        store = await store_for(redis_url)
        await pricecommands.handle(store, team="TA", user="U1", today=TODAY, is_admin=False,
                                   text="quote l40s rent 0.5 currency=USD vendor=Cheap")
        listing = await pricecommands.handle(store, team="TA", user="U1", today=TODAY,
                                             is_admin=False, text="price")
        hist = await pricecommands.handle(store, team="TA", user="U1", today=TODAY,
                                          is_admin=False, text="price L40S")
        return listing, hist

    listing, hist = run(go())
    text = "\n".join(listing)
    # one table per kind, by display names, in the workspace's currency (its quotes are in USD)
    rent = text.split("*Rent per GPU-hour*\n```\n")[1].split("```")[0].splitlines()
    assert rent[0].split() == ["card", "USD/h", "age", "src"]
    amounts = [float(re.search(r"\s([\d,.]+)(?: \(|\s+\d+ d)", line).group(1).replace(",", ""))
               for line in rent[1:]]
    assert amounts == sorted(amounts)  # cheapest first, whatever currency it was quoted in
    l40s = next(line for line in rent if line.startswith("L40S "))
    assert l40s.split()[1] == "0.50" and "l40s" not in text and "rent_card_hour" not in text
    assert "CNY)" in text  # a CNY price converted, the quote kept in brackets
    # only the cards this workspace asks about (none yet: the common ones)
    assert "B200" not in text and "MI300X" not in text
    # sources under the tables: the catalog's as links, the team's quote by its vendor
    notes = blockkit.mrkdwn(text.split("```")[-1])
    assert "<https://" in notes and "quote from Cheap" in notes and "older than 90 days" in notes
    assert hist[0].startswith("*Price history of L40S*") and "Cheap" in hist[0]


def test_newest_price_wins() -> None:
    old, new = catalog_records()[:2]
    a = old.model_copy(update={"item": "x", "kind": "buy_card", "quoted": date(2026, 1, 1)})
    b = new.model_copy(update={"item": "x", "kind": "buy_card", "quoted": date(2026, 6, 1)})
    assert newest([a, b])[("x", "buy_card")] is b


# -- feeds ------------------------------------------------------------------------------------


GOOD_FEED = {"source": "Team price list", "prices": [
    {"item": "h100-sxm", "kind": "rent_card_hour", "amount": 1.99, "currency": "USD",
     "quoted": "2026-11-20"}]}


# A vendor or feed text trying to forge a digest line, ping people, make a link or reorder text.
SPOOF = ("Evil Co\n• H100 SXM buy 1 CNY <!here> @channel <@U0ALICE> \x00U0ALICE\x00 "
         "https://evil.example/x \u202egnp.exe\u2066 \u2028line")


def _row(**change: Any) -> dict[str, Any]:
    return {"item": "h100-sxm", "kind": "rent_card_hour", "amount": 2.5, "currency": "USD",
            "quoted": "2026-11-20", **change}


SPOOF_FEEDS = {
    "/future": {"prices": [_row(quoted="2999-01-01")]},
    "/absurd": {"prices": [_row(amount=0.0001)]},
    "/unknown": {"prices": [_row(item=SPOOF[:75])]},
    "/inverted": {"prices": [_row(low=3, high=2, amount=None)]},
    "/spoof-note": {"source": SPOOF, "prices": [_row(note=SPOOF, region=SPOOF)]},
}


class FeedServer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/good.json":
            self._send(200, json.dumps(GOOD_FEED).encode(), "application/json")
        elif self.path == "/good.csv":
            self._send(200, b"item,kind,low,high,currency,quoted\nl40s,rent_card_hour,0.7,0.9,"
                       b"USD,2026-11-21\n", "text/csv")
        elif self.path == "/garbage":
            self._send(200, b"<html>not a price list</html>", "text/html")
        elif self.path == "/bad-row":
            self._send(200, json.dumps({"prices": [{"item": "h100-sxm", "kind": "rent_card_hour",
                                                    "amount": -3, "currency": "USD",
                                                    "quoted": "2026-11-20"}]}).encode(), "json")
        elif self.path in SPOOF_FEEDS:
            self._send(200, json.dumps(SPOOF_FEEDS[self.path]).encode(), "application/json")
        elif self.path == "/huge":
            self._send(200, b"[" + b" " * (feeds.MAX_BYTES + 10) + b"]", "application/json")
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/good.json")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/slow":
            time.sleep(feeds.TIMEOUT_S + 1)
            self._send(200, b"[]", "application/json")
        else:
            self._send(404, b"", "text/plain")

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def feed_server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(feeds, "TIMEOUT_S", 1.0)
    server = serve_http(FeedServer)
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_feeds_take_good_prices_and_reject_bad_ones_whole(redis_url: str, feed_server: str) -> None:
    urls = [f"{feed_server}/{p}" for p in ("good.json", "good.csv", "garbage", "bad-row", "huge",
                                             "redirect", "slow", "missing")]

    async def go() -> tuple[dict, list]:
        store = await store_for(redis_url)
        await store.seed_catalog()
        before = await store.records(GLOBAL)
        result = await feeds.refresh(store, urls)
        after = await store.records(GLOBAL)
        again = await feeds.refresh(store, urls[:2])  # the same good feed twice adds nothing
        return result, [len(before), len(after), len(await store.records(GLOBAL)), again]

    result, (before, after, after_again, _) = run(go())
    assert result[urls[0]]["ok"] and result[urls[1]]["ok"]
    assert after == before + 2 and after_again == after
    reasons = {u.rsplit("/", 1)[1]: r.get("error", "") for u, r in result.items() if not r["ok"]}
    assert set(reasons) == {"garbage", "bad-row", "huge", "redirect", "slow", "missing"}
    assert "redirected" in reasons["redirect"] and "within" in reasons["slow"]
    assert "bytes" in reasons["huge"] and "row 1" in reasons["bad-row"]


# -- the CLI tools ------------------------------------------------------------------------------


EXE = shutil.which("gpusize", path=str(Path(sys.executable).parent))
CMD = [EXE] if EXE else [sys.executable, "-m", "gpusize"]


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SLACK_BOT_TOKEN": "xoxb-t", "SLACK_SIGNING_SECRET": "s",
                               **env})


@pytest.mark.slow  # `gpusize prices` as a command
def test_prices_import_and_export(redis_url: str, tmp_path: Path) -> None:
    feed = tmp_path / "prices.json"
    feed.write_text(json.dumps(GOOD_FEED))
    out = cli("prices", "import", str(feed), env={"REDIS_URL": redis_url})
    assert out.returncode == 0 and "imported 1" in out.stdout
    exported = json.loads(cli("prices", "export", env={"REDIS_URL": redis_url}).stdout)["prices"]
    assert any(p["origin"] == "import" and p["low"] == 1.99 for p in exported)
    bad = tmp_path / "bad.csv"
    bad.write_text("nothing,useful\n1,2\n")
    out = cli("prices", "import", str(bad), env={"REDIS_URL": redis_url})
    assert out.returncode == 2 and "header" in out.stderr and "Traceback" not in out.stderr


def test_slash_price_and_quote_over_http(bot: Bot, slack: SlackStub) -> None:
    bot.command('quote H100 buy 180k vendor="Chengdu IDC A"', response_url=slack.response_url())
    confirm = slack.wait_for("response_url")[0].body
    assert "Recorded quote" in json.dumps(confirm["blocks"], ensure_ascii=False)
    bot.command("price h100", response_url=slack.response_url())
    history = json.dumps(slack.wait_for("response_url", 2)[1].body["blocks"], ensure_ascii=False)
    assert "Chengdu IDC A" in history and "180k" in history and "in CNY" in history
    assert "q-" not in history and "seed:" not in history  # no internal ids
    # the new quote is announced where it was typed: the team sees what its answers now use
    announced = slack.wait_for("chat.postMessage")[0].body
    assert announced["channel"] == "C0CHAN" and "recorded a quote" in announced["text"]
    assert "Chengdu IDC A" in json.dumps(announced["blocks"], ensure_ascii=False)
    bot.command("13B lora gpu=h100 gpus=1")
    posted = json.dumps(slack.wait_for("chat.postMessage", 2)[1].body["blocks"],
                        ensure_ascii=False)
    assert "277k CNY" in posted  # 180k / 0.65: the workspace's quote, not the catalog's


def test_engine_default_book_is_the_catalog() -> None:
    plan = engine.ask("13B lora gpu=4090 gpus=2").plans[0]
    assert plan.cost.buy.capex == pytest.approx(40_000)  # seed 000's 2x 4090 server, midpoint
    assert datetime.now(UTC).year >= 2026


# -- issue 16: prices validated on every path, stored text never spoofs, quotes capped ----------


def _has_unsafe(text: str) -> bool:
    return bool(re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e"
                          "\u2066-\u2069]", text))


def test_future_absurd_and_unknown_prices_are_refused_on_every_path(
        bot: Bot, slack: SlackStub, redis_url: str, feed_server: str, tmp_path: Path) -> None:
    team_key = "gpusize:v1:prices:T0TEAM"
    # 1. a quote over HTTP
    for n, text in enumerate(("quote H100 buy 200k date=2999-01-01", "quote H100 buy 1",
                              "quote H100 buy 900M", "quote 8xh100 buy-server 30",
                              "quote 4090 rent 40000"), 1):
        bot.command(text, response_url=slack.response_url())
        answer = json.dumps(slack.wait_for("response_url", n)[n - 1].body, ensure_ascii=False)
        assert "quote not recorded" in answer, answer
    assert "in the future" in json.dumps(slack.of("response_url")[0].body)
    assert "1/20 to 20 times the catalog" in json.dumps(slack.of("response_url")[1].body)
    # 2. a feed
    urls = [f"{feed_server}{path}" for path in ("/future", "/absurd", "/unknown", "/inverted")]

    async def go() -> tuple[dict, int, int]:
        store = await store_for(redis_url)
        await store.seed_catalog()
        before = len(await store.records(GLOBAL))
        result = await feeds.refresh(store, urls)
        return result, before, len(await store.records(GLOBAL))

    result, before, after = run(go())
    assert after == before and not any(r["ok"] for r in result.values())
    assert "in the future" in result[urls[0]]["error"]
    assert "plausible" in result[urls[1]]["error"]
    assert "not a card in the catalog" in result[urls[2]]["error"]
    assert not _has_unsafe(result[urls[2]]["error"])  # the item's text, cleaned, in the error
    assert "at most high" in result[urls[3]]["error"]
    # 3. an import
    future = tmp_path / "future.json"
    future.write_text(json.dumps(SPOOF_FEEDS["/future"]))
    out = cli("prices", "import", str(future), "--team=T0TEAM", env={"REDIS_URL": redis_url})
    assert out.returncode == 2 and "in the future" in out.stderr
    assert run(_hlen(redis_url, team_key)) == 0


async def _hlen(url: str, key: str) -> int:
    redis = Redis.from_url(url, decode_responses=True)
    try:
        return int(await redis.hlen(key))
    finally:
        await redis.aclose()


def test_a_future_dated_price_stored_before_the_check_never_wins(redis_url: str) -> None:
    async def go() -> Any:
        store = await store_for(redis_url)
        await pricecommands.handle(store, team="TA", user="U1", today=date.today(),
                                   is_admin=False, text="quote h100 buy 210k vendor=Real")
        bogus = pricecommands.parse_quote("quote h100 buy 220k vendor=Bogus", team_user="U1",
                                          today=date.today())
        await store.add("TA", [bogus.model_copy(update={"quoted": date(2999, 1, 1), "low": 1.0,
                                                        "high": 1.0})])
        return await store.book_for("TA"), len(await store.records("TA"))

    book, stored = run(go())
    best = newest_of(book, "h100-sxm", "buy_card")
    assert stored == 2 and best.low == 210_000  # kept, never used


def newest_of(book: Any, item: str, kind: str) -> Any:
    return max(book.candidates(item, kind), key=lambda p: p.quoted)


def test_spoofing_text_is_stored_clean_and_posted_verbatim(bot: Bot, slack: SlackStub,
                                                          redis_url: str, feed_server: str) -> None:
    shlex_safe = SPOOF.replace('"', "")
    bot.command(f'quote H100 buy 200k vendor="{shlex_safe}" note="{shlex_safe}"',
                response_url=slack.response_url())
    assert "Recorded quote" in json.dumps(slack.wait_for("response_url")[0].body)
    urls = [f"{feed_server}/spoof-note", f"{feed_server}/unknown"]

    async def go() -> list[Any]:
        store = await store_for(redis_url)
        await store.seed_catalog()
        await feeds.refresh(store, urls)
        digests = Digests(store.redis, AsyncWebClient(token=TOKEN, base_url=slack.url), store)
        await digests.subscribe(Subscription(team="T0TEAM", channel="C0DIGEST", frequency="daily",
                                             created_by="U1", created_at=datetime(2026, 11, 1,
                                                                                  tzinfo=UTC)))
        await digests.run_due(datetime.now(UTC))
        return await store.records(GLOBAL) + await store.records("T0TEAM")

    stored = run(go())
    for rec in stored:
        for text in (rec.item, rec.vendor, rec.note, rec.source, rec.region):
            assert not _has_unsafe(text) and "\n" not in text, text
    bot.command("price h100", response_url=slack.response_url())
    history = slack.wait_for("response_url", 2)[1].body
    # the quote's announcement went to C0CHAN, where it was typed; the digest to its channel
    digest = next(c.body for c in slack.wait_for("chat.postMessage", 2)
                  if c.body.get("channel") == "C0DIGEST")
    for message in (history, digest):
        sections = [b["text"] for b in message["blocks"] if b["type"] == "section"]
        assert sections and all(t.get("verbatim") for t in sections)
        shown = "\n".join(t["text"] for t in sections)
        assert not _has_unsafe(shown)
        # the only mention is the bot's own of who entered the quote
        others = shown.replace("by <@U0ALICE>", "").replace("<@U0ALICE> recorded", "")
        assert "<!" not in others and "<@" not in others and "<https://evil" not in others
        assert "@channel" not in shown and "U0ALICE" not in digest_text(digest)
        assert not any(line.lstrip().startswith("• H100 SXM buy 1 CNY")
                       for line in shown.splitlines())
    history_text = "\n".join(b["text"]["text"] for b in history["blocks"] if "text" in b)
    assert "Evil Co • H100 SXM buy 1 CNY &lt;!here&gt; @\u2060channel" in history_text
    assert "failed" in json.dumps(digest["blocks"])  # the /unknown feed's failure is shown


def digest_text(message: dict[str, Any]) -> str:
    return json.dumps(message["blocks"], ensure_ascii=False) if "channel" in message else ""


def test_quotes_are_capped_per_workspace_and_rate_limited_per_user(redis_url: str) -> None:
    async def go() -> tuple[list[str], list[str], int]:
        store = await store_for(redis_url)
        limited = []
        for _ in range(pricecommands.QUOTE_LIMIT.count + 1):
            limited += await pricecommands.handle(store, team="TA", user="U1", today=date.today(),
                                                  is_admin=False, text="quote h20 buy 100k")
        filler = pricecommands.parse_quote("quote h20 buy 100k", team_user="U9",
                                           today=date.today())
        await store.redis.hset("gpusize:v1:prices:TB", mapping={
            f"q-{n}": filler.model_copy(update={"id": f"q-{n}"}).model_dump_json()
            for n in range(MAX_QUOTES)})
        full = await pricecommands.handle(store, team="TB", user="U2", today=date.today(),
                                          is_admin=False, text="quote h20 buy 90k")
        return limited, full, await store.count("TB")

    limited, full, stored = run(go())
    assert all("Recorded quote" in r for r in limited[:-1])
    assert "at most 20 quotes per person every 10 minutes" in limited[-1]
    assert f"already holds {MAX_QUOTES} quotes" in full[0] and stored == MAX_QUOTES


def test_price_books_are_cached_until_any_replica_changes_the_prices(redis_url: str) -> None:
    async def go() -> list[Any]:
        replica_a, replica_b = await store_for(redis_url), await store_for(redis_url)
        first = await replica_a.book_for("TA")
        again = await replica_a.book_for("TA")
        await pricecommands.handle(replica_b, team="TA", user="U1", today=date.today(),
                                   is_admin=False, text="quote h20 buy 99k vendor=B")
        changed = await replica_a.book_for("TA")
        qid = next(r.id for r in await replica_b.records("TA"))
        await replica_b.remove("TA", qid, user="U1", is_admin=False)
        removed = await replica_a.book_for("TA")
        other = await replica_a.book_for("TB")
        return [first, again, changed, removed, other]

    first, again, changed, removed, other = run(go())
    assert again is first and changed is not first and removed is not changed
    assert any(p.team_quote for p in changed.prices)
    assert not any(p.team_quote for p in removed.prices + other.prices)


def test_every_catalog_price_passes_the_plausibility_rule() -> None:
    for row in price_book().prices:
        check_price(item=row.item, kind=row.kind, gpus=row.gpus, low=row.low, high=row.high,
                    currency=row.currency, quoted=row.quoted, today=row.quoted)


def test_the_answer_book_keeps_every_price_an_answer_can_pick() -> None:
    from bot.pricestore import answer_rows

    base = price_book()
    quotes = [pricecommands.parse_quote(text, team_user="U1", today=TODAY) for text in (
        "quote h20 buy 100k vendor=A date=2026-11-01", "quote h20 buy 95k vendor=B",
        "quote h20 buy 90k vendor=C date=2026-10-01", "quote 4090 rent $0.3 vendor=D",
        "quote 8xh100 buy-server 2.1M vendor=E", "quote l40s rent 5 vendor=F date=2026-01-01")]
    full = base.with_prices(tuple(r.to_price() for r in [*catalog_records(), *quotes]))
    small = base.with_prices(answer_rows(full.prices, base))
    assert len(small.prices) < len(full.prices)
    for question in ("llama-3.1-70b lora gpu=h20 gpus=4", "13B lora gpu=4090 gpus=2",
                     "llama-3.1-70b inference gpu=h100 gpus=8", "7B qlora gpu=l40s gpus=1",
                     "llama-3.1-8b lora gpu=a800 gpus=8 currency=USD"):
        req = parse(question)
        spec, _ = resolve_model(req.model)
        a = answer_for(spec, req, book=full, today=TODAY).plans[0].cost
        b = answer_for(spec, req, book=small, today=TODAY).plans[0].cost
        assert a == b, question
    for card in ("h20", "rtx-4090", "h100-sxm", "l40s"):
        for kind in ("buy", "rent"):
            assert full.team_quoted(card, kind) == small.team_quoted(card, kind)


def test_price_history_is_one_table_per_kind_with_whole_links_and_no_ids() -> None:
    records = catalog_records()
    card = "rtx-4090"
    text = "\n".join(pricecommands.history(records, card, TODAY, currency="CNY"))
    shown = blockkit.mrkdwn(text)
    kinds = {r.kind for r in records if pricetables.card_of(r.item) == card}
    # one heading per kind that has a price, each once
    for kind in kinds:
        assert text.count(f"*{pricetables.KIND_TITLES[kind]}*") == 1, kind
    # every catalog source's URL is linked whole (a link cut at 120 characters is a 404)
    for rec in records:
        if pricetables.card_of(rec.item) == card and rec.origin == "catalog":
            url = re.search(r"https?://[^\s;,)]+", rec.source)
            if url:
                assert f"<{url.group(0)}|" in shown, url.group(0)
    assert "seed:" not in text and "(id `" not in text and "rent_card_hour" not in text
    # a price quoted in another currency shows the workspace's and the original
    assert re.search(r"· [\d,.]+k? \([\d,.]+k? USD\) ·", text)
    # rows are newest first within a kind
    rent = text.split("*Rent per GPU-hour*\n")[1].split("\n\n")[0].splitlines()
    dates = [line.split(" · ")[0].removeprefix("• ") for line in rent]
    assert dates == sorted(dates, reverse=True)
