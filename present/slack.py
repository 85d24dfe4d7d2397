"""Engine answers and dialog steps as Block Kit template data (templates/*.j2), plus their
plain-text fallbacks.

Every label goes through `_()`: the same data and templates serve English and Chinese."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from typing import Any, NamedTuple

from engine import catalog
from engine.cost import break_even_phrase, dedicated_phrase
from engine.i18n import N_, _, counted, money
from engine.methods import METHODS
from engine.parse import KEYS
from engine.plan import usable
from engine.prices import KIND_TEXT
from engine.reader import read_summary
from engine.recommend import method_name
from engine.request import Request
from engine.schema import Answer, Plan
from present import blockkit
from present.actions import Action, Detail
from present.blockkit import user_ref
from present.detail import (
    ENGINE_NAMES,
    api_lines,
    bom_lines,
    capacity_lines,
    launch_heading,
    traffic_lines,
)
from present.labels import (
    ACCESS,
    COMPONENTS,
    GIB,
    MARKETS,
    gib,
    input_text,
    label,
    method_title,
    short_card,
    speed_summary,
    verdict_label,
)

HELP = N_("""*gpusize* sizes GPU servers for fine-tuning and serving LLMs.
`/gpusize MODEL METHOD [key=value ...]`
• MODEL: `13B`, `8x7B`, `llama-3.1-8b`, `Qwen2.5-72B`, `meta-llama/Llama-3.1-8B`
• METHOD: {methods}
• keys: {keys}
Examples: {examples}
Leave things out and I will ask. Reply in the thread to change anything: {replies}.
Also: {also}.""")
# Examples in the reader's language (the Chinese ones are the zh catalog's; every one must read:
# tests/present/test_examples.py)
HELP_EXAMPLES = N_("`/gpusize 13B full-finetune budget=150k` · `/gpusize llama-3.1-70b serve users=20` "
                   "· `/gpusize qwen2.5-7b qlora gpu=4090` · `/gpusize 13B 全参微调 预算15万`")
REPLY_EXAMPLES = N_('"what about lora?", "budget 300k", "8k context", "gpu=h20 gpus=8"')


def help_text(also: str = "") -> str:
    """/gpusize help, with every method and key the grammar reads; `also`: the bot's
    sub-commands (bot/subcommands.py)."""
    return _(HELP).format(methods=" | ".join(f"`{m}`" for m in METHODS),
                          keys=" ".join(f"`{k}=`" for k in KEYS),
                          examples=_(HELP_EXAMPLES), replies=_(REPLY_EXAMPLES), also=also)


SHORT_HELP = N_("*gpusize* sizes GPU servers for fine-tuning and serving LLMs: the cards, the "
                "price, the why.\n"
                "`/gpusize MODEL METHOD [key=value ...]`, e.g. `/gpusize 13B full-finetune "
                "budget=150k`, or just `/gpusize` for the form.\n"
                "Reply in the answer's thread to change anything, e.g. \"what about lora?\" or "
                "\"budget 300k\".\n"
                "Also: {also}.")


def short_help(also: str) -> str:
    """/gpusize help in four lines (the buttons under it open the form, every option and the
    prices); `also`: the sub-commands' usage."""
    return _(SHORT_HELP).format(also=also)


def help_buttons() -> list[dict[str, Any]]:
    """Under the help: the form, every option the grammar reads (a modal), the prices."""
    return [{"action_id": Action.OPEN_FORM, "text": _("Open the form"), "value": "help",
             "style": "primary"},
            {"action_id": Action.ALL_OPTIONS, "text": _("All options"), "value": "help"},
            {"action_id": Action.SHOW_PRICES, "text": _("Prices"), "value": "price"}]


def error_view(error: str, typed: str, corrected: str | None) -> dict[str, Any]:
    """A command that cannot be read: what is wrong first, the corrected command with a button
    that runs it (when there is one), the typed text echoed so it is not lost, and the form."""
    buttons = []
    if corrected:
        buttons.append({"action_id": Action.RUN_IT, "text": _("Run it"), "value": corrected,
                        "style": "primary"})
    buttons.append({"action_id": Action.OPEN_FORM, "text": _("Open the form"), "value": typed})
    return {
        "sections": [error] + ([_("Did you mean `/gpusize {command}`?").format(
            command=corrected.replace("`", "ʼ"))] if corrected else []),
        "context": _("You typed `/gpusize {text}`; nothing was posted.").format(
            text=typed.replace("`", "ʼ").replace("\n", " ")[:300]),
        "buttons": buttons,
    }


# -- the answer card ---------------------------------------------------------------------------

CARD_ROWS = 5  # options in the table: with the header, a phone shows them without scrolling
MORE_OPTIONS = 5  # Slack's most in an overflow menu: a longer menu is a select ("More…")
MENU_OPTIONS = 100  # Slack's most in a static select
_DATE = re.compile(r", (\d{4}-\d{2}-\d{2})(?:, STALE \(\d+ days old\))?\)$")


