"""Words and units every surface shares, so one number has one label in the terminal, in Slack
and on a chart (in either language: every label goes through the message catalog)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from engine import catalog, memory
from engine.cost import break_even_phrase, dedicated_phrase
from engine.i18n import N_, _, counted, money
from engine.market import ACCESS_WORDS
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
    if c.mode == "owned":
        # the team's own cards: what running them costs is the whole cost
        lines.append(_("your cards: {monthly}/month to run (power {power}, operations {ops}); "
                       "nothing to buy or rent").format(
            monthly=m(c.buy.monthly_total), power=m(c.buy.monthly_power),
            ops=m(c.buy.monthly_ops) if c.buy.monthly_ops is not None else _("no price to count from")))
        if c.job.hours is not None:
            lines.append(_("this job: {hours:,.1f} h, {share} of running cost").format(
                hours=c.job.hours, share=m(c.job.buy_share)))
        return lines
    if c.buy.capex is not None:
        lines.append(_("buy {capex} up front, then {monthly}/month (depreciation {dep}, power "
                       "{power}, operations {ops})").format(
            capex=m(c.buy.capex), monthly=m(c.buy.monthly_total),
            dep=m(c.buy.monthly_depreciation), power=m(c.buy.monthly_power),
            ops=m(c.buy.monthly_ops)))
    if c.rent.per_gpu_hour is not None:
        lines.append(_("rent {rate:.2f} {currency} per GPU-hour = {monthly}/month").format(
            rate=c.rent.per_gpu_hour, currency=c.currency, monthly=m(c.rent.monthly)))
    even = break_even_phrase(c.break_even_hours_per_month,
                             listing=dedicated_phrase(c) is not None)
    if even is not None:
        lines.append(_("{break_even} (the guides claim {claim:.0f} h/month)").format(
            break_even=even, claim=c.seeds_claim_hours_per_month))
    dedicated = dedicated_phrase(c)
    if dedicated is not None:
        lines.append(dedicated)
    if not c.buy_allowed or not c.rent_allowed:
        lines.append(_("not offered here: {ways}").format(ways=_(" and ").join(
            w for w, ok in ((_("buying"), c.buy_allowed), (_("renting"), c.rent_allowed))
            if not ok)))
    if c.job.hours is not None:
        lines.append(_("this job: {hours:,.1f} h, {rent} rented, {share} of owning cost").format(
            hours=c.job.hours, rent=m(c.job.rent), share=m(c.job.buy_share)))
    rents = len(c.stale) - len(c.stale_purchases)
    if rents > 0:
        lines.append(_("{count} older than 90 days: get fresh quotes").format(
            count=counted(rents, "rent price")))
    if c.stale_purchases:
        lines.append(_("{count} older than 12 months: get a fresh quote before buying").format(
            count=counted(len(c.stale_purchases), "purchase price")))
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


# Every input a request takes, as people name it (follow-ups say what changed in these words).
INPUTS = {
    "model": N_("model"), "method": N_("method"), "gpu": N_("card"), "gpus": N_("GPU count"),
    "seq": N_("sequence length"), "batch": N_("micro-batch"), "precision": N_("precision"),
    "optimizer": N_("optimizer"), "checkpointing": N_("activation checkpointing"),
    "zero": N_("ZeRO stage"), "offload": N_("offload"), "tp": N_("tensor parallel"),
    "ep": N_("expert parallel"), "cp": N_("context parallel"), "pp": N_("pipeline parallel"),
    "rank": N_("LoRA rank"), "targets": N_("LoRA targets"), "quant": N_("weight format"),
    "context": N_("context"), "users": N_("concurrent users"), "kv": N_("KV cache format"),
    "prompt": N_("prompt length"), "output": N_("answer length"),
    "requests": N_("requests per day"), "peak": N_("peak factor"),
    "tokens": N_("training tokens"), "headroom": N_("headroom"), "loss": N_("loss"),
    "fused_step": N_("fused optimizer step"), "compile": N_("torch.compile"),
    "packing": N_("packed sequences"),
    "engine": N_("serving engine"), "build": N_("llama.cpp build"), "budget": N_("budget"),
    "framework": N_("training framework"),
    "currency": N_("currency"),
    "region": N_("region"), "hours": N_("use per month"), "months": N_("horizon"),
    "power_price": N_("electricity price"), "goal": N_("ranking"), "market": N_("market"),
    "mode": N_("buy or rent"), "owned": N_("cards you have"), "min_speed": N_("speed per user"),
    "ttft": N_("time to first token"), "replicas": N_("replicas"), "days": N_("deadline"),
    "gpu_util": N_("share of the card vLLM may use"),
    "asked_in": N_("question language"),
    "card_memory": N_("memory per card"), "host_memory": N_("host RAM per server"),
}
GOALS = {"cost": N_("cheapest first"), "time": N_("fastest first")}
MODES = {"buy": N_("buy only"), "rent": N_("rent only")}
MARKETS = {"china": N_("China"), "global": N_("global")}
# how a card reaches the asker's market (engine/data/availability.toml's statuses)
ACCESS = ACCESS_WORDS


def input_label(name: str) -> str:
    """An input's name as people say it ("budget", "use per month")."""
    return _(INPUTS[name]) if name in INPUTS else name


