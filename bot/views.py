"""Engine answers and dialog steps as template data, plus their plain-text fallbacks."""

from __future__ import annotations

from typing import Any

from engine.answer import Answer, Plan
from engine.recommend import cost_summary, money, speed_summary

GIB = 1024**3
METHOD_LABELS = {"full-finetune": "Full fine-tune", "lora": "LoRA", "qlora": "QLoRA",
                 "inference": "Serve (inference)", "pretrain": "Pre-train"}
BUDGETS = ("50k", "150k", "300k", "500k", "1M", "2M", "5M")
HELP = """*gpusize* sizes GPU servers for fine-tuning and serving LLMs.
`/gpusize MODEL METHOD [key=value ...]`
• MODEL: `13B`, `8x7B`, `llama-3.1-8b`, `Qwen2.5-72B`, `meta-llama/Llama-3.1-8B`
• METHOD: `full-finetune` | `lora` | `qlora` | `inference` | `pretrain`
• keys: `gpu=4090` `gpus=8` `seq=4k` `batch=2` `budget=150k` `currency=USD` `region=chengdu` \
`hours=300` `context=8k` `users=20` `quant=awq` `rank=time` and more (see the README)
Examples: `/gpusize 13B full-finetune budget=150k` · `/gpusize llama-3.1-70b serve users=20` \
· `/gpusize qwen2.5-7b qlora gpu=4090`
Leave things out and I will ask. Reply in the thread to change anything: "what about lora?", \
"budget 300k", "8k context", "gpu=h20 gpus=8"."""


def _gib(value: float) -> str:
    return f"{value / GIB:,.1f} GiB"


def memory_fields(plan: Plan) -> list[str]:
    m = plan.memory
    fields = [f"*{name}*\n{_gib(getattr(m, name))}" for name in
              ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead")
              if getattr(m, name) or name in ("weights", "activations")]
    if m.reused:
        fields.append(f"*reused in backward*\n-{_gib(m.reused)}")
    fields.append(f"*total + headroom*\n{_gib(m.total + m.headroom)} of {_gib(m.capacity)}")
    return fields[:10]


def options_text(plans: list[Plan], limit: int = 4) -> str:
    lines = ["*Options* (card · GPUs · buy · rent/month · speed)"]
    for plan in plans[:limit]:
        c = plan.cost
        buy = money(c.buy.capex, c.currency) if c else "n/a"
        rent = money(c.rent.monthly, c.currency) if c else "n/a"
        fit = "" if plan.memory.fits else " (does not fit)"
        lines.append(f"• {plan.gpu_display} × {plan.gpus} · {buy} · {rent} · {speed_summary(plan)} · "
                     f"{plan.strategy}{fit}")
    return "\n".join(lines)


def cost_text(plan: Plan) -> str:
    c = plan.cost
    if c is None:
        return ""
    header = f"*Cost* ({c.currency}, {c.hours_per_month:g} h/month, {c.months} months)"
    return "\n".join([header, *cost_summary(c)])


def changed_text(changes: list[str]) -> str:
    return "changed " + ", ".join(changes) if changes else ""


def answer_view(ans: Answer, *, version: int, changes: list[str] | None = None,
                user: str | None = None) -> dict[str, Any]:
    top = ans.plans[0] if ans.plans else None
    method = top.method if top else ""
    title = f"{ans.model.display} · {METHOD_LABELS.get(method, method)}"
    context = []
    if ans.trial:
        context.append("Before buying: " + ans.trial.note)
    context += [f"Guides: {a}" for a in ans.advice[:3]]
    context += [f"Warning: {w}" for w in ans.warnings[:2]]
    context.append("Assumptions: " + " · ".join(ans.assumptions[2:6]))
    alternatives = ""
    if ans.alternatives:
        alternatives = "*What would fit*\n" + "\n".join(f"• {a.change}" for a in ans.alternatives)
    buttons = [{"action_id": f"whatif_method_{m}", "text": METHOD_LABELS[m], "value": m}
               for m in ("full-finetune", "lora", "qlora", "inference") if m != method]
    buttons.append({"action_id": "whatif_goal", "text": "Fastest instead" if ans_goal(ans) ==
                    "cost" else "Cheapest instead", "value": "time" if ans_goal(ans) == "cost"
                    else "cost"})
    buttons.append({"action_id": "show_rent_vs_buy", "text": "Rent vs buy", "value": "cost"})
    buttons.append({"action_id": "show_breakdown", "text": "Full memory breakdown",
                    "value": "breakdown"})
    return {
        "version": version,
        "title": title,
        "changed": changed_text(changes or []),
        "user": user or "",
        "recommendation": ans.recommendation or "No plan: see below.",
        "memory_title": (f"*Memory per GPU* on {top.gpus} × {top.gpu_display} ({top.strategy})"
                         if top else ""),
        "memory_fields": memory_fields(top) if top else [],
        "options": options_text(ans.plans) if len(ans.plans) > 1 else "",
        "cost": cost_text(top) if top else "",
        "alternatives": alternatives,
        "context": context,
        "buttons": buttons,
    }