class CardInput(NamedTuple):
    """What the dialog knows about an answer beyond the engine's document (picklable: answers
    are rendered in worker processes)."""

    version: int  # the thread version the card is made for; its buttons carry it
    user: str = ""  # who asked, or who changed something (a Slack user id)
    asked: str = ""  # what they typed (a command, a reply) or pressed
    how: str = "command"  # command | reply | press
    changes: tuple[tuple[str, Any, Any], ...] = ()  # (input, before, after) this turn changed
    previous: dict[str, Any] | None = None  # result_of() of the card this one follows
    priced: frozenset[str] = frozenset()  # cards with a price history (their chart exists)
    notes: tuple[str, ...] = ()  # what the dialog read into the reply ("context" as seq, ...)


def plan_name(n: int, display: str) -> str:
    return f"{n:,} × {short_card(display, 30)}"


def _model_name(ans: Answer) -> str:
    return ans.model.name if ans.model.template else ans.model.display


def result_of(ans: Answer) -> dict[str, Any]:
    """The recommendation in numbers (stored with the thread, so the next answer can say what
    changed in the result, in whoever's language reads it)."""
    top = ans.plans[0] if ans.plans else None
    if top is None:
        return {"gpu": None}
    c, sp = top.cost, top.speed
    return {"gpu": top.gpu, "card": top.gpu_display, "gpus": top.gpus, "verdict": top.verdict,
            "meets": top.service.meets if top.service else True,
            "mode": c.mode if c else None, "currency": c.currency if c else None,
            "monthly": c.rent.monthly if c else None, "capex": c.buy.capex if c else None,
            "job": c.job.rent if c and c.job.hours is not None else None,
            "within": c.within_budget if c else None,
            "used": round(top.memory.total / GIB, 1), "capacity": round(top.memory.capacity / GIB, 1),
            "decode": sp.decode_tokens_per_s, "train": sp.train_tokens_per_s,
            "hours": sp.train_hours}


