"""Price history in Redis, team quotes (isolated per workspace), feeds and the CLI tools."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

import engine
from bot import feeds, pricecommands
from bot.pricestore import GLOBAL, PriceStore, catalog_records, newest
from engine.parse import ParseError, parse
from engine.resolve import resolve_model
from engine.sizing import answer_for
from present import blockkit
from tests.harness import Bot, SlackStub, free_port

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
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), FeedServer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
    assert "Chengdu IDC A" in history and "180,000 CNY" in history
    bot.command("13B lora gpu=h100 gpus=1")
    posted = json.dumps(slack.wait_for("chat.postMessage")[0].body["blocks"], ensure_ascii=False)
    assert "277k CNY" in posted  # 180k / 0.65: the workspace's quote, not the catalog's


def test_engine_default_book_is_the_catalog() -> None:
    plan = engine.ask("13B lora gpu=4090 gpus=2").plans[0]
    assert plan.cost.buy.capex == pytest.approx(40_000)  # seed 000's 2x 4090 server, midpoint
    assert datetime.now(UTC).year >= 2026
