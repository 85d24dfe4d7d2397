"""Real parts for the bot's tests and benches: a throwaway redis-server, a Slack Web API stand-in
that records every request body, and the bot itself as a real HTTP server in its own process.

tests/bot/conftest.py wraps these in fixtures; bench/ imports them as `tests.harness`."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from slack_sdk.signature import SignatureVerifier

SECRET = "test-signing-secret"
TOKEN = "xoxb-test-token"
TEAM = "T0TEAM"
BOT_USER = "UBOT0001"
REDIS_SERVER = shutil.which("redis-server")


_TRIGGERS = itertools.count(1)


def next_trigger_id() -> str:
    """Unique per request, as Slack's are: two commands alike in every other field are still two
    (bot.listeners.commands dedupes replays on the request's timestamp and body)."""
    return f"{next(_TRIGGERS)}.{os.getpid()}.{time.time_ns()}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- Redis ---------------------------------------------------------------------------------------


@dataclass
class RedisServer:
    port: int
    directory: Path
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *, appendonly: bool = False) -> None:
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--enable-debug-command", "local",
                "--appendonly", "yes" if appendonly else "no", "--dir", str(self.directory)]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def command(self, *parts: str) -> Any:
        import redis

        return redis.Redis.from_url(self.url, decode_responses=True).execute_command(*parts)

    def wait_for_conversation(self, thread_ts: str, *, field: str = "_stage",
                              timeout: float = 10) -> dict[str, str]:
        """The bot stores a conversation right after posting its first message: wait for it."""
        key = f"gpusize:v1:conv:T0TEAM:C0CHAN:{thread_ts}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.command("HGETALL", key)
            if field in state:
                return state
            time.sleep(0.02)
        raise AssertionError(f"no conversation stored at {key}")


# -- the Slack Web API stand-in -------------------------------------------------------------------


@dataclass
class Call:
    method: str
    body: dict[str, Any]