def same_result(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Would a buyer act differently? Same card, count, verdict, way and price, budget verdict."""
    if not a or not b:
        return False
    keys = ("gpu", "gpus", "verdict", "meets", "mode", "currency")
    amount = {"rent": "job" if a.get("job") is not None else "monthly", "buy": "capex"}
    key = amount.get(a.get("mode") or "", "monthly")
    # a budget that the plan fits changes nothing a buyer does; one it misses does
    return (all(a.get(k) == b.get(k) for k in keys)
            and (a.get("within") is False) == (b.get("within") is False)
            and round(a.get(key) or 0) == round(b.get(key) or 0))


def _amount_of(r: dict[str, Any]) -> str:
    """The figure of the chosen way alone: "2,663 CNY/mo", "950k CNY up front"."""
    cur = r.get("currency") or ""
    if r.get("mode") == "rent":
        if r.get("job") is not None:
            return _("{amount} for the run").format(amount=money(r["job"], cur))
        return _("{amount}/mo").format(amount=money(r.get("monthly"), cur))
    if r.get("mode") == "buy":
        return _("{amount} up front").format(amount=money(r.get("capex"), cur))
    return _("no price in the catalog")


def _cost_of(r: dict[str, Any]) -> str:
    cur = r.get("currency") or ""
    if r.get("mode") == "rent":
        if r.get("job") is not None:
            return _("rent {amount} for the run").format(amount=money(r["job"], cur))
        return _("rent {amount}/mo").format(amount=money(r.get("monthly"), cur))
    if r.get("mode") == "buy":
        return _("buy {amount}").format(amount=money(r.get("capex"), cur))
    return _("no price in the catalog")


def result_text(r: dict[str, Any]) -> str:
    """"1 × RTX 4090, rent 826 CNY/mo"; what does not fit says so."""
    if not r.get("gpu"):
        return _("nothing fits")
    what = plan_name(r["gpus"], r["card"])
    if r.get("verdict") == "no":
        return _("{plan} does not fit").format(plan=what)
    return f"{what}, {_cost_of(r)}"


def _speed_of(r: dict[str, Any]) -> str:
    if r.get("decode"):
        return _("{rate:,.0f} tokens/s per user").format(rate=r["decode"])
    if r.get("hours") is not None:
        return _("{days:,.1f} days").format(days=r["hours"] / 24)
    if r.get("train"):
        return _("{rate:,.0f} tokens/s").format(rate=r["train"])
    return ""


def changes_text(changes: tuple[tuple[str, Any, Any], ...] | list, currency: str) -> str:
    """The inputs a turn changed, as people say them: "QLoRA, budget: 300k CNY"."""
    return _(", ").join(input_text(name, after, currency) for name, _before, after in changes
                        if name != "asked_in")


def change_line(changes: Any, new: dict[str, Any], previous: dict[str, Any] | None,
                currency: str, *, bold: bool = True) -> str:
    """"QLoRA → 1 × RTX 4090, rent 826 CNY/mo (was 2 × MI300X, rent 7,925 CNY/mo)"."""
    what = changes_text(changes, currency) or _("the same question")
    was = (" " + _("(was {before})").format(before=result_text(previous))
           if previous and previous.get("gpu") else "")
    return f"{'*' if bold else ''}{what}{'*' if bold else ''} → {result_text(new)}{was}"


def same_line(changes: Any, new: dict[str, Any], previous: dict[str, Any],
              currency: str) -> str:
    """One line for a change that leaves the recommendation as it was, with what did move."""
    moved = []
    if previous.get("used") != new.get("used"):
        moved.append(_("memory {before} → {after} of {capacity} GiB per GPU").format(
            before=previous.get("used"), after=new.get("used"), capacity=new.get("capacity")))
    before, after = _speed_of(previous), _speed_of(new)
    if before != after and after:
        moved.append(_("speed {before} → {after}").format(before=before or "-", after=after))
    line = _("{what}: same recommendation, {result}.").format(
        what=changes_text(changes, currency) or _("the same question"), result=result_text(new))
    said = _("; ").join(moved)
    # only the first letter: str.capitalize() lowers the rest ("GiB" became "gib")
    return line + (" " + said[:1].upper() + said[1:] + _(".") if moved else "")


def _verdict_cell(plan: Plan) -> str:
    m = plan.memory
    mark = {"fits": "✓", "tight": "⚠", "no": "✗"}.get(plan.verdict, "")
    if plan.verdict == "no":
        return _("needs {used:.1f} GiB, has {capacity:.0f} GiB {mark} {verdict}").format(
            used=m.total / GIB, capacity=m.capacity / GIB, mark=mark, verdict=verdict_label(plan))
    return _("{used:.1f} of {capacity:.0f} GiB {mark} {verdict} ({free:.0%} free)").format(
        used=m.total / GIB, capacity=m.capacity / GIB, mark=mark, verdict=verdict_label(plan),
        free=max(0.0, 1 - m.total / m.capacity))


def _way_field(plan: Plan, req: Request | None) -> str:
    c = plan.cost
    if c is None:
        return _("no cost: it does not run")
    cur = c.currency
    if c.mode == "rent":
        if c.job.hours is not None and c.job.rent is not None:
            line = _("Rent ≈ {amount} for the run").format(amount=money(c.job.rent, cur))
        else:
            line = _("Rent ≈ {amount}/mo ({hours:g} h/mo)").format(
                amount=money(c.rent.monthly, cur), hours=c.hours_per_month)
    elif c.mode == "buy":
        line = _("Buy {capex}, then {monthly}/mo").format(capex=money(c.buy.capex, cur),
                                                        monthly=money(c.buy.monthly_total, cur))
    elif c.mode == "owned":
        return _("Your cards: ≈ {monthly}/mo to run (power and operations)").format(
            monthly=money(c.buy.monthly_total, cur))
    else:
        return _("no price in the {market} market: add one with `/gpusize quote`").format(
            market=_(MARKETS.get(req.market_choice.market, "")) if req else "")
    if c.budget is not None:
        total = c.rent_horizon_total if c.mode == "rent" else c.buy.capex
        if c.within_budget:
            line += "\n" + _("within the budget of {budget}").format(budget=money(c.budget, cur))
        elif total is not None:
            line += "\n" + _("{over} over the budget of {budget}").format(
                over=money(total - c.budget, cur), budget=money(c.budget, cur))
    return line


def _speed_field(plan: Plan, req: Request | None) -> str:
    sp, sv = plan.speed, plan.service
    if plan.verdict == "no":
        return _("does not run")
    if sp.decode_tokens_per_s:
        users = req.users if req else 1
        line = _("≈ {rate:,.0f} tokens/s per user, {users}").format(
            rate=sp.decode_tokens_per_s, users=counted(users, "user"))
        if sv and sv.ttft_s is not None:
            line += "\n" + _("first token in {ttft:.1f} s").format(ttft=sv.ttft_s)
    elif sp.train_hours is not None:
        line = _("{days:,.1f} days for the tokens").format(days=sp.train_hours / 24)
        if sv and sv.deadline_days is not None:
            line += " " + _("(deadline {days:g})").format(days=sv.deadline_days)
    elif sp.train_tokens_per_s:
        line = _("≈ {rate:,.0f} tokens/s").format(rate=sp.train_tokens_per_s)
    else:
        line = "-"
    if sv and not sv.meets and sv.misses:
        line += "\n⚠ " + _("; ").join(sv.misses[:2])
    return line


def _access(plan: Plan) -> str:
    return f" ({_(ACCESS.get(plan.access.status, plan.access.status))})" if plan.access else ""


def _cards_field(plan: Plan) -> str:
    line = plan_name(plan.gpus, plan.gpu_display) + _access(plan)
    if plan.change:
        line += "\n" + plan.change
    return line + "\n" + plan.strategy


TABLE_CARD_CHARS = 14  # a phone shows four columns when the card's name is this short


def _ranked_cost(plan: Plan) -> str:
    """The figure the ranking weighs, in the plan's own way: "4,511/mo", "39/run", "580k buy"
    (amounts without the currency: the header cell names it)."""
    c = plan.cost
    if c is None or c.mode is None:
        return "-"

    def amount(value: float | None) -> str:
        return money(value, c.currency).replace(" " + c.currency, "")

    if c.mode == "rent":
        if c.job.hours is not None and c.job.rent is not None:
            return _("{amount}/run").format(amount=amount(c.job.rent))
        return _("{amount}/mo").format(amount=amount(c.rent.monthly))
    if c.mode == "owned":
        return _("{amount}/mo to run").format(amount=amount(c.buy.monthly_total))
    return _("{amount} buy").format(amount=amount(c.buy.capex))


def _table(plans: list[Plan], req: Request | None = None) -> dict[str, Any]:
    """The options as four columns a phone shows without scrolling: card (short name; ⚠ tight
    or short of the service level, ✗ does not fit), GPUs, the cost the ranking weighs and the
    speed; the header cell of the ranking's column says it ranks."""
    cur = next((p.cost.currency for p in plans if p.cost), "")
    by_time = req is not None and req.goal == "time"
    cost_head = _("{currency} ↑ cheapest").format(currency=cur) if not by_time else cur
    speed_head = _("speed ↓ fastest") if by_time else _("speed")
    rows = [[_("card"), _("GPUs"), cost_head, speed_head]]
    for p in plans[:CARD_ROWS]:
        name = short_card(p.gpu_display, TABLE_CARD_CHARS)
        if p.verdict == "no":
            name += " ✗"
        elif p.verdict == "tight" or (p.service and not p.service.meets):
            name += " ⚠"
        rows.append([name, str(p.gpus), _ranked_cost(p), speed_summary(p, per_user=False)])
    return {"rows": rows, "align": ["left", "right", "right", "right"]}


def defaults_used(req: Request, given: Mapping[str, Any]) -> list[str]:
    """The defaults that shaped this answer and were not asked for."""
    out = []
    if req.is_training:
        if "seq" not in given:
            out.append(_("seq {count:,}").format(count=req.seq_len))
        if "batch" not in given:
            out.append(_("batch {count}").format(count=req.batch))
        if "optimizer" not in given and req.spec.training:
            out.append({"adamw": "AdamW", "paged-adamw-8bit": _("8-bit paged AdamW")}.get(
                req.optimizer_used, req.optimizer_used))
        if req.tokens and "days" not in given:
            out.append(_("deadline {days:g} days").format(days=req.deadline_days))
    else:
        if "context" not in given:
            out.append(_("context {count:,}").format(count=req.context))
        if "users" not in given:
            out.append(counted(req.users, "user"))
        if "min_speed" not in given:
            out.append(_("≥ {rate:g} tokens/s per user").format(rate=req.decode_floor))
    if "hours" not in given:
        out.append(_("{hours:g} h/month").format(hours=req.hours_per_month))
    return out


def price_age(plan: Plan | None, today: date) -> str:
    """"prices 12 d old" / "prices 21-334 d old" for the prices behind the recommendation."""
    if plan is None or plan.cost is None:
        return ""
    ages = sorted((today - date.fromisoformat(m.group(1))).days
                  for m in (_DATE.search(s) for s in plan.cost.price_sources) if m)
    if not ages:
        return ""
    span = f"{ages[0]}" if ages[0] == ages[-1] else f"{ages[0]}–{ages[-1]}"
    return _("prices {days} d old").format(days=span)


def _asked_text(ci: CardInput) -> str:
    said = ci.asked.replace("`", "ʼ").replace("\n", " ").strip()
    said = said if len(said) <= 120 else said[:119] + "…"
    who = user_ref(ci.user) if ci.user else _("someone")
    if ci.how == "press":
        return _("{user} pressed {label}").format(user=who, label=said)
    if ci.how == "reply":
        return _("{user} replied “{text}”").format(user=who, text=said)
    if said:
        return _("{user} asked `/gpusize {text}`").format(user=who, text=said)
    return _("{user} asked").format(user=who)


def _whatifs(ans: Answer, req: Request | None) -> list[tuple[str, str]]:
    """(label, change) a practitioner tries next: the other training methods, or lighter
    weights when serving."""
    top = ans.plans[0] if ans.plans else None
    current = top.method if top else (req.method if req else "")
    if not current or not METHODS[current].whatif:
        return []
    if METHODS[current].serving:
        quant = top.settings.quant if top else ""
        return [(label, f"quant={q}") for q, label in
                (("fp8", _("Try FP8 weights")), ("awq", _("Try 4-bit AWQ"))) if q != quant]
    return [(_("Try {method}").format(method=method_title(m.name)), f"method={m.name}")
            for m in METHODS.values()
            if m.whatif and m.training and m.name != current][:2]


def split_value(value: str) -> tuple[int | None, str]:
    """A button's value as (the version it was made for, what it does); values from before
    versions were carried give (None, value)."""
    version, sep, payload = value.partition("|")
    if sep and version.isdigit():
        return int(version), payload
    return None, value


def command_text(values: Mapping[str, Any]) -> str:
    """A Draft as the command that asks it again (`13B full-finetune budget=150k`)."""
    words = [str(values[k]) for k in ("model", "method") if values.get(k)]
    for name, value in values.items():
        if name in ("model", "method", "asked_in") or value is None:
            continue
        if name == "budget" and isinstance(value, dict):
            amount = value.get("amount", 0)
            text = f"{amount / 1e6:g}M" if amount >= 1e6 else f"{amount / 1e3:g}k"
            value = {"USD": "$", "CNY": "¥"}.get(value.get("currency") or "", "") + text
        elif isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, float):
            value = f"{value:g}"
        words.append(f"{name}={value}")
    return " ".join(words)


