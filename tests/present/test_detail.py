"""What an answer says beyond the cards, on every surface (present/detail.py): the bill of
materials, the API comparison, what a box can do and how to run it, in English and Chinese,
within Block Kit's limits in Slack, and code kept as code."""

from __future__ import annotations

import pytest

import engine
from engine.i18n import language
from present import blockkit, slack
from present.detail import COMMAND, FILE_LINE, api_lines, bom_lines, capacity_lines, launch_lines
from present.terminal import render

QUESTIONS = ("qwen3-32b inference gpu=4090 gpus=8", "70B full-finetune gpu=h800 gpus=16",
             "qwen3-32b inference requests=10k prompt=2000 output=500", "13B full-finetune",
             "llama-3.1-8b qlora gpu=4090", "qwen2.5-72b inference quant=q4_k_m",
             "llama-3.1-405b inference gpu=h100-sxm")


@pytest.mark.parametrize("query", QUESTIONS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sections_fit_block_kit(query: str, lang: str) -> None:
    with language(lang):
        ans = engine.ask(query)
        for sections in (slack.bom_sections(ans), slack.launch_sections(ans)):
            assert sections and all(len(blockkit.mrkdwn(s)) <= 3000 for s in sections)
            blocks = blockkit.blocks("notice.json.j2", n={"sections": sections, "context": "",
                                                         "user": ""})
            assert len(blocks) <= 50
        text = "\n".join(slack.launch_sections(ans))
        assert text.count("```") % 2 == 0  # every code block closed
        for command in ans.plans[0].launch[0].commands:
            assert command in text.replace("\n```\n```\n", "\n")


def test_terminal_shows_the_bom_only_when_asked() -> None:
    ans = engine.ask("qwen3-32b inference gpu=4090 gpus=8")
    assert "Bill of materials" not in render(ans)
    shown = render(ans, bom=True)
    assert "Bill of materials" in shown and "rule: " in shown
    assert "How to run it with vLLM" in shown
    assert "What the box can do" in shown and "API versus self-hosting" in shown


def test_code_lines_are_marked() -> None:
    lines = launch_lines(engine.ask("13B full-finetune zero=3").plans[0])  # DeepSpeed: its config
    code = [line.strip() for line in lines if line.strip().startswith((COMMAND, FILE_LINE))]
    assert any(line.startswith(COMMAND + "torchrun") for line in code)
    assert any('"zero_optimization"' in line for line in code)


def test_chinese_surfaces() -> None:
    with language("zh"):
        ans = engine.ask("qwen3-32b 推理 gpu=4090 gpus=8")
        shown = render(ans, bom=True)
        assert "整机物料清单" in shown and "这台机器能做什么" in shown
        assert "API 与自建对比" in shown and "运行" in shown
        assert bom_lines(ans.plans[0])[0].startswith("整机物料清单")
        assert api_lines(ans.plans[0]) and capacity_lines(ans.capacity)


def test_nothing_for_a_plan_that_does_not_run() -> None:
    ans = engine.ask("70B full-finetune gpu=4090 gpus=1")
    assert bom_lines(ans.plans[0]) == [] and launch_lines(ans.plans[0]) == []
    assert "nothing to buy" in "\n".join(slack.bom_sections(ans))
