"""The environment is read in one place: engine/config.py (the engine's variables, HUB_* among
them) and, through pydantic-settings, bot/settings.py (the bot's). No other module reads
`os.environ`, and each variable is declared once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bot.settings import Settings, SettingsError, WorkerSettings, load_settings, variables
from engine import config, hub
from tests import source

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "present", "bot", "gpusize")
READER = Path("engine/config.py")


def _modules() -> tuple[Path, ...]:
    return source.modules(*PACKAGES)


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines that touch os.environ / os.getenv / os.putenv, however imported."""
    names = ("environ", "environb", "getenv", "putenv", "unsetenv")
    return [node.lineno for node in ast.walk(tree)
            if (isinstance(node, ast.Attribute) and node.attr in names)
            or (isinstance(node, ast.ImportFrom) and node.module == "os"
                and any(alias.name in names for alias in node.names))]


def test_only_engine_config_reads_os_environ() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}" for path in _modules()
             if path.relative_to(ROOT) != READER
             for line in _reads_environment(source.tree(path))]
    assert found == [], "read it through engine/config.py or bot/settings.py"
    assert _reads_environment(source.tree(ROOT / READER))


def test_the_check_above_sees_every_way_of_reading() -> None:
    for text in ("import os\nos.environ.get('X')", "import os\nos.getenv('X')",
                 "from os import environ\nenviron['X']", "import os as o\no.environ['X']"):
        assert _reads_environment(ast.parse(text)), text


def test_each_engine_variable_is_spelled_in_one_module() -> None:
    """HUB_TIMEOUT_S and its siblings are declared once: no other module names them in a string
    (docstrings and comments may mention them), and the bot's settings do not repeat them."""
    # LC_MESSAGES is also a folder of engine/locale: the locale variables are POSIX's, not ours
    names = {var.name for var in config.NUMBERS} | set(config.NAMES) - set(config.LOCALE_VARIABLES)
    found = []
    for path in _modules():
        if path.relative_to(ROOT) == READER:
            continue
        tree = source.tree(path)
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef |
                                    ast.AsyncFunctionDef)
                      and node.body and isinstance(node.body[0], ast.Expr)}
        found += [f"{path.relative_to(ROOT)}: {node.value}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in docstrings and node.value in names]
    assert found == []
    fields = {name.upper() for name in (*Settings.model_fields, *WorkerSettings.model_fields)}
    assert not fields & names and names <= variables()


def test_a_number_is_its_default_unless_set_to_something_in_range(
        monkeypatch: pytest.MonkeyPatch) -> None:
    var = config.HUB_TIMEOUT_S
    monkeypatch.delenv(var.name, raising=False)
    assert config.number(var) == var.default == hub.timeout_s()
    monkeypatch.setenv(var.name, "2.5")
    assert config.number(var) == 2.5 == hub.timeout_s()
    for bad in ("soon", "-1", str(var.high * 2), "nan"):
        monkeypatch.setenv(var.name, bad)
        assert config.number(var) == var.default  # the CLI carries on with the default
        with pytest.raises(config.BadVariable, match=var.name):
            config.number(var, strict=True)


def test_the_bot_stops_at_start_up_on_a_bad_engine_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"SLACK_BOT_TOKEN": "xoxb-secret", "SLACK_SIGNING_SECRET": "s3cr3t",
                        "HUB_CACHE_MAX_BYTES": "lots"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as stopped:
        load_settings()
    line = str(stopped.value)
    assert "HUB_CACHE_MAX_BYTES" in line and "\n" not in line and "secret" not in line
    monkeypatch.setenv("HUB_CACHE_MAX_BYTES", "65536")
    assert load_settings().port > 0


def test_the_cache_root_follows_gpusize_cache_then_xdg(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.delenv("GPUSIZE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert config.cache_root() == tmp_path / "xdg" / "gpusize"
    monkeypatch.setenv("GPUSIZE_CACHE", str(tmp_path / "own"))
    assert config.cache_root() == tmp_path / "own" and hub.cache_dir() == tmp_path / "own" / "models"