def card_actions(ans: Answer, req: Request | None, ci: CardInput) -> tuple[list, list]:
    """At most three buttons and a menu, each value carrying the card's version: a press on an
    older card is recognised as such."""
    v = ci.version
    goal = req.goal if req else "cost"
    goal_label = _("Fastest instead") if goal == "cost" else _("Cheapest instead")
    goal_value = f"goal={'time' if goal == 'cost' else 'cost'}"
    buttons = [{"action_id": Action.WHATIF.suffixed(*change.split("=", 1)),
                "text": label, "value": f"{v}|{change}"} for label, change in _whatifs(ans, req)]
    more = []
    if len(buttons) < 2:
        buttons.append({"action_id": Action.WHATIF_GOAL, "text": goal_label,
                        "value": f"{v}|{goal_value}"})
    else:
        more.append({"text": goal_label, "value": f"{v}|{goal_value}"})
    top = ans.plans[0] if ans.plans else None
    if top is not None and top.cost is not None:
        buttons.append({"action_id": Action.RENT_VS_BUY, "text": _("Rent vs buy"),
                        "value": f"{v}|{Detail.COST}"})
    if top is not None:
        more.insert(0, {"text": _("Memory breakdown"), "value": f"{v}|{Detail.BREAKDOWN}"})
        more.insert(1, {"text": _("Charts: memory and prices") if top.gpu in ci.priced
                        else _("Memory chart"), "value": f"{v}|{Detail.CHARTS}"})
    if top is not None and top.bom is not None:
        more.append({"text": _("Bill of materials"), "value": f"{v}|{Detail.BOM}"})
    if top is not None and top.launch:
        more.append({"text": _("How to run it"), "value": f"{v}|{Detail.LAUNCH}"})
    more.append({"text": _("Assumptions"), "value": f"{v}|{Detail.ASSUMPTIONS}"})
    if ans.advice or ans.trial or ans.warnings:
        more.append({"text": _("The guides' advice"), "value": f"{v}|{Detail.ADVICE}"})
    return buttons[:3], more[:MENU_OPTIONS]


