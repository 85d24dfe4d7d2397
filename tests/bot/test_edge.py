"""Issue 16, item 5: what an unauthenticated request or connection can cost the bot (bot.edge).

Each test replays an attack over real HTTP against the bot as a real process."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Bot, SlackStub, free_port


def raw_post(bot: Bot, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(bot.url + "/slack/events", data=body, method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded",
                                          **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def high_water_kib(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def stream_chunked(bot: Bot, total: int, chunk: int = 1 << 16) -> bytes:
    """An unsigned POST with no Content-Length (chunked), `total` bytes of it, as fast as the
    bot reads; what the bot answered (the status line first)."""
    with socket.create_connection(("127.0.0.1", bot.port), timeout=10) as s:
        s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                  b"Content-Type: application/x-www-form-urlencoded\r\n\r\n")
        block = b"%x\r\n" % chunk + b"a" * chunk + b"\r\n"
        try:
            for _n in range(total // chunk):
                s.sendall(block)
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the bot answered 413 and closed: what we want
        return s.recv(4096)


@pytest.fixture
def edge_bot(make_bot: Any) -> Bot:
    return make_bot(MAX_BODY_BYTES="65536", HEADER_TIMEOUT_S="1", BODY_TIMEOUT_S="1",
                    MAX_WAITING_CONNECTIONS="50", METRICS_PORT=str(free_port()))


def test_oversized_bodies_are_413_and_never_buffered(edge_bot: Bot) -> None:
    before = high_water_kib(edge_bot.process.pid)
    # declared up front: refused before a byte of the body is read
    status, body = raw_post(edge_bot, b"x" * 70_000)
    assert status == 413 and json.loads(body) == {"error": "body too large"}
    # chunked, 20 MB with no Content-Length: refused once the limit is crossed
    reply = stream_chunked(edge_bot, 20 << 20)
    assert reply.startswith(b"HTTP/1.1 413")
    grown_mib = (high_water_kib(edge_bot.process.pid) - before) / 1024
    assert grown_mib < 10, f"peak memory grew {grown_mib:.0f} MiB for a 20 MB body"


def test_unsigned_bad_and_malformed_requests_get_4xx_never_a_traceback(edge_bot: Bot,
                                                                      slack: SlackStub) -> None:
    form = "application/x-www-form-urlencoded"
    cases = [
        (raw_post(edge_bot, b"payload=x"), 401),  # the red team's 500 with a traceback
        (raw_post(edge_bot, b"payload=x", {"X-Slack-Signature": "v0=" + "0" * 64,
                                           "X-Slack-Request-Timestamp": str(int(time.time()))}),
         401),
        (raw_post(edge_bot, b"payload=x", {"X-Slack-Signature": "v0=abc",
                                           "X-Slack-Request-Timestamp": "not-a-number"}), 401),
        (edge_bot.post(b"payload=x", form), 400),  # signed, but not JSON inside
        (edge_bot.post(b"payload=%5B1%5D", form), 400),  # signed, JSON but not an object
        (edge_bot.post(b"{not json", "application/json"), 400),
        (edge_bot.post(b"{}", "application/json"), 400),  # no type
        (edge_bot.post(b"command=%2Fgpusize&text=13B", form), 400),  # no team, user, channel
        (raw_post(edge_bot, b"\xff\xfe\x00", {"X-Slack-Signature": "v0=" + "0" * 64,
                                                "X-Slack-Request-Timestamp": "1"}), 401),
    ]
    for (status, body), expected in cases:
        text = body if isinstance(body, str) else body.decode()
        assert status == expected, (status, text)
        assert len(text) < 100 and "Traceback" not in text and json.loads(text)["error"]
    time.sleep(0.2)
    assert slack.of("chat.postMessage") == []
    assert edge_bot.command("help")[0] == 200  # and a signed command still works


def test_a_slow_body_is_cut_at_the_deadline(edge_bot: Bot) -> None:
    with socket.create_connection(("127.0.0.1", edge_bot.port), timeout=10) as s:
        s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
                  b"X-Slack-Signature: v0=00\r\nX-Slack-Request-Timestamp: 1\r\n\r\nabc")
        assert s.recv(4096).startswith(b"HTTP/1.1 408")


@pytest.fixture
def half_open(edge_bot: Bot) -> Iterator[list[socket.socket]]:
    sockets: list[socket.socket] = []
    yield sockets
    for s in sockets:
        s.close()


def test_half_open_sockets_cannot_hold_the_bot(edge_bot: Bot, slack: SlackStub,
                                               half_open: list[socket.socket]) -> None:
    pid = edge_bot.process.pid
    baseline = open_fds(pid)
    for _n in range(300):  # half a request each, then nothing: the red team's attack
        s = socket.create_connection(("127.0.0.1", edge_bot.port), timeout=5)
        s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nX-Slack-")
        half_open.append(s)
    # a signed command from Slack still gets its ack, and the health check answers
    status, _body = edge_bot.command("help")
    assert status == 200
    with urllib.request.urlopen(edge_bot.url + "/healthz", timeout=5) as r:
        assert r.status == 200
    # the bot holds at most MAX_WAITING_CONNECTIONS of them (the oldest are closed first) ...
    assert open_fds(pid) - baseline <= 50 + 10
    # ... and closes the rest once HEADER_TIMEOUT_S has passed
    deadline = time.monotonic() + 10
    for s in half_open:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(ConnectionResetError):  # closed with data unread: a reset
            assert s.recv(16) == b""  # closed by the bot
    status, _body = edge_bot.command("help")
    assert status == 200


def test_metrics_are_off_the_public_port(make_bot: Any) -> None:
    port = free_port()
    bot = make_bot(METRICS_PORT=str(port))
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(bot.url + "/metrics", timeout=5)
    assert info.value.code == 404
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        assert b"gpusize_edge_rejected_total" in r.read()


def test_logs_hold_no_body_and_every_line_is_capped_json(edge_bot: Bot) -> None:
    marker = "SECRETBODYMARKER"
    raw_post(edge_bot, urllib.parse.urlencode({"payload": marker * 3000}).encode()[:60_000],
             {"X-Slack-Signature": "v0=" + "1" * 64,
              "X-Slack-Request-Timestamp": str(int(time.time()))})
    raw_post(edge_bot, b"payload=" + marker.encode())
    edge_bot.command("help")
    edge_bot.stop()  # uvicorn's own shutdown lines too
    log = edge_bot.log.read_bytes()
    assert marker.encode() not in log
    lines = [line for line in log.splitlines() if line.strip()]
    assert lines
    for line in lines:
        assert len(line) <= 2048, line[:200]
        json.loads(line)  # uvicorn's start and stop lines included
    assert any(json.loads(line)["logger"].startswith("uvicorn") for line in lines)
