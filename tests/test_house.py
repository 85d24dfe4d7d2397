"""The house's habits that a reviewer would otherwise have to remember (docs/../HOUSE.md):
loggers named after their module, no bot module grown past one screenful of jobs, the thread
flow kept to its few collaborators. Read from the source with ast, like tests/test_layers.py."""

from __future__ import annotations

import ast
from pathlib import Path

from tests import source
from tests.test_layers import PACKAGES, _graph, _ours

ROOT = Path(__file__).resolve().parents[1]


def _modules() -> tuple[Path, ...]:
    return source.modules(*PACKAGES)


def _named_loggers(tree: ast.AST) -> list[int]:
    """Lines of `logging.getLogger(...)` calls whose name is not `__name__` (the root logger,
    `getLogger()`, is configured in one place and allowed)."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "getLogger")
                or (isinstance(node.func, ast.Name) and node.func.id == "getLogger"))
            and node.args
            and not (isinstance(node.args[0], ast.Name) and node.args[0].id == "__name__")]


def test_every_logger_is_named_after_its_module() -> None:
    """`logging.getLogger(__name__)`: a log line says which module wrote it, and a logger can
    be tuned by package (`bot`, `engine.hub`) without a list of hand-made names."""
    found = [f"{path.relative_to(ROOT)}:{line}" for path in _modules()
             for line in _named_loggers(source.tree(path))]
    assert found == []
    assert _named_loggers(ast.parse("import logging\nlogging.getLogger('gpusize.x')"))


def test_the_thread_flow_has_few_collaborators() -> None:
    """bot/dialog.py (the thread flow) imports at most 17 project modules: intake, details,
    presses and the failure words live beside it, not in it."""
    ours = {name for name, _lazy in _graph()["bot.dialog"] if _ours(name)}
    assert len(ours) <= 17, sorted(ours)


def test_no_bot_module_is_over_500_lines() -> None:
    """Every module under bot/ (nested packages too) is at most 500 lines (issue 21): one past
    that holds more than one job and is split along its seams, as bot/jobs.py was."""
    paths = sorted((ROOT / "bot").rglob("*.py"))
    assert ROOT / "bot" / "jobs.py" in paths and ROOT / "bot" / "listeners" / "recording.py" in paths
    lines = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
             for path in paths}
    assert {name: n for name, n in lines.items() if n > 500} == {}
