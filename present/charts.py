"""Pictures of an answer: per-GPU memory of the top plans, and one card's price history.

Both return PNG bytes drawn offscreen (matplotlib's Agg backend, no display). matplotlib is
imported only here, and this module only when a chart is asked for (`gpusize ... --chart FILE`),
so the plain CLI answer stays fast.

`lang="zh"` labels in Chinese when a CJK font is installed (Noto CJK, WenQuanYi, Source Han, ...;
on Debian `apt-get install fonts-wqy-microhei`). Without one the chart falls back to English
rather than drawing empty boxes: a warning is logged on "present.charts" and the PNG's "Language"
text chunk says which language was drawn (`png_language()` reads it back).
"""

from __future__ import annotations

import io
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import date, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from engine.i18n import LANGUAGES, N_, _, language
from engine.methods import method
from present.labels import COMPONENTS, GIB, LABELS, label

if TYPE_CHECKING:
    from engine.schema import Answer, Plan


class PriceRecord(Protocol):
    """What the price chart reads of a price record (bot.pricestore.PriceRecord has these)."""

    item: str
    kind: str
    currency: str
    low: float
    high: float
    quoted: date
    origin: str
    vendor: str

log = logging.getLogger(__name__)
# matplotlib's settings (rcParams, which rc_context swaps) are process-wide: one chart at a time,
# should the bot draw from several threads. Figures are made without pyplot (no global registry).
_DRAWING = threading.Lock()

DPI = 100
WIDTH_IN = 12.0  # 1200 px at DPI
COLORS = {
    "weights": "#4C72B0",
    "gradients": "#DD8452",
    "optimizer": "#55A868",
    "activations": "#C44E52",
    "kv_cache": "#8172B3",
    "overhead": "#937860",
    "headroom": "#9A9A9A",
    "capacity": "#202020",
    "no_fit": "#C0392B",
}

CHART_TEXT = {
    "capacity": N_("card capacity"), "axis": N_("GiB per GPU"),
    "title": N_("{model} — {method}: memory per GPU"),
    "fits": N_("{used:,.1f} of {cap:,.0f} GiB"),
    "no_fit": N_("does not fit: {used:,.1f} of {cap:,.0f} GiB"),
    "no_plans": N_("no configuration to chart"),
    "price_title": N_("{card}: price history"), "date": N_("date quoted"),
    "quote": N_("vendor quote"), "newest": N_("newest {value} {currency}\n{date}"),
    "buy_card": N_("buy, per card"), "buy_server": N_("buy, per server"),
    "rent_card_hour": N_("rent, per GPU-hour"), "rent_server_month": N_("rent, per month"),
    "rent_cluster_hour": N_("rent, per GPU-hour in a reserved cluster"),
    "catalog": N_("catalog"), "feed": N_("feed"), "import": N_("import"),
}


def _text(lang: str) -> dict[str, str]:
    """Every word a chart draws, in `lang` (the message catalog, as everywhere else)."""
    with language(lang):
        return {**{name: label(name) for name in LABELS},
                **{key: _(value) for key, value in CHART_TEXT.items()}}


# Families that carry Chinese glyphs, best first; the file-name hints find ones that are
# installed but missing from matplotlib's font cache (installed after the cache was built).
CJK_FAMILIES = (
    "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN",
    "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Noto Sans CJK JP", "Noto Sans CJK TC",
    "Sarasa Gothic SC", "Droid Sans Fallback", "AR PL UMing CN", "AR PL UKai CN",
    "PingFang SC", "Hiragino Sans GB", "Heiti SC", "STHeiti", "Microsoft YaHei", "SimHei",
)
CJK_FILE_HINTS = ("notosanscjk", "notoserifcjk", "notosanssc", "sourcehansans", "wqy", "droidsansfallback",
                  "uming", "ukai", "sarasa", "pingfang", "hiragino", "stheiti", "msyh", "simhei")
_PROBE = "权重梯度显存每卡余量价格"


