"""/metrics in Prometheus format, JSON logs with request ids, and no secret in any log line."""

from __future__ import annotations

import json
import logging
import urllib.request
from typing import Any

from bot.observability import JsonFormatter, Redactor, new_request_id
from tests.harness import SECRET, TOKEN, Bot, SlackStub, free_port


def test_metrics_count_commands_and_latency(make_bot: Any, slack: SlackStub) -> None:
    port = free_port()  # /metrics is served on METRICS_PORT, not the public port
    bot = make_bot(METRICS_PORT=str(port))
    bot.command("help")
    bot.command("7B lroa")
    bot.command("13B lora")
    slack.wait_for("chat.postMessage")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as r:
        text = r.read().decode()
    assert 'gpusize_commands_total{outcome="help"} 1.0' in text
    assert 'gpusize_commands_total{outcome="error"} 1.0' in text
    assert "gpusize_request_seconds_bucket" in text and "gpusize_engine_seconds_count" in text


def test_logs_are_json_with_request_ids_and_never_secrets(bot: Bot, slack: SlackStub) -> None:
    bot.command("13B lora")
    slack.wait_for("chat.postMessage")
    bot.stop()
    log = bot.log.read_text(errors="replace")
    assert TOKEN not in log and SECRET not in log and "xoxb-" not in log
    json_lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert json_lines and all({"ts", "level", "request_id", "msg"} <= set(e) for e in json_lines)


def test_redactor_scrubs_tokens_and_configured_secrets() -> None:
    record = logging.LogRecord("x", logging.ERROR, __file__, 1,
                               "token %s secret %s sig v0=%s", ("xoxb-123-abc", "hunter22",
                                                                 "a" * 64), None)
    Redactor(["hunter22"]).filter(record)
    assert "xoxb" not in record.msg and "hunter22" not in record.msg and "v0=aaa" not in record.msg
    new_request_id("abc-123")
    entry = json.loads(JsonFormatter().format(record))
    assert entry["request_id"] == "abc-123" and entry["level"] == "error"
