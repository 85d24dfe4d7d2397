"""The project's source as the house tests read it: each module parsed once per session (the
layer, environment, logger, action-id and error checks all walk the same trees)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "present", "bot", "gpusize")


@cache
def modules(*packages: str) -> tuple[Path, ...]:
    """Every .py file under `packages` (default: all four), sorted."""
    return tuple(p for package in packages or PACKAGES for p in sorted((ROOT / package).rglob("*.py")))


@cache
def tree(path: Path) -> ast.Module:
    """The module's syntax tree: shared, so never change it."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
