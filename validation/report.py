"""Regenerate docs/VALIDATION.md: the engine against published measurements.

Run from the repository root: .venv/bin/python validation/report.py [--check]

Each reference in validation/references.toml gives a query in gpusize's grammar, the measured
value, and what was measured. We compare like with like: a PyTorch allocator peak
(max_memory_allocated) excludes the CUDA context, NCCL buffers and fragmentation; a reserved peak
(max_memory_reserved) includes fragmentation only; nvidia-smi includes everything. Training
throughput is compared for the whole plan: a per-GPU figure is multiplied by the plan's GPU count.

validation/setups.toml lists published setups (card, count, engine, what happened); the report says
whether gpusize's pinned plan for each fits, and compares the speed where one was measured.
"""

from __future__ import annotations

import statistics
import tomllib
from dataclasses import dataclass
from pathlib import Path

from engine import ask
from engine.memory import FRAGMENTATION
from engine.parse import parse
from engine.quant import get_quant, gguf_file_bytes, weight_bytes
from engine.resolve import resolve_model
from engine.schema import Memory, Plan

ROOT = Path(__file__).resolve().parent.parent

REFERENCES = ROOT / "validation" / "references.toml"
SPEED_REFERENCES = ROOT / "validation" / "speed_references.toml"
SETUPS = ROOT / "validation" / "setups.toml"
OUTPUT = ROOT / "docs" / "VALIDATION.md"
UNITS = {"GiB": 1024**3, "GB": 1e9, "MiB": 1024**2, "MB": 1e6, "bytes": 1,
         "tokens/s": 1, "GPU-hours": 1}
# median absolute error per metric: issue 2's aims, with issue 13's for prefill, training
# throughput and GPU-hours
AIMS = {"train_peak_memory": 0.10, "inference_memory": 0.05, "weights_size": 0.03,
        "decode_tokens_per_s": 0.20, "prefill_tokens_per_s": 0.30, "train_tokens_per_s": 0.20,
        "train_gpu_hours": 0.15}
SPEED_FIELDS = {"decode_tokens_per_s": "decode_tokens_per_s",
                "prefill_tokens_per_s": "prefill_tokens_per_s",
                "train_tokens_per_s": "train_tokens_per_s", "train_gpu_hours": "train_gpu_hours"}
BASES = ("per_gpu", "run")


@dataclass
class Row:
    ref: dict
    measured: float
    estimate: float | None
    error: float | None
    compared: str


def _memory_as_measured(mem: Memory, measured_by: str) -> tuple[float, str]:
    """The estimate restricted to what the measuring tool can see: PyTorch's allocator
    statistics see tensors only (reserved adds the cache); nvidia-smi and similar see all."""
    how = measured_by.lower()
    components = (mem.weights + mem.gradients + mem.optimizer + mem.activations + mem.kv_cache
                  - mem.reused)
    if "reserved" in how:
        return components * (1 + FRAGMENTATION), "allocated + fragmentation"
    if any(word in how for word in ("allocated", "active", "torch.cuda", "torchtune")):
        return components, "allocated (no context, NCCL, fragmentation)"
    return mem.total, "total incl. CUDA context and NCCL"


def _as_plan_basis(measured: float, ref: dict, gpus: int) -> tuple[float, str]:
    """Training throughput on the engine's basis (the whole plan): a per-GPU figure times the
    plan's GPU count; other metrics are compared as they are."""
    if ref["metric"] != "train_tokens_per_s":
        return measured, ""
    basis = ref.get("basis")
    if basis not in BASES:
        raise ValueError(f"basis must be one of {', '.join(BASES)}, not {basis!r}")
    if basis == "per_gpu":
        return measured * gpus, f"; source per GPU x {gpus}"
    return measured, "; source for the whole run"


def evaluate(ref: dict) -> Row:
    measured = float(ref["value"]) * UNITS[ref["unit"]]
    try:
        if ref["metric"] in SPEED_FIELDS:
            plan = ask(ref["query"]).plans[0]
            value = getattr(plan.speed, SPEED_FIELDS[ref["metric"]])
            if value is None:
                raise ValueError("the engine gave no figure")
            measured, how = _as_plan_basis(measured, ref, plan.gpus)
            return Row(ref, measured, value, (value - measured) / measured,
                       f"{plan.gpus} x {plan.gpu}{how}")
        if ref["metric"] == "weights_size":
            req = parse(ref["query"])
            spec, _ = resolve_model(req.model)
            if get_quant(req.weight_quant).family == "gguf":
                estimate = float(gguf_file_bytes(spec, req.weight_quant))
                compared = "GGUF file: tensors + metadata"
            else:
                estimate = float(weight_bytes(spec, req.weight_quant).total_bytes)
                compared = "weight bytes"
        else:
            result = ask(ref["query"])
            estimate, compared = _memory_as_measured(result.plans[0].memory, ref.get("measured_by", ""))
    except Exception as err:  # a reference the engine cannot read is reported, not hidden
        needs = f" (needs {ref['needs']})" if ref.get("needs") else ""
        return Row(ref, measured, None, None, f"error: {err}{needs}")
    return Row(ref, measured, estimate, (estimate - measured) / measured, compared)


