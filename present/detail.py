"""What an answer says beyond the cards (issue 25), as lines every surface shares: the bill of
materials, the traffic and the hosted APIs beside the plan, what a box you own can serve or train,
and the commands that run the plan. The terminal prints them; Slack posts them as sections (code
in code blocks)."""

from __future__ import annotations

from engine.api_prices import MATCH_TEXT, unit_price
from engine.i18n import N_, _, counted, money, seconds
from engine.schema import Answer, Capacity, Launch, Plan
from present.labels import method_title

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "llama.cpp": "llama.cpp",
                "llamafactory": "LLaMA-Factory", "megatron": "Megatron-LM"}
# code lines start with these marks, so a reader (and a test) tells code from prose
COMMAND = "$ "
FILE_LINE = "│ "
VERDICTS = {"fits": N_("fits"), "tight": N_("tight")}
MARKET_WORDS = {"china": N_("billed in China"), "global": N_("paid abroad")}


def bom_lines(plan: Plan) -> list[str]:
    """The bill of materials: a heading, one line per item with its rule, the traffic."""
    b = plan.bom
    if b is None:
        return []
    out = [_("Bill of materials — {n} × {card}, {servers} of {per}").format(
        n=plan.gpus, card=plan.gpu_display, servers=counted(b.servers, "server"),
        per=counted(b.gpus_per_server, "GPU"))]
    for line in b.lines:
        share = (_(" [{share:.0%} of the price, {amount}]").format(
            share=line.share, amount=money(line.amount, b.currency or ""))
                 if line.share is not None and line.amount is not None else "")
        out.append("• " + _("{label}: {text}").format(label=line.label, text=line.text) + share)
        out.append("    " + _("rule: {rule}").format(rule=line.rule))
    if b.traffic:
        out.append(_("Traffic between servers, from the plan's sharding:"))
        out += [f"• {t.text}" for t in b.traffic]
    out += [f"• {note}" for note in b.notes]
    return out


def traffic_lines(ans: Answer) -> list[str]:
    t = ans.traffic
    if t is None:
        return []
    return [_("Traffic → users (Little's law): {text}").format(text=t.text)] + [
        "  " + _("assumed: {what}").format(what=a) for a in t.assumed]


def api_lines(plan: Plan, limit: int = 4) -> list[str]:
    a = plan.api
    if a is None:
        return []
    cur = a.currency
    way = _("buying") if a.mode == "buy" else _("renting") if a.mode == "rent" else _("the plan")
    out = [_("API versus self-hosting ({requests} a day, {tokens} tokens a month):").format(
        requests=counted(a.requests_per_day, "request"), tokens=_count(a.tokens_per_month))]
    if a.monthly is not None:
        busy = (min(1.0, a.requests_per_day / a.capacity_requests_per_day)
                if a.capacity_requests_per_day else None)
        util = (_(", the cards {util:.0%} busy on average, {busy:.0%} in the busiest hour")
                .format(util=a.utilization, busy=busy)
                if a.utilization is not None and busy is not None else "")
        out.append("• " + _("{way} {n} × {card}: {monthly}/month = {per_m} per million tokens"
                            "{util}").format(way=way, n=plan.gpus, card=plan.gpu_display,
                                              monthly=money(a.monthly, cur),
                                              per_m=unit_price(a.per_m_tokens, cur), util=util))
    for o in a.offers[:limit]:
        even = _break_even(o.break_even_requests_per_day, a.capacity_requests_per_day)
        out.append("• " + _("{provider} {api} ({match}, {market}): {inp}/{outp} per million "
                            "in/out = {monthly}/month, {per_m} per million tokens{even}").format(
            provider=o.provider, api=o.api_model, match=_(MATCH_TEXT[o.match]),
            market=_(MARKET_WORDS.get(o.market, o.market)),
            inp=unit_price(o.input_per_m, o.currency), outp=unit_price(o.output_per_m, o.currency),
            monthly=money(o.monthly, cur), per_m=unit_price(o.per_m_tokens, cur), even=even))
        out.append("    " + _("source: {source} ({quoted}{stale})").format(
            source=o.source, quoted=o.quoted, stale=_(", STALE") if o.stale else ""))
    if a.verdict:
        out.append("→ " + a.verdict)
    out += [f"  {note}" for note in a.notes]
    return out