def _mpl() -> Any:
    """matplotlib with the offscreen backend, whatever MPLBACKEND or a matplotlibrc says."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    return matplotlib


def _covers(path: str, text: str = _PROBE) -> bool:
    from matplotlib.ft2font import FT2Font

    try:
        font = FT2Font(path)
        return all(font.get_char_index(ord(ch)) for ch in text)
    except (OSError, RuntimeError, ValueError):
        return False


@cache
def cjk_font() -> str | None:
    """The family name of an installed font that draws Chinese, or None."""
    _mpl()
    from matplotlib import font_manager

    manager = font_manager.fontManager

    def known() -> str | None:
        by_name = {f.name: f.fname for f in manager.ttflist}
        for family in CJK_FAMILIES:
            if family in by_name and _covers(by_name[family]):
                return family
        return None

    found = known()
    if found:
        return found
    for path in font_manager.findSystemFonts():
        name = os.path.basename(path).lower().replace("-", "").replace("_", "")
        if any(hint in name for hint in CJK_FILE_HINTS) and _covers(path):
            try:
                manager.addfont(path)
            except (OSError, RuntimeError, ValueError):
                continue
    found = known()
    if found:
        return found
    for entry in manager.ttflist:  # any other font that happens to cover the probe
        # matplotlib's "Last Resort" font "covers" everything with placeholder boxes
        if (entry.name not in ("DejaVu Sans", "DejaVu Serif", "DejaVu Sans Mono")
                and not entry.name.startswith("Last Resort") and _covers(entry.fname)):
            return entry.name
    return None


def effective_lang(lang: str) -> str:
    """The language a chart will be drawn in: "zh" only where a CJK font is installed."""
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {', '.join(LANGUAGES)}, not {lang!r}")
    if lang == "zh" and cjk_font() is None:
        log.warning("no CJK font found (install fonts-noto-cjk or fonts-wqy-microhei): "
                    "drawing the chart with English labels")
        return "en"
    return lang


def _wide(ch: str) -> bool:
    """Characters DejaVu Sans lacks that a CJK font has (ideographs, kana, hangul, full-width)."""
    o = ord(ch)
    return (0x2E80 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF
            or 0xFE30 <= o <= 0xFFEF or o >= 0x20000)


def _width(s: str) -> int:
    return sum(2 if _wide(ch) else 1 for ch in s)


def _style(lang: str, data: Iterable[str]) -> tuple[dict[str, Any], Callable[[str], str]]:
    """matplotlib settings for `lang`, and what to pass names from the data (models, cards,
    vendors) through: they may be Chinese even on an English chart. With a CJK font it backs up
    DejaVu Sans; without one, their CJK runs become "…" (said in a warning), never empty boxes."""
    rc: dict[str, Any] = {"font.size": 10, "axes.titlesize": 13, "axes.titleweight": "bold",
                          "legend.fontsize": 9.5, "axes.spines.top": False, "axes.spines.right": False,
                          "axes.unicode_minus": False}

    def keep(s: str) -> str:
        return s

    font = cjk_font() if lang == "zh" or any(_wide(ch) for s in data for ch in s) else None
    # a list of families, not "sans-serif": only so does matplotlib fall back glyph by glyph.
    # CJK fonts seldom ship a bold face (asking for one only earns a findfont warning).
    if lang == "zh":
        rc.update({"font.family": [font, "DejaVu Sans"], "axes.titleweight": "normal"})
    elif font:
        rc.update({"font.family": ["DejaVu Sans", font], "axes.titleweight": "normal"})
    elif any(_wide(ch) for s in data for ch in s):
        log.warning("no CJK font found (install fonts-noto-cjk or fonts-wqy-microhei): Chinese "
                    "characters in model, card or vendor names are drawn as '…'")

        def keep(s: str) -> str:
            return re.sub(r"…+", "…", "".join("…" if _wide(ch) else ch for ch in s))

    return rc, keep


def _png(fig: Any, lang: str, title: str) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI,
                metadata={"Title": title, "Software": "gpusize", "Language": lang})
    return buf.getvalue()


def png_language(png: bytes) -> str | None:
    """The language a chart from this module was drawn in (its PNG "Language" text chunk)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as img:
        return img.info.get("Language")