def _title(ans: Answer) -> str:
    """The card's header: the verdict on plans[0], "Over budget" first when it is over, and the
    card's access status where the asker is."""
    top = ans.plans[0] if ans.plans else None
    model = _model_name(ans)
    if top is None:
        return _("{model} → nothing fits").format(model=model)
    what = method_name(top.method)
    owned = top.cost is not None and top.cost.mode == "owned"  # where to get them is moot
    plan = plan_name(top.gpus, top.gpu_display) + ("" if owned else _access(top))
    if top.verdict == "no":
        return _("{model} {method} → does not fit {plan}").format(model=model, method=what,
                                                                  plan=plan)
    mode = top.cost.mode if top.cost else None
    form = {"rent": N_("{model} {method} → rent {plan}"),
            "buy": N_("{model} {method} → buy {plan}"),
            "owned": N_("{model} {method} → on your {plan}")}.get(mode or "", N_("{model} {method} → {plan}"))
    title = _(form).format(model=model, method=what, plan=plan)
    if top.cost is not None and top.cost.within_budget is False:
        title = _("Over budget: {title}").format(title=title)
    return title


_DAYS = re.compile(r"(\d[\d,]*)")


def _chosen_way_prices(plan: Plan) -> tuple[list[str], list[str]]:
    """The cited prices of the way the plan is got (buy or rent), and those of them that are
    stale."""
    c = plan.cost
    if c is None or c.mode not in ("buy", "rent"):
        return [], []  # owned cards are got by no price
    words = [f" {_(text)} " for kind, text in KIND_TEXT.items()
             if kind.startswith("buy") == (c.mode == "buy")]
    mine = [s for s in c.price_sources if any(w in s for w in words)]
    return mine, [s for s in mine if s in c.stale]


def stale_driver(plan: Plan | None) -> str:
    """When every price of the way the pick is got is stale, that price named, with the
    commands that show its history and record a current one; "" otherwise."""
    if plan is None:
        return ""
    mine, stale = _chosen_way_prices(plan)
    if not mine or stale != mine:
        return ""
    days = max((int(m.replace(",", "")) for s in stale
                for m in _DAYS.findall(s.rsplit(",", 1)[-1])), default=0)
    way = plan.cost.mode if plan.cost else ""
    return _("The {way} price behind this pick is {days} days old ({source}): `/gpusize price "
             "{card}` shows its history, `/gpusize quote {card} {command} AMOUNT "
             "vendor=\"Name\"` records a current one.").format(way=_(way), command=way, days=days,
                                              source=stale[0].split(" (", 1)[0][:120],
                                              card=plan.gpu)


