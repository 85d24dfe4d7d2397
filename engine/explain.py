"""The assumptions behind every number, and warnings where the request is risky.

Each line names the recipe or constant that produced a figure and how to change it, so two
answers that disagree can be traced to the assumption that differs.
"""

from __future__ import annotations

from engine import memory
from engine.answer import Plan
from engine.architecture import ModelSpec
from engine.prices import PriceBook, price_book
from engine.quant import weight_bytes
from engine.request import Request

FRAMEWORK = ("framework semantics assumed: PyTorch 2.x with FSDP / DeepSpeed ZeRO sharding, "
             "flash or SDPA attention, PEFT/torchtune for LoRA, vLLM for serving")


def _model_line(spec: ModelSpec) -> str:
    active = (f", {spec.active_params / 1e9:.2f}B active per token ({spec.active_experts} of "
              f"{spec.experts} experts)") if spec.is_moe else ""
    return (f"model {spec.display}: {spec.params / 1e9:.2f}B parameters{active}, "
            f"{spec.layers} layers, hidden {spec.hidden}, {spec.heads} heads / {spec.kv_heads} KV "
            f"heads, vocab {spec.vocab} (config: {spec.source}, read {spec.retrieved})")


def _training_lines(spec: ModelSpec, req: Request) -> list[str]:
    lines = []
    if req.method in ("lora", "qlora"):
        adapters = memory.lora_params(spec, req.rank, req.targets)
        where = "attention (q,k,v,o)" if req.targets == "attn" else "all linear layers"
        lines.append(
            f"{req.method}: rank {req.rank} on {where}"
            f" = {adapters / 1e6:.1f}M trainable parameters ({adapters / spec.params:.2%} of the "
            f"model); frozen base stored as {req.weight_quant}: {weight_bytes(spec, req.weight_quant).note}"
            " (set rank= and targets=attn|all)")
        lines.append(f"adapters trained with {memory.RECIPE_TEXT[req.optimizer]}")
    else:
        lines.append(f"optimizer: {memory.RECIPE_TEXT[req.optimizer]} (set optimizer=)")
    ckpt = {
        "full": "full activation checkpointing: only each block's input is kept, one block is "
                "recomputed at a time (~33% more compute); the default for fine-tuning",
        "selective": "selective activation checkpointing: matmul outputs kept, norms and "
                     "elementwise ops recomputed",
        "none": "no activation checkpointing: every block keeps its saved tensors",
    }[req.checkpointing_mode]
    lines.append(f"{ckpt} (set checkpointing=none|selective|full)")
    lines.append(
        f"sequence {req.seq_len} tokens x micro-batch {req.batch} per GPU"
        + (" (defaults; set seq= and batch=)" if req.seq is None else "")
        + "; activations from the architecture's saved tensors per block (Korthikanti et al. "
        "2022 method, flash attention so no s^2 term) plus logits in bf16 and their fp32 copy "
        "for the loss")
    lines.append(f"precision {req.precision}" + (" with fp32 master weights" if req.optimizer in
                                                 ("adamw", "sgd") and req.precision != "fp32" else ""))
    lines.append("sharding: without zero=/tp= each card count takes the fastest sharding that "
                 "fits (ties: the lightest) among DDP, ZeRO-1/2/3 (FSDP), tensor parallel on "
                 "NVLink cards and pipeline stages across servers; offload only when asked "
                 "(offload=optimizer|all|activations)")
    return lines


def _inference_lines(spec: ModelSpec, req: Request) -> list[str]:
    size = weight_bytes(spec, req.weight_quant)
    lines = [
        f"weights in {req.weight_quant}: {size.total_bytes / 1e9:.2f} GB, {size.bits_per_weight:.2f} "
        f"bits/weight ({size.note}) (set quant=)",
        f"KV cache for {req.users} concurrent sequence(s) x {req.context} tokens in {req.kv} "
        "(set users=, context=, kv=fp8); sized at the context you serve, not the model's maximum "
        f"({spec.max_context})",
        "multi-GPU: tensor parallel on NVLink cards, layer split on PCIe cards",
    ]
    if spec.attention == "mla":
        lines.append("MLA: the KV cache stores the compressed latent (kv_lora_rank + rope dim) per "
                     "token per layer")
    return lines


