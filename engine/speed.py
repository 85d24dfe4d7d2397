"""Speed: decode and prefill tokens/s for serving, tokens/s and GPU-hours for training.

Roofline-style models with stated efficiencies (constants below, each with where it comes
from); validation/speed_references.toml measures them against published runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import memory
from engine.architecture import EXPERT_ROLES, ModelSpec
from engine.catalog import GpuSpec
from engine.quant import get_quant, weight_bytes

# -- efficiencies ---------------------------------------------------------------------------
# Share of peak memory bandwidth a decode step reaches: llama.cpp and vLLM stream weights at
# 70-85% of datasheet bandwidth on large matrices (llama.cpp CUDA discussions; vLLM's MBU).
BANDWIDTH_EFFICIENCY = 0.80
# Fixed cost per layer per decode step (kernel launches, norms, attention bookkeeping) that does
# not shrink with bandwidth; what keeps small models far from the bandwidth roofline on fast
# cards. Calibrated on llama.cpp tg128 rows (docs/VALIDATION.md).
LAYER_OVERHEAD_S = {"llama.cpp": 25e-6, "vllm": 12e-6}
# Share of peak tensor throughput reached in prefill (large GEMMs): 50-60% in vLLM/llama.cpp
# pp512 runs on datacenter cards.
PREFILL_MFU = 0.55
# Training model-FLOPs utilisation by card class, before communication: Llama 3 405B reached
# 38-43% on H100 (Llama 3 paper, sec. 3.3.4); Llama 2 pre-training implies ~40% on A100 (GPU-
# hours in the Llama 2 paper with 6ND); consumer/workstation PCIe cards run smaller, less tuned
# jobs (~35%).
TRAIN_MFU = {"datacenter": 0.40, "workstation": 0.35}
# Effective all-reduce bus bandwidth (GB/s, one direction) when a card has no NVLink: PCIe 4.0
# x16 through the host; GeForce cards have peer-to-peer disabled, so traffic bounces via RAM.
PCIE_BUS_GBPS = {3: 8.0, 4: 12.0, 5: 24.0}
NVLINK_EFFICIENCY = 0.7  # of the one-direction NVLink bandwidth (nccl-tests bus bandwidth)
INTER_NODE_GBPS = 45.0  # 400 Gb/s InfiniBand/RoCE per GPU at ~90% (8 NICs per 8-GPU server)
FULL_RECOMPUTE_FLOPS = 8  # 6ND plus one extra forward (2ND) with full checkpointing
WORKSTATION = {"rtx-4090", "rtx-3090", "rtx-a4000", "rtx-a5000", "rtx-a6000", "rtx-6000-ada",
               "l40s", "l20"}


@dataclass(frozen=True)
class ServeSpeed:
    decode_per_sequence: float
    decode_aggregate: float
    prefill: float
    engine: str
    detail: str


@dataclass(frozen=True)
class TrainSpeed:
    tokens_per_s: float
    gpu_hours: float | None
    mfu: float
    detail: str


def engine_for(quant: str) -> str:
    return "llama.cpp" if get_quant(quant).family == "gguf" else "vllm"


def _tensor_tflops(gpu: GpuSpec, quant: str) -> float:
    # fp8 checkpoints run fp8 GEMMs where the card has them; everything else computes in 16 bit
    # (GGUF and 4-bit kernels dequantize into fp16 tiles).
    if quant == "fp8" and gpu.fp8_tflops:
        return gpu.fp8_tflops
    return gpu.bf16_tflops


def _active_weight_bytes(spec: ModelSpec, quant: str, users: int) -> float:
    """Bytes a decode step reads: dense weights once, plus the experts the batch touches."""
    size = weight_bytes(spec, quant)
    total = float(size.total_bytes)
    if engine_for(quant) == "llama.cpp":
        total -= size.by_role.get("token_embd", 0)  # a row lookup, not a matmul
    if not spec.is_moe:
        return total
    expert_bytes = sum(size.by_role.get(r, 0) for r in EXPERT_ROLES)
    # Expected distinct experts a batch of `users` tokens routes to, top-k of E uniformly:
    # E * (1 - (1 - k/E)^users).
    k, e = spec.active_experts, spec.experts
    touched = e * (1 - (1 - k / e) ** users)
    return total - expert_bytes + expert_bytes * touched / e


def attention_flops_per_token(spec: ModelSpec, context: int) -> float:
    # QK^T and AV over the context: 2 x 2 x layers x context x (heads x head_dim) per token,
    # (PaLM appendix B counts 12 L H Q T for training = 3 x this forward term).
    return 4 * spec.layers * context * spec.q_dim


def serve_speed(spec: ModelSpec, gpu: GpuSpec, *, quant: str, context: int, users: int,
                kv_bytes: int, tp: int, pp: int) -> ServeSpeed:
    """Decode is bandwidth bound: each step streams the weights once for the whole batch plus
    every sequence's KV cache; prefill is compute bound."""
    eng = engine_for(quant)
    shards = tp * pp
    bandwidth = gpu.bandwidth_gbps * 1e9 * BANDWIDTH_EFFICIENCY
    weights = _active_weight_bytes(spec, quant, users)
    kv = memory.kv_cache(spec, context=context, users=users, kv_bytes=kv_bytes, tp=1)
    # TP splits each layer's bytes across GPUs read in parallel; a layer split's stages read
    # their layers one after another, so it adds capacity but no speed for one token.
    read_s = (weights + kv) / tp / bandwidth
    comm_s = 0.0
    if tp > 1:
        # two all-reduces of the hidden state per layer; latency-bound at decode (~8 us each
        # over NVLink, nccl-tests small-message latency), more over PCIe
        per = 8e-6 if gpu.has_nvlink else 30e-6
        comm_s = 2 * spec.layers * per
    compute_s = 2 * spec.active_params * users / (_tensor_tflops(gpu, quant) * 1e12 * tp
                                                  * PREFILL_MFU)
    step = max(read_s, compute_s) + comm_s + spec.layers * LAYER_OVERHEAD_S[eng]
    per_seq = 1 / step
    flops_per_token = 2 * spec.active_params + attention_flops_per_token(spec, context // 2)
    prefill = _tensor_tflops(gpu, quant) * 1e12 * tp * PREFILL_MFU / flops_per_token
    detail = (f"decode: {(weights + kv) / 1e9:.2f} GB read per step over {shards} GPU(s) at "
              f"{BANDWIDTH_EFFICIENCY:.0%} of {gpu.bandwidth_gbps:.0f} GB/s + "
              f"{spec.layers} layers x {LAYER_OVERHEAD_S[eng] * 1e6:.0f} us ({eng}); prefill at "
              f"{PREFILL_MFU:.0%} of {_tensor_tflops(gpu, quant):.0f} TFLOPS")
    return ServeSpeed(decode_per_sequence=per_seq, decode_aggregate=per_seq * users,
                      prefill=prefill, engine=eng, detail=detail)


def train_flops_per_token(spec: ModelSpec, *, method: str, checkpointing: str, seq: int) -> float:
    """6N + 12 L H Q T per token (PaLM appendix B; N = active parameters for MoE), with an
    extra forward under full recomputation; LoRA skips the frozen weights' gradients (4N)."""
    n = spec.active_params
    forward = 2 * n + attention_flops_per_token(spec, seq) / 2  # causal mask: half the scores
    # backward is twice the forward; LoRA's frozen base needs only input gradients (one forward)
    per = 2 * forward if method in ("lora", "qlora") else 3 * forward
    if checkpointing == "full":
        per += forward
    return per


def _mfu(gpu: GpuSpec, gpus: int) -> float:
    base = TRAIN_MFU["workstation" if gpu.name in WORKSTATION else "datacenter"]
    if gpus > 8:
        base *= 0.95  # cross-server collectives and stragglers
    return base


def _bus_gbps(gpu: GpuSpec, gpus: int) -> float:
    if gpus > 8:
        return INTER_NODE_GBPS
    if gpu.has_nvlink:
        return gpu.nvlink_gbps / 2 * NVLINK_EFFICIENCY
    return PCIE_BUS_GBPS.get(gpu.pcie_gen, 12.0)


def train_speed(spec: ModelSpec, gpu: GpuSpec, *, gpus: int, method: str, checkpointing: str,
                seq: int, batch: int, zero: int, tp: int, tokens: int | None,
                trainable: int) -> TrainSpeed:
    """Cluster tokens/s = GPUs x peak x MFU / FLOPs per token, slowed where gradient or shard
    traffic per micro-batch takes longer than the compute it overlaps with."""
    flops_token = train_flops_per_token(spec, method=method, checkpointing=checkpointing, seq=seq)
    mfu = _mfu(gpu, gpus)
    if method == "qlora":
        mfu *= 0.75  # NF4 dequantization on every matmul (QLoRA runs ~25-40% slower than LoRA)
    peak = gpu.bf16_tflops * 1e12
    tokens_step = seq * batch  # per data-parallel rank per micro-batch
    dp = gpus // tp
    compute_s = flops_token * tokens_step / (peak * mfu * tp)  # a TP group shares a micro-batch
    # data-parallel traffic per micro-batch: ring all-reduce of 16-bit gradients (2 x 2 bytes),
    # ZeRO-3 adds the all-gather of weights in forward and backward (3 x 2 bytes in all)
    comm_s = 0.0
    if dp > 1:
        per_param = 6 if zero >= 3 else 4
        volume = trainable / tp * per_param * (dp - 1) / dp
        if zero >= 3 and method in ("lora", "qlora"):
            volume += (spec.params / tp) * 2 * 2 * (dp - 1) / dp  # gather the frozen base
        comm_s = volume / (_bus_gbps(gpu, gpus) * 1e9)
    step_s = max(compute_s, comm_s)
    tps = dp * tokens_step / step_s
    hours = tokens / tps * gpus / 3600 if tokens else None
    bound = "communication" if comm_s > compute_s else "compute"
    detail = (f"{flops_token / 1e9:.1f} GFLOP per token ({'8' if checkpointing == 'full' else '6'}"
              f"N + attention) at {mfu:.0%} MFU of {gpu.bf16_tflops:.0f} TFLOPS; {bound}-bound "
              f"(compute {compute_s:.2f} s vs traffic {comm_s:.2f} s per micro-batch over "
              f"{_bus_gbps(gpu, gpus):.0f} GB/s)")
    return TrainSpeed(tokens_per_s=tps, gpu_hours=hours, mfu=mfu, detail=detail)