def longer_than_the_model(ans: Answer, req: Request | None) -> str:
    """A sequence longer than the model reads: the plan sizes what the model cannot use."""
    spec = catalog.find_model(ans.model.name) if req is not None else None
    if spec is None or ans.model.template or req is None:
        return ""
    asked = req.context if req.is_serving else req.seq_len
    if asked <= spec.max_context:
        return ""
    return _("{asked:,} tokens is longer than {model} reads ({limit:,}): size it at "
             "{key}={limit} or less, or pick a longer-context model.").format(
        asked=asked, model=spec.display, limit=spec.max_context,
        key="context" if req.is_serving else "seq")


def warning_line(ans: Answer, req: Request | None) -> str:
    """The warnings that change the decision, as one ⚠ line under the header (the rest are in
    "The guides' advice")."""
    found = [w for w in (longer_than_the_model(ans, req),
                         stale_driver(ans.plans[0] if ans.plans else None)) if w]
    return "⚠ " + " ".join(found) if found else ""


def _lead(ans: Answer, req: Request | None) -> str:
    """Why nothing can be recommended as asked, and what would do instead."""
    top = ans.plans[0] if ans.plans else None
    lines = []
    if req is None or not usable(top, req):
        lines.append(ans.recommendation)
    if ans.alternatives:
        lines.append(_("*What would fit*") + "\n" + "\n".join(
            f"• {a.change}" for a in ans.alternatives[:3]))
    return "\n".join(line for line in lines if line)


def answer_view(ans: Answer, ci: CardInput, *, req: Request | None = None,
                given: Mapping[str, Any] | None = None, today: date | None = None
                ) -> dict[str, Any]:
    """Template data for templates/answer.json.j2: one phone screen."""
    today = today or date.today()
    top = ans.plans[0] if ans.plans else None
    new = result_of(ans)
    currency = req.answer_currency if req else "CNY"
    change = ""
    if ci.changes or ci.notes:
        change = change_line(ci.changes, new, ci.previous, currency)
        change += "".join("\n" + note for note in ci.notes)
    fields = []
    if top is not None:
        fields = [_("*Cards*") + "\n" + _cards_field(top),
                  _("*Buy or rent*") + "\n" + _way_field(top, req),
                  _("*Memory per GPU*") + "\n" + _verdict_cell(top),
                  _("*Speed*") + "\n" + _speed_field(top, req)]
    context = [_asked_text(ci)]
    if given and ci.how in ("command", "reply"):  # what was read, so a misreading shows (issue 20)
        context.append(read_summary(dict(given), ci.asked))
    if ans.model.template:
        context.append(_("{name} = generic Llama shape").format(name=ans.model.name))
    if ans.market is not None:
        market = _("{market} market").format(
            market=_(MARKETS.get(ans.market.market, ans.market.market)))
        if req is not None and (req.market is not None or req.region is not None):
            # a market the asker chose is said with why (a currency never moves it)
            market = _("{market} ({reason})").format(market=market, reason=ans.market.reason)
        context.append(market)
    if req is not None:
        defaults = defaults_used(req, given or {})
        if defaults:
            context.append(_("defaults: {list}").format(list=_(", ").join(defaults)))
    age = price_age(top, today)
    if age:
        context.append(age)
    buttons, more = card_actions(ans, req, ci)
    return {
        "version": ci.version,
        "title": _title(ans),
        "warning": warning_line(ans, req),
        "change": change,
        "lead": _lead(ans, req),
        "fields": fields,
        "table": _table(ans.plans, req) if len(ans.plans) > 1 and not ans.pinned else None,
        "context": " · ".join(context),
        "buttons": buttons,
        "more": more,
        "more_action": Action.MORE,
        # Slack's overflow holds five options; more than that is a select labelled "More…"
        "more_kind": "overflow" if len(more) <= MORE_OPTIONS else "static_select",
        "more_label": _("More…"),
    }


def answer_fallback(ans: Answer, ci: CardInput | None = None, *,
                    req: Request | None = None) -> str:
    """The one line notifications and screen readers get, plain text: the verdict, or for a
    follow-up what changed in it."""
    new = result_of(ans)
    currency = req.answer_currency if req else "CNY"
    if ci is not None and (ci.changes or ci.notes):
        return f"{_model_name(ans)}: " + change_line(ci.changes, new, ci.previous, currency,
                                                     bold=False)
    top = ans.plans[0] if ans.plans else None
    if top is None or top.verdict == "no":
        return f"{_title(ans)}. {ans.recommendation}"[:600]
    return _("{title}: {cost}; {used:.1f} of {capacity:.1f} GiB per GPU, {verdict}").format(
        title=_title(ans), cost=_amount_of(new), used=top.memory.total / GIB,
        capacity=top.memory.capacity / GIB, verdict=verdict_label(top))


def verdict_line(ans: Answer) -> str:
    """The thread's root once a dialog has its answer: the verdict and where the rest is."""
    return _("*{title}* ({result}). The answer and what changed since are in this thread."
             ).format(title=_title(ans), result=_amount_of(result_of(ans)))


# -- detail posted in the thread on demand -------------------------------------------------------

