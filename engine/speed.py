"""Speed: decode and prefill tokens/s for serving, tokens/s and GPU-hours for training.

Roofline-style models with stated efficiencies (constants below, each with where it comes
from); validation/speed_references.toml measures them against published runs.
"""

from __future__ import annotations

from typing import NamedTuple

from engine import memory
from engine.architecture import EXPERT_ROLES, ModelSpec
from engine.catalog import GpuSpec
from engine.methods import MethodSpec
from engine.quant import get_quant, weight_bytes

# -- efficiencies ---------------------------------------------------------------------------
# Share of datasheet bandwidth a batch-1 decode step streams weights at. llama.cpp reaches ~80%
# on GDDR cards but only ~55% on HBM cards, whose bandwidth needs more parallel loads than a
# batch-1 matrix-vector product issues (fitted to llama-bench tg rows: 70B Q4_K_M runs at
# 76-82% on L40S/A6000/RTX 6000 Ada/2x4090 and 51-53% on A100/H100 PCIe). vLLM's kernels are
# assumed to do better on HBM (not validated: no batch-1 vLLM rows in the reference set).
BANDWIDTH_EFFICIENCY = {("llama.cpp", "gddr"): 0.82, ("llama.cpp", "hbm"): 0.55,
                        ("vllm", "gddr"): 0.80, ("vllm", "hbm"): 0.70,
                        ("transformers", "gddr"): 0.60, ("transformers", "hbm"): 0.45}
# Fixed time per layer per decode step (kernel launches, norms, attention bookkeeping) that does
# not shrink with bandwidth: the floor that keeps 8B Q4 near 130-145 tokens/s in llama.cpp on a
# 4090, an A100 and an H100 alike (llama-bench tg128, May 2024 builds).
LAYER_OVERHEAD_S = {"llama.cpp": 65e-6, "vllm": 20e-6, "transformers": 150e-6}
# Share of peak dense fp16/bf16 tensor throughput reached in prefill. llama.cpp's pp512 reaches
# 21-94% depending on the card (median ~37% over the reference rows); vLLM's large GEMMs ~55%.
PREFILL_MFU = {"llama.cpp": 0.35, "vllm": 0.55, "transformers": 0.45}
# Training model-FLOPs utilisation by card class, before communication: Llama 3 405B reached
# 38-43% on H100 (Llama 3 paper, sec. 3.3.4); Llama 2 pre-training implies ~40% on A100 (GPU-
# hours in the Llama 2 paper with 6ND); consumer/workstation PCIe cards run smaller, less tuned
# jobs (~35%).
TRAIN_MFU = {"datacenter": 0.40, "workstation": 0.35}
# Tokens per optimizer step: gradients are all-reduced once per step, so gradient accumulation
# spreads that traffic over the micro-batches (Llama 2/3 pre-trained at 4M tokens per step; a
# fine-tuning run of 128 sequences x 2k tokens is 256k).
GLOBAL_BATCH_TOKENS = {"pretrain": 4_000_000, "finetune": 262_144}
# Effective all-reduce bus bandwidth (GB/s, one direction) when a card has no NVLink: PCIe
# through the host; GeForce cards have peer-to-peer disabled, so traffic bounces via RAM.
PCIE_BUS_GBPS = {3: 8.0, 4: 12.0, 5: 24.0}
NVLINK_EFFICIENCY = 0.7  # of the one-direction NVLink bandwidth (nccl-tests bus bandwidth)
INTER_NODE_GBPS = 45.0  # 400 Gb/s InfiniBand/RoCE per GPU at ~90% (8 NICs per 8-GPU server)
# PCIe GPU servers (RTX 4090, L40S, A6000 boxes) ship with one or two 100 GbE ports for all their
# cards, not a 400 Gb NIC per GPU: about 11 GB/s of bus bandwidth between servers at ~90%.
INTER_NODE_PCIE_SERVER_GBPS = 11.0
HOST_LINK_GBPS = 20.0  # PCIe 4.0 x16 host<->GPU copies in practice
CPU_ADAM_GBPS = 40.0  # DeepSpeed CPUAdam on a 2-socket server: memory-bandwidth bound


class ServeSpeed(NamedTuple):
    decode_per_sequence: float
    decode_aggregate: float
    prefill: float
    engine: str
    detail: str


