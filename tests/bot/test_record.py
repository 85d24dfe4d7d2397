"""The thread record, the action ids and the sub-command table, in-process (no Redis, no Slack)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bot import subcommands
from bot.conversation import FIELDS, Question, Root, Stage, ThreadRecord, from_fields, to_fields
from present.actions import CARD_ACTIONS, Action, Detail
from tests import source

ROOT = Path(__file__).resolve().parents[2]


def test_a_record_round_trips_through_its_hash_fields() -> None:
    record = ThreadRecord(stage=Stage.BUDGET, version=3, created_by="U1", root=Root.QUESTION,
                          answer_ts="1.2", card_version=2, card={"blocks": [], "text": "卡"},
                          result={"gpu": "h100-sxm"}, question_ts="1.3",
                          question=Question.BUDGET, lang="zh")
    fields = to_fields(**{name: getattr(record, name) for name in FIELDS})
    assert set(fields) == set(FIELDS.values()) and None not in fields.values()
    assert from_fields(fields) == record
    assert '"卡"' in fields["_card"]  # stored as written, not \\u-escaped


def test_none_deletes_and_absent_or_unreadable_fields_read_as_none() -> None:
    assert to_fields(question_ts=None) == {"_question_ts": None}
    assert from_fields({}) == ThreadRecord()
    assert from_fields({"_card": "not json", "_card_v": "x", "_root": "?"}) == ThreadRecord()
    with pytest.raises(TypeError):
        to_fields(answer="1.2")


def test_the_record_field_names_are_spelled_in_one_module() -> None:
    """`"_answer_ts"` and its siblings appear as string literals only in bot/conversation.py."""
    names = set(FIELDS.values())
    found = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        if path.name == "conversation.py":
            continue
        for node in ast.walk(source.tree(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found += [f"{path.name}: {name}" for name in names
                          if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", node.value)]
    assert found == []


def test_every_action_id_reads_back_to_its_member() -> None:
    assert Action.of("answer_method_lora") is Action.ANSWER_METHOD
    assert Action.of("whatif_method_qlora") is Action.WHATIF
    assert Action.of("whatif_goal") is Action.WHATIF_GOAL
    assert Action.of("card_more") is Action.MORE
    assert Action.of("show_everything") is None
    for action in Action:
        example = action.suffixed("x", "y") if action in (Action.ANSWER_METHOD, Action.WHATIF) \
            else action.value
        assert re.fullmatch(action.pattern(), example) and Action.of(example) is action
    assert Action.WHATIF in CARD_ACTIONS and {d.value for d in Detail} >= {"charts", "cost"}


def test_action_ids_are_literals_only_in_the_enum() -> None:
    """No other module (or template) spells an action id: they use `Action`."""
    ids = {a.value for a in Action}
    found = []
    for path in [*sorted(ROOT.glob("bot/**/*.py")), *sorted(ROOT.glob("present/*.py")),
                 *sorted(ROOT.glob("templates/*.j2"))]:
        if path.name == "actions.py":
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{path.name}: {i}" for i in ids if re.search(rf"[\"']{i}[_\"']", text)]
    assert found == []


def test_subcommands_are_found_by_their_first_word_in_either_language() -> None:
    assert subcommands.find("prices usd").name == "price"
    assert subcommands.find("QUOTE list").name == "quote"
    assert subcommands.find("语言 zh").name == "lang"
    assert subcommands.find("digest preview").name == "digest"
    assert subcommands.find("13B lora") is None and subcommands.find("") is None
    words = [w for row in subcommands.SUBCOMMANDS for w in (*row.words, *row.zh_words)]
    assert len(words) == len(set(words))  # one row per word


def test_help_lists_every_subcommand() -> None:
    text = subcommands.help_message().text + "".join(
        str(b) for b in subcommands.help_message().blocks)
    for row in subcommands.SUBCOMMANDS:
        assert row.usage.strip("`") in text
