"""Regenerate docs/SEEDS.md: each of the buying guides' numbers (shared DOMAIN.md) next to what
the engine computes for it, and which assumption reconciles the two, or why nothing can.

Run from the repository root: .venv/bin/python validation/seeds.py
"""

from __future__ import annotations

from pathlib import Path

import engine
from engine.catalog import find_model
from engine.quant import gguf_file_bytes

ROOT = Path(__file__).resolve().parent.parent

GB = 1e9
GIB = 1024**3


def states_gb(query: str) -> float:
    m = engine.ask(query).plans[0].memory
    return (m.weights + m.gradients + m.optimizer) / GB


def total_gib(query: str) -> float:
    return engine.ask(query).plans[0].memory.total / GIB


def decode(query: str) -> float:
    return engine.ask(query).plans[0].speed.decode_tokens_per_s or 0.0


def rows() -> list[tuple[str, str, str, str]]:
    """(seed claim, engine figure, command, verdict)."""
    out = []
    q = "llama-2-7b full-finetune gpu=h100 gpus=1 precision=fp16 optimizer=adamw"
    out.append(("000: 7B full fine-tune FP16 + AdamW = 14 + 14 + 84 GB + activations = 112 GB+",
                f"{states_gb(q):.0f} GB of model states (16 B/param)", q,
                "consistent: mixed-precision AdamW, 2 + 2 + 12 bytes/param"))
    q = "llama-2-7b full-finetune gpu=h100 gpus=1 optimizer=adamw-bf16"
    out.append(("000: the same 7B full fine-tune 'about 56 GB'; 70B 'at least 560 GB'",
                f"{states_gb(q):.0f} GB with pure-bf16 AdamW (8 B/param)", q,
                "contradicts the 112 GB line; holds only for bf16 optimizer states without a "
                "master copy"))
    q = "llama-2-7b full-finetune gpu=h100 gpus=1 optimizer=adamw-8bit"
    out.append(("003: training memory = params(B) x 6 GB: 7B -> 42 GB, 70B -> 420 GB",
                f"{states_gb(q):.0f} GB with 8-bit AdamW (6 B/param)", q,
                "holds for 8-bit optimizer states on 16-bit weights, not for standard AdamW"))
    q = "llama-2-13b full-finetune gpu=h100 gpus=1 optimizer=adamw-bf16"
    out.append(("000: 13B full fine-tune needs 104 GB",
                f"{states_gb(q):.0f} GB with pure-bf16 AdamW; 208 GB with mixed precision", q,
                "8 B/param again: depends on the optimizer recipe"))
    q = "llama-2-13b full-finetune gpu=4090 gpus=4 zero=3 optimizer=adamw-bf16"
    plan = engine.ask(q).plans[0]
    out.append(("000: 13B full fine-tune on 4x 4090 with ZeRO-3 'barely runs' at batch 1-2",
                f"{plan.memory.total / GIB:.1f} GiB per GPU of 24 "
                f"({'fits' if plan.memory.fits else 'does not fit'} with 20% headroom)", q,
                "runs at the edge, as the seed says" if plan.memory.total <= plan.memory.capacity
                else "does not fit even without headroom: 'barely runs' needs more than the seed "
                "states (8-bit optimizer states, optimizer offload)"))
    q = "llama-2-7b serve gpu=4090 gpus=1 context=4096"
    out.append(("000: inference = weights x 1.2; 7B needs 14-16 GB",
                f"{total_gib(q):.1f} GiB at 4k context, one user", q,
                "consistent at short context; the KV cache, not a flat 20%, decides at long "
                "context or many users"))
    q = "llama-3.1-70b serve gpu=h200 gpus=1"
    plan = engine.ask(q).plans[0]
    out.append(("000: 70B FP16 is 140 GB: not one A100 80GB, but 2x A100 or 1x H200 141GB",
                f"{plan.memory.weights / GB:.0f} GB of weights; 1x H200: "
                f"{'fits' if plan.memory.fits else 'does not fit'} with headroom", q,
                "inconsistent with the seed's own x1.2 rule (168 GB > 141 GB)"))
    spec = find_model("llama-3.1-70b")
    q4 = gguf_file_bytes(spec, "q4_k_m") / GB
    q40 = gguf_file_bytes(spec, "q4_0") / GB
    out.append(("000: 4-bit GGUF takes 70B from 140 GB to 35 GB",
                f"Q4_K_M {q4:.1f} GB, Q4_0 {q40:.1f} GB", "gpusize llama-3.1-70b serve quant=q4_k_m",
                "35 GB is exactly 4 bits per weight; real 4-bit formats store scales too "
                "(4.5-4.9 bits)"))
    q = "llama-3.1-70b serve gpu=4090 gpus=2 quant=q4_k_m"
    out.append(("000: 2x 4090 run 70B 4-bit at 10-20 tokens/s",
                f"{decode(q):.0f} tokens/s", q, "consistent"))
    q = "llama-3.1-8b serve gpu=4090 gpus=1"
    out.append(("000: vLLM serves 7B on one 4090 at 50-80 tokens/s",
                f"{decode(q):.0f} tokens/s per user (bf16, batch 1)", q,
                "the low end of the range at batch 1 in 16 bit; 4-bit weights reach the top"))
    full = total_gib("llama-3.1-8b full-finetune gpu=h100 gpus=1")
    lora = total_gib("llama-3.1-8b lora gpu=h100 gpus=1")
    out.append(("000: LoRA cuts memory to a quarter",
                f"8B: {lora:.1f} GiB vs {full:.1f} GiB full ({lora / full:.0%})",
                "gpusize llama-3.1-8b lora gpu=h100 gpus=1", "roughly consistent"))
    plan = engine.ask("llama-3.1-70b full-finetune gpu=a800 gpus=8 region=chengdu hours=730"
                         ).plans[0]
    out.append(("000: 8x A800 at 8-12 kW costs 5,000-10,000 CNY/month in electricity (Chengdu)",
                f"{plan.cost.buy.monthly_power:,.0f} CNY/month at 730 h",
                "gpusize llama-3.1-70b full-finetune gpu=a800 gpus=8 region=chengdu hours=730",
                "consistent (PUE included)"))
    be = plan.cost.break_even_hours_per_month
    out.append(("000/003: buy when a card is used more than 400 h/month (3,000 h/year)",
                f"8x A800: break-even at {be:.0f} h/month from the catalog's prices",
                "gpusize llama-3.1-70b full-finetune gpu=a800 gpus=8",
                "a fixed threshold cannot hold for every card and price; 000's own A800 example "
                "(rent 20k vs own 8k a month) implies ~292 h/month"))
    return out


def main() -> int:
    lines = ["# The seeds' numbers against the engine", "",
             "Generated by `.venv/bin/python validation/seeds.py`. Each row: what a buying guide "
             "says (shared DOMAIN.md), what gpusize computes, the command, and the assumption that "
             "reconciles them or the reason nothing can.", "",
             "| seed says | engine | command | verdict |", "|---|---|---|---|"]
    for claim, figure, command, verdict in rows():
        command = command if command.startswith("gpusize ") else f"gpusize {command}"
        lines.append(f"| {claim} | {figure} | `{command}` | {verdict} |")
    out = ROOT / "docs" / "SEEDS.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
