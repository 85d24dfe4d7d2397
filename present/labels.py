"""Words and units every surface shares, so one number has one label in the terminal, in Slack
and on a chart (in either language: every label goes through the message catalog)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from engine import memory
from engine.i18n import N_, _, money
from engine.methods import method
from engine.schema import Cost, Plan

GIB = memory.GIB  # one definition, engine/memory.py
# Memory components in the order every surface shows them.
COMPONENTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead")
LABELS = {"weights": N_("weights"), "gradients": N_("gradients"),
          "optimizer": N_("optimizer states"), "activations": N_("activations"),
          "kv_cache": N_("KV cache"), "overhead": N_("overhead"),
          "reused": N_("reused in backward"), "headroom": N_("headroom"), "total": N_("total")}


def label(name: str) -> str:
    """A memory component's label in the current language."""
    return _(LABELS[name])


def method_title(name: str) -> str:
    """A method as a button or heading names it ("Full fine-tune", "QLoRA")."""
    return _(method(name).title)


def gib(value: float) -> str:
    return f"{value / GIB:,.1f} GiB"


def cost_summary(c: Cost) -> list[str]:
    """One line per cost fact, shared by the terminal and Slack renderings."""
    lines = []
    m = lambda amount: money(amount, c.currency)  # noqa: E731
    if c.buy.capex is not None:
        lines.append(_("buy {capex} up front, then {monthly}/month (depreciation {dep}, power "
                       "{power}, operations {ops})").format(
            capex=m(c.buy.capex), monthly=m(c.buy.monthly_total),
            dep=m(c.buy.monthly_depreciation), power=m(c.buy.monthly_power),
            ops=m(c.buy.monthly_ops)))
    if c.rent.per_gpu_hour is not None:
        lines.append(_("rent {rate:.2f} {currency} per GPU-hour = {monthly}/month").format(
            rate=c.rent.per_gpu_hour, currency=c.currency, monthly=m(c.rent.monthly)))
    if c.break_even_hours_per_month is not None:
        if c.break_even_hours_per_month > 730:
            lines.append(_("renting stays cheaper at any use: buying would pay off only above "
                           "{hours:,.0f} h/month, more than a month has (the guides claim "
                           "{claim:.0f} h/month)").format(hours=c.break_even_hours_per_month,
                                                          claim=c.seeds_claim_hours_per_month))
        else:
            lines.append(_("buying is cheaper above {hours:.0f} h/month of use (the guides "
                           "claim {claim:.0f} h/month)").format(
                hours=c.break_even_hours_per_month, claim=c.seeds_claim_hours_per_month))
    if not c.buy_allowed or not c.rent_allowed:
        lines.append(_("not offered here: {ways}").format(ways=_(" and ").join(
            w for w, ok in ((_("buying"), c.buy_allowed), (_("renting"), c.rent_allowed))
            if not ok)))
    if c.job.hours is not None:
        lines.append(_("this job: {hours:,.1f} h, {rent} rented, {share} of owning cost").format(
            hours=c.job.hours, rent=m(c.job.rent), share=m(c.job.buy_share)))
    if c.stale:
        lines.append(_("{count} price(s) older than 90 days: get fresh quotes").format(
            count=len(c.stale)))
    return lines


# -- aligned text: the terminal's tables and bars, and code blocks in Slack -----------------------


def text_width(text: str) -> int:
    """Columns a string takes in a monospaced font: CJK and full-width characters take two,
    combining marks none (len() counts 显存 as 2, a terminal as 4)."""
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def clip(text: str, width: int) -> str:
    """`text` cut to at most `width` columns, an ellipsis marking the cut."""
    if text_width(text) <= width:
        return text
    out, used = "", 0
    for c in text:
        w = text_width(c)
        if used + w > width - 1:
            break
        out, used = out + c, used + w
    return out + "…"


def pad(text: str, width: int, *, right: bool = False) -> str:
    """`text` in a cell of `width` columns (clipped when longer), left- or right-aligned."""
    text = clip(text, width)
    fill = " " * (width - text_width(text))
    return fill + text if right else text + fill


def columns(rows: Sequence[Sequence[str]], *, right: Sequence[int] = (),
            limits: dict[int, int] | None = None, gap: str = " ") -> list[str]:
    """Rows of cells as aligned lines: each column as wide as its widest cell (at most its
    limit), by display width, so Chinese labels and card names line up in a terminal or a
    Slack code block alike."""
    limits = limits or {}
    count = max((len(r) for r in rows), default=0)
    widths = [min(max((text_width(r[i]) for r in rows if i < len(r)), default=0),
                  limits.get(i, 1 << 16)) for i in range(count)]
    return [gap.join(pad(cell, widths[i], right=i in right) for i, cell in enumerate(row)).rstrip()
            for row in rows]


def speed_summary(plan: Plan, *, per_user: bool = True) -> str:
    sp = plan.speed
    if sp.decode_tokens_per_s:
        if not per_user:
            return f"{sp.decode_tokens_per_s:,.0f} tok/s"
        return _("{rate:,.0f} tok/s per user").format(rate=sp.decode_tokens_per_s)
    if sp.train_hours is not None:
        return f"{sp.train_hours:,.0f} h"
    if sp.train_tokens_per_s:
        return f"{sp.train_tokens_per_s:,.0f} tok/s"
    return "-"


VERDICTS = {"fits": N_("fits"), "tight": N_("tight"), "no": N_("does not fit")}


def verdict_label(plan: Plan) -> str:
    """fits / tight / does not fit, in the current language."""
    return _(VERDICTS.get(plan.verdict, plan.verdict))
