"""The terminal answer: configurations, a bar per memory component, fit, assumptions."""

from __future__ import annotations

from engine.i18n import _, counted, money
from engine.schema import Answer, Plan
from present.detail import api_lines, bom_lines, capacity_lines, launch_lines, traffic_lines
from present.labels import (
    COMPONENTS,
    GIB,
    LABELS,
    columns,
    cost_summary,
    gib,
    label,
    method_title,
    pad,
    speed_summary,
    text_width,
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
    width = max(text_width(label(name)) for name in LABELS)
    lines = [f"{plan.gpus} x {plan.gpu_display} — {plan.strategy}"]

    def row(name: str, bar: str, value: str) -> str:
        return f"  {pad(label(name), width)} {bar} {value:>11}"

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
    if m.reserve and "reserve" in m.detail:  # the cache a reserved peak shows beyond the total
        lines.append(f"  {m.detail['reserve']}")
    if m.host_offload:
        lines.append(_("  host RAM for offloaded states: {size} per GPU").format(
            size=gib(m.host_offload)))
    lines += [_("  note: {note}").format(note=n) for n in plan.notes]
    return lines


CARD_COLUMN = 28  # longer card names are clipped, so the columns after them stay in line


def table(plans: list[Plan]) -> list[str]:
    cur = next((p.cost.currency for p in plans if p.cost), "")
    rows = [(_("card"), _("GPUs"), _("per GPU"), _("of"), _("buy"), _("rent/mo"), _("speed"),
             " " + _("sharding"))]
    for p in plans:
        m, c = p.memory, p.cost
        buy = (money(c.buy.capex, cur) if c else "-").replace(" " + cur, "")
        if c is not None and c.buy.capex is not None and c.stale_purchases:
            buy = "*" + buy  # a purchase price over 12 months old: footnoted below the table
        rent = (money(c.rent.monthly, cur) if c else "-").replace(" " + cur, "")
        fit = "" if p.verdict == "fits" else f" ({verdict_label(p)})"
        rows.append((p.gpu_display, str(p.gpus), gib(m.total),
                     f"{m.capacity / GIB:.0f}Gi", buy, rent, speed_summary(p, per_user=False),
                     f" {p.strategy}{fit}"))
    return ["  " + line for line in columns(rows, right=range(1, 7), limits={0: CARD_COLUMN})]


def stale_mark_note(plans: list[Plan]) -> list[str]:
    """What table()'s '*' on a buy figure means, when one is shown."""
    if any(p.cost and p.cost.buy.capex is not None and p.cost.stale_purchases for p in plans):
        return [_("  * a purchase price over 12 months old: get a fresh quote before buying")]
    return []


def cost_lines(plan: Plan) -> list[str]:
    c = plan.cost
    if c is None:
        return []
    lines = [_("Cost ({currency}, {hours:g} h/month, {months}):").format(
        currency=c.currency, hours=c.hours_per_month, months=counted(c.months, "month"))]
    lines += [f"  {line}" for line in cost_summary(c)]
    lines += [_("  price: {source}").format(source=s) for s in c.price_sources]
    return lines


def render(ans: Answer, *, bom: bool = False) -> str:
    """The answer as text; `bom` adds the first option's bill of materials (--bom)."""
    model = ans.model
    active = (_(", {active:.1f}B active").format(active=model.active_params / 1e9)
              if model.active_params < 0.9 * model.params else "")
    # the method asked titles the answer even when no plan runs (plans[0] may change it)
    method = ans.plans[0].method if ans.plans else ans.method
    head = _("{model} ({params:.2f}B params{active}) — {method}").format(
        model=model.display, params=model.params / 1e9, active=active,
        method=method_title(method) if method else "")
    lines = [head, ""]
    if ans.recommendation:
        lines += [ans.recommendation, ""]
    if ans.to_buy:
        lines.append(_("To own the cards instead, within the budget:"))
        lines += [f"  - {a.change}" for a in ans.to_buy]
        lines.append("")
    if ans.alternatives:
        lines.append(_("What would fit:"))
        lines += [f"  - {a.change}" for a in ans.alternatives]
        lines.append("")
    if not ans.plans:
        lines.append(_("No card in the catalog can hold this configuration."))
    else:
        if not ans.pinned and len(ans.plans) > 1:
            lines.append(_("Options, best first (smallest GPU count that fits per card):"))
            lines += table(ans.plans[:6]) + stale_mark_note(ans.plans[:6])
            if len(ans.plans) > 6:
                lines.append(_("  ... {count} more in --json").format(count=len(ans.plans) - 6))
            lines.append("")
        lines.append(_("Memory of the first option:"))
        lines += breakdown(ans.plans[0])
        if ans.plans[0].speed.detail:
            lines.append(_("  speed: {detail}").format(detail=ans.plans[0].speed.detail))
        lines += ["", *cost_lines(ans.plans[0])]
        if bom and ans.plans[0].bom is not None:
            lines += ["", *bom_lines(ans.plans[0])]
        elif ans.plans[0].bom is not None:
            lines += ["", _("(--bom: the whole server, not just the cards)")]
    if ans.traffic:
        lines += ["", *traffic_lines(ans)]
    if ans.plans and ans.plans[0].api:
        lines += ["", *api_lines(ans.plans[0])]
    if ans.capacity:
        lines += ["", *capacity_lines(ans.capacity)]
    if ans.trial:
        lines += ["", _("Before buying: ") + ans.trial.note]
    if ans.advice:
        lines += ["", _("Advice from the buying guides:")] + [f"  - {a}" for a in ans.advice]
    if ans.warnings:
        lines += ["", _("Warnings:")] + [f"  ! {w}" for w in ans.warnings]
    lines += ["", _("Assumptions:")] + [f"  - {a}" for a in ans.assumptions]
    if ans.plans and ans.plans[0].launch:
        lines += ["", *launch_lines(ans.plans[0])]
    return "\n".join(lines)
