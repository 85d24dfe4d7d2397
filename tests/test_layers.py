"""The house's floors: engine/ at the bottom, present/ on it, bot/ and the CLI on top.

Imports only point down (engine imports nothing above it; present imports only the engine; the
bot and the CLI never import each other's internals), nothing imports in a circle, and imports
inside functions are kept for optional heavy dependencies, which is what keeps `gpusize MODEL
METHOD` fast. Read from the source with ast, so a new import anywhere is checked.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from tests import source

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "present", "bot", "gpusize")
# what each floor may import from the project
ALLOWED = {
    "engine": {"engine"},
    "present": {"engine", "present"},
    "bot": {"engine", "present", "bot"},
    "gpusize": {"engine", "present", "gpusize", "bot.server", "bot.ops"},
}
# imports that may wait until a function needs them: optional or heavy third-party packages,
# and the bot's entry points in the CLI (slack_bolt and redis stay off the answer path)
LAZY = ("matplotlib", "PIL", "huggingface_hub", "uvicorn", "slack_bolt.adapter.socket_mode",
        "importlib.metadata", "tomllib", "difflib", "present.charts", "present.terminal",
        "bot.server", "bot.ops", "urllib", "http.client", "socket")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, inside a function?) for each import in the file, relative resolved."""
    tree = source.tree(path)
    nested: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nested |= {id(sub) for sub in ast.walk(node) if sub is not node}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, id(node) in nested) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "__future__":
                continue
            # `from engine import catalog` imports the module engine.catalog
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                is_module = (ROOT / Path(*candidate.split("."))).with_suffix(".py").exists() or (
                    ROOT / Path(*candidate.split(".")) / "__init__.py").exists()
                out.append((candidate if is_module else node.module, id(node) in nested))
    return out


@cache
def _graph() -> dict[str, list[tuple[str, bool]]]:
    return {_module(p): _imports(p) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def test_imports_only_point_down() -> None:
    wrong = []
    for module, imports in _graph().items():
        allowed = ALLOWED[module.split(".")[0]]
        for name, _lazy in imports:
            if _ours(name) and not any(name == a or name.startswith(a + ".") for a in allowed):
                wrong.append(f"{module} imports {name}")
    assert wrong == []


def test_no_import_cycles() -> None:
    graph = {m: sorted({n for n, lazy in imps if _ours(n) and not lazy and n != m})
             for m, imps in _graph().items()}
    # a package's __init__ runs before its modules: importing engine.x imports engine too
    for module in list(graph):
        for name in list(graph[module]):
            parent = name.rsplit(".", 1)[0]
            if "." in name and parent in graph and parent != module and not module.startswith(
                    parent + "."):
                graph[module].append(parent)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node)
    assert cycles == []


def test_lazy_imports_are_only_the_heavy_ones() -> None:
    wrong = [f"{module} imports {name} inside a function"
             for module, imports in _graph().items() for name, lazy in imports
             if lazy and not name.startswith(LAZY)]
    assert wrong == []


def test_the_checks_see_a_violation() -> None:
    # the extraction itself works: engine/sizing.py imports engine.plan at the top
    imports = dict(_imports(ROOT / "engine" / "sizing.py"))
    assert imports.get("engine.plan") is False
    assert ("huggingface_hub", True) in _imports(ROOT / "engine" / "hub.py")
