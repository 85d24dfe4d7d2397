"""Engine answers and dialog steps as template data, plus their plain-text fallbacks.

Every label goes through `_()`: the same views and templates serve English and Chinese."""

from __future__ import annotations

from typing import Any

from engine.answer import Answer, Plan
from engine.i18n import N_, _
from engine.recommend import cost_summary, money, speed_summary

GIB = 1024**3
METHOD_LABELS = {"full-finetune": N_("Full fine-tune"), "lora": "LoRA", "qlora": "QLoRA",
                 "inference": N_("Serve (inference)"), "pretrain": N_("Pre-train")}
COMPONENTS = {"weights": N_("weights"), "gradients": N_("gradients"),
              "optimizer": N_("optimizer"), "activations": N_("activations"),
              "kv_cache": N_("KV cache"), "overhead": N_("overhead"),
              "reused": N_("reused in backward")}
BUDGETS = ("50k", "150k", "300k", "500k", "1M", "2M", "5M")
HELP = N_("""*gpusize* sizes GPU servers for fine-tuning and serving LLMs.
`/gpusize MODEL METHOD [key=value ...]`
• MODEL: `13B`, `8x7B`, `llama-3.1-8b`, `Qwen2.5-72B`, `meta-llama/Llama-3.1-8B`
• METHOD: `full-finetune` | `lora` | `qlora` | `inference` | `pretrain`
• keys: `gpu=4090` `gpus=8` `seq=4k` `batch=2` `budget=150k` `currency=USD` `region=chengdu` \
`hours=300` `context=8k` `users=20` `quant=awq` `rank=time` and more (see the README)
Examples: `/gpusize 13B full-finetune budget=150k` · `/gpusize llama-3.1-70b serve users=20` \
· `/gpusize qwen2.5-7b qlora gpu=4090` · `/gpusize 13B 全参微调 预算15万`
Leave things out and I will ask. Reply in the thread to change anything: "what about lora?", \
"budget 300k", "8k context", "gpu=h20 gpus=8".
Also: `/gpusize price [CARD]`, `/gpusize quote ...`, `/gpusize digest ...`, \
`/gpusize lang zh|en|auto [workspace]`.""")


def label(method: str) -> str:
    return _(METHOD_LABELS.get(method, method))


def _gib(value: float) -> str:
    return f"{value / GIB:,.1f} GiB"


def memory_fields(plan: Plan) -> list[str]:
    m = plan.memory
    fields = [f"*{_(COMPONENTS[name])}*\n{_gib(getattr(m, name))}" for name in
              ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead")
              if getattr(m, name) or name in ("weights", "activations")]
    if m.reused:
        fields.append(f"*{_(COMPONENTS['reused'])}*\n-{_gib(m.reused)}")
    fields.append(_("*total + headroom*\n{need} of {capacity}").format(
        need=_gib(m.total + m.headroom), capacity=_gib(m.capacity)))
    return fields[:10]


def options_text(plans: list[Plan], limit: int = 4) -> str:
    lines = [_("*Options* (card · GPUs · buy · rent/month · speed)")]
    for plan in plans[:limit]:
        c = plan.cost
        buy = money(c.buy.capex, c.currency) if c else _("n/a")
        rent = money(c.rent.monthly, c.currency) if c else _("n/a")
        fit = "" if plan.memory.fits else _(" (does not fit)")
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


def changed_text(changes: list[str]) -> str:
    return _("changed {what}").format(what=_(", ").join(changes)) if changes else ""


def answer_view(ans: Answer, *, version: int, changes: list[str] | None = None,
                user: str | None = None, goal: str = "cost") -> dict[str, Any]:
    top = ans.plans[0] if ans.plans else None
    method = top.method if top else ""
    title = f"{ans.model.display} · {label(method)}"
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
    buttons = [{"action_id": f"whatif_method_{m}", "text": label(m), "value": m}
               for m in ("full-finetune", "lora", "qlora", "inference") if m != method]
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
    for name in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead",
                 "reused"):
        value = getattr(m, name)
        if value or name in m.detail:
            lines.append(f"• *{_(COMPONENTS[name])}* {_gib(value)}: {m.detail.get(name, '')}")
    lines.append(_("• *headroom* {headroom} · *total* {total} of {capacity} → {verdict}").format(
        headroom=_gib(m.headroom), total=_gib(m.total), capacity=_gib(m.capacity),
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
        "options": [{"action_id": f"answer_method_{m}", "text": label(m), "value": m}
                    for m in METHOD_LABELS],
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