@dataclass
class SetupRow:
    setup: dict
    plan: Plan | None
    verdict: str | None
    measured: float | None  # the source's speed on the plan's basis
    estimate: float | None  # gpusize's speed for the same plan
    error: str | None


def plan_verdict(plan: Plan) -> str:
    """fits | tight | no. Issue 12 gives plans a `verdict`; until then the memory fields say the
    same: fits with the headroom, fits only without it (tight), or does not fit."""
    for owner in (plan, plan.memory):
        verdict = getattr(owner, "verdict", None)
        if verdict:
            return str(verdict)
    if plan.memory.fits:
        return "fits"
    return "tight" if plan.memory.total <= plan.memory.capacity else "no"


def evaluate_setup(setup: dict) -> SetupRow:
    try:
        result = ask(setup["query"])
        if not result.pinned:
            raise ValueError("the query must pin gpu= and gpus=")
        plan = result.plans[0]
        verdict = plan_verdict(plan)
        measured = estimate = None
        if setup.get("metric"):
            measured, _ = _as_plan_basis(float(setup["value"]) * UNITS[setup["unit"]], setup, plan.gpus)
            estimate = getattr(plan.speed, SPEED_FIELDS[setup["metric"]])
    except Exception as err:  # shown in the report, not hidden
        needs = f" (needs {setup['needs']})" if setup.get("needs") else ""
        return SetupRow(setup, None, None, None, None, f"{err}{needs}")
    return SetupRow(setup, plan, verdict, measured, estimate, None)


def setup_agrees(row: SetupRow) -> bool | None:
    """Whether gpusize's verdict matches what happened: a setup that ran should fit (tight counts:
    it fits without the headroom), one that ran out of memory should not."""
    if row.verdict is None:
        return None
    return (row.verdict != "no") == (row.setup["outcome"] == "ran")


def _aim(aim: float | None) -> str:
    return "none set" if aim is None else f"{aim:.0%}"


def _fmt(value: float, unit: str) -> str:
    if unit in ("tokens/s", "GPU-hours"):
        return f"{value:,.0f} {unit}" if value >= 100 else f"{value:,.1f} {unit}"
    return f"{value / UNITS[unit]:,.2f} {unit}"


def _speed(value: float | None, setup: dict) -> str:
    if value is None:
        return "-"
    return _fmt(value, setup["unit"]) + (" (run)" if setup["metric"] == "train_tokens_per_s" else "")