def breakdown_sections(ans: Answer) -> list[str]:
    top = ans.plans[0]
    m = top.memory
    lines = [_("*Memory breakdown* — {n} × {card} ({strategy})").format(
        n=top.gpus, card=top.gpu_display, strategy=top.strategy)]
    for name in COMPONENTS:
        value = getattr(m, name)
        if value or name in m.detail:
            lines.append(f"• *{label(name)}* {gib(value)}: {m.detail.get(name, '')}")
    if m.reused:
        # an overlap, not a component: never a negative row
        lines.append(_("• Gradients and activations are never all live at once: {size} of the "
                       "rows above is counted once in the total. {why}").format(
            size=gib(m.reused), why=m.detail.get("reused", "")))
    lines.append(_("• *headroom* {headroom} · *total* {total} of {capacity} → {verdict}").format(
        headroom=gib(m.headroom), total=gib(m.total), capacity=gib(m.capacity),
        verdict=verdict_label(top)))
    if top.speed.detail:
        lines.append(_("• *speed* {detail}").format(detail=top.speed.detail))
    return blockkit.sections("\n".join(lines))


def assumptions_sections(ans: Answer) -> list[str]:
    return blockkit.sections(_("*Assumptions*") + "\n" + "\n".join(
        f"• {a}" for a in ans.assumptions))


def advice_sections(ans: Answer) -> list[str]:
    lines = [_("*The buying guides' advice*")] + [f"• {a}" for a in ans.advice]
    if ans.trial:
        lines.append("• " + _("Before buying: ") + ans.trial.note)
    if ans.warnings:
        lines.append(_("*Warnings*"))
        lines += [f"• {w}" for w in ans.warnings[:10]]
        if len(ans.warnings) > 10:
            lines.append(_("… and {count} more").format(count=len(ans.warnings) - 10))
    return blockkit.sections("\n".join(lines))


def rent_vs_buy_sections(ans: Answer, limit: int = 5) -> list[str]:
    lines = [_("*Rent vs buy* for the options that fit (per option: buy up front + monthly "
               "running, rent per month, break-even use)")]
    for plan in [p for p in ans.plans if p.memory.fits][:limit]:
        c = plan.cost
        if c is None:
            continue
        if c.mode == "owned":  # the team's cards: neither bought nor rented
            lines.append(_("• {n} × {card}: your cards, {monthly}/month to run").format(
                n=plan.gpus, card=plan.gpu_display, monthly=money(c.buy.monthly_total, c.currency)))
            continue
        buy = (_("buy {capex} + {monthly}/month").format(
            capex=money(c.buy.capex, c.currency), monthly=money(c.buy.monthly_total, c.currency))
            if c.buy.capex is not None else _("no purchase price"))
        rent = (_("rent {monthly}/month").format(monthly=money(c.rent.monthly, c.currency))
                if c.rent.monthly is not None else _("no rental price"))
        dedicated = dedicated_phrase(c)
        even = break_even_phrase(c.break_even_hours_per_month, listing=dedicated is not None
                                 ) or _("no break-even")
        if dedicated is not None:
            even += _("; ") + dedicated
        cheaper = (_("cheaper over {months} months: {mode}").format(
            months=c.months, mode=_(c.mode)) if c.mode else "")
        lines.append(_("• {n} × {card}: {buy}; {rent} at {hours:g} h; {even}; {cheaper}").format(
            n=plan.gpus, card=plan.gpu_display, buy=buy, rent=rent, hours=c.hours_per_month,
            even=even, cheaper=cheaper))
    if ans.to_buy:  # the recommendation rents: what the budget buys instead
        lines.append(_("*To own the cards instead, within the budget:*"))
        lines += [f"• {a.change}" for a in ans.to_buy]
    claim = next((p.cost.seeds_claim_hours_per_month for p in ans.plans if p.cost), None)
    if claim is not None:
        # the buying guides' rule of thumb, said here in full: the card itself no longer shows it
        lines.append(_("The buying guides' rule of thumb is to buy when the cards are busy more "
                       "than {hours:g} h a month; the break-even above is computed from these "
                       "prices instead. Reply \"hours 500\" to change the use per month."
                       ).format(hours=claim))
    return blockkit.sections("\n".join(lines))


def bom_sections(ans: Answer) -> list[str]:
    """The "Bill of materials" button: the whole server of the first option, each line with its
    rule, the traffic that sizes the network; then API versus self-hosting and what the box can
    do, when the answer has them."""
    top = ans.plans[0] if ans.plans else None
    if top is None or top.bom is None:
        return blockkit.sections(_("*Bill of materials*: the plan does not run, so there is "
                                   "nothing to buy."))
    lines = bom_lines(top)
    lines[0] = f"*{lines[0]}*"
    extra = traffic_lines(ans) + api_lines(top) + capacity_lines(ans.capacity)
    if extra:
        lines += ["", *extra]
    return blockkit.sections("\n".join(lines))


def launch_sections(ans: Answer) -> list[str]:
    """The "How to run it" button: each engine's commands and config files as code blocks, with
    the version the options were checked against."""
    top = ans.plans[0] if ans.plans else None
    if top is None or not top.launch:
        return blockkit.sections(_("*How to run it*: the plan does not run."))
    lines: list[str] = []
    for i, launch in enumerate(top.launch):
        heading = launch_heading(launch) if i == 0 else _("Or with {engine} {version}:").format(
            engine=ENGINE_NAMES.get(launch.engine, launch.engine), version=launch.version)
        lines += [f"*{heading}*", "```", *launch.commands, "```"]
        for name, text in launch.files.items():
            lines += [f"`{name}`", "```", *text.splitlines(), "```"]
        if i == 0:
            lines += [f"• {note}" for note in launch.notes]
    return blockkit.sections("\n".join(lines))


