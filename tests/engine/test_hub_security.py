"""Issue 26 item 6, the Hub side: HF_TOKEN never follows a redirect to another origin, and a Hub
that trickles its answer is cut at HUB_TIMEOUT_S with its thread and socket freed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from engine import hub
from engine.resolve import UnknownModel
from tests.engine.test_hub import CONFIG
from tests.harness import serve_http

TOKEN = "hf_not_for_other_hosts_0123456789"
TRICKLE = object()  # a plan's answer: the config a byte at a time


class Recorder(BaseHTTPRequestHandler):
    """One handler class per server (set up by `server`): records the Authorization each
    request carried, and answers as `plan` says for its path."""

    seen: ClassVar[list[tuple[str, str | None]]]
    plan: ClassVar[dict[str, Any]]

    def do_GET(self) -> None:
        type(self).seen.append((self.path, self.headers.get("Authorization")))
        action = next((v for k, v in type(self).plan.items() if self.path.endswith(k)), None)
        if isinstance(action, str):  # a redirect to there
            self.send_response(302)
            self.send_header("Location", action)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if action is TRICKLE:
            data = json.dumps(CONFIG).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try:
                for byte in data:  # one byte every 0.2 s: each read alone is never slow
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                type(self).closed.set()
            return
        data = json.dumps(CONFIG).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def server(plan: dict[str, Any]) -> tuple[Any, type[Recorder]]:
    handler = type("Handler", (Recorder,), {"seen": [], "plan": plan, "closed": threading.Event()})
    return serve_http(handler), handler


@pytest.fixture
def hub_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[Any]:
    import huggingface_hub
    import huggingface_hub.constants as constants

    monkeypatch.setenv("GPUSIZE_CACHE", str(tmp_path / "gpusize"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: TOKEN)
    servers: list[Any] = []

    def endpoint(plan: dict[str, Any]) -> tuple[str, type[Recorder]]:
        found, handler = server(plan)
        servers.append(found)
        url = f"http://127.0.0.1:{found.server_port}"
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.setattr(constants, "ENDPOINT", url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            url + "/{repo_id}/resolve/{revision}/{filename}")
        return url, handler

    yield endpoint
    for found in servers:
        found.shutdown()
        found.server_close()


def test_the_token_stays_with_its_origin(hub_env: Any) -> None:
    other, elsewhere = server({})
    try:
        target = f"http://127.0.0.1:{other.server_port}/cdn/config.json"
        _, hub_side = hub_env({"/test-org/moved/resolve/main/config.json":
                               "/test-org/renamed/resolve/main/config.json",
                               "/test-org/renamed/resolve/main/config.json": target})
        assert hub.lookup("test-org/moved").params > 0
    finally:
        other.shutdown()
        other.server_close()
    # the same origin (a renamed repo) keeps the token; another port is another origin
    assert [auth for _, auth in hub_side.seen] == [f"Bearer {TOKEN}", f"Bearer {TOKEN}"]
    assert elsewhere.seen == [("/cdn/config.json", None)]


def test_a_redirect_loop_ends(hub_env: Any) -> None:
    hub_env({"/test-org/loop/resolve/main/config.json": "/test-org/loop/resolve/main/config.json"})
    with pytest.raises(UnknownModel, match="ValueError"):
        hub.lookup("test-org/loop")


def test_a_trickling_hub_frees_its_thread_and_socket(hub_env: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_TIMEOUT_S", "1")
    _, handler = hub_env({"/test-org/slow/resolve/main/config.json": TRICKLE})
    before = {t.ident for t in threading.enumerate() if t.name == "hub-fetch"}
    start = time.monotonic()
    with pytest.raises(UnknownModel, match="TimeoutError"):
        hub.lookup("test-org/slow")
    took = time.monotonic() - start
    assert took < 2.2, f"{took:.2f} s for a 1 s deadline"
    left = [t for t in threading.enumerate() if t.name == "hub-fetch" and t.ident not in before]
    assert left == [], "the fetching thread outlived the deadline"
    # the bot's side closed the connection: the Hub's next write fails at once
    assert handler.closed.wait(3), "the socket stayed open after the deadline"
