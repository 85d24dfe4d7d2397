"""Prometheus metrics and structured JSON logs with request ids; secrets never reach a log line.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import threading
import time
import uuid
from http.server import ThreadingHTTPServer
from typing import Any

from prometheus_client import Counter, Histogram
from prometheus_client.exposition import MetricsHandler

COMMANDS = Counter("gpusize_commands_total", "slash commands by outcome", ["outcome"])
REQUEST_SECONDS = Histogram(
    "gpusize_request_seconds", "time to answer Slack's HTTP request (the ack), by kind", ["kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 3, 5))
ENGINE_SECONDS = Histogram("gpusize_engine_seconds", "computing and rendering one answer",
                           buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
REDIS_ERRORS = Counter("gpusize_redis_errors_total", "Redis operations that failed", ["where"])
log = logging.getLogger(__name__)
DIGESTS = Counter("gpusize_digests_posted_total", "price digests posted")
SLACK_ERRORS = Counter("gpusize_slack_api_errors_total", "Slack Web API calls that failed",
                       ["error"])

EDGE_REJECTED = Counter("gpusize_edge_rejected_total",
                        "requests and connections refused before Bolt saw them", ["reason"])

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
SECRET_PATTERNS = [re.compile(r"xox[abposr]-[A-Za-z0-9-]+"), re.compile(r"xapp-[A-Za-z0-9-]+"),
                   re.compile(r"v0=[0-9a-f]{64}")]


def new_request_id(header: str | None = None) -> str:
    rid = header if header and re.fullmatch(r"[A-Za-z0-9._-]{1,64}", header) else uuid.uuid4().hex[:16]
    request_id.set(rid)
    return rid


class Redactor(logging.Filter):
    """Removes tokens, signatures and the configured secrets from every record."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s and len(s) >= 6]

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        for pattern in SECRET_PATTERNS:
            text = pattern.sub("[redacted]", text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.scrub(record.getMessage())
        record.args = ()
        if record.exc_info:
            record.exc_text = self.scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


MAX_LINE_BYTES = 2048


def _cut(text: str, limit: int, *, keep_end: bool = False) -> str:
    if len(text) <= limit:
        return text
    mark = f"…[{len(text) - limit} cut]"
    return mark + text[-limit:] if keep_end else text[:limit] + mark


class JsonFormatter(logging.Formatter):
    """One JSON object per line, at most MAX_LINE_BYTES: however long a message or a traceback
    (a whole request body, once), a line costs the disk and the log pipeline the same."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
                 "level": record.levelname.lower(), "logger": record.name[:64],
                 "request_id": request_id.get(), "msg": record.getMessage()}
        if record.exc_text:
            entry["error"] = record.exc_text
        line = json.dumps(entry, ensure_ascii=False)
        budget = 1024
        while len(line.encode()) > MAX_LINE_BYTES and budget >= 16:
            entry["msg"] = _cut(record.getMessage(), budget)
            if record.exc_text:  # a traceback's end says what failed
                entry["error"] = _cut(record.exc_text, budget, keep_end=True)
            line = json.dumps(entry, ensure_ascii=False)
            budget //= 2
        return line


def uvicorn_log_config(level: str = "INFO") -> dict[str, object]:
    """uvicorn's own loggers (start, stop, errors, access) through the root logger's JSON
    handler that configure_logging installed, instead of uvicorn's plain-text ones."""
    return {"version": 1, "disable_existing_loggers": False,
            "loggers": {name: {"handlers": [], "propagate": True, "level": level}
                        for name in ("uvicorn", "uvicorn.error", "uvicorn.access")}}


METRICS_TIMEOUT_S = 5.0  # a scrape takes milliseconds; a connection idle this long is closed


class BoundedMetricsServer(ThreadingHTTPServer):
    """prometheus_client's own server starts a thread per connection without end: 1,000
    half-open connections held 1,000 threads (issue 26). Here at most `max_connections` are
    served at once (one more is closed at once, and counted), and each must send its request
    and take its answer within `timeout_s`."""

    daemon_threads = True
    block_on_close = False
    # socketserver's default listen backlog is 5: connections past it wait out SYN retries
    # (1 s, 3 s, ...) before the bound can even refuse them; accepted, they are closed at once
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], *, max_connections: int, timeout_s: float) -> None:
        handler = type("Handler", (MetricsHandler,), {"timeout": timeout_s,
                                                      "log_message": lambda *a: None})
        self.slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            EDGE_REJECTED.labels("metrics-busy").inc()
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


def serve_metrics(*, host: str, port: int, max_connections: int = 16,
                  timeout_s: float = METRICS_TIMEOUT_S) -> BoundedMetricsServer | None:
    """/metrics on a port of its own (a daemon thread), off the public one. A port that cannot
    be bound costs the metrics, not the bot: None and a log line."""
    try:
        server = BoundedMetricsServer((host, port), max_connections=max_connections,
                                      timeout_s=timeout_s)
    except OSError as err:
        log.error("metrics not served on %s:%d: %s", host, port, err)
        return None
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


def configure_logging(secrets: list[str], level: int = logging.INFO) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    handler.addFilter(Redactor(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
