"""The examples the bot offers (help, question hints) are in the reader's language, and every one
of them reads: a command example parses, a reply example changes something."""

from __future__ import annotations

import re

import pytest

from engine.i18n import _, language
from engine.parse import parse, read_reply
from present import slack

CHINESE = re.compile(r"[\u4e00-\u9fff]")
COMMAND = re.compile(r"`/gpusize ([^`]+)`")
QUOTED = re.compile(r"[\"“]([^\"”]+)[\"”]")
HINTS = (slack.SHORT_HELP,
         "Or reply in this thread, e.g. \"lora\" or \"serve with 20 users\".",
         "Or reply in this thread, e.g. \"budget 300k\" or \"budget $20k\".",
         "The buying guides' rule of thumb is to buy when the cards are busy more than {hours:g} h "
         "a month; the break-even above is computed from these prices instead. Reply "
         "\"hours 500\" to change the use per month.")


def _examples_line(help_text: str) -> str:
    return next(line for line in help_text.splitlines() if "/gpusize 13B" in line)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_help_examples_parse(lang: str) -> None:
    with language(lang):
        text = slack.help_text()
    commands = COMMAND.findall(_examples_line(text))
    assert len(commands) >= 4
    for command in commands:
        parse(command)
    replies = QUOTED.findall(text)
    assert len(replies) >= 4
    for reply in replies:
        assert read_reply(reply) is not None, reply


def test_chinese_help_gives_chinese_examples() -> None:
    with language("zh"):
        text = slack.help_text()
    commands = COMMAND.findall(_examples_line(text))
    assert all(CHINESE.search(c) for c in commands)
    assert all(CHINESE.search(r) for r in QUOTED.findall(text))


@pytest.mark.parametrize("hint", HINTS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_question_hints_read(lang: str, hint: str) -> None:
    with language(lang):
        text = _(hint)
    examples = QUOTED.findall(text)
    assert examples
    for example in examples:
        assert read_reply(example) is not None, example
    if lang == "zh":  # LoRA stays LoRA; the rest is said in Chinese
        assert any(CHINESE.search(example) for example in examples), examples


def test_the_chinese_method_question_names_methods_a_reply_can_use() -> None:
    with language("zh"):
        question = _("Noted. Which method: full-finetune, lora, qlora, inference or pretrain?")
    names = re.findall(r"[\u4e00-\u9fffA-Za-z]+", question.split("：", 1)[1].replace("还是", "、"))
    methods = {read_reply(n).method for n in names if read_reply(n) is not None}
    assert methods == {"full-finetune", "lora", "qlora", "inference", "pretrain"}
