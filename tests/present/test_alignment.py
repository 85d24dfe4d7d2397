"""Aligned text lines up by display width, not by len(): Chinese labels and card names take two
columns a character in a terminal and in a Slack code block (issue 15)."""

from __future__ import annotations

import pytest

import engine
from engine.i18n import _, language
from present import terminal
from present.labels import clip, columns, pad, text_width

BARS = "█▏░▓·"


@pytest.mark.parametrize(("text", "width"), [
    ("显存", 4), ("GiB", 3), ("１００", 6), ("e\u0301", 1), ("KV 缓存", 7), ("", 0),
])
def test_text_width(text: str, width: int) -> None:
    assert text_width(text) == width


def test_pad_and_clip_keep_the_width() -> None:
    assert pad("显存", 6) == "显存  " and pad("显存", 6, right=True) == "  显存"
    assert text_width(pad("全参微调全参微调", 7)) == 7  # clipped: 6 columns and the ellipsis
    assert clip("GeForce RTX 4090 48GB (modified board)", 10) == "GeForce R…"
    assert clip("短", 4) == "短"


def test_columns_line_up_mixed_scripts() -> None:
    lines = columns([("卡型", "卡数"), ("GeForce RTX 4090", "16"), ("昇腾910B", "8")], right=[1])
    assert len({text_width(line) for line in lines}) == 1
    assert [line.endswith(n) for line, n in zip(lines, ("卡数", "16", "8"), strict=True)] == [True] * 3


def _plans(lang: str) -> list:
    with language(lang):
        ranked = engine.ask("70B full-finetune").plans[:5]
        long_name = engine.ask("70B inference gpu=4090-48gb gpus=4").plans[0]  # a 50-char name
    return [long_name, *ranked]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_terminal_table_columns_line_up(lang: str) -> None:
    plans = _plans(lang)
    with language(lang):
        lines = terminal.table(plans)
        sharding = _("sharding")
    starts = [text_width(lines[0][: lines[0].rindex("  " + sharding)])]
    for line, plan in zip(lines[1:], plans, strict=True):
        starts.append(text_width(line[: line.rindex("  " + plan.strategy)]))
    assert len(set(starts)) == 1, lines


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_terminal_bars_line_up(lang: str) -> None:
    plan = _plans(lang)[1]
    with language(lang):
        lines = terminal.breakdown(plan)
    rows = [line for line in lines if any(c in line for c in BARS)]
    assert len(rows) >= 5
    bar_starts = {text_width(line[: min(line.index(c) for c in BARS if c in line)]) for line in rows}
    value_ends = {text_width(line[: line.index("GiB", min(line.index(c) for c in BARS if c in line)) + 3])
                  for line in rows}
    assert len(bar_starts) == 1 and len(value_ends) == 1, rows