def seeds_rule(spec: ModelSpec, req: Request) -> str | None:
    """The buying guides' rule of thumb next to this answer's recipe (DOMAIN.md), so a reader
    sees which assumption makes the two differ instead of two unexplained numbers."""
    billions = spec.params / 1e9
    if req.method in ("full-finetune", "pretrain"):
        w, g, o = memory.recipe_bytes(req.optimizer, req.precision)
        return (f"the seeds' rule of thumb (000) counts 8 bytes/param for a full fine-tune "
                f"(7B -> 56 GB, 13B -> 104 GB): {billions * 8:.0f} GB here, which holds for pure-"
                f"bf16 AdamW (optimizer=adamw-bf16); this answer's recipe counts {w + g + o:g} "
                f"bytes/param = {billions * (w + g + o):.0f} GB of model states before activations")
    if req.method == "inference":
        return (f"the seeds' rule of thumb (000): weights x 1.2 = {billions * 2 * 1.2:.0f} GB in "
                "16 bit; this answer sizes the KV cache for the context and users you give instead "
                "of a flat 20%, then keeps the 20% as headroom")
    if req.method in ("lora", "qlora"):
        return ("the seeds' rule of thumb (000): LoRA needs about a quarter of full fine-tuning's "
                "memory; this answer counts the frozen base, the adapters and the activations")
    return None


def assumptions(spec: ModelSpec, req: Request, model_notes: tuple[str, ...] = (),
                book: PriceBook | None = None) -> list[str]:
    lines = [_model_line(spec), *model_notes]
    lines += _training_lines(spec, req) if req.is_training else _inference_lines(spec, req)
    rule = seeds_rule(spec, req)
    if rule:
        lines.append(rule)
    lines.append(
        f"runtime overhead: CUDA context {memory.CUDA_CONTEXT / memory.GIB:.1f} GiB, NCCL buffers "
        f"{memory.NCCL_BUFFERS / memory.GIB:.0f} GiB per GPU when gpus > 1, allocator "
        f"fragmentation {memory.FRAGMENTATION:.0%} of allocated memory")
    lines.append(f"headroom {req.headroom:.0%}: a plan fits when total x {1 + req.headroom:.2f} <= "
                 "card memory as the driver reports it (the seeds' 20% margin; set headroom=)")
    lines += _cost_lines(req, book or price_book())
    lines.append(FRAMEWORK)
    return lines


def _cost_lines(req: Request, book: PriceBook) -> list[str]:
    from engine.cost import CARD_SHARE, OPS_SHARE_PER_MONTH
    from engine.prices import STALE_DAYS

    use = ("around the clock (730 h/month)" if req.method == "inference" and req.hours is None
           else f"{req.hours_per_month:g} h/month" + (" (default: the seeds note most teams use "
                                                      "under 30% of their cards)"
                                                      if req.hours is None else ""))
    return [
        f"cost in {req.answer_currency} at {use} over {req.months} months (set hours=, months=, "
        f"currency=); USD prices converted at {book.fx.cny_per_usd:g} CNY/USD ({book.fx.date}, "
        f"{book.fx.source})",
        f"buy: the catalog's server price, else cards / {CARD_SHARE:.0%} (cards are 60-70% of a "
        f"server, seed 003); power = (TDP x GPUs + host) x PUE {book.pue.value:g} x price/kWh for "
        f"region={req.region or 'default'}; operations {OPS_SHARE_PER_MONTH:.1%} of capex a month "
        "(seed 000's 8x A800 running cost less its power); rent: newest catalog quote per card, "
        "local market first",
        f"prices older than {STALE_DAYS} days are marked STALE; ranking: "
        + ("cheaper of buying and renting over the horizon" if req.goal == "cost"
           else "fastest first (rank=time)")
        + (", within budget= (capex to buy, per month to rent)" if req.budget else ""),
        "availability of a card in your market (export controls) is not checked; the GPU "
        "catalog's market field marks the China-market variants (A800, H800, H20, L20)",
    ]


def warnings(spec: ModelSpec, req: Request, plans: list[Plan]) -> list[str]:
    out = []
    if req.method == "inference" and req.context > spec.max_context:
        out.append(f"context {req.context} exceeds {spec.display}'s maximum context "
                   f"{spec.max_context}")
    if req.is_training and req.seq_len > spec.max_context:
        out.append(f"seq {req.seq_len} exceeds {spec.display}'s maximum context {spec.max_context}")
    if req.optimizer == "paged-adamw-8bit":
        out.append("paged optimizer states live in CUDA unified memory: PyTorch's memory "
                   "statistics do not count them, and steps slow down when they page to host")
    if plans and not any(p.memory.fits for p in plans):
        out.append("no plan fits: see each plan's memory breakdown for the largest component")
    if req.is_training and req.tokens is None and req.method == "pretrain":
        out.append("tokens= not given: training time and GPU-hours need the token count")
    return out