class TrainSpeed(NamedTuple):
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
                kv_bytes: int, tp: int, pp: int, engine: str | None = None) -> ServeSpeed:
    """Decode is bandwidth bound: each step streams the weights once for the whole batch plus
    every sequence's KV cache; prefill is compute bound."""
    eng = engine or engine_for(quant)
    efficiency = BANDWIDTH_EFFICIENCY[(eng, gpu.memory_kind)]
    bandwidth = gpu.bandwidth_gbps * 1e9 * efficiency
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
                                                  * PREFILL_MFU[eng])
    step = max(read_s, compute_s) + comm_s + spec.layers * LAYER_OVERHEAD_S[eng]
    per_seq = 1 / step
    flops_per_token = 2 * spec.active_params + attention_flops_per_token(spec, context // 2)
    prefill = _tensor_tflops(gpu, quant) * 1e12 * tp * PREFILL_MFU[eng] / flops_per_token
    detail = (f"decode: {(weights + kv) / 1e9:.2f} GB read per step over {tp * pp} GPU(s) at "
              f"{efficiency:.0%} of {gpu.bandwidth_gbps:.0f} GB/s + "
              f"{spec.layers} layers x {LAYER_OVERHEAD_S[eng] * 1e6:.0f} us ({eng}); prefill at "
              f"{PREFILL_MFU[eng]:.0%} of {_tensor_tflops(gpu, quant):.0f} TFLOPS")
    return ServeSpeed(decode_per_sequence=per_seq, decode_aggregate=per_seq * users,
                      prefill=prefill, engine=eng, detail=detail)


def train_flops_per_token(spec: ModelSpec, *, method: MethodSpec, checkpointing: str,
                          seq: int) -> float:
    """6N + 12 L H Q T per token (PaLM appendix B; N = active parameters for MoE), with an
    extra forward under full recomputation; LoRA skips the frozen weights' gradients (4N)."""
    n = spec.active_params
    forward = 2 * n + attention_flops_per_token(spec, seq) / 2  # causal mask: half the scores
    # backward is twice the forward; LoRA's frozen base needs only input gradients (one forward)
    per = 2 * forward if method.adapters else 3 * forward
    if checkpointing == "full":
        per += forward
    return per


def _mfu(gpu: GpuSpec, gpus: int) -> float:
    # GDDR boards are the consumer and workstation cards (memory_kind in engine/data/gpus.toml)
    base = TRAIN_MFU["workstation" if gpu.memory_kind == "gddr" else "datacenter"]
    if gpus > 8:
        base *= 0.95  # cross-server collectives and stragglers
    return base


def _bus_gbps(gpu: GpuSpec, gpus: int) -> float:
    if gpus > 8:
        return INTER_NODE_GBPS if gpu.has_nvlink else INTER_NODE_PCIE_SERVER_GBPS
    if gpu.has_nvlink:
        return gpu.nvlink_gbps / 2 * NVLINK_EFFICIENCY
    return PCIE_BUS_GBPS.get(gpu.pcie_gen, 12.0)


def train_speed(spec: ModelSpec, gpu: GpuSpec, *, gpus: int, method: MethodSpec, checkpointing: str,
                seq: int, batch: int, zero: int, tp: int, tokens: int | None,
                trainable: int, offload: str = "none", pp: int = 1) -> TrainSpeed:
    """Cluster tokens/s = GPUs x peak x MFU / FLOPs per token, slowed where gradient or shard
    traffic per micro-batch takes longer than the compute it overlaps with."""
    flops_token = train_flops_per_token(spec, method=method, checkpointing=checkpointing, seq=seq)
    mfu = _mfu(gpu, gpus)
    if method.quantized_base:
        mfu *= 0.75  # NF4 dequantization on every matmul (QLoRA runs ~25-40% slower than LoRA)
    peak = gpu.bf16_tflops * 1e12
    tokens_step = seq * batch  # per data-parallel rank per micro-batch
    dp = gpus // (tp * pp)
    # a TP x PP group shares each micro-batch
    compute_s = flops_token * tokens_step / (peak * mfu * tp * pp)
    # Data-parallel traffic: a ring all-reduce of 16-bit gradients moves 2 x 2 bytes per
    # parameter once per optimizer step, spread over the accumulated micro-batches; ZeRO-3 also
    # all-gathers the weights in forward and backward and reduce-scatters every micro-batch
    # (3 x 2 bytes, not amortized). The frozen LoRA base is gathered too under ZeRO-3.
    kind = "pretrain" if method.pretraining else "finetune"
    accumulation = max(1, round(GLOBAL_BATCH_TOKENS[kind] / (dp * tokens_step)))
    comm_s = 0.0
    if dp > 1:
        ring = (dp - 1) / dp
        if zero >= 3:
            volume = trainable / (tp * pp) * 6 * ring
            if method.adapters:
                volume += spec.params / (tp * pp) * 2 * 2 * ring
        else:
            volume = trainable / (tp * pp) * 4 * ring / accumulation
        comm_s = volume / (_bus_gbps(gpu, gpus) * 1e9)
    offload_s = 0.0
    if offload in ("optimizer", "all"):
        # ZeRO-Offload (Ren et al. 2021): every micro-batch's 16-bit gradients go down to host
        # memory as backward produces them (2 bytes/param); once per optimizer step the CPU runs
        # Adam over ~16 bytes/param of states and the updated 16-bit weights come back up
        shard = trainable / (tp * pp) / dp
        offload_s = (shard * 2 / (HOST_LINK_GBPS * 1e9)
                     + (shard * 2 / (HOST_LINK_GBPS * 1e9) + shard * 16 / (CPU_ADAM_GBPS * 1e9))
                     / accumulation)
    # 1F1B pipeline bubble: (pp - 1) idle slots per (accumulation + pp - 1) (Narayanan et al.
    # 2021); pipeline stages trade it for not gathering weights
    bubble = (pp - 1) / (accumulation + pp - 1)
    step_s = max(compute_s, comm_s) / (1 - bubble) + offload_s
    tps = dp * tokens_step / step_s
    hours = tokens / tps * gpus / 3600 if tokens else None
    bound = "communication" if comm_s > compute_s else "compute"
    detail = (f"{flops_token / 1e9:.1f} GFLOP per token ({'8' if checkpointing == 'full' else '6'}"
              f"N + attention) at {mfu:.0%} MFU of {gpu.bf16_tflops:.0f} TFLOPS; {bound}-bound "
              f"(compute {compute_s:.2f} s vs traffic {comm_s:.2f} s per micro-batch over "
              f"{_bus_gbps(gpu, gpus):.0f} GB/s)"
              + (f"; CPU offload adds {offload_s:.2f} s per micro-batch (gradients to host at "
                 f"{HOST_LINK_GBPS:.0f} GB/s, CPU Adam at {CPU_ADAM_GBPS:.0f} GB/s): "
                 f"{step_s / (step_s - offload_s):.2f}x the time" if offload_s else ""))
    return TrainSpeed(tokens_per_s=tps, gpu_hours=hours, mfu=mfu, detail=detail)
