"""Issue 16, items 1 and 5, replayed: what an unauthenticated request, a half-open socket or a slow
Hugging Face Hub can cost the bot. Prints, per attack, tried / held and the figures.

Starts the real parts on loopback, as bench/bench_load.py does: a throwaway redis-server, the
Slack Web API stand-in, a Hub stand-in (HF_ENDPOINT; answers 404 for unknown repos, after
--hub-delay seconds) and the bot as its own process with its default edge settings.

Run: .venv/bin/python bench/attacks_edge.py [--hub-delay 4] [--half-open 1100]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.engine.test_hub import FakeHub
from tests.harness import (
    SECRET,
    TOKEN,
    Bot,
    RedisServer,
    SlackStub,
    free_port,
    serve_http,
    serve_stub,
)

RESULTS: list[tuple[str, str, str]] = []


def result(attack: str, held: bool, figures: str) -> None:
    RESULTS.append((attack, "held" if held else "FAILED", figures))
    print(f"{'HELD  ' if held else 'FAILED'} {attack}: {figures}", flush=True)


def proc_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def reset_peak(pid: int) -> None:
    """Start VmHWM again from the current RSS (Linux: clear_refs 5), so the peak is the attack's."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def post(url: str, body: bytes, headers: dict[str, str] | None = None,
         timeout: float = 30) -> tuple[int, bytes, float]:
    req = urllib.request.Request(url + "/slack/events", data=body, method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded",
                                          **(headers or {})})
    start = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), time.monotonic() - start
    except urllib.error.HTTPError as err:
        return err.code, err.read(), time.monotonic() - start
    except OSError:
        return 0, b"", time.monotonic() - start


def healthz(bot: Bot) -> tuple[int, float]:
    start = time.monotonic()
    try:
        with urllib.request.urlopen(bot.url + "/healthz", timeout=10) as r:
            return r.status, time.monotonic() - start
    except OSError:
        return 0, time.monotonic() - start


def big_post(bot: Bot, total: int, *, chunked: bool) -> bytes:
    """An unsigned POST of `total` bytes, sent as fast as the bot takes them; its reply."""
    length = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % total
    with socket.create_connection(("127.0.0.1", bot.port), timeout=30) as s:
        s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\n" + length + b"\r\n\r\n")
        block = (b"%x\r\n" % (1 << 16) + b"a" * (1 << 16) + b"\r\n") if chunked \
            else b"a" * (1 << 16)
        try:
            for _n in range(total >> 16):
                s.sendall(block)
            if chunked:
                s.sendall(b"0\r\n\r\n")
        except OSError:
            pass
        try:
            return s.recv(64)
        except OSError:
            return b""


def attack_big_bodies(bot: Bot) -> None:
    pid = bot.process.pid
    for how in ("declared", "chunked"):
        reset_peak(pid)
        before_rss, before_hwm = proc_kib(pid, "VmRSS"), proc_kib(pid, "VmHWM")
        reply = big_post(bot, 50 << 20, chunked=how == "chunked")
        status = int(reply.split()[1]) if reply.startswith(b"HTTP/") else 0
        peak = proc_kib(pid, "VmHWM")
        result(f"50 MB unsigned POST ({how} length)", status == 413 and peak - before_rss < 20_480,
               f"status {status}; bot RSS {before_rss / 1024:.0f} MiB before, peak "
               f"{peak / 1024:.0f} MiB during (VmHWM {before_hwm / 1024:.0f} MiB at start); "
               f"pod limit 384 MiB")