def _break_even(even: float | None, capacity: float | None) -> str:
    """Where the plan's fixed cost a month meets the API's cost for the same traffic; past what
    the plan carries it never does (more copies of the plan only repeat the same sum)."""
    if not even:
        return ""
    if capacity is not None and even > capacity:
        return _("; the plan never pays off against it: that takes {n:,.0f} requests a day, more "
                 "than the {capacity:,.0f} it carries").format(n=even, capacity=capacity)
    return _("; the plan pays off above {n:,.0f} requests a day").format(n=even)


def capacity_lines(cap: Capacity | None) -> list[str]:
    if cap is None:
        return []
    out = [_("What the box can do: {text}").format(text=cap.text)]
    if cap.rows:
        out.append(_("  most users at the service level ({floor:g} tokens/s each, {ttft}), per "
                     "context:").format(floor=cap.decode_floor or 0, ttft=cap.ttft_rule))
        for r in cap.rows:
            speed = (_(", {per:.0f} tokens/s each").format(per=r.decode_per_user)
                     if r.decode_per_user else "")
            if r.users and r.ttft_s is not None:
                speed += _(", first token in {ttft} s").format(ttft=seconds(r.ttft_s))
            out.append("  • " + _("{context:>7,} tokens: {users}{speed}; one more: "
                                  "{why}").format(context=r.context, users=counted(r.users, "user"),
                                                  speed=speed, why=r.limit_text))
    if cap.users is not None:
        out.append("  " + (_("{users}: up to {context:,} tokens each").format(
            users=counted(cap.users, "user"), context=cap.longest_context)
            if cap.longest_context else _("{users}: no context serves them at the service "
                                          "level").format(users=counted(cap.users, "user"))))
    for f in cap.largest:
        out.append("  • " + (_("largest for {method}: {model} ({params:.1f}B, {verdict}, "
                               "{rate:,.0f} tokens/s)").format(
            method=method_title(f.method), model=f.display, params=(f.params or 0) / 1e9,
            verdict=_(VERDICTS.get(f.verdict or "", f.verdict or "")),
            rate=f.tokens_per_s or 0) + (_(" ({recipe})").format(recipe=f.recipe)
                                         if f.recipe else "") if f.model else
            _("largest for {method}: none of the catalog's models").format(
                method=method_title(f.method))))
        if f.next_model and f.limit:
            out.append("    " + _("the next larger: {why}").format(why=f.limit))
    for r in cap.recipes[:3]:
        out.append("  • " + _("{change}: {rate:,.0f} tokens/s ({verdict})").format(
            change=r.change, rate=r.tokens_per_s, verdict=_(VERDICTS.get(r.verdict, r.verdict))))
    if cap.fastest_limit:
        out.append("  " + cap.fastest_limit)
    return out


def launch_heading(launch: Launch) -> str:
    return _("How to run it with {engine} {version}:").format(
        engine=ENGINE_NAMES.get(launch.engine, launch.engine), version=launch.version)


def launch_lines(plan: Plan, *, files: bool = True) -> list[str]:
    """The first engine's commands (and config files), the equivalents' commands after."""
    if not plan.launch:
        return []
    first, *others = plan.launch
    out = [launch_heading(first)] + [f"  {COMMAND}{c}" for c in first.commands]
    if files:
        for name, text in first.files.items():
            out.append("  " + _("{file}:").format(file=name))
            out += [f"    {FILE_LINE}{line}" for line in text.splitlines()]
    out += [f"  - {n}" for n in first.notes]
    for other in others:
        out.append(_("Or with {engine} {version}:").format(
            engine=ENGINE_NAMES.get(other.engine, other.engine), version=other.version))
        out += [f"  {COMMAND}{c}" for c in other.commands]
    return out


def _count(value: float) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:,.1f}{unit}"
    return f"{value:,.0f}"