# -- memory -------------------------------------------------------------------------------------


def segments(plan: Plan) -> dict[str, float]:
    """Per-GPU GiB of each component, `reused` taken off the larger of gradients and activations
    (the rest, if any, off the other) so that the segments add up to `total`."""
    m = plan.memory
    values = {name: float(getattr(m, name)) for name in COMPONENTS}
    left = float(m.reused)
    for name in sorted(("gradients", "activations"), key=lambda n: -values[n]):
        take = min(left, values[name])
        values[name] -= take
        left -= take
    return {name: v / GIB for name, v in values.items()}


def _bar_end(plan: Plan) -> float:
    m = plan.memory
    return max(m.capacity, m.total + m.headroom) / GIB


def _fit_note(plan: Plan, text: dict[str, str]) -> str:
    m = plan.memory
    return text["fits" if m.fits else "no_fit"].format(used=(m.total + m.headroom) / GIB,
                                                       cap=m.capacity / GIB)


def plan_label(plan: Plan) -> str:
    return f"{plan.gpus} x {plan.gpu_display}\n({plan.strategy})"


def memory_chart(ans: Answer, *, max_plans: int = 6, lang: str = "en") -> bytes:
    """PNG: one stacked bar per plan (the first `max_plans`), GiB per GPU by component, hatched
    headroom, and each card's capacity marked on its own bar."""
    if max_plans < 1:
        raise ValueError("max_plans must be at least 1")
    lang = effective_lang(lang)
    text = _text(lang)
    plans = list(ans.plans[:max_plans])
    mpl = _mpl()
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    with language(lang):
        method_name = _(method(plans[0].method if plans else ans.method).label) if (
            plans or ans.method) else ""
    rc, keep = _style(lang, [ans.model.display, *(plan_label(p) for p in plans)])
    title = text["title"].format(model=keep(ans.model.display), method=method_name)
    n = max(1, len(plans))
    with _DRAWING, mpl.rc_context(rc):
        fig = Figure(figsize=(WIDTH_IN, (200 + 80 * n) / DPI), dpi=DPI, layout="constrained")
        ax = fig.subplots()
        if not plans:
            ax.text(0.5, 0.5, text["no_plans"], ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
            fig.suptitle(title, x=0.01, ha="left", fontsize=13, fontweight=rc["axes.titleweight"])
            return _png(fig, lang, title)
        notes = [_fit_note(p, text) for p in plans]
        # room for the note written past each bar: ~6.5 px a character (wide ones twice) of the
        # ~900 px the axes get at 1200 px
        xlim = max(_bar_end(p) / max(0.3, 1 - (_width(note) * 6.5 + 14) / 900)
                   for p, note in zip(plans, notes, strict=True))
        height = 0.56
        used: set[str] = set()
        for y, plan in enumerate(plans):
            m = plan.memory
            cap = m.capacity / GIB
            ax.barh(y, cap, height=height + 0.16, color="#F1F1F1", linewidth=0, zorder=0)
            left = 0.0
            for name, value in segments(plan).items():
                if value <= 0:
                    continue
                used.add(name)
                ax.barh(y, value, left=left, height=height, color=COLORS[name],
                        edgecolor="white", linewidth=0.6)
                if value / xlim > 0.045:  # write the figure where it fits
                    ax.text(left + value / 2, y, f"{value:,.1f}", ha="center", va="center",
                            fontsize=8.5, color="white")
                left += value
            headroom = m.headroom / GIB
            if headroom > 0:
                ax.barh(y, headroom, left=left, height=height, color="white",
                        edgecolor=COLORS["headroom"], hatch="///", linewidth=0.8)
            mark = COLORS["capacity"] if m.fits else COLORS["no_fit"]
            ax.plot([cap, cap], [y - 0.42, y + 0.42], color=mark, linewidth=2.4,
                    solid_capstyle="butt", zorder=5)
            ax.text(_bar_end(plan) + xlim * 0.008, y, notes[y], va="center", ha="left", fontsize=9,
                    color="#333333" if m.fits else COLORS["no_fit"])
        ax.set_yticks(range(len(plans)), [keep(plan_label(p)) for p in plans], fontsize=9.5)
        ax.set_ylim(len(plans) - 0.45, -0.55)  # best plan on top
        ax.set_xlim(0, xlim)
        ax.set_xlabel(text["axis"])
        ax.grid(axis="x", color="#DDDDDD", linewidth=0.7)
        ax.set_axisbelow(True)
        ax.set_title(title, loc="left", pad=30)
        handles = [Patch(facecolor=COLORS[c], label=text[c]) for c in COMPONENTS if c in used]
        handles.append(Patch(facecolor="white", edgecolor=COLORS["headroom"], hatch="///",
                             label=text["headroom"]))
        handles.append(Line2D([], [], color=COLORS["capacity"], linewidth=2.4, label=text["capacity"]))
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(handles),
                  frameon=False, borderaxespad=0.2, handlelength=1.6, columnspacing=1.4)
        return _png(fig, lang, title)


