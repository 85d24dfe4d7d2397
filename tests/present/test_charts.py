"""The charts: real PNGs opened with Pillow and read pixel by pixel, in English, in Chinese where a
CJK font is installed, the English fallback where none is, and `gpusize ... --chart FILE`."""

from __future__ import annotations

import io
import json
import logging
import warnings
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import engine
from bot.pricestore import PriceRecord
from engine.schema import Answer
from present import charts
from tests.gpusize.test_cli import run

GIB = 1024**3


@cache
def answer(query: str = "13B full-finetune") -> Answer:
    return engine.ask(query)


def image(png: bytes) -> np.ndarray:
    """The PNG's pixels, height x width x RGB."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(png)) as img:
        assert img.format == "PNG"
        return np.asarray(img.convert("RGB"), dtype=np.int16)


def size(img: np.ndarray) -> tuple[int, int]:
    return img.shape[1], img.shape[0]


def hex_rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def mask(img: np.ndarray, color: str, tol: int = 12) -> np.ndarray:
    """Where the image is `color` (give or take anti-aliasing)."""
    return (np.abs(img - np.array(hex_rgb(color))) <= tol).all(axis=2)


def runs(column: np.ndarray) -> list[int]:
    """Lengths of the runs of True down a boolean column."""
    edges = np.diff(np.concatenate(([0], column.astype(np.int8), [0])))
    return list(np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1))


def assert_not_blank(img: np.ndarray, min_colors: int = 12) -> None:
    flat = img.reshape(-1, 3)
    colors, counts = np.unique(flat, axis=0, return_counts=True)
    assert len(colors) >= min_colors
    assert counts.max() / len(flat) < 0.95, "almost all one color"
    assert img.mean(axis=2).var() > 100


def bar_count(img: np.ndarray) -> int:
    """Bars drawn: every bar starts with its weights segment, so the column crossing most weights
    pixels crosses every bar once (the legend's small patch is far shorter than a bar)."""
    weights = mask(img, charts.COLORS["weights"])
    best = int(weights.sum(axis=0).argmax())
    return sum(1 for length in runs(weights[:, best]) if length >= 20)


def capacity_marks(img: np.ndarray, color: str = charts.COLORS["capacity"]) -> int:
    """Distinct x positions holding a tall vertical stroke in the capacity color."""
    strokes = mask(img, color)
    columns = [x for x in range(img.shape[1]) if max(runs(strokes[:, x]), default=0) >= 25]
    return sum(1 for i, x in enumerate(columns) if i == 0 or x - columns[i - 1] > 1)


# -- memory ---------------------------------------------------------------------------------------


def test_memory_chart_size_and_content() -> None:
    ans = answer()
    img = image(charts.memory_chart(ans))
    n = min(6, len(ans.plans))
    width, height = size(img)
    assert 1100 <= width <= 1300
    assert 150 + 80 * n <= height <= 260 + 80 * n
    assert_not_blank(img)
    for component in ("weights", "gradients", "optimizer", "overhead"):  # each its own color
        assert mask(img, charts.COLORS[component], tol=2).sum() > 500, component


def test_bars_grow_with_plans() -> None:
    ans = answer()
    assert len(ans.plans) >= 6
    heights = []
    for n in (1, 3, 6):
        img = image(charts.memory_chart(ans, max_plans=n))
        assert bar_count(img) == n
        heights.append(size(img)[1])
    assert heights == sorted(heights) and heights[0] < heights[-1]


def test_each_bar_has_its_own_capacity_mark() -> None:
    ans = answer()
    plans = ans.plans[:6]
    # distinct at the chart's resolution: a 3090 (24576 MiB) and a 4090 (24564 MiB) share a mark
    capacities = {round(p.memory.capacity / 2**30) for p in plans}
    assert len(capacities) >= 4  # the point: different cards, different marks
    assert all(p.memory.fits for p in plans)
    assert capacity_marks(image(charts.memory_chart(ans))) == len(capacities)


def test_a_plan_that_does_not_fit_is_marked_in_red() -> None:
    ans = answer("llama-3.1-8b full-finetune gpu=4090 gpus=1")
    assert not ans.plans[0].memory.fits
    img = image(charts.memory_chart(ans))
    assert bar_count(img) == 1
    assert capacity_marks(img, charts.COLORS["no_fit"]) == 1


@pytest.mark.parametrize("query", ["7B pretrain", "llama-3.1-8b full-finetune checkpointing=none",
                                   "13B lora", "qwen2.5-72b inference quant=awq context=8k users=20"])
def test_segments_add_up_to_total(query: str) -> None:
    for plan in answer(query).plans:
        parts = charts.segments(plan)
        assert all(v >= 0 for v in parts.values())
        assert sum(parts.values()) == pytest.approx(plan.memory.total / GIB, abs=1e-6)
        if plan.memory.reused:
            m = plan.memory
            larger = max(("gradients", "activations"), key=lambda c: getattr(m, c))
            assert parts[larger] < getattr(m, larger) / GIB


def test_no_plans_still_draws_and_bad_arguments_are_refused() -> None:
    empty = answer().model_copy(update={"plans": []})
    img = image(charts.memory_chart(empty))
    assert (img.sum(axis=2) < 200).sum() > 200  # the title and "no configuration to chart"
    with pytest.raises(ValueError, match="max_plans"):
        charts.memory_chart(answer(), max_plans=0)
    with pytest.raises(ValueError, match="lang"):
        charts.memory_chart(answer(), lang="fr")


# -- prices ---------------------------------------------------------------------------------------


def record(n: int, kind: str, low: float, high: float, currency: str, quoted: date,
           origin: str = "catalog", vendor: str = "", item: str = "h100-sxm") -> PriceRecord:
    return PriceRecord(id=f"r{n}", item=item, kind=kind, low=low, high=high, currency=currency,
                       source="test", origin=origin, vendor=vendor, entered_by="U1", quoted=quoted,
                       recorded_at=datetime(2026, 3, 1, tzinfo=UTC))


RECORDS = [
    record(1, "rent_card_hour", 2.99, 3.49, "USD", date(2025, 6, 1)),
    record(2, "rent_card_hour", 2.49, 2.49, "USD", date(2025, 9, 1), "feed"),
    record(3, "rent_card_hour", 2.10, 2.30, "USD", date(2026, 1, 15), "quote", "Lambda"),
    record(4, "rent_card_hour", 1.99, 1.99, "USD", date(2026, 3, 1), "feed"),
    record(5, "buy_card", 230_000, 250_000, "CNY", date(2025, 7, 1)),
    record(6, "buy_card", 220_000, 220_000, "CNY", date(2025, 12, 1), "quote", "某供应商"),
    record(7, "buy_card", 215_000, 225_000, "CNY", date(2026, 2, 20), "import"),
    record(8, "buy_card", 30_000, 30_000, "USD", date(2026, 1, 1), item="a100-80gb"),  # another card
]


def test_price_history_has_a_panel_per_unit() -> None:
    both = image(charts.price_history_chart(RECORDS, card="h100-sxm"))
    rent_only = image(charts.price_history_chart(
        [r for r in RECORDS if r.kind == "rent_card_hour"], card="H100-SXM"))
    (width, height), (rent_width, rent_height) = size(both), size(rent_only)
    assert 1100 <= width <= 1300 and 1100 <= rent_width <= 1300
    assert 400 <= height <= 800
    assert height - rent_height >= 150  # a second panel for CNY per card
    assert_not_blank(both)
    assert_not_blank(rent_only)
    quote = "#F2B134"  # quotes are stars of their own color
    assert mask(both, quote).sum() > 50
    no_quotes = image(charts.price_history_chart([r for r in RECORDS if r.origin != "quote"],
                                                 card="h100-sxm"))
    assert mask(no_quotes, quote).sum() == 0


def test_price_history_of_one_point_and_of_no_card() -> None:
    one = image(charts.price_history_chart(RECORDS[:1], card="h100-sxm"))
    assert_not_blank(one)
    with pytest.raises(ValueError, match="no price records for h200"):
        charts.price_history_chart(RECORDS, card="h200")


# -- Chinese, and the fallback without a CJK font -----------------------------------------------------

needs_cjk = pytest.mark.skipif(
    charts.cjk_font() is None,
    reason="no CJK font installed (apt-get install fonts-wqy-microhei; scripts/test does): "
           "the English fallback is tested without one")


@needs_cjk
def test_chinese_labels_draw_without_missing_glyphs() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font(s)" would fail here
        zh = charts.memory_chart(answer(), lang="zh")
        zh_prices = charts.price_history_chart(RECORDS, card="h100-sxm", lang="zh")
        en_prices = charts.price_history_chart(RECORDS, card="h100-sxm")  # a Chinese vendor name
    assert charts.png_language(zh) == "zh" and charts.png_language(zh_prices) == "zh"
    assert charts.png_language(en_prices) == "en"
    en = image(charts.memory_chart(answer()))
    zh_img = image(zh)
    assert zh_img.shape == en.shape and bar_count(zh_img) == 6
    assert not np.array_equal(zh_img, en)
    assert_not_blank(image(zh_prices))


def test_without_cjk_font_falls_back_to_english_and_says_so(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(charts, "cjk_font", lambda: None)
    with caplog.at_level(logging.WARNING, logger=charts.__name__), warnings.catch_warnings():
        warnings.simplefilter("error")  # no silent boxes: matplotlib would warn of missing glyphs
        fallback = charts.memory_chart(answer(), lang="zh")
        prices = charts.price_history_chart(RECORDS, card="h100-sxm", lang="zh")
    assert charts.png_language(fallback) == "en" and charts.png_language(prices) == "en"
    said = [r.getMessage() for r in caplog.records if r.name == charts.__name__]
    assert any("no CJK font" in m and "English" in m for m in said)
    assert any("vendor names" in m for m in said)  # 某供应商 drawn as "…"
    english = charts.memory_chart(answer(), lang="en")
    assert np.array_equal(image(fallback), image(english))


# -- the command line -----------------------------------------------------------------------------


@pytest.mark.slow  # the CLI as a command
def test_cli_chart_end_to_end(tmp_path: Path) -> None:
    path = tmp_path / "memory.png"
    out = run("13B", "full-finetune", "--chart", str(path))
    assert out.returncode == 0, out.stderr
    assert out.stderr == f"chart written to {path}\n"
    assert "Assumptions:" in out.stdout
    img = image(path.read_bytes())
    assert 1100 <= size(img)[0] <= 1300 and bar_count(img) == 6
    assert_not_blank(img)

    other = tmp_path / "lora.png"
    out = run("llama-3.1-8b", "qlora", "gpu=4090", "gpus=1", f"--chart={other}", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["plans"][0]["gpu"] == "rtx-4090"
    assert bar_count(image(other.read_bytes())) == 1


@pytest.mark.slow  # the CLI as a command
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["13B", "lora", "--chart", "{tmp}/missing/dir/x.png"], "cannot write the chart"),
        (["13B", "lora", "--chart={tmp}"], "cannot write the chart"),
        (["13B", "lora", "--chart"], "--chart needs a file name"),
        (["13B", "lora", "--chart="], "--chart needs a file name"),
        (["13B", "lora", "--chart", "--json"], "--chart needs a file name"),
        (["-5B", "lora", "--chart", "{tmp}/x.png"], "-5B"),
    ],
)
def test_cli_chart_errors_exit_2_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    out = run(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert out.returncode == 2
    assert needle in out.stderr
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1
    assert out.stdout == ""
    assert not (tmp_path / "x.png").exists()