def render_setups(rows: list[SetupRow]) -> list[str]:
    agree = [r for r in rows if setup_agrees(r) is True]
    out = [
        "",
        "## Published setups",
        "",
        "Configurations someone ran (or saw run out of memory) and published, from `validation/setups.toml`."
        " gpusize is asked for exactly that card and count (`gpu=` and `gpus=`, so plans[0] is the pinned"
        " plan); *gpusize* is its verdict: `fits` (with the headroom), `tight` (only without it) or `no`."
        " A setup that ran agrees with `fits` or `tight`; one that ran out of memory agrees with `no`."
        " Speeds are on the plan's basis (training throughput for the whole run). Engines the grammar lacks"
        " (SGLang, gpt-fast) are queried as `engine=vllm`.",
        "",
        f"{len(agree)} of {len(rows)} agree;"
        f" {sum(r.error is not None for r in rows)} cannot be evaluated yet.",
        "",
        "| id | query | what happened | gpusize | memory per GPU (est. / card) | measured speed |"
        " gpusize speed | error | source |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r.setup
        if r.plan is not None:
            mem = r.plan.memory
            memory = f"{mem.total / UNITS['GiB']:,.1f} / {mem.capacity / UNITS['GiB']:,.1f} GiB"
            agrees = setup_agrees(r)
            verdict = f"{r.verdict}" + ("" if agrees else " (disagrees)")
        else:
            memory, verdict = "-", "error"
        measured = _speed(r.measured, s) if s.get("metric") else "-"
        estimate = _speed(r.estimate, s) if s.get("metric") else "-"
        error = (r.error or "").replace("|", "/")
        out.append(f"| {s['id']} | `{s['query']}` | {s['measured']} | {verdict} | {memory} | {measured} |"
                   f" {estimate} | {error} | [link]({s['source']}) |")
    rejected = [r for r in rows if r.verdict == "no" and r.setup["outcome"] == "ran"]
    if rejected:
        out += ["", "gpusize says `no` to these setups that ran:", ""]
        out += [f"- {r.setup['id']}: {r.setup['measured']}" for r in rejected]
    return out


def render(rows: list[Row], setups: list[SetupRow] | None = None) -> str:
    out = [
        "# Validation: gpusize against published measurements",
        "",
        "Generated by `.venv/bin/python validation/report.py` from `validation/references.toml`,"
        " `validation/speed_references.toml` and `validation/setups.toml` (sources described in"
        " `validation/SOURCES.md` and `validation/SPEED_SOURCES.md`). Do not edit by hand.",
        "",
        "Error = (estimate - measured) / measured. Memory estimates are restricted to what the "
        "measuring tool sees (see the `compared` column); speed rows name the plan the query "
        "resolved to. Rows of kind `rule_of_thumb` (a published rule, not a run), `upper_bound` "
        "(the card size at which a run still fit: the estimate should be at or below it), "
        "`derived` and `not_comparable` (each says why) are shown but kept out of the medians.",
        "",
        "## Summary",
        "",
        "| metric | references | median abs. error | aim | within aim | cannot evaluate |",
        "|---|---|---|---|---|---|",
    ]
    for metric, aim in AIMS.items():
        errs = [abs(r.error) for r in rows if r.ref["metric"] == metric and r.error is not None
                and r.ref.get("kind", "measurement") == "measurement"]
        failed = sum(r.estimate is None for r in rows if r.ref["metric"] == metric)
        if errs:
            med = statistics.median(errs)
            verdict = "-" if aim is None else ("yes" if med <= aim else "no")
            out.append(f"| {metric} | {len(errs)} | {med:.1%} | {_aim(aim)} | {verdict} | {failed} |")
        else:
            out.append(f"| {metric} | 0 | - | {_aim(aim)} | - | {failed} |")
    for metric in AIMS:
        chosen = [r for r in rows if r.ref["metric"] == metric]
        if not chosen:
            continue
        out += ["", f"## {metric}", "",
                "| id | query | measured | estimate | error | compared | source |",
                "|---|---|---|---|---|---|---|"]
        for r in sorted(chosen, key=lambda r: -abs(r.error or 0)):
            unit = r.ref["unit"] if r.ref["unit"] in UNITS else "GB"
            est = _fmt(r.estimate, unit) if r.estimate is not None else "-"
            err = f"{r.error:+.1%}" if r.error is not None else "-"
            kind = {"rule_of_thumb": " (rule of thumb)",
                    "upper_bound": " (upper bound: " + ("holds" if (r.error or 0) <= 0 else "exceeded")
                    + ")",
                    "derived": f" (derived, not in median: {r.ref.get('why', '')})",
                    "not_comparable": f" (not comparable, not in median: {r.ref.get('why', '')})",
                    }.get(r.ref.get("kind", ""), "")
            out.append(f"| {r.ref['id']}{kind} | `{r.ref['query']}` | {_fmt(r.measured, unit)} | "
                       f"{est} | {err} | {r.compared.replace('|', '/')} | [link]({r.ref['source']}) |")
    if setups is not None:
        out += render_setups(setups)
    return "\n".join(out) + "\n"


def main() -> int:
    refs = tomllib.loads(REFERENCES.read_text(encoding="utf-8"))["ref"]
    refs += tomllib.loads(SPEED_REFERENCES.read_text(encoding="utf-8"))["ref"]
    rows = [evaluate(ref) for ref in refs]
    setups = [evaluate_setup(s) for s in tomllib.loads(SETUPS.read_text(encoding="utf-8"))["setup"]]
    OUTPUT.parent.mkdir(exist_ok=True)
    OUTPUT.write_text(render(rows, setups), encoding="utf-8")
    for metric in AIMS:
        errs = [abs(r.error) for r in rows if r.ref["metric"] == metric and r.error is not None
                and r.ref.get("kind", "measurement") == "measurement"]
        if errs:
            print(f"{metric}: {len(errs)} refs, median abs error {statistics.median(errs):.1%}")
    failed = [r.ref["id"] for r in rows if r.estimate is None]
    if failed:
        print("could not evaluate:", ", ".join(failed))
    agree = sum(setup_agrees(s) is True for s in setups)
    print(f"published setups: {agree} of {len(setups)} agree with gpusize's verdict")
    for s in setups:
        if s.error is not None:
            print(f"  setup {s.setup['id']}: cannot evaluate: {s.error}")
        elif not setup_agrees(s):
            print(f"  setup {s.setup['id']}: gpusize says {s.verdict}, the source says {s.setup['outcome']}")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