def ans_goal(ans: Answer) -> str:
    return "time" if ans.recommendation.startswith("Recommended (fastest") else "cost"


def answer_fallback(ans: Answer) -> str:
    return f"{ans.model.display}: {ans.recommendation or 'no plan fits'}"


def breakdown_sections(ans: Answer) -> list[str]:
    top = ans.plans[0]
    m = top.memory
    lines = [f"*Memory breakdown* — {top.gpus} × {top.gpu_display} ({top.strategy})"]
    for name in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead",
                 "reused"):
        value = getattr(m, name)
        if value or name in m.detail:
            lines.append(f"• *{name}* {_gib(value)}: {m.detail.get(name, '')}")
    lines.append(f"• *headroom* {_gib(m.headroom)} · *total* {_gib(m.total)} of {_gib(m.capacity)}"
                 f" → {'fits' if m.fits else 'does not fit'}")
    if top.speed.detail:
        lines.append(f"• *speed* {top.speed.detail}")
    sections, current = [], ""
    for line in lines:  # split into sections under Slack's 3,000 characters each
        if len(current) + len(line) + 1 > 2800:
            sections.append(current)
            current = ""
        current += ("\n" if current else "") + line
    sections.append(current)
    sections.append("*Assumptions*\n" + "\n".join(f"• {a}" for a in ans.assumptions))
    return sections


def rent_vs_buy_sections(ans: Answer, limit: int = 5) -> list[str]:
    lines = ["*Rent vs buy* for the options that fit (per option: buy up front + monthly running, "
             "rent per month, break-even use)"]
    for plan in [p for p in ans.plans if p.memory.fits][:limit]:
        c = plan.cost
        if c is None:
            continue
        buy = (f"buy {money(c.buy.capex, c.currency)} + {money(c.buy.monthly_total, c.currency)}"
               "/month" if c.buy.capex is not None else "no purchase price")
        rent = (f"rent {money(c.rent.monthly, c.currency)}/month"
                if c.rent.monthly is not None else "no rental price")
        even = (f"buying pays off above {c.break_even_hours_per_month:.0f} h/month"
                if c.break_even_hours_per_month is not None else "no break-even")
        cheaper = f"cheaper over {c.months} months: {c.mode}" if c.mode else ""
        lines.append(f"• {plan.gpus} × {plan.gpu_display}: {buy}; {rent} at "
                     f"{c.hours_per_month:g} h; {even}; {cheaper}")
    lines.append("The guides' fixed rule (buy above 400 h/month) is shown beside each computed "
                 "break-even in the answer; reply \"hours 500\" to change the use per month.")
    return ["\n".join(lines)]


def method_question(model: str, version: int) -> dict[str, Any]:
    return {
        "version": version, "kind": "buttons",
        "text": f"What do you want to do with *{model}*?",
        "options": [{"action_id": f"answer_method_{m}", "text": label, "value": m}
                    for m, label in METHOD_LABELS.items()],
        "buttons": [], "action_id": "", "placeholder": "",
        "hint": "Or reply in this thread, e.g. \"lora\" or \"serve with 20 users\".",
    }


def budget_question(version: int, currency: str) -> dict[str, Any]:
    return {
        "version": version, "kind": "select",
        "text": f"Do you have a budget? It ranks the options by what fits it ({currency}: capex "
                "to buy, or per month to rent).",
        "action_id": "answer_budget", "placeholder": "Pick a budget",
        "options": [{"text": f"{b} {currency}", "value": b} for b in BUDGETS],
        "buttons": [{"action_id": "answer_budget_skip", "text": "No budget, just rank by cost",
                     "value": "none"}],
        "hint": "Or reply in this thread, e.g. \"budget 300k\" or \"budget $20k\".",
    }


def answered(question: str, answer: str) -> list[str]:
    return [f"{question} → *{answer}*"]