def detail_sections(ans: Answer, kind: Detail | str) -> list[str]:
    """A detail opened from the card's buttons or menu (charts are pictures, not sections)."""
    render = {Detail.COST: rent_vs_buy_sections, Detail.BREAKDOWN: breakdown_sections,
              Detail.ASSUMPTIONS: assumptions_sections, Detail.ADVICE: advice_sections,
              Detail.BOM: bom_sections, Detail.LAUNCH: launch_sections}[Detail(kind)]
    return render(ans)


def memory_chart_alt(ans: Answer, max_plans: int = 6) -> str:
    """What the memory chart shows, for screen readers and clients without images."""
    parts = [_("{plan}: {used:.1f} of {capacity:.0f} GiB per GPU, {verdict}").format(
        plan=plan_name(p.gpus, p.gpu_display), used=p.memory.total / GIB,
        capacity=p.memory.capacity / GIB, verdict=verdict_label(p))
        for p in ans.plans[:max_plans]]
    return (_("Bar chart of memory per GPU for {model}, one bar per option: ").format(
        model=_model_name(ans)) + "; ".join(parts))[:1000]


def price_chart_alt(card: str, points: list[tuple[str, str, float, str]]) -> str:
    """`points`: (date, kind label, amount, currency), oldest first."""
    if not points:
        return _("No prices recorded for {card}.").format(card=card)
    first, last = points[0], points[-1]
    return _("Chart of {count} prices of {card} from {start} to {end}; the newest: {amount:,.4g} "
             "{currency}, {kind}.").format(count=len(points), card=card, start=first[0],
                                            end=last[0], amount=last[2], currency=last[3],
                                            kind=last[1])


# -- the questions of an incomplete command ------------------------------------------------------

BUDGETS = {"CNY": ((50e3, 150e3, 300e3, 500e3, 1e6, 2e6, 5e6), (2e3, 5e3, 10e3, 20e3, 50e3, 100e3)),
           "USD": ((10e3, 25e3, 50e3, 100e3, 250e3, 500e3, 1e6), (300, 1e3, 3e3, 5e3, 10e3, 20e3))}


def method_question(model: str, version: int) -> dict[str, Any]:
    return {
        "version": version, "kind": "buttons",
        "text": _("What do you want to do with *{model}*?").format(model=model),
        "options": [{"action_id": Action.ANSWER_METHOD.suffixed(m), "text": method_title(m),
                     "value": f"{version}|{m}"} for m in METHODS],
        "groups": [], "buttons": [], "action_id": "", "placeholder": "",
        "hint": _("Or reply in this thread, e.g. \"lora\" or \"serve with 20 users\"."),
    }


def budget_choice(value: str, currency: str, months: int) -> tuple[dict[str, Any], str] | None:
    """A budget option's value ("buy:150000", "rent:5000") as Draft values and its words; None
    for anything else."""
    way, _sep, amount = value.partition(":")
    try:
        figure = float(amount)
    except ValueError:
        return None
    if way == "buy" and figure > 0:
        return ({"budget": {"amount": figure, "currency": currency}, "mode": "buy"},
                _("buy up to {amount}").format(amount=money(figure, currency)))
    if way == "rent" and figure > 0:
        return ({"budget": {"amount": figure * months, "currency": currency}, "mode": "rent"},
                _("rent up to {amount}/month ({total} over {months} months)").format(
                    amount=money(figure, currency), total=money(figure * months, currency),
                    months=months))
    return None


def budget_question(version: int, currency: str, months: int = 36) -> dict[str, Any]:
    buy, rent = BUDGETS.get(currency, BUDGETS["CNY"])
    return {
        "version": version, "kind": "select",
        "text": _("Do you have a budget? A budget is money to spend: buying has to fit it up "
                  "front, renting over {months} months (or the run). Amounts in {currency}."
                  ).format(months=months, currency=currency),
        "action_id": Action.ANSWER_BUDGET, "placeholder": _("Pick a budget"),
        "options": [],
        "groups": [
            {"label": _("Buy up to"), "options": [
                {"text": money(b, currency), "value": f"{version}|buy:{b:g}"} for b in buy]},
            {"label": _("Rent up to, per month"), "options": [
                {"text": _("{amount}/month").format(amount=money(b, currency)),
                 "value": f"{version}|rent:{b:g}"} for b in rent]}],
        "buttons": [{"action_id": Action.ANSWER_BUDGET_SKIP,
                     "text": _("No budget, just rank by cost"),
                     "value": f"{version}|none"}],
        "hint": _("Or reply in this thread, e.g. \"budget 300k\" or \"budget $20k\"."),
    }


def answered(question: str, answer: str) -> list[str]:
    return [f"{question} → *{answer}*"]
