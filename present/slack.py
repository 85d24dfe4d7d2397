"""Engine answers and dialog steps as Block Kit template data (templates/*.j2), plus their
plain-text fallbacks.

Every label goes through `_()`: the same data and templates serve English and Chinese."""

from __future__ import annotations

from typing import Any

from engine.i18n import N_, _, money
from engine.methods import METHODS
from engine.parse import KEYS
from engine.schema import Answer, Plan
from present.labels import (
    COMPONENTS,
    cost_summary,
    gib,
    label,
    method_title,
    speed_summary,
    verdict_label,
)

BUDGETS = ("50k", "150k", "300k", "500k", "1M", "2M", "5M")
HELP = N_("""*gpusize* sizes GPU servers for fine-tuning and serving LLMs.
`/gpusize MODEL METHOD [key=value ...]`
• MODEL: `13B`, `8x7B`, `llama-3.1-8b`, `Qwen2.5-72B`, `meta-llama/Llama-3.1-8B`
• METHOD: {methods}
• keys: {keys}
Examples: {examples}
Leave things out and I will ask. Reply in the thread to change anything: {replies}.
Also: `/gpusize price [CARD]`, `/gpusize quote ...`, `/gpusize digest ...`, \
`/gpusize lang zh|en|auto [workspace]`.""")
# Examples in the reader's language (the Chinese ones are the zh catalog's; every one must read:
# tests/present/test_examples.py)
HELP_EXAMPLES = N_("`/gpusize 13B full-finetune budget=150k` · `/gpusize llama-3.1-70b serve users=20` "
                   "· `/gpusize qwen2.5-7b qlora gpu=4090` · `/gpusize 13B 全参微调 预算15万`")
REPLY_EXAMPLES = N_('"what about lora?", "budget 300k", "8k context", "gpu=h20 gpus=8"')


def help_text() -> str:
    """/gpusize help, with every method and key the grammar reads."""
    return _(HELP).format(methods=" | ".join(f"`{m}`" for m in METHODS),
                          keys=" ".join(f"`{k}=`" for k in KEYS),
                          examples=_(HELP_EXAMPLES), replies=_(REPLY_EXAMPLES))


def memory_fields(plan: Plan) -> list[str]:
    m = plan.memory
    fields = [f"*{label(name)}*\n{gib(getattr(m, name))}" for name in COMPONENTS
              if getattr(m, name) or name in ("weights", "activations")]
    if m.reused:
        fields.append(f"*{label('reused')}*\n-{gib(m.reused)}")
    fields.append(_("*total + headroom*\n{need} of {capacity}").format(
        need=gib(m.total + m.headroom), capacity=gib(m.capacity)))
    return fields[:10]


def options_text(plans: list[Plan], limit: int = 4) -> str:
    lines = [_("*Options* (card · GPUs · buy · rent/month · speed)")]
    for plan in plans[:limit]:
        c = plan.cost
        buy = money(c.buy.capex, c.currency) if c else _("n/a")
        rent = money(c.rent.monthly, c.currency) if c else _("n/a")
        fit = "" if plan.verdict == "fits" else f" ({verdict_label(plan)})"
        lines.append(f"• {plan.gpu_display} × {plan.gpus} · {buy} · {rent} · "
                     f"{speed_summary(plan)} · {plan.strategy}{fit}")
    return "\n".join(lines)


def cost_text(plan: Plan) -> str:
    c = plan.cost
    if c is None:
        return ""
    header = _("*Cost* ({currency}, {hours:g} h/month, {months} months)").format(
        currency=c.currency, hours=c.hours_per_month, months=c.months)
    return "\n".join([header, *cost_summary(c)])


def _show(name: str, value: Any) -> str:
    if value is None:
        return "—"
    if name == "budget":
        amount = value["amount"]
        text = f"{amount / 1e6:g}M" if amount >= 1e6 else f"{amount / 1e3:g}k"
        return text + (f" {value['currency']}" if value.get("currency") else "")
    return str(value)


def change_lines(changes: list[tuple[str, Any, Any]]) -> list[str]:
    """"budget: — → 300k CNY" for each (field, before, after) a reply changed."""
    return [f"{name}: {_show(name, before)} → {_show(name, after)}"
            for name, before, after in changes]


def changed_text(changes: list[str]) -> str:
    return _("changed {what}").format(what=_(", ").join(changes)) if changes else ""


