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
    return parse(path.read_text(encoding="utf-8"), filename=str(path))


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse, once more on CPython 3.11's SystemError "AST constructor recursion depth
    mismatch": the AST builder keeps its depth in per-interpreter state, so another thread
    parsing at the same moment (3.11's traceback printer parses to place its ^^^ carets) trips
    it (python/cpython#106905). The source is fine; a second parse answers."""
    try:
        return ast.parse(source, filename=filename)
    except SystemError:
        return ast.parse(source, filename=filename)