# -- prices -------------------------------------------------------------------------------------

KIND_ORDER = ("rent_card_hour", "rent_server_month", "rent_cluster_hour", "buy_card",
              "buy_server")
SERIES_COLORS = ("#4C72B0", "#DD8452", "#55A868", "#8172B3", "#937860", "#C44E52")
ORIGIN_MARKERS = {"catalog": "o", "feed": "s", "import": "D", "quote": "*"}


def _money(value: float) -> str:
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def _groups(records: Iterable[PriceRecord]) -> list[tuple[tuple[str, str], list[PriceRecord]]]:
    groups: dict[tuple[str, str], list[PriceRecord]] = {}
    for rec in records:
        groups.setdefault((rec.kind, rec.currency), []).append(rec)
    order = {k: i for i, k in enumerate(KIND_ORDER)}
    return sorted(((key, sorted(recs, key=lambda r: (r.quoted, r.low))) for key, recs in groups.items()),
                  key=lambda item: (order.get(item[0][0], 9), item[0][1]))


def price_history_chart(records: Sequence[PriceRecord], *, card: str, lang: str = "en") -> bytes:
    """PNG: `card`'s prices over time, one panel per (kind, currency) since their units differ.
    Each point is the midpoint of its quoted range (the range drawn as a bar); vendor quotes are
    stars, catalog/feed/import points circles/squares/diamonds; a dashed line marks the newest."""
    mine = [r for r in records if r.item.lower() == card.lower()]
    if not mine:
        raise ValueError(f"no price records for {card}")
    lang = effective_lang(lang)
    text = _text(lang)
    groups = _groups(mine)
    mpl = _mpl()
    import matplotlib.dates as mdates
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    rc, keep = _style(lang, [card, *(r.vendor for r in mine)])
    title = text["price_title"].format(card=keep(card))
    n = len(groups)
    with _DRAWING, mpl.rc_context(rc):
        fig = Figure(figsize=(WIDTH_IN, (140 + 230 * n) / DPI), dpi=DPI, layout="constrained")
        axes = fig.subplots(n, 1, sharex=True, squeeze=False)
        origins: set[str] = set()
        for i, ((kind, currency), recs) in enumerate(groups):
            ax = axes[i][0]
            color = SERIES_COLORS[i % len(SERIES_COLORS)]
            dates = [r.quoted for r in recs]
            mids = [(r.low + max(r.low, r.high)) / 2 for r in recs]
            # the line follows the cheapest price of each date (what answers use); other prices of
            # the same date (other regions, providers) stay as points
            cheapest: dict[date, float] = {}
            for day, mid in zip(dates, mids, strict=True):
                cheapest[day] = min(mid, cheapest.get(day, mid))
            ax.plot(list(cheapest), list(cheapest.values()), color=color, linewidth=1.6, zorder=2)
            for rec, mid in zip(recs, mids, strict=True):
                origins.add(rec.origin)
                high = max(rec.low, rec.high)
                if high > rec.low:
                    ax.vlines(rec.quoted, rec.low, high, color=color, alpha=0.45, linewidth=3, zorder=1)
                quote = rec.origin == "quote"
                ax.plot([rec.quoted], [mid], linestyle="none", zorder=3,
                        marker=ORIGIN_MARKERS.get(rec.origin, "o"),
                        markersize=15 if quote else 7, markeredgecolor="#222222" if quote else "white",
                        markerfacecolor="#F2B134" if quote else color, markeredgewidth=1.0)
                if quote and rec.vendor:
                    ax.annotate(keep(rec.vendor[:24]), xy=(rec.quoted, mid), xytext=(0, 10),
                                textcoords="offset points", ha="center", va="bottom", fontsize=8,
                                color="#555555")
            last = max(recs, key=lambda r: (r.quoted, -r.low))  # as bot.pricestore.newest
            last_mid = (last.low + max(last.low, last.high)) / 2
            ax.axhline(last_mid, color=color, linestyle="--", linewidth=1.0, alpha=0.8, zorder=0)
            label = text["newest"].format(value=_money(last_mid), currency=currency,
                                          date=last.quoted.isoformat())
            if last.origin == "quote" and last.vendor:
                label += f"\n{keep(last.vendor[:24])}"
            # a tag just right of the axes at the newest value's height, clear of the data
            ax.annotate(label, xy=(1.0, last_mid), xycoords=("axes fraction", "data"),
                        xytext=(8, 0), textcoords="offset points", ha="left", va="center",
                        fontsize=9, color="white", fontweight=rc["axes.titleweight"], annotation_clip=False,
                        bbox={"boxstyle": "round,pad=0.35", "facecolor": color, "edgecolor": "none"})
            ax.set_ylabel(f"{currency}\n{text.get(kind, kind)}")
            low = min(r.low for r in recs)
            high = max(max(r.low, r.high) for r in recs)
            pad = (high - low) * 0.25 or high * 0.1
            ax.set_ylim(max(0.0, low - pad), high + pad * 1.6)
            ax.yaxis.set_major_formatter(lambda v, _pos: _money(v))
            ax.grid(color="#E2E2E2", linewidth=0.7)
            ax.set_axisbelow(True)
        # constrained layout makes room for the tags' text but not their boxes' padding
        fig.get_layout_engine().set(rect=(0, 0, 0.99, 1))
        bottom = axes[-1][0]
        locator = mdates.AutoDateLocator(minticks=3, maxticks=9)
        bottom.xaxis.set_major_locator(locator)
        zh_formats = ["%Y年", "%m月", "%d日", "%H:%M", "%H:%M", "%S.%f"] if lang == "zh" else None
        bottom.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, formats=zh_formats))
        bottom.set_xlabel(text["date"])
        first = min(r.quoted for r in mine)
        final = max(r.quoted for r in mine)
        if first == final:  # one date: give the axis some width
            first, final = first - timedelta(days=15), final + timedelta(days=15)
        span = (final - first) * 0.04
        bottom.set_xlim(first - span, final + span)
        top = axes[0][0]
        top.set_title(title, loc="left")
        handles = [Line2D([], [], linestyle="none", marker=ORIGIN_MARKERS[o], markersize=7,
                          markerfacecolor="#777777", markeredgecolor="white", label=text[o])
                   for o in ("catalog", "feed", "import") if o in origins]
        if "quote" in origins:
            handles.append(Line2D([], [], linestyle="none", marker="*", markersize=13,
                                  markerfacecolor="#F2B134", markeredgecolor="#222222",
                                  label=text["quote"]))
        if handles:
            top.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False,
                       ncol=len(handles), borderaxespad=0.2)
        return _png(fig, lang, title)