def attack_bad_requests(bot: Bot, log: Path) -> None:
    now = str(int(time.time()))
    bad_sig = {"X-Slack-Signature": "v0=" + "0" * 64, "X-Slack-Request-Timestamp": now}
    cases = {
        "unsigned payload=x": (post(bot.url, b"payload=x"), 401),
        "bad signature": (post(bot.url, b"command=/gpusize&text=13B", bad_sig), 401),
        "stale timestamp": (post(bot.url, b"payload=x", {**bad_sig,
                                                         "X-Slack-Request-Timestamp": "1"}), 401),
        "timestamp not a number": (post(bot.url, b"payload=x", {
            **bad_sig, "X-Slack-Request-Timestamp": "abc"}), 401),
    }
    signed_status, signed_body = bot.post(b"payload=x", "application/x-www-form-urlencoded")
    json_status, json_body = bot.post(b"{nope", "application/json")
    figures = []
    held = True
    for name, ((status, body, _took), want) in cases.items():
        held &= status == want and b"Traceback" not in body
        figures.append(f"{name} {status} ({len(body)} B)")
    for name, status, body, want in (("signed payload=x", signed_status, signed_body, 400),
                                     ("signed bad JSON", json_status, json_body, 400)):
        held &= status == want and "Traceback" not in body
        figures.append(f"{name} {status} ({len(body)} B)")
    result("unsigned, forged and malformed requests", held, "; ".join(figures))
    # log amplification: 100 forged requests with 60 KB bodies
    size = log.stat().st_size
    marker = b"MARKER" * 10_000
    for _n in range(100):
        post(bot.url, b"text=" + marker, bad_sig)
    time.sleep(0.5)
    written = log.stat().st_size - size
    body_logged = b"MARKER" in log.read_bytes()
    longest = max((len(line) for line in log.read_bytes().splitlines()), default=0)
    result("100 forged 60 KB bodies: log amplification", not body_logged and longest <= 2048,
           f"{written / 100:.0f} log bytes per request; body in the log: {body_logged}; "
           f"longest log line {longest} B")


def attack_half_open(bot: Bot, count: int) -> None:
    pid = bot.process.pid
    fds_before = len(os.listdir(f"/proc/{pid}/fd"))
    sockets = []
    for _n in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", bot.port), timeout=5)
            s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nX-Slack-")
            sockets.append(s)
        except OSError:
            break
    time.sleep(0.5)
    fds_during = len(os.listdir(f"/proc/{pid}/fd"))
    start = time.monotonic()
    status, _body = bot.command("help", user="U0HALF")
    ack = time.monotonic() - start
    health, health_s = healthz(bot)
    time.sleep(6)  # HEADER_TIMEOUT_S (5 s) has passed for all of them
    closed = 0
    for s in sockets:
        s.settimeout(0.05)
        try:
            closed += s.recv(16) == b""
        except ConnectionResetError:
            closed += 1
        except OSError:
            pass
        s.close()
    result(f"{len(sockets)} half-open sockets (half a header each)",
           status == 200 and ack < 3 and health == 200,
           f"signed command ack {status} in {ack:.2f} s, /healthz {health} in {health_s:.2f} s; "
           f"bot fds {fds_before} before, {fds_during} during; {closed} of {len(sockets)} "
           f"closed by the bot within 6.5 s")


def fetched(prefix: str) -> int:
    return sum(1 for r in FakeHub.requests if f"/test-org/{prefix}" in r)


def answer_latency(bot: Bot, slack: SlackStub, channel: str) -> float:
    """Seconds from a catalog command in `channel` to its answer posted there."""
    start = time.monotonic()
    bot.command("13B lora", user="U0BOB", channel=channel)
    while time.monotonic() - start < 120:
        if any(c.body.get("channel") == channel for c in slack.of("chat.postMessage")):
            return time.monotonic() - start
        time.sleep(0.02)
    return float("inf")