@dataclass
class SlackStub:
    port: int
    calls: list[Call] = field(default_factory=list)
    not_in_channel: set[str] = field(default_factory=set)
    fail_next: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0  # answer every Web API call this late (timeouts)
    retry_after: str = "1"  # the Retry-After a 429 carries
    locales: dict[str, str] = field(default_factory=dict)  # users.info locale per user
    admins: set[str] = field(default_factory=set)
    home_teams: dict[str, str] = field(default_factory=dict)  # Slack Connect: another org's users
    messages: list[dict[str, Any]] = field(default_factory=list)  # what chat.postMessage posted
    lock: threading.Lock = field(default_factory=threading.Lock)
    ts: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, name: str = "r1") -> str:
        return f"http://127.0.0.1:{self.port}/response/{name}"

    def of(self, method: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 10) -> list[Call]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.of(method)
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"expected {count} {method} call(s), got {self.of(method)}")

    def clear(self) -> None:
        with self.lock:
            self.calls.clear()

    def read_back(self, method: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        """conversations.history (top-level, newest first) or .replies (a thread, oldest first),
        with metadata only when include_all_metadata is asked for, as Slack does."""
        with self.lock:
            posted = [m for m in self.messages if m["channel"] == body.get("channel")]
        if method == "conversations.history":
            found = [m for m in reversed(posted) if not m["thread_ts"]]
        else:
            found = [m for m in posted if body.get("ts") in (m["ts"], m["thread_ts"])]
        with_meta = str(body.get("include_all_metadata")).lower() in ("1", "true")
        return [{"type": "message", "ts": m["ts"], "text": m["text"],
                 **({"thread_ts": m["thread_ts"]} if m["thread_ts"] else {}),
                 **({"metadata": m["metadata"]} if with_meta and m["metadata"] else {})}
                for m in found]


def stub_handler(stub: SlackStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.startswith("/upload/"):  # files_upload_v2's second step: raw bytes
                with stub.lock:
                    stub.calls.append(Call("upload", {"file": self.path.rsplit("/", 1)[-1],
                                                      "bytes": data}))
                self._reply(200, {"ok": True})
                return
            raw = data.decode()
            query = urllib.parse.urlparse(self.path).query
            if query:  # params sent in the query string (files.getUploadURLExternal)
                raw = raw + ("&" if raw else "") + query
            if "json" in (self.headers.get("Content-Type") or ""):
                body = json.loads(raw or "{}")
            else:
                body = {k: v[0] for k, v in urllib.parse.parse_qs(raw).items()}
                for key in ("blocks",):
                    if isinstance(body.get(key), str):
                        body[key] = json.loads(body[key])
            path = self.path.split("?", 1)[0]  # auth.test arrives as auth.test?team_id=T...
            method = path.rsplit("/", 1)[-1] if path.startswith("/api/") else "response_url"
            with stub.lock:
                stub.calls.append(Call(method, body))
            if stub.delay_s and method != "auth.test":
                time.sleep(stub.delay_s)
            with stub.lock:
                # failures are for chat.postMessage unless an entry names another method
                failure = None
                if stub.fail_next and stub.fail_next[0].get("method", "chat.postMessage") == method:
                    failure = stub.fail_next.pop(0)
            reply: dict[str, Any] = {"ok": True}
            status = 200
            if failure:
                status = failure.get("status", 200)
                reply = failure.get("body", {"ok": False, "error": "fatal_error"})
            elif method == "auth.test":
                reply |= {"user_id": BOT_USER, "bot_id": "BBOT0001", "team_id": TEAM,
                          "user": "gpusize", "team": "test", "url": "https://test.slack.com/"}
            elif method == "chat.postMessage":
                if body.get("channel") in stub.not_in_channel:
                    reply = {"ok": False, "error": "not_in_channel"}
                else:
                    reply |= {"channel": body.get("channel"), "ts": f"1700000000.{next(stub.ts):06d}"}
                    with stub.lock:  # as Slack keeps it: history and replies read it back
                        stub.messages.append({"channel": body.get("channel"), "ts": reply["ts"],
                                              "thread_ts": body.get("thread_ts"),
                                              "text": body.get("text"),
                                              "metadata": body.get("metadata")})
            elif method in ("conversations.history", "conversations.replies"):
                reply |= {"messages": stub.read_back(method, body), "has_more": False}
            elif method == "chat.update":
                reply |= {"channel": body.get("channel"), "ts": body.get("ts")}
            elif method == "users.info":
                user = body.get("user", "")
                reply |= {"user": {"id": user, "locale": stub.locales.get(user, "en-US"),
                                   "is_admin": user in stub.admins, "tz": "Asia/Shanghai",
                                   "team_id": stub.home_teams.get(user, TEAM)}}
            elif method == "files.getUploadURLExternal":
                file_id = f"F{next(stub.ts):06d}"
                reply |= {"file_id": file_id,
                          "upload_url": f"http://127.0.0.1:{stub.port}/upload/{file_id}"}
            elif method == "files.completeUploadExternal":
                files = body.get("files")
                files = json.loads(files) if isinstance(files, str) else files or []
                reply |= {"files": [{"id": f["id"], "title": f.get("title")} for f in files]}
            elif method in ("views.open", "views.update", "views.publish", "views.push"):
                # the view as Slack keeps it: an id to update it by (views.update names it)
                view = body.get("view")
                view = json.loads(view) if isinstance(view, str) else dict(view or {})
                view_id = body.get("view_id") or f"V{next(stub.ts):06d}"
                reply |= {"view": {**view, "id": view_id}}
            elif method == "chat.getPermalink":
                ts = str(body.get("message_ts", "")).replace(".", "")
                reply |= {"permalink": f"https://test.slack.com/archives/{body.get('channel')}/p{ts}"}
            elif method == "conversations.open":  # the bot's direct message with a person
                reply |= {"channel": {"id": "D" + str(body.get("users", "")).lstrip("UW")}}
            elif method == "files.info":
                reply |= {"file": {"id": body.get("file")}}
            elif method == "conversations.info":  # the bot is a member unless told otherwise
                channel = body.get("channel", "")
                reply |= {"channel": {"id": channel, "is_channel": True, "is_archived": False,
                                      "is_member": channel not in stub.not_in_channel}}
            self._reply(status, reply)

        def do_GET(self) -> None:
            self.do_POST()

        def _reply(self, status: int, reply: dict[str, Any]) -> None:
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if status == 429:
                self.send_header("Retry-After", stub.retry_after)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


# -- the bot ------------------------------------------------------------------------------------


@dataclass
class Bot:
    env: dict[str, str]
    port: int
    process: subprocess.Popen | None = None
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str:
        """/metrics, on its own port (METRICS_PORT): one free port per bot, so bots in one test
        never share it."""
        return f"http://127.0.0.1:{self.env['METRICS_PORT']}/metrics"

    def start(self) -> Bot:
        self.env.setdefault("METRICS_PORT", str(free_port()))
        exe = shutil.which("gpusize", path=str(Path(sys.executable).parent))
        cmd = [exe] if exe else [sys.executable, "-m", "gpusize"]
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen([*cmd, "serve", "--host=127.0.0.1"],
                                        env={**os.environ, **self.env, "PORT": str(self.port)},
                                        stdout=out, stderr=out)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"bot exited: {self.log.read_text() if self.log else ''}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=0.5) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("bot did not start")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            # the bot drains running answers for up to SHUTDOWN_GRACE_S (20 s) after the HTTP
            # server's own grace: a loaded machine needs that long, a bot that never stops fails
            self.process.wait(timeout=30)
        self.process = None

    def kill(self) -> None:
        if self.process:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    # signed requests, exactly as Slack sends them

    def post(self, body: bytes, content_type: str, *, timestamp: int | None = None,
             secret: str = SECRET, headers: dict[str, str] | None = None) -> tuple[int, str]:
        ts = str(timestamp if timestamp is not None else int(time.time()))
        signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
        req = urllib.request.Request(self.url + "/slack/events", data=body, method="POST",
                                     headers={"Content-Type": content_type,
                                              "X-Slack-Request-Timestamp": ts,
                                              "X-Slack-Signature": signature, **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def command(self, text: str, *, channel: str = "C0CHAN", user: str = "U0ALICE",
                response_url: str = "", team: str = TEAM, **kw: Any) -> tuple[int, str]:
        form = {"token": "legacy", "team_id": team, "team_domain": "test", "channel_id": channel,
                "channel_name": "general", "user_id": user, "user_name": "alice",
                "command": "/gpusize", "text": text, "api_app_id": "A0APP",
                "response_url": response_url, "trigger_id": next_trigger_id()}
        return self.post(urllib.parse.urlencode(form).encode(),
                         "application/x-www-form-urlencoded", **kw)

    def event(self, event: dict[str, Any], *, event_id: str, team: str = TEAM,
              **kw: Any) -> tuple[int, str]:
        body = {"token": "legacy", "team_id": team, "api_app_id": "A0APP", "type": "event_callback",
                "event_id": event_id, "event_time": int(time.time()), "event": event,
                "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]}
        return self.post(json.dumps(body).encode(), "application/json", **kw)

    def action(self, *, action_id: str, value: str | None, message_ts: str,
               thread_ts: str | None = None, channel: str = "C0CHAN", user: str = "U0BOB",
               selected: str | None = None, action_ts: str | None = None,
               element: str = "static_select") -> tuple[int, str]:
        """A button press, or with `selected` a choice in a select (or `element="overflow"`,
        the menu under an answer)."""
        action: dict[str, Any] = {"action_id": action_id, "block_id": "b", "type": "button",
                                  "action_ts": action_ts or f"{time.time():.6f}"}
        if selected is not None:
            action |= {"type": element, "selected_option": {
                "text": {"type": "plain_text", "text": selected}, "value": selected}}
        else:
            action["value"] = value
        message = {"ts": message_ts, "type": "message", "user": BOT_USER}
        if thread_ts:
            message["thread_ts"] = thread_ts
        payload = {"type": "block_actions", "team": {"id": TEAM}, "api_app_id": "A0APP",
                   "user": {"id": user, "team_id": TEAM}, "channel": {"id": channel},
                   "container": {"type": "message", "message_ts": message_ts, "channel_id": channel},
                   "message": message, "actions": [action], "trigger_id": "1.2.3",
                   "response_url": ""}
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        return self.post(body, "application/x-www-form-urlencoded")


    def interaction(self, payload: dict[str, Any], **kw: Any) -> tuple[int, str]:
        """Any interactive payload as Slack posts it (a form's submission, a model menu's
        options request, a shortcut): form-encoded JSON under `payload`."""
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        return self.post(body, "application/x-www-form-urlencoded", **kw)


class _StandIn(ThreadingHTTPServer):
    """A stand-in server whose handler errors are kept, not printed: a client that gave up (a
    deadline test) is normal, and a traceback printed from this thread on 3.11 parses source
    for its carets, racing any test's ast.parse (python/cpython#106905)."""

    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.errors: list[BaseException] = []

    def handle_error(self, request: object, client_address: object) -> None:
        error = sys.exc_info()[1]
        if error is not None and not isinstance(error, ConnectionError):
            self.errors.append(error)
            sys.stderr.write(f"stand-in {self.server_address}: {error!r}\n")


def serve_http(handler: type[BaseHTTPRequestHandler], *, port: int = 0) -> ThreadingHTTPServer:
    """Serve `handler` on loopback (port 0: any free one) in daemon threads: the stand-ins for
    Slack, the Hub and price feeds. `shutdown()` the result to stop it."""
    server = _StandIn(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    return server


def serve_stub(stub: SlackStub) -> ThreadingHTTPServer:
    """Serve the Slack stand-in on its port; `shutdown()` the result to stop it."""
    return serve_http(stub_handler(stub), port=stub.port)


def http_status(url: str, *, timeout: float = 15) -> int:
    """The HTTP status of a GET, errors included (503 is an answer, not an exception)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code


def child_pids(pid: int) -> list[int]:
    """Processes whose parent is `pid` (answer workers, multiprocessing's helpers), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def process_alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent to read its exit."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
