"""Start-up settings: a missing or malformed one stops `gpusize serve` with one line naming it,
never echoing a secret."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.settings import Settings
from engine import config

EXE = shutil.which("gpusize", path=str(Path(sys.executable).parent))
CMD = [EXE] if EXE else [sys.executable, "-m", "gpusize"]
GOOD = {"SLACK_BOT_TOKEN": "xoxb-secret-value", "SLACK_SIGNING_SECRET": "s3cr3t",
        "REDIS_URL": "redis://127.0.0.1:1/0", "SLACK_API_URL": "http://127.0.0.1:1/api/"}


@pytest.mark.slow  # `gpusize serve` as a command
@pytest.mark.parametrize(("drop", "override", "name"), [
    ("SLACK_BOT_TOKEN", {}, "SLACK_BOT_TOKEN"),
    ("SLACK_SIGNING_SECRET", {}, "SLACK_SIGNING_SECRET"),
    (None, {"SLACK_BOT_TOKEN": "xoxp-user-token-secret"}, "SLACK_BOT_TOKEN"),
    (None, {"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
    (None, {"SLACK_API_URL": "ftp://nowhere"}, "SLACK_API_URL"),
    (None, {"PORT": "99999"}, "PORT"),
])
def test_bad_setting_is_one_line_naming_it(drop: str | None, override: dict[str, str],
                                           name: str) -> None:
    env = {k: v for k, v in GOOD.items() if k != drop} | override
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "REDIS_"))}
    out = subprocess.run([*CMD, "serve"], env={**clean, **env}, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and "Traceback" not in out.stderr
    for secret in ("xoxb-secret-value", "s3cr3t", "xoxp-user-token-secret"):
        assert secret not in out.stderr


def test_settings_parse_and_normalise() -> None:
    from bot.settings import Settings

    s = Settings(**({k.lower(): v for k, v in GOOD.items()} | {"slack_api_url": "http://x/api"}))
    assert s.slack_api_url == "http://x/api/" and s.conversation_ttl_days == 30
    assert "xoxb-secret-value" not in repr(s)


def test_every_setting_is_documented_in_the_slack_page_and_the_env_example() -> None:
    """An operator reads docs/SLACK.md's settings table and deploy/.env.example, not bot/settings.py."""
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "SLACK.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in page.splitlines() if line.startswith("| `"))
    example = (root / "deploy" / ".env.example").read_text(encoding="utf-8")
    for name in [*Settings.model_fields, *(var.name.lower() for var in config.NUMBERS)]:
        assert f"`{name.upper()}`" in table, f"{name.upper()} missing from docs/SLACK.md's settings table"
        if name not in ("slack_app_token",):  # Socket Mode: local development only
            assert f"{name.upper()}=" in example, f"{name.upper()} missing from .env.example"
