"""The HTTP half of deploy/smoke.sh, standard library only (smoke.sh runs it in containers of
the image under test): a stand-in for Slack's Web API and for the Hugging Face Hub, and the
checks against the bot.

    python3 deploy/smoke.py standin --port 3391 --log calls.jsonl     # until killed
    python3 deploy/smoke.py check --bot http://127.0.0.1:3390 --standin-log calls.jsonl \
        --secret S --response-url http://127.0.0.1:3391/response/r1
    python3 deploy/smoke.py expect http://127.0.0.1:3390/readyz 200 --contains unreachable

Each check prints one line, PASS or FAIL, its name and what was seen; the exit status is the
number of failures (0: all passed).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TEAM = "T0SMOKE"
# bot.settings.DEFAULT_METRICS_PORT (this file runs without the bot's package too)
DEFAULT_METRICS_PORT = 9478
BOT_USER = "U0SMOKEBOT"
USER_EN = "U0SMOKEEN"
USER_ZH = "U0SMOKEZH"  # users.info says zh-CN: the bot answers this user in Chinese
ACK_LIMIT_S = 3.0  # Slack shows an error when a slash command is not acknowledged by then
# The Hub stand-in (HF_ENDPOINT) serves one repo: a small Qwen2-shaped config, made up for the
# test (494,032,768 parameters by the engine's count), as transformers writes the fields.
HUB_REPO = "smoke-org/tiny-qwen"
HUB_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
    "intermediate_size": 4864, "num_attention_heads": 14, "num_key_value_heads": 2,
    "num_hidden_layers": 24, "vocab_size": 151936, "tie_word_embeddings": True,
    "max_position_embeddings": 32768, "use_sliding_window": False, "sliding_window": 32768,
}


# -- the Slack Web API stand-in -----------------------------------------------------------------


def standin_reply(method: str, body: dict[str, Any], counter: Callable[[], int]) -> dict[str, Any]:
    """What Slack would answer to one Web API call (only what the bot's answer path needs)."""
    reply: dict[str, Any] = {"ok": True}
    if method == "auth.test":
        reply |= {"user_id": BOT_USER, "bot_id": "B0SMOKE", "team_id": TEAM, "user": "gpusize",
                  "team": "smoke", "url": "https://smoke.slack.com/"}
    elif method in ("chat.postMessage", "chat.postEphemeral"):
        reply |= {"channel": body.get("channel"), "ts": f"1700000000.{counter():06d}"}
    elif method == "chat.update":
        reply |= {"channel": body.get("channel"), "ts": body.get("ts")}
    elif method == "users.info":
        user = str(body.get("user", ""))
        reply |= {"user": {"id": user, "locale": "zh-CN" if user == USER_ZH else "en-US",
                           "is_admin": False, "tz": "Asia/Shanghai"}}
    return reply


def parse_body(data: bytes, content_type: str) -> dict[str, Any]:
    if "json" in content_type:
        try:
            parsed = json.loads(data or b"{}")
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {k: v[0] for k, v in urllib.parse.parse_qs(data.decode("utf-8", "replace")).items()}


def serve_standin(port: int, log_path: str) -> ThreadingHTTPServer:
    """Start the stand-in on 127.0.0.1:port; every call is appended to log_path as a JSON line."""
    lock = threading.Lock()
    count = iter(range(1, 10**9))

    def counter() -> int:
        with lock:
            return next(count)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path, _, query = self.path.partition("?")
            # GET-style calls (users.info) carry their arguments in the query string
            body = {k: v[0] for k, v in urllib.parse.parse_qs(query).items()}
            body |= parse_body(data, self.headers.get("Content-Type", ""))
            method = path.rsplit("/", 1)[-1] if path.startswith("/api/") else "response_url"
            with lock, open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"method": method, "body": body}, ensure_ascii=False) + "\n")
            out = json.dumps(standin_reply(method, body, counter)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def do_GET(self) -> None:
            if not self._hub(body=True):
                self.do_POST()

        def do_HEAD(self) -> None:
            if not self._hub(body=False):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def _hub(self, body: bool) -> bool:
            """The Hub's file download (HEAD for metadata, then GET): True if it answered."""
            if not (self.path.startswith(f"/{HUB_REPO}/resolve/") and self.path.endswith("/config.json")):
                return False
            data = json.dumps(HUB_CONFIG).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("ETag", '"' + hashlib.sha1(data).hexdigest() + '"')
            self.send_header("X-Repo-Commit", "0" * 40)
            self.end_headers()
            if body:
                self.wfile.write(data)
            return True

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# -- the checks ----------------------------------------------------------------------------------


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """Slack's request signature: v0= HMAC-SHA256 of "v0:{timestamp}:{body}" with the secret."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def request(url: str, data: bytes | None = None, headers: dict[str, str] | None = None,
            timeout: float = 10) -> tuple[int, str]:
    req = urllib.request.Request(url, data=data, headers=headers or {},
                                 method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")


def slash_command(bot: str, secret: str, text: str, user: str, response_url: str,
                  signature: str | None = None) -> tuple[int, str, float]:
    form = {"token": "legacy", "team_id": TEAM, "team_domain": "smoke", "channel_id": "C0SMOKE",
            "channel_name": "general", "user_id": user, "user_name": "smoke",
            "command": "/gpusize", "text": text, "api_app_id": "A0SMOKE",
            "response_url": response_url, "trigger_id": "1.2.3"}
    body = urllib.parse.urlencode(form).encode()
    ts = str(int(time.time()))
    headers = {"Content-Type": "application/x-www-form-urlencoded",
               "X-Slack-Request-Timestamp": ts,
               "X-Slack-Signature": signature or sign(secret, ts, body)}
    start = time.monotonic()
    status, reply = request(bot + "/slack/events", body, headers)
    return status, reply, time.monotonic() - start


def calls(log_path: str) -> list[dict[str, Any]]:
    try:
        with open(log_path, encoding="utf-8") as log:
            return [json.loads(line) for line in log if line.strip()]
    except FileNotFoundError:
        return []


def wait_for_post(log_path: str, seen: int, wanted: Callable[[str], bool],
                  timeout: float) -> tuple[dict[str, Any] | None, list[str]]:
    """The first answer posted after `seen` calls (chat.postMessage or the response_url) whose
    JSON passes `wanted`, and the methods of every call seen meanwhile."""
    deadline = time.monotonic() + timeout
    methods: list[str] = []
    while time.monotonic() < deadline:
        new = calls(log_path)[seen:]
        methods = [c["method"] for c in new]
        for call in new:
            if call["method"] in ("chat.postMessage", "response_url", "chat.postEphemeral") and \
                    wanted(json.dumps(call["body"], ensure_ascii=False)):
                return call, methods
        time.sleep(0.2)
    return None, methods


class Report:
    def __init__(self) -> None:
        self.failures = 0

    def check(self, name: str, ok: bool, detail: str) -> bool:
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)
        self.failures += not ok
        return ok


def run_checks(bot: str, secret: str, log_path: str, response_url: str, wait_s: float,
               post_wait_s: float = 30, metrics: str = "") -> int:
    """Health, readiness, metrics, a forged and two signed slash commands: the failure count.
    `metrics`: the /metrics URL (METRICS_PORT, DEFAULT_METRICS_PORT on the bot's host)."""
    report = Report()
    start, status, body = time.monotonic(), 0, ""
    while time.monotonic() - start < wait_s:
        try:
            status, body = request(bot + "/healthz", timeout=2)
            if status == 200:
                break
        except OSError:
            pass
        time.sleep(0.5)
    if not report.check("healthz", status == 200 and body == "ok",
                        f"{status} {body!r} after {time.monotonic() - start:.1f} s"):
        return report.failures  # nothing else can answer
    status, body = request(bot + "/readyz")
    report.check("readyz (Redis answers)", status == 200 and '"ready":true' in body.replace(" ", ""),
                 f"{status} {body}")
    metrics = metrics or urllib.parse.urlsplit(bot)._replace(
        netloc=f"{urllib.parse.urlsplit(bot).hostname}:{DEFAULT_METRICS_PORT}").geturl()
    public, _body = request(bot + "/metrics")
    status, body = request(metrics.rstrip("/") + "/metrics")
    report.check("metrics (own port, not the public one)",
                 status == 200 and "gpusize_commands_total" in body and public == 404,
                 f"{status}, {len(body.splitlines())} lines; public port: {public}")

    status, reply, _ = slash_command(bot, secret, "13B full-finetune", USER_EN, response_url,
                                     signature="v0=" + "0" * 64)
    report.check("forged signature refused", status == 401, f"{status}")

    # the answer's header: the verdict ("13B full fine-tune → rent 16 × RTX 3090")
    for user, text, marker in ((USER_EN, "13B full-finetune", "13B full fine-tune → "),
                               (USER_ZH, "13B 全参微调", "13B 全参微调 → ")):
        seen = len(calls(log_path))
        status, reply, took = slash_command(bot, secret, text, user, response_url)
        report.check(f"signed /gpusize {text}: ack", status == 200 and took < ACK_LIMIT_S,
                     f"{status} in {took:.2f} s {reply[:80]!r}")
        post, methods = wait_for_post(log_path, seen, lambda shown, m=marker: m in shown,
                                      post_wait_s)
        report.check(f"signed /gpusize {text}: answer posted", post is not None,
                     f"{post['method']} with {marker!r}" if post
                     else f"nothing with {marker!r} within {post_wait_s:g} s; calls: {methods}")
    return report.failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("standin", help="serve the Slack Web API stand-in until killed")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--log", required=True)
    c = sub.add_parser("check", help="health, readiness, metrics, signed slash commands")
    c.add_argument("--bot", required=True, help="http://127.0.0.1:PORT")
    c.add_argument("--secret", required=True)
    c.add_argument("--standin-log", required=True)
    c.add_argument("--response-url", required=True)
    c.add_argument("--wait", type=float, default=120, help="seconds to wait for /healthz")
    c.add_argument("--metrics", default="",
                   help=f"http://127.0.0.1:METRICS_PORT (default {DEFAULT_METRICS_PORT})")
    e = sub.add_parser("expect", help="GET URL and compare the status")
    e.add_argument("url")
    e.add_argument("status", type=int)
    e.add_argument("--contains", default="", help="text the body must hold")
    args = parser.parse_args(argv)
    if args.command == "standin":
        serve_standin(args.port, args.log)
        while True:
            time.sleep(3600)
    if args.command == "check":
        return run_checks(args.bot.rstrip("/"), args.secret, args.standin_log, args.response_url,
                          args.wait, metrics=args.metrics)
    status, body = request(args.url)
    wanted = f" with {args.contains!r}" if args.contains else ""
    return Report().check(f"GET {urllib.parse.urlsplit(args.url).path} -> {args.status}{wanted}",
                          status == args.status and args.contains in body,
                          f"{status} {body[:80]}") is False


if __name__ == "__main__":
    sys.exit(main())
