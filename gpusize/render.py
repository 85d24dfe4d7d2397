"""The terminal answer: configurations, a bar per memory component, fit, assumptions."""

from __future__ import annotations

from engine.answer import Answer, Plan

GIB = 1024**3
BAR = 32
COMPONENTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead")


def gib(value: float) -> str:
    return f"{value / GIB:,.1f} GiB"


def _bar(value: float, capacity: float, char: str = "█") -> str:
    filled = min(BAR, round(BAR * value / capacity)) if capacity else 0
    if value > 0 and filled == 0:
        return "▏".ljust(BAR, "·")
    return (char * filled).ljust(BAR, "·")


def fit_line(plan: Plan) -> str:
    m = plan.memory
    verdict = "fits" if m.fits else "DOES NOT FIT"
    return (f"{verdict}: {gib(m.total)} + {gib(m.headroom)} headroom = {gib(m.total + m.headroom)}"
            f" of {gib(m.capacity)} per GPU")


def breakdown(plan: Plan) -> list[str]:
    m = plan.memory
    lines = [f"{plan.gpus} x {plan.gpu_display} — {plan.strategy}"]
    for name in COMPONENTS:
        value = getattr(m, name)
        if value == 0 and name in ("gradients", "optimizer", "kv_cache"):
            continue
        lines.append(f"  {name:<12} {_bar(value, m.capacity)} {gib(value):>11}")
        if name in m.detail:
            lines.append(f"  {'':<12} {m.detail[name]}")
    if m.reused:
        lines.append(f"  {'reused':<12} {'':<{BAR}} {'-' + gib(m.reused):>11}")
        lines.append(f"  {'':<12} {m.detail.get('reused', '')}")
    lines.append(f"  {'headroom':<12} {_bar(m.headroom, m.capacity, '░')} {gib(m.headroom):>11}")
    lines.append(f"  {'total':<12} {_bar(m.total + m.headroom, m.capacity, '▓')} "
                 f"{gib(m.total + m.headroom):>11} of {gib(m.capacity)}")
    lines.append(f"  {fit_line(plan)}")
    if m.host_offload:
        lines.append(f"  host RAM for offloaded states: {gib(m.host_offload)} per GPU")
    lines += [f"  note: {n}" for n in plan.notes]
    return lines


def table(plans: list[Plan]) -> list[str]:
    lines = [f"  {'card':<24} {'GPUs':>4}  {'per GPU':>11}  {'of':>9}  {'fit':<4} sharding"]
    for p in plans:
        m = p.memory
        lines.append(f"  {p.gpu_display:<24} {p.gpus:>4}  {gib(m.total + m.headroom):>11}  "
                     f"{gib(m.capacity):>9}  {'yes' if m.fits else 'no':<4} {p.strategy}")
    return lines


def render(ans: Answer) -> str:
    model = ans.model
    active = (f", {model.active_params / 1e9:.1f}B active"
              if model.active_params < 0.9 * model.params else "")
    method = ans.plans[0].method if ans.plans else ""
    head = f"{model.display} ({model.params / 1e9:.2f}B params{active}) — {method}"
    lines = [head, ""]
    if not ans.plans:
        lines.append("No card in the catalog can hold this configuration.")
    elif ans.pinned:
        lines += breakdown(ans.plans[0])
    else:
        lines.append("Smallest GPU count per card that fits (with headroom), least memory bought first:")
        lines += table(ans.plans)
        lines += ["", "Breakdown of the first option:"]
        lines += breakdown(ans.plans[0])
    if ans.warnings:
        lines += ["", "Warnings:"] + [f"  ! {w}" for w in ans.warnings]
    lines += ["", "Assumptions:"] + [f"  - {a}" for a in ans.assumptions]
    return "\n".join(lines)