def answer_view(ans: Answer, *, version: int, changes: list[str] | None = None,
                user: str | None = None, goal: str = "cost") -> dict[str, Any]:
    top = ans.plans[0] if ans.plans else None
    method = top.method if top else ""
    title = f"{ans.model.display} · {method_title(method)}"
    context = []
    if ans.trial:
        context.append(_("Before buying: ") + ans.trial.note)
    context += [_("Guides: ") + a for a in ans.advice[:3]]
    context += [_("Warning: ") + w for w in ans.warnings[:2]]
    context.append(_("Assumptions: ") + " · ".join(ans.assumptions[2:6]))
    alternatives = ""
    if ans.alternatives:
        alternatives = _("*What would fit*") + "\n" + "\n".join(
            f"• {a.change}" for a in ans.alternatives)
    buttons = [{"action_id": f"whatif_method_{m.name}", "text": method_title(m.name),
                "value": m.name} for m in METHODS.values() if m.whatif and m.name != method]
    buttons.append({"action_id": "whatif_goal",
                    "text": _("Fastest instead") if goal == "cost" else _("Cheapest instead"),
                    "value": "time" if goal == "cost" else "cost"})
    buttons.append({"action_id": "show_rent_vs_buy", "text": _("Rent vs buy"), "value": "cost"})
    buttons.append({"action_id": "show_breakdown", "text": _("Full memory breakdown"),
                    "value": "breakdown"})
    buttons.append({"action_id": "show_chart", "text": _("Memory chart"), "value": "memory"})
    buttons.append({"action_id": "show_price_chart", "text": _("Price history chart"),
                    "value": top.gpu if top else ""})
    return {
        "version": version,
        "title": title,
        "changed": changed_text(changes or []),
        "user": user or "",
        "recommendation": ans.recommendation or _("No plan: see below."),
        "memory_title": (_("*Memory per GPU* on {n} × {card} ({strategy})").format(
            n=top.gpus, card=top.gpu_display, strategy=top.strategy) if top else ""),
        "memory_fields": memory_fields(top) if top else [],
        "options": options_text(ans.plans) if len(ans.plans) > 1 else "",
        "cost": cost_text(top) if top else "",
        "alternatives": alternatives,
        "context": context,
        "buttons": buttons,
    }


def answer_fallback(ans: Answer) -> str:
    return f"{ans.model.display}: {ans.recommendation or _('no plan fits')}"


def breakdown_sections(ans: Answer) -> list[str]:
    top = ans.plans[0]
    m = top.memory
    lines = [_("*Memory breakdown* — {n} × {card} ({strategy})").format(
        n=top.gpus, card=top.gpu_display, strategy=top.strategy)]
    for name in (*COMPONENTS, "reused"):
        value = getattr(m, name)
        if value or name in m.detail:
            lines.append(f"• *{label(name)}* {gib(value)}: {m.detail.get(name, '')}")
    lines.append(_("• *headroom* {headroom} · *total* {total} of {capacity} → {verdict}").format(
        headroom=gib(m.headroom), total=gib(m.total), capacity=gib(m.capacity),
        verdict=_("fits") if m.fits else _("does not fit")))
    if top.speed.detail:
        lines.append(_("• *speed* {detail}").format(detail=top.speed.detail))
    sections, current = [], ""
    for line in lines:  # split into sections under Slack's 3,000 characters each
        if len(current) + len(line) + 1 > 2800:
            sections.append(current)
            current = ""
        current += ("\n" if current else "") + line
    sections.append(current)
    sections.append(_("*Assumptions*") + "\n" + "\n".join(f"• {a}" for a in ans.assumptions))
    return sections


def rent_vs_buy_sections(ans: Answer, limit: int = 5) -> list[str]:
    lines = [_("*Rent vs buy* for the options that fit (per option: buy up front + monthly "
               "running, rent per month, break-even use)")]
    for plan in [p for p in ans.plans if p.memory.fits][:limit]:
        c = plan.cost
        if c is None:
            continue
        buy = (_("buy {capex} + {monthly}/month").format(
            capex=money(c.buy.capex, c.currency), monthly=money(c.buy.monthly_total, c.currency))
            if c.buy.capex is not None else _("no purchase price"))
        rent = (_("rent {monthly}/month").format(monthly=money(c.rent.monthly, c.currency))
                if c.rent.monthly is not None else _("no rental price"))
        even = (_("buying pays off above {hours:.0f} h/month").format(
            hours=c.break_even_hours_per_month)
            if c.break_even_hours_per_month is not None else _("no break-even"))
        cheaper = (_("cheaper over {months} months: {mode}").format(
            months=c.months, mode=_(c.mode)) if c.mode else "")
        lines.append(_("• {n} × {card}: {buy}; {rent} at {hours:g} h; {even}; {cheaper}").format(
            n=plan.gpus, card=plan.gpu_display, buy=buy, rent=rent, hours=c.hours_per_month,
            even=even, cheaper=cheaper))
    lines.append(_("The guides' fixed rule (buy above 400 h/month) is shown beside each computed "
                   "break-even in the answer; reply \"hours 500\" to change the use per month."))
    return ["\n".join(lines)]


def method_question(model: str, version: int) -> dict[str, Any]:
    return {
        "version": version, "kind": "buttons",
        "text": _("What do you want to do with *{model}*?").format(model=model),
        "options": [{"action_id": f"answer_method_{m}", "text": method_title(m), "value": m}
                    for m in METHODS],
        "buttons": [], "action_id": "", "placeholder": "",
        "hint": _("Or reply in this thread, e.g. \"lora\" or \"serve with 20 users\"."),
    }


def budget_question(version: int, currency: str) -> dict[str, Any]:
    return {
        "version": version, "kind": "select",
        "text": _("Do you have a budget? It ranks the options by what fits it ({currency}: capex "
                  "to buy, or per month to rent).").format(currency=currency),
        "action_id": "answer_budget", "placeholder": _("Pick a budget"),
        "options": [{"text": f"{b} {currency}", "value": b} for b in BUDGETS],
        "buttons": [{"action_id": "answer_budget_skip", "text": _("No budget, just rank by cost"),
                     "value": "none"}],
        "hint": _("Or reply in this thread, e.g. \"budget 300k\" or \"budget $20k\"."),
    }


def answered(question: str, answer: str) -> list[str]:
    return [f"{question} → *{answer}*"]
