"""Prometheus metrics and structured JSON logs with request ids; secrets never reach a log line.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import uuid

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest

COMMANDS = Counter("gpusize_commands_total", "slash commands by outcome", ["outcome"])
REQUEST_SECONDS = Histogram(
    "gpusize_request_seconds", "time to answer Slack's HTTP request (the ack), by kind", ["kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 3, 5))
ENGINE_SECONDS = Histogram("gpusize_engine_seconds", "computing and rendering one answer",
                           buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
REDIS_ERRORS = Counter("gpusize_redis_errors_total", "Redis operations that failed", ["where"])
DIGESTS = Counter("gpusize_digests_posted_total", "price digests posted")
SLACK_ERRORS = Counter("gpusize_slack_api_errors_total", "Slack Web API calls that failed",
                       ["error"])

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
SECRET_PATTERNS = [re.compile(r"xox[abposr]-[A-Za-z0-9-]+"), re.compile(r"xapp-[A-Za-z0-9-]+"),
                   re.compile(r"v0=[0-9a-f]{64}")]


def metrics_body() -> tuple[bytes, str]:
    return generate_latest(), CONTENT_TYPE_LATEST


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


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
                 "level": record.levelname.lower(), "logger": record.name,
                 "request_id": request_id.get(), "msg": record.getMessage()}
        if record.exc_text:
            entry["error"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(secrets: list[str], level: int = logging.INFO) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    handler.addFilter(Redactor(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
