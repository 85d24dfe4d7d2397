"""The environment, read in one place: every variable the engine (and so the CLI and the bot's
answer workers) honours, with its default and its range beside it, as huggingface_hub's
constants.py and vLLM's envs.py keep theirs.

No other module reads `os.environ` (tests/test_environment.py fails if one does). The bot's own
settings (Slack tokens, Redis, limits) are declared in bot/settings.py, which pydantic-settings
fills from the environment; it checks the variables here too when `gpusize serve` starts
(`check`), so a malformed HUB_TIMEOUT_S stops the bot with one line, while the CLI falls back to
the default. Values are read when asked for, not at import, so a test (or a worker spawned with
a different environment) sees its own.

Variables huggingface_hub reads itself (HF_TOKEN, HF_HUB_OFFLINE) are left to it; HF_ENDPOINT is
read here too because the Hub look-up names it in its messages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HF_ENDPOINT = "https://huggingface.co"
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE")  # POSIX order of precedence
# the variables read as text (the numeric ones are NUMBERS, below)
NAMES = ("GPUSIZE_CACHE", "XDG_CACHE_HOME", "GPUSIZE_NO_DATA_CACHE", "HF_ENDPOINT",
         *LOCALE_VARIABLES)


@dataclass(frozen=True)
class Number:
    """A numeric variable: its default and the range it must fall in."""

    name: str
    default: float
    low: float
    high: float
    what: str


# Hugging Face Hub look-ups (engine/hub.py)
HUB_TIMEOUT_S = Number("HUB_TIMEOUT_S", 5, 0.1, 60, "one Hub look-up, all in (s)")
HUB_MISS_TTL_S = Number("HUB_MISS_TTL_S", 3600, 0, 604800, "how long a Hub miss is remembered (s)")
HUB_CACHE_MAX_ENTRIES = Number("HUB_CACHE_MAX_ENTRIES", 2000, 1, 10_000_000,
                               "Hub cache: entries kept")
HUB_CACHE_MAX_BYTES = Number("HUB_CACHE_MAX_BYTES", 16 << 20, 1, 1 << 40,
                             "Hub cache: bytes kept")
NUMBERS = (HUB_TIMEOUT_S, HUB_MISS_TTL_S, HUB_CACHE_MAX_ENTRIES, HUB_CACHE_MAX_BYTES)


class BadVariable(ValueError):
    """An environment variable set to something outside its range (the message names it)."""


def number(var: Number, *, strict: bool = False) -> float:
    """The variable's value; unset is its default. Malformed or out of range: the default, or
    BadVariable with `strict` (start-up checks)."""
    raw = os.environ.get(var.name, "").strip()
    if not raw:
        return var.default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if var.low <= value <= var.high:
        return value
    if strict:
        raise BadVariable(f"{var.name} must be a number from {var.low:g} to {var.high:g} "
                          f"({var.what}), not {raw[:40]!r}")
    return var.default


def check() -> None:
    """BadVariable naming the first numeric variable that is set but unusable."""
    for var in NUMBERS:
        number(var, strict=True)


def cache_root() -> Path:
    """Where gpusize keeps its caches: GPUSIZE_CACHE, else $XDG_CACHE_HOME/gpusize, else
    ~/.cache/gpusize."""
    root = os.environ.get("GPUSIZE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpusize")
    return Path(root)


def data_cache_off() -> bool:
    """GPUSIZE_NO_DATA_CACHE set (to anything): parse the bundled catalogs every time."""
    return bool(os.environ.get("GPUSIZE_NO_DATA_CACHE"))


def locale() -> str | None:
    """The first locale variable that is set (LC_ALL, LC_MESSAGES, LANG, LANGUAGE), else None."""
    return next((os.environ[name] for name in LOCALE_VARIABLES if os.environ.get(name)), None)


def hf_endpoint() -> str:
    """The Hub's base URL (HF_ENDPOINT, as huggingface_hub reads it), without a trailing /."""
    return (os.environ.get("HF_ENDPOINT") or HF_ENDPOINT).rstrip("/")