def attack_hub(bot: Bot, slack: SlackStub, delay: float) -> None:
    FakeHub.requests, FakeHub.delay_s = [], delay
    acks: list[float] = []
    alice: list[tuple[int, str, float]] = []

    def alice_asks(n: int) -> None:
        start = time.monotonic()
        status, body = bot.command(f"test-org/unknown-{n} lora", user="U0ALICE",
                                   response_url=slack.response_url(f"alice{n}"))
        alice.append((status, body, time.monotonic() - start))

    with ThreadPoolExecutor(10) as pool:
        futures = [pool.submit(alice_asks, n) for n in range(100)]
        health_s = []
        while not all(f.done() for f in futures):
            start = time.monotonic()
            bot.command("13B lora", user="U0BOB")
            acks.append(time.monotonic() - start)
            health_s.append(healthz(bot)[1])
    answer_s = answer_latency(bot, slack, "C0BOBANSWER")  # while alice's look-ups wait
    accepted = sum(1 for s, b, _t in alice if s == 200 and b == "")
    limited = sum(1 for _s, b, _t in alice if "new models" in b)
    alice_max = max(t for _s, _b, t in alice)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(
            "could not be fetched" in c.body.get("text", "")
            for c in slack.of("response_url")) < accepted:
        time.sleep(0.1)
    told = sum("could not be fetched" in c.body.get("text", "") for c in slack.of("response_url"))
    result(f"Hub {delay:g} s slow, one user names 100 unknown repos",
           max(acks) < 3 and max(health_s) < 3 and alice_max < 3 and told == accepted,
           f"other user's ack p50 {statistics.median(acks) * 1000:.0f} ms, max "
           f"{max(acks) * 1000:.0f} ms ({len(acks)} acks), their answer {answer_s:.2f} s; "
           f"/healthz max {max(health_s) * 1000:.0f} ms; the user's own acks max "
           f"{alice_max * 1000:.0f} ms; {accepted} accepted and looked up after the ack "
           f"({told} told privately why not), {limited} refused by the limit in the ack; "
           f"Hub requests {fetched('unknown-')}")
    # another user, 20 s of trying: new ids and the same ids again
    FakeHub.delay_s = 0.0
    start, commands = time.monotonic(), 0
    while time.monotonic() - start < 20:
        bot.command(f"test-org/again-{commands % 50} lora", user="U0CAROL",
                    response_url=slack.response_url("carol"))
        commands += 1
    time.sleep(1)
    requests = fetched("again-")
    result("one user hammering new and repeated repo ids for 20 s", requests <= 10,
           f"{commands} commands, {requests} Hub requests (~{requests * 3:.0f}/min in this "
           f"window; at most 10 per user per 10 minutes, a miss remembered for an hour)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub-delay", type=float, default=4)
    parser.add_argument("--half-open", type=int, default=1100)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        redis = RedisServer(port=free_port(), directory=tmpdir)
        redis.start()
        slack = SlackStub(port=free_port())
        stub = serve_stub(slack)
        hub = serve_http(FakeHub)
        log = tmpdir / "bot.log"
        env = {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET, "REDIS_URL": redis.url,
               "SLACK_API_URL": slack.url, "METRICS_PORT": str(free_port()),
               "HF_ENDPOINT": f"http://127.0.0.1:{hub.server_port}",
               "HF_HOME": str(tmpdir / "hf"), "GPUSIZE_CACHE": str(tmpdir / "cache")}
        bot = Bot(env=env, port=free_port(), log=log).start()
        try:
            attack_big_bodies(bot)
            attack_bad_requests(bot, log)
            attack_half_open(bot, args.half_open)
            attack_hub(bot, slack, args.hub_delay)
            entries = list((tmpdir / "cache").rglob("*.json"))
            print(f"Hub cache: {len(entries)} entries, "
                  f"{sum(p.stat().st_size for p in entries)} bytes; huggingface_hub cache files: "
                  f"{sum(1 for p in (tmpdir / 'hf').rglob('*') if p.is_file())}")
        finally:
            bot.stop()
            hub.shutdown()
            stub.shutdown()
            redis.stop()
    held = sum(1 for _a, h, _f in RESULTS if h == "held")
    print(f"\n{held} of {len(RESULTS)} attacks held")
    print(json.dumps([{"attack": a, "outcome": h, "figures": f} for a, h, f in RESULTS],
                     ensure_ascii=False, indent=1))
    return 0 if held == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
