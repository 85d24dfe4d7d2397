"""Errors a person may see share one base (engine/errors.py), and the bot's failure words say them
in the asker's language. In-process: no Redis, no Slack."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bot.digest import SubscriptionsFull
from bot.intake import Intake
from bot.permissions import Refused
from bot.pricestore import QuotaFull
from bot.words import NOTHING_POSTED, failure_text
from engine import ParseError, UnknownModel, UserError
from engine.i18n import _, language
from engine.phrases import has_cjk
from engine.prices import PriceRejected
from tests import source

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", [ParseError, UnknownModel, PriceRejected, Refused, QuotaFull,
                                  SubscriptionsFull])
def test_every_error_a_person_sees_is_a_user_error(kind: type[Exception]) -> None:
    assert issubclass(kind, UserError)


def test_the_hierarchy_docstring_names_every_user_error() -> None:
    """engine/errors.py lists the whole hierarchy: a new UserError subclass anywhere is added
    there too."""
    doc = (ROOT / "engine" / "errors.py").read_text(encoding="utf-8")
    found = []
    for path in [*(ROOT / "engine").rglob("*.py"), *(ROOT / "bot").rglob("*.py")]:
        for node in ast.walk(source.tree(path)):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id == "UserError" for b in node.bases):
                found.append(node.name)
    assert found and [name for name in found if f"── {name}" not in doc] == []


def test_a_user_error_is_told_in_its_own_words_anything_else_is_an_apology() -> None:
    refusal = Refused("Only a workspace admin can do that.")
    assert "Only a workspace admin can do that." in failure_text(refusal)
    assert "Only a workspace admin" in failure_text(UnknownModel("Only a workspace admin"))
    assert failure_text(KeyError("/srv/secret/path")) == _(NOTHING_POSTED)
    assert "/srv/secret" not in failure_text(RuntimeError("/srv/secret/path"))


def test_a_chinese_asker_who_leaves_out_the_model_is_told_in_chinese() -> None:
    """The engine's own "missing MODEL" message, translated, not a copy kept in the bot."""
    with language("zh"):
        with pytest.raises(ParseError) as zh:
            Intake(redis=None).check("lora")  # type: ignore[arg-type]
        told = failure_text(zh.value)
    with language("en"), pytest.raises(ParseError) as en:
        Intake(redis=None).check("lora")  # type: ignore[arg-type]
    assert has_cjk(str(zh.value)) and has_cjk(told)
    assert "missing MODEL" in str(en.value) and "missing MODEL" not in told
