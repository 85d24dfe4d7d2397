"""Language follows the question when it is Chinese (engine.i18n.language_of_text), in Slack and
in the CLI; English text leaves the choice to the asker's setting or locale."""

from __future__ import annotations

import pytest

from engine.i18n import language_of_text
from gpusize import cli


@pytest.mark.parametrize(("text", "lang"), [
    ("13B 全参微调 预算15万", "zh"), ("序列长度8k", "zh"), ("帮助", "zh"), ("qwen2.5-72b 推理", "zh"),
    ("13B full-finetune", None), ("what about qlora?", None), ("", None), ("１３Ｂ lora", None),
    ("<@U123|张三> what about lora?", None),  # a mention's name is not the asker's words
    ("<https://example.com|链接> 13B lora", None),
    # an amount written the Chinese way does not make an English sentence Chinese
    ("buy servers for 80万 to serve qwen3-32b", None), ("budget 1.2亿元 for 70B pretrain", None),
    ("预算80万", "zh"), ("80万 全参微调", "zh"), ("13B lora 80万块", None),
])
def test_language_of_text(text: str, lang: str | None) -> None:
    assert language_of_text(text) == lang


def test_cli_answers_a_chinese_question_in_chinese(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    assert cli.main(["13B", "全参微调"]) == 0
    assert "推荐" in capsys.readouterr().out
    assert cli.main(["13B", "全参微调", "--lang", "en"]) == 0  # an explicit --lang wins
    assert "Recommended" in capsys.readouterr().out
