"""The terminal answer: configurations, a bar per memory component, fit, assumptions."""

from __future__ import annotations

import unicodedata

from engine.i18n import _, money
from engine.schema import Answer, Plan
from present.labels import (
    COMPONENTS,
    GIB,
    LABELS,
    cost_summary,
    gib,
    label,
    speed_summary,
    verdict_label,
)

BAR = 32


def _bar(value: float, capacity: float, char: str = "█") -> str:
    filled = min(BAR, round(BAR * value / capacity)) if capacity else 0
    if value > 0 and filled == 0:
        return "▏".ljust(BAR, "·")
    return (char * filled).ljust(BAR, "·")


def fit_line(plan: Plan) -> str:
    m = plan.memory
    line = _("{verdict}: {total} of {capacity} per GPU ({free:.0%} free; {headroom:.0%} "
             "headroom advised)").format(
        verdict=verdict_label(plan).upper() if plan.verdict == "no" else verdict_label(plan),
        total=gib(m.total), capacity=gib(m.capacity), free=max(0.0, 1 - m.total / m.capacity),
        headroom=m.headroom / m.total if m.total else 0.0)
    if m.usable and m.usable < m.capacity:
        line += _("; the engine may use {usable}").format(usable=gib(m.usable))
    return line


def breakdown(plan: Plan) -> list[str]:
    m = plan.memory
    width = max(_width(label(name)) for name in LABELS)
    lines = [f"{plan.gpus} x {plan.gpu_display} — {plan.strategy}"]

    def row(name: str, bar: str, value: str) -> str:
        return f"  {_cell(label(name), width)} {bar} {value:>11}"

    for name in COMPONENTS:
        value = getattr(m, name)
        if value == 0 and name in ("gradients", "optimizer", "kv_cache"):
            continue
        lines.append(row(name, _bar(value, m.capacity), gib(value)))
        if name in m.detail:
            lines.append(f"  {'':<{width}} {m.detail[name]}")
    if m.reused:
        lines.append(row("reused", " " * BAR, "-" + gib(m.reused)))
        lines.append(f"  {'':<{width}} {m.detail.get('reused', '')}")
    lines.append(row("headroom", _bar(m.headroom, m.capacity, "░"), gib(m.headroom)))
    lines.append(row("total", _bar(m.total + m.headroom, m.capacity, "▓"),
                     gib(m.total + m.headroom)) + f" / {gib(m.capacity)}")
    lines.append(f"  {fit_line(plan)}")
    if m.host_offload:
        lines.append(_("  host RAM for offloaded states: {size} per GPU").format(
            size=gib(m.host_offload)))
    lines += [_("  note: {note}").format(note=n) for n in plan.notes]
    return lines


def _width(text: str) -> int:
    """Columns a string takes in a terminal: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _cell(text: str, width: int, *, right: bool = False) -> str:
    pad = " " * max(0, width - _width(text))
    return pad + text if right else text + pad


def aligned(rows: list[list[str]], right: frozenset[int] = frozenset()) -> list[str]:
    """Rows as monospaced lines, columns padded to their widest cell as a terminal (or a code
    block on a phone) shows them: CJK characters count two. `right`: columns aligned right."""
    widths = [max(_width(row[i]) for row in rows if i < len(row))
              for i in range(max(len(r) for r in rows))] if rows else []
    return [" ".join(_cell(cell, widths[i], right=i in right) for i, cell in enumerate(row))
            .rstrip() for row in rows]


def table(plans: list[Plan]) -> list[str]:
    cur = next((p.cost.currency for p in plans if p.cost), "")
    widths = (24, 4, 9, 7, 10, 10, 12)
    header = (_("card"), _("GPUs"), _("per GPU"), _("of"), _("buy"), _("rent/mo"), _("speed"))
    lines = ["  " + " ".join(_cell(h, w, right=i > 0) for i, (h, w) in enumerate(
        zip(header, widths, strict=True))) + "  " + _("sharding")]
    for p in plans:
        m, c = p.memory, p.cost
        buy = (money(c.buy.capex, cur) if c else "-").replace(" " + cur, "")
        rent = (money(c.rent.monthly, cur) if c else "-").replace(" " + cur, "")
        fit = "" if p.verdict == "fits" else f" ({verdict_label(p)})"
        cells = (p.gpu_display, str(p.gpus), gib(m.total),
                 f"{m.capacity / GIB:.0f}Gi", buy, rent, speed_summary(p, per_user=False))
        lines.append("  " + " ".join(_cell(v, w, right=i > 0) for i, (v, w) in enumerate(
            zip(cells, widths, strict=True))) + f"  {p.strategy}{fit}")
    return lines


def cost_lines(plan: Plan) -> list[str]:
    c = plan.cost
    if c is None:
        return []
    lines = [_("Cost ({currency}, {hours:g} h/month, {months} months):").format(
        currency=c.currency, hours=c.hours_per_month, months=c.months)]
    lines += [f"  {line}" for line in cost_summary(c)]
    lines += [_("  price: {source}").format(source=s) for s in c.price_sources]
    return lines


def render(ans: Answer) -> str:
    model = ans.model
    active = (_(", {active:.1f}B active").format(active=model.active_params / 1e9)
              if model.active_params < 0.9 * model.params else "")
    method = ans.plans[0].method if ans.plans else ""
    head = _("{model} ({params:.2f}B params{active}) — {method}").format(
        model=model.display, params=model.params / 1e9, active=active, method=method)
    lines = [head, ""]
    if ans.recommendation:
        lines += [ans.recommendation, ""]
    if ans.alternatives:
        lines.append(_("What would fit:"))
        lines += [f"  - {a.change}" for a in ans.alternatives]
        lines.append("")
    if not ans.plans:
        lines.append(_("No card in the catalog can hold this configuration."))
    else:
        if not ans.pinned and len(ans.plans) > 1:
            lines.append(_("Options, best first (smallest GPU count that fits per card):"))
            lines += table(ans.plans[:6])
            if len(ans.plans) > 6:
                lines.append(_("  ... {count} more in --json").format(count=len(ans.plans) - 6))
            lines.append("")
        lines.append(_("Memory of the first option:"))
        lines += breakdown(ans.plans[0])
        if ans.plans[0].speed.detail:
            lines.append(_("  speed: {detail}").format(detail=ans.plans[0].speed.detail))
        lines += ["", *cost_lines(ans.plans[0])]
    if ans.trial:
        lines += ["", _("Before buying: ") + ans.trial.note]
    if ans.advice:
        lines += ["", _("Advice from the buying guides:")] + [f"  - {a}" for a in ans.advice]
    if ans.warnings:
        lines += ["", _("Warnings:")] + [f"  ! {w}" for w in ans.warnings]
    lines += ["", _("Assumptions:")] + [f"  - {a}" for a in ans.assumptions]
    return "\n".join(lines)