def input_value(name: str, value: object, currency: str = "CNY") -> str:
    """An input's value in words: `budget` {"amount": 3e5} -> 300k CNY, `hours` 500 -> 500
    h/month, `goal` time -> fastest first. None: the default."""
    if value is None:
        return _("default")
    if name == "method" and isinstance(value, str):
        return method_title(value)
    if name == "budget" and isinstance(value, dict):
        return money(value.get("amount"), value.get("currency") or currency)
    if name == "gpu" and isinstance(value, str):
        gpu = catalog.gpus().get(value)
        return gpu.display if gpu else value
    if isinstance(value, bool):
        return _("on") if value else _("off")
    if name in ("card_memory", "host_memory") and isinstance(value, (int, float)):
        return f"{value:g} GB"
    if name in ("seq", "context", "prompt", "output") and isinstance(value, int):
        return _("{count:,} tokens").format(count=value)
    if name == "hours" and isinstance(value, int | float):
        return _("{hours:g} h/month").format(hours=value)
    if name == "months" and isinstance(value, int):
        return _("{count} months").format(count=value)
    if name == "requests" and isinstance(value, int | float):
        return _("{count:,.0f} a day").format(count=value)
    if name == "peak" and isinstance(value, int | float):
        return f"{value:g}x"
    if name == "days" and isinstance(value, int | float):
        return _("{count:g} days").format(count=value)
    if name == "min_speed" and isinstance(value, int | float):
        return _("{rate:g} tokens/s").format(rate=value)
    if name == "ttft" and isinstance(value, int | float):
        return f"{value:g} s"
    if name == "headroom" and isinstance(value, int | float):
        return f"{value:.0%}"
    if name == "tokens" and isinstance(value, int):
        for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
            if value >= scale:
                return f"{value / scale:g}{unit}"
        return f"{value:,}"
    words = {"goal": GOALS, "mode": MODES, "market": MARKETS}.get(name)
    if words and value in words:
        return _(words[value])  # type: ignore[index]
    return str(value)


def input_text(name: str, value: object, currency: str = "CNY") -> str:
    """One changed input as a reply says it: "budget: 300k CNY"; a method is its own title."""
    if name == "method" and value is not None:
        return input_value(name, value, currency)
    return _("{label}: {value}").format(label=input_label(name),
                                        value=input_value(name, value, currency))


def short_card(display: str, limit: int = 22) -> str:
    """A card's name where a phone's column is narrow: the vendor's brand words dropped
    ("GeForce RTX 4090" -> "RTX 4090", "Instinct MI300X" -> "MI300X"), cut with an ellipsis."""
    for brand in ("GeForce ", "Instinct ", "NVIDIA ", "AMD "):
        display = display.replace(brand, "")
    return display if len(display) <= limit else display[: limit - 1] + "…"
