"""Speed: decode and prefill tokens/s for serving, tokens/s and GPU-hours for training.

Roofline-style models with few stated constants, each named below with the published runs it
was read from; validation/speed_references.toml measures the whole against published runs of
other setups (docs/VALIDATION.md): rows none of them was read from are set = "check" there.

One idea carries prefill and training: matrix multiplies run at a fixed share of the card's
dense tensor peak, and the memory-bound work around them (norms, activations, casts, softmax,
optimizer) costs time per FLOP in proportion to the card's FLOPs per byte of bandwidth. A card
with much compute per byte (H100 PCIe, L40S) therefore reaches a smaller share of its peak
than one with little (A100, RTX 3090, H20): utilization = 1 / (1/e + FEED x peak/bandwidth).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import StrEnum
from functools import cache
from typing import NamedTuple

from engine import memory
from engine.architecture import EXPERT_ROLES, ModelSpec, tensors
from engine.catalog import GPUS_PER_SERVER, GpuSpec
from engine.formats import compute_tflops, weight_path
from engine.frameworks import Framework, framework_for
from engine.i18n import N_, _, counted
from engine.methods import MethodSpec
from engine.quant import get_quant, weight_bytes

# -- shared --------------------------------------------------------------------------------
# Seconds of memory-bound work per FLOP, per unit of the card's FLOPs-per-byte ratio (the
# FEED term above, bytes moved per FLOP). Fitted jointly with TRAIN_EFFICIENCY to two
# independent tables of single-server training throughput on the same models: MosaicML
# llm-foundry's MPT benchmarks (A100-80GB: 60-64% MFU without recomputation, H100-80GB:
# 40-46%, 7B-30B at 2k-8k) and torchtune's and xtuner's A100 rows (HFU 0.60-0.67); it also
# orders llama.cpp's prefill across eight cards (the H100 PCIe and the 300-350 W Ada cards
# reach the smallest share of their peak, the A100 and RTX 3090 the largest).
FEED_BYTES_PER_FLOP = 2.7e-3

# -- serving --------------------------------------------------------------------------------
# Share of datasheet bandwidth a batch-1 decode step streams weights at. llama.cpp reaches ~80%
# on GDDR cards but only ~55% on HBM cards, whose bandwidth needs more parallel loads than a
# batch-1 matrix-vector product issues (fitted to llama-bench tg rows: 70B Q4_K_M runs at
# 76-82% on L40S/A6000/RTX 6000 Ada/2x4090 and 51-53% on A100/H100 PCIe). vLLM-class engines
# (vLLM, SGLang, gpt-fast: CUDA graphs and tuned GEMV kernels) reach ~80% of an A100's 2.0
# TB/s (gpt-fast Llama 2 7B bf16: 105 tokens/s; vLLM 0.6.3 Qwen2.5-14B/32B bf16).
BANDWIDTH_EFFICIENCY = {("llama.cpp", "gddr"): 0.82, ("llama.cpp", "hbm"): 0.55,
                        ("vllm", "gddr"): 0.80, ("vllm", "hbm"): 0.80,
                        ("transformers", "gddr"): 0.65, ("transformers", "hbm"): 0.65}
# Weight-only quantized GEMV kernels dequantize in registers as they stream, and at batch 1 they
# reach a smaller share of bandwidth than 16-bit ones (vLLM-class engines; llama.cpp's
# efficiencies above were read from its quantized rows): AWQ/GPTQ/int4 ~0.7 (vLLM 0.6.3 Qwen2.5
# 7B-32B AWQ/GPTQ-Int4 on A100: 0.66-0.78; gpt-fast int4 Llama 2 7B/70B: 0.7), int8 ~0.8
# (vLLM GPTQ-Int8 Qwen2.5 7B-72B, gpt-fast int8 Llama 2/3.1: 0.75-0.9), FP8 ~0.9 (SGLang Qwen3
# 8B-32B FP8 vs BF16 on one H20: 1.8x for half the bytes).
# Keyed by the card's path for the weights (engine/formats.py): FP8 weight-only (Marlin W8A16 on
# Ampere) and W8A8 INT8 stream like int8 weight-only kernels.
STREAM_EFFICIENCY = {"float": 1.0, "fp8": 0.9, "bnb": 0.8, "w8": 0.8, "w4": 0.7, "gguf": 1.0}
# Host work per decode step outside the GPU graph (scheduler, sampler, detokenizer), paid in
# series with the step: 1.3-2.4 ms in vLLM 0.6.3 (Qwen2.5 0.5B-32B on A100, after the weights
# and per-layer time above); gpt-fast's compiled loop pays almost none.
STEP_OVERHEAD_S = {"llama.cpp": 0.0, "vllm": 0.75e-3, "transformers": 0.0}
# GPU time per layer per decode step that does not shrink with bandwidth (kernel launches and
# tails of the ~15 small kernels of a layer: norms, rope, attention, activations): 65 us keeps
# 8B Q4 near 130-145 tokens/s in llama.cpp on a 4090, an A100 and an H100 alike (llama-bench
# tg128, May 2024 builds); 45 us fits gpt-fast's dense A100 rows and vLLM 0.6.3's / SGLang
# 0.4.6's small Qwen models (0.5B-4B), where this floor dominates.
LAYER_OVERHEAD_S = {"llama.cpp": 65e-6, "vllm": 45e-6, "transformers": 20e-6}
# Hugging Face generate() runs eagerly: the host launches every kernel from Python, so a step
# takes at least layers x this, whatever the card (Qwen3 speed benchmark, transformers 4.51 on
# H20: 0.6B at 59 tokens/s = 0.6 ms per layer; 32B becomes bandwidth-bound at 26 tokens/s).
HOST_LAYER_S = {"transformers": 550e-6}
# A mixture-of-experts layer adds routing (router GEMM, top-k, sort/align tokens by expert) and
# two grouped expert GEMMs: ~25 us more per layer in fused-MoE engines (gpt-fast Mixtral int8 on
# one A100: 97.9 tokens/s; SGLang Qwen3-30B-A3B vs dense Qwen3-4B on the same H20). Hugging
# Face's MoE blocks loop over every expert in Python with a host sync each: ~85 us per expert
# (Qwen3-30B-A3B, 48 layers x 128 experts, 1.9 tokens/s in transformers 4.51).
MOE_LAYER_S = {"llama.cpp": 30e-6, "vllm": 25e-6, "transformers": 0.0}
HOST_EXPERT_S = {"transformers": 85e-6}
# Multi-head latent attention decoded with absorbed weights (DeepSeek-V2/V3, Kimi K2) runs about
# ten more small kernels per layer (latent projections and norms, two batched matmuls against
# the latent cache, rope on the split head), and block-FP8 checkpoints add an activation
# quantization kernel before every GEMM. Set so that DeepSeek-V3 FP8 at batch 1 with TP 8 on
# 8 x H200 lands near 28 tokens/s, between SGLang v0.4.1.post2's 30.3 (release note: CUDA graphs,
# tuned FP8 GEMMs; 8 GPUs) and ~26 reported in a vLLM issue; an SGLang user saw 13 on 8 x H200.
# Published batch-1 MoE runs of one setup differ ~2x: the answer states that range.
MLA_LAYER_S = {"llama.cpp": 460e-6, "vllm": 460e-6, "transformers": 460e-6}
MOE_BATCH1_RANGE = (0.5, 1.5)
# One small-message all-reduce (tensor parallel decode: two per layer): ~10 us over NVLink
# (gpt-fast Llama 2 7B at TP 2/4/8 on A100: 169/254/328 tokens/s), ~30 us over PCIe.
ALLREDUCE_S = {"nvlink": 10e-6, "pcie": 30e-6}
# One expert-parallel all-to-all (dispatch or combine) of a decode step's few tokens: DeepEP's
# low-latency kernels on H800 take ~77 us to dispatch 128 tokens a rank over RDMA at EP 8
# (deepseek-ai/DeepEP README); inside an NVLink server a few-token exchange costs ~2.5
# all-reduces; over PCIe, the host-bounced equivalent.
ALLTOALL_S = {"nvlink": 25e-6, "pcie": 75e-6, "rdma": 80e-6}
# Serving engines exchange a step's routed tokens with kernels that write straight into the
# peers' memory (DeepEP; TensorRT-LLM's and SGLang's MoE all-to-alls): DeepEP's normal kernels
# move 153-158 GB/s a GPU over an H800's NVLink, ~0.78 of its 200 GB/s one way
# (deepseek-ai/DeepEP README); across servers each GPU's own NIC (INTER_NODE_GBPS).
SERVE_ALLTOALL_NVLINK_SHARE = 0.78
# Rows of one tensor-core tile in the grouped GEMMs that multiply each expert's tokens: the
# CTA tile of CUTLASS's grouped GEMMs on Hopper (2 x wgmma m64) and of tcgen05's m128 on
# Blackwell, and vLLM's fused-MoE BLOCK_SIZE_M at large batches.
EXPERT_TILE_ROWS = 128
# Share of the FEED-corrected tensor peak that prefill reaches. llama.cpp's pp512 runs cuBLAS
# with FP16 accumulation (ggml-cuda's mul_mat_cublas: CUBLAS_COMPUTE_16F), which GeForce cards
# execute at twice their FP32-accumulate rate, on 512-token micro-batches: fitted to llama-bench
# pp512/pp1024 on eight cards (XiongjieDai's tables: 3090, 4090, A6000, 6000 Ada, L40S, A100
# SXM/PCIe, H100 PCIe). vLLM's 2k-token chunks of bf16 GEMMs and FlashAttention are taken at
# the training efficiency (same kernels; no published vLLM prefill row to check it yet).
PREFILL_EFFICIENCY = {"llama.cpp": 0.5, "vllm": 0.84, "transformers": 0.65}
# vLLM's prompts under maximum load (`vllm bench serve` with every request sent at once): the
# efficiency (as PREFILL_EFFICIENCY) of its prefill over minutes of chunked steps, read from one
# run, GPUStack's Qwen3-14B on one H100 with 100 prompts of 32,000 tokens (vLLM 0.11, defaults:
# 3.2 M prompt tokens in 386.8 s beside 9,855 decoded; row gpustack-vllm011-qwen3-14b-1xh100-
# 32k100, set "fit"). PREFILL_EFFICIENCY's 0.84 is the training kernels' share, which the
# TensorRT-LLM throughput rows agree with; the rest of GPUStack's vLLM rows are held out.
VLLM_LOAD_PREFILL_EFFICIENCY = 0.4
# A request's own path through vLLM's OpenAI server before its first token leaves: templating and
# tokenizing the chat, handing it to the engine core, scheduling it, detokenizing the token. Read
# from GPUStack's batch-1 run of Qwen3-8B on one H100 (vLLM 0.11, 233-token ShareGPT prompts:
# 59.0 ms to the first token, ~7 ms of it the prefill; row gpustack-vllm011-qwen3-8b-1xh100-
# sharegpt-c1-ttft, set "fit"); its runs at 2-8 users and the other sweeps are held out.
REQUEST_OVERHEAD_S = {"vllm": 0.052}
# llama.cpp builds before June 2024 (or built with GGML_CUDA_FORCE_CUBLAS: build=cublas)
# multiply quantized weights by dequantizing each matrix to fp16 for the micro-batch: 2 bytes
# written and read again per weight per 512-token micro-batch.
DEQUANT_BYTES = 4.0
# Builds since June 2024 (ggml-org/llama.cpp#7676 for the legacy quants, #7860 for the
# K-quants; the default since) multiply quantized weights without dequantizing them: MMQ
# kernels unpack the blocks into int8 tiles in shared memory, quantize the activations to
# q8_1 and issue int8 tensor-core MMAs. The unpacking and scale arithmetic around every MMA
# keep them at a small share of the card's dense int8 peak: 0.22, read from the RTX 4090
# rows of those two PRs (Llama 3 8B Q4_0 pp512 at micro-batch 512: 10,359 tokens/s; Q4_K_S
# pp2048: 9,279; validation/speed_references.toml, set "fit"). The llama.cpp CUDA scoreboard
# (discussions #15013, 2025 builds, Llama 2 7B Q4_0 pp512) has 13 cards from the RTX 3060 to
# the RTX 5090 at 0.17-0.27 of their int8 peaks (300 W boards lowest): held out, set "check".
MMQ_INT8_SHARE = 0.22
# MMQ issues mma.sync, the warp-level MMA of Ampere and the GeForce/RTX Blackwell boards. On
# Hopper and datacenter Blackwell the dense peak needs the asynchronous warpgroup MMA (wgmma,
# tcgen05) that cuBLAS and CUTLASS use; the synchronous instruction reaches about half of it
# (Luo et al., "Dissecting the NVIDIA Hopper Architecture through Microbenchmarking",
# arXiv 2501.12084). An assumption: no llama.cpp MMQ row on these cards to check it yet.
SYNC_MMA_SHARE = 0.5
LLAMACPP_BUILDS = ("mmq", "cublas")  # current builds (the default), builds before June 2024
PREFILL_UBATCH = {"llama.cpp": 512, "vllm": 2048, "transformers": 4096}
# The answer names a prompt's communication once it adds this share to the prefill's GEMMs.
PREFILL_COMM_SHOWN = 0.1

def _stack_names(stack: str) -> str:
    """'CANN: MindIE, vLLM-Ascend (no CUDA: ...)' -> 'CANN: MindIE, vLLM-Ascend'."""
    return stack.split(" (")[0] or _("the vendor's stack")


# -- training -------------------------------------------------------------------------------
# Share of the tensor peak that a training step's matrix multiplies reach (cuBLAS/CUTLASS bf16,
# FlashAttention), before the FEED term: with FEED this gives 0.62 hardware FLOPs utilization
# on an A100 (torchtune 3B with compile: 0.62-0.67; xtuner 7-8B at 8k on 8 A100s: 0.60-0.62;
# llm-foundry MPT-7B/13B: 0.60-0.64 MFU without recomputation), 0.50 on an H100 SXM
# (llm-foundry: 0.40-0.46 MFU without recomputation, 0.50-0.57 HFU with it) and 0.61 on a
# 4090 (torchtune Llama 3.1 8B full fine-tune: 0.62).
TRAIN_EFFICIENCY = 0.84
# Datacenter cards run their best dense bf16 matmul at 80-86% of the datasheet peak (Bekman,
# ml-engineering "Maximum Achievable Matmul FLOPS": A100 SXM 85.9%, GH200 83.0%, A100 PCIe
# 82.2%, H100 SXM 80.1%; the median is taken); TRAIN_EFFICIENCY holds for them. A card whose
# measured matmul reaches more of its datasheet (GeForce boards holding clocks above the rated
# boost: RTX 4090 164.8 of 165.2 TFLOPS, RTX 3060 25.5 of 25.5, RTX 4060 Ti 47.8 of 44.1; the RTX
# A4000 workstation card 62.8 of 76.7, as datacenter cards) trains that much faster or slower
# (sustained_clock_ratio; gpus.toml measured_matmul_tflops cites each measurement).
DATACENTER_MATMUL_SHARE = 0.826
# The FEED rule holds below the A100's 153 FLOPs per byte too, towards TRAIN_EFFICIENCY itself
# where bandwidth is plentiful: the H20 (148 TFLOPS over 4.0 TB/s, 37 FLOPs a byte) reaches
# ~0.8 of its peak (ms-swift Megatron TP 4 on Qwen3-14B, the "fit" row of
# validation/speed_references.toml; the rule gives 0.78, the A100's share 0.62 was 25% slow).
# Power-capped parts (H100 PCIe 350 W, H100/H200 NVL 400-600 W) enter through their datasheet
# peaks, rated at the lower clocks their power allows; no separate power term: across the rows
# here watts per FLOP and FLOPs per byte rank the cards alike (the H20 and A100 most watts and
# fewest FLOPs a byte, the H100s the reverse), so the rows cannot tell the two apart, and no
# published training run on a capped card was found.
# QLoRA dequantizes every NF4 matrix to bf16 in each pass over it (forward, recompute,
# backward): bitsandbytes' kernels move ~16 bytes of bandwidth-time per weight per pass
# (torchtune: QLoRA runs at 0.78x LoRA for 8B on a 4090 with 4k tokens per step, 0.98x for 3B
# on an A100 with 8k: the cost is per pass, so it fades with tokens per step).
QLORA_DEQUANT_BYTES = 16.0
# Tokens per optimizer step: gradients are all-reduced once per step, so gradient accumulation
# spreads that traffic over the micro-batches. Pre-training steps grow with the cluster: Llama 2
# and LLaMA-65B stepped at 4M tokens on ~2k GPUs, Llama 3 405B at 16M on 16K GPUs (~1k tokens
# per GPU); a fine-tuning run of 128 sequences x 2k tokens is 256k.
GLOBAL_BATCH_TOKENS = {"pretrain": 4_000_000, "finetune": 262_144}
PRETRAIN_TOKENS_PER_GPU = 1024
# A long run steps larger: published pre-training runs take 100k-1M optimizer steps (GPT-3 94k
# at 3.2M tokens, DeepSeek-V3 ~235k ramping to 63M (15,360 x 4,096), Llama 2 500k at 4M), so
# a run of T tokens steps at T / 500k tokens at least.
MAX_PRETRAIN_STEPS = 500_000


def global_batch_tokens(method: MethodSpec, gpus: int, tokens: float | None = None) -> int:
    """Tokens per optimizer step: fine-tuning's 256k; pre-training's 4M, 1k a GPU on large
    clusters, and the size that keeps a `tokens` run within MAX_PRETRAIN_STEPS."""
    if not method.pretraining:
        return GLOBAL_BATCH_TOKENS["finetune"]
    return max(GLOBAL_BATCH_TOKENS["pretrain"], PRETRAIN_TOKENS_PER_GPU * gpus,
               int((tokens or 0) // MAX_PRETRAIN_STEPS))
# Communication hides under this share of the compute it runs beside; the rest is exposed.
# ZeRO-3/FSDP prefetches each layer's weights under the previous layer's forward or backward
# and reduce-scatters under the backward, so its traffic hides under all of it; DDP/ZeRO-1/2
# buckets and Megatron's tensor-parallel all-reduces overlap only part of the step.
OVERLAP = {"sharded": 1.0, "other": 0.5}
# Sharded data parallelism (ZeRO-3, FSDP) gathers one unit's weights ahead of the unit that
# needs them, so a unit's gather hides under the previous unit's compute and its reduce-scatter
# under the next unit's backward: per decoder layer the exposed time is max(0, its traffic -
# its compute), plus the first layer's gather in each pass and the last reduce-scatter, which
# have no compute beside them. What is gathered ahead is the framework's: PyTorch FSDP
# prefetches the whole next unit (FSDP1 backward_prefetch=BACKWARD_PRE by default, FSDP2's
# implicit forward and backward prefetch of one FSDPModule: pytorch.org/docs FSDP; torchtitan
# wraps each TransformerBlock). DeepSpeed ZeRO-3 prefetches only stage3_prefetch_bucket_size
# parameters ahead in its trace (deepspeed.ai/docs/config-json; DeepSpeed
# partitioned_param_coordinator.fetch_sub_module), which Hugging Face's "auto" sets to
# 0.9 x hidden^2 (transformers integrations/deepspeed.py; LLaMA-Factory and ms-swift ship
# "auto") and FlagPerf's llama2_7b ds_config to 1e7: under a tenth of a 7-70B decoder layer,
# so the rest of each layer's gather waits in series; its gradient reduce-scatters run on
# their own stream (overlap_comm, true by default at stage 3) and hide like FSDP's.
DEEPSPEED_PREFETCH_SHARE_OF_HIDDEN_SQUARED = 0.9
# Megatron's interleaved 1F1B schedule splits each pipeline stage into this many model chunks,
# dividing the bubble (Narayanan et al. 2021; Llama 3 used it at PP 16).
PP_VIRTUAL_STAGES = 4
# Effective all-reduce bus bandwidth (GB/s, one direction) when a card has no NVLink: PCIe
# through the host; GeForce cards have peer-to-peer disabled, so traffic bounces via RAM.
PCIE_BUS_GBPS = {3: 8.0, 4: 12.0, 5: 24.0}
NVLINK_EFFICIENCY = 0.7  # of the one-direction NVLink bandwidth (nccl-tests bus bandwidth)
# One InfiniBand/RoCE NIC per GPU at ~90%: 200 Gb/s (HDR) beside PCIe 4 cards (DGX A100),
# 400 Gb/s (NDR) beside PCIe 5 cards (DGX H100; DeepSeek-V3's H800 nodes: 50 GB/s per GPU).
INTER_NODE_GBPS = {4: 22.5, 5: 45.0}
# NCCL runs one ring (channel) per NIC, each ring leaving the server through its own NIC, so a
# large all-reduce/all-gather across rail-optimized servers moves at all the server's NICs
# together, capped by the NVLink bus inside the server: ~24 GB/s bus bandwidth with one HDR NIC
# a server, "up to 160 GB/s, the NVLink intra-node bandwidth" with more (NVIDIA/nccl#412, an
# 8 x A800 server); 470 GB/s on 2 HGX H100 servers with 8 x 400G NICs (NVIDIA/nccl-tests#309).
NICS_PER_SERVER = 8
# PCIe GPU servers (RTX 4090, L40S, A6000 boxes) ship with one or two 100 GbE ports for all their
# cards, not an InfiniBand NIC per GPU: about 11 GB/s of bus bandwidth between servers at ~90%.
INTER_NODE_PCIE_SERVER_GBPS = 11.0
# MoE token routing in training (Megatron's alltoall dispatcher): each routed copy of a token's
# hidden state is written and read again around the grouped GEMMs (permute, un-permute and the
# weighted sum: ~4 passes over k x hidden x 2 bytes), at a memory-bound kernel's share of HBM
# bandwidth. The dispatch and combine then pass every copy through the dispatcher's own
# processing (its permutation buffers and the host sync for the split sizes, bound by HBM) and,
# in series, through the link: 1 / (1 / (MEGATRON_DISPATCH_HBM_SHARE x HBM) + 1 / link). Read
# from Megatron-Bridge's DGX-H100 MoE rows at EP 8 over NVLink (gpt-oss-120b BF16, Qwen3-30B-A3B
# FP8: the time beyond their FLOPs is 38-45 GB/s a GPU of dispatched copies; with NVLink's 315
# GB/s in series the dispatcher alone moves 43 GB/s, 1.28% of the H100's 3,350 GB/s of HBM;
# validation/speed_references.toml, set "fit"); across servers the NIC adds its own time
# (ms-swift's Qwen3-30B-A3B on 2 x 8 A800 at TP 2 x EP 8, held out). DeepEP's kernels reach
# 153-158 GB/s over an H800's NVLink.
MOE_PERMUTE_BYTES = 4.0
MOE_PERMUTE_EFFICIENCY = 0.6
MEGATRON_DISPATCH_HBM_SHARE = 0.0128
# DeepEP's normal (training) kernels reach the link: 153-158 GB/s over an H800's NVLink and
# 43-58 GB/s of RDMA a GPU across servers (deepseek-ai/DeepEP README), the figures
# _alltoall_gbps gives. DeepSeek-V3's DualPipe hides them under the other micro-batch's
# compute (its report: computation to communication about 1:1, fully overlapped); Megatron's
# and NeMo AutoModel's DeepEP runs overlap part (OVERLAP["other"]).
DEEPEP_EFFICIENCY = 1.0
# DeepSpeed ZeRO-3 fetches a parameter outside its prefetch trace synchronously: one
# all-gather launched from its Python hooks and waited on, ~0.5 ms per parameter whatever its
# size (deepspeedai/DeepSpeed#1069, 8 x A100 NVLink: 130 us pre-launch, 250 us launch, then a
# device sync). Hugging Face MoE layers call their experts in the order the router picks, which
# invalidates that trace every step (DeepSpeed#4808), so each expert's separate matrices are
# gathered this way in every pass; dense layers keep their trace and prefetch under compute.
ZERO3_FETCH_S = 0.5e-3
HOST_LINK_GBPS = 20.0  # PCIe 4.0 x16 host<->GPU copies in practice
CPU_ADAM_GBPS = 40.0  # DeepSpeed CPUAdam on a 2-socket server: memory-bandwidth bound
# Interruptions at scale: Llama 3 405B saw 419 unexpected interruptions in 54 days on 16,384
# H100s (2.0e-5 per GPU-hour) and kept >90% effective training time, i.e. ~0.3 h lost per
# interruption (restart plus work since the last checkpoint).
FAILURES_PER_GPU_HOUR = 2.0e-5
HOURS_LOST_PER_FAILURE = 0.3
# Runs that span servers reach a smaller share of the single-server utilization than the
# communication terms above explain (synchronization across hundreds of hosts, stragglers, data
# loading, checkpoints, slower fabrics than modeled): published multi-server runs keep 0.65-0.90
# of it (implied by their GPU-hours or tokens/s with the FLOPs above: LLaMA 7B-65B on 2048 A100
# 0.73-0.85, Llama 2 7B-70B 0.65-0.73, TinyLlama on 16 A100-40GB 0.90, xtuner on 32 A100
# 0.66-0.76, DeepSeek-V3 on 2048 H800 0.84); the median is taken.
MULTI_SERVER_EFFICIENCY = 0.76


# What a plan's training speed assumes of its MoE layers, said in its detail.
MOE_FRAMEWORK_NAMES = {
    "transformers": N_("Hugging Face Transformers (a loop over the experts, one host launch each)"),
    "megatron": N_("grouped GEMM with an alltoall token dispatcher (NCCL all-to-all, in series)"),
    "deepep": N_("grouped GEMM with DeepEP's token dispatcher (partly overlapped)"),
    "dualpipe": N_("DeepSeek-V3's recipe (FP8, DualPipe, DeepEP: all-to-all under compute)"),
}


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


# -- cards ----------------------------------------------------------------------------------


def fp16_accumulate_halved(gpu: GpuSpec) -> bool:
    """GeForce boards run FP16/BF16 tensor math with FP32 accumulation at half the FP16-
    accumulate rate (the catalog records the FP32-accumulate figure); their datasheets show it
    as INT8 at four times that figure instead of the usual two (Ada and GA102 whitepapers)."""
    return bool(gpu.int8_tops) and gpu.int8_tops >= 3.9 * gpu.bf16_tflops


def tensor_tflops(gpu: GpuSpec, quant: str, engine: str = "vllm") -> float:
    """Dense tensor peak the engine's GEMMs run at: the compute format of the card's path for
    the weights (engine/formats.py: FP8 GEMMs for FP8 checkpoints on cards with FP8 tensor
    cores, bf16 where they run weight-only); llama.cpp's cuBLAS calls accumulate in FP16, at
    twice the catalog's FP32-accumulate figure on GeForce."""
    path = weight_path(gpu, quant)
    if path.compute == "bf16" and engine == "llama.cpp" and fp16_accumulate_halved(gpu):
        return 2 * gpu.fp16_tflops
    return compute_tflops(gpu, path)


def utilization(gpu: GpuSpec, efficiency: float, peak_tflops: float | None = None) -> float:
    """Share of `peak_tflops` (default: the bf16 peak) a compute-bound pass reaches."""
    peak = peak_tflops or gpu.bf16_tflops
    flops_per_byte = peak * 1e12 / (gpu.bandwidth_gbps * 1e9)
    return 1 / (1 / efficiency + FEED_BYTES_PER_FLOP * flops_per_byte)


def sustained_clock_ratio(gpu: GpuSpec) -> float:
    """The card's matmul rate against its datasheet peak, over the share the datacenter cards
    that TRAIN_EFFICIENCY was read on measure (DATACENTER_MATMUL_SHARE): 1 where no measurement
    is recorded (gpus.toml measured_matmul_tflops)."""
    if not gpu.measured_matmul_tflops:
        return 1.0
    return gpu.measured_matmul_tflops / gpu.bf16_tflops / DATACENTER_MATMUL_SHARE


def train_utilization(gpu: GpuSpec, peak_tflops: float) -> float:
    """Share of `peak_tflops` a training step reaches: the FEED rule at the card's FLOPs per
    byte of bandwidth (below TRAIN_EFFICIENCY on every card; the less compute per byte, the
    closer to it), at the clock the card sustains (sustained_clock_ratio)."""
    clock = sustained_clock_ratio(gpu)
    flops_per_byte = peak_tflops * clock * 1e3 / gpu.bandwidth_gbps
    return clock / (1 / TRAIN_EFFICIENCY + FEED_BYTES_PER_FLOP * flops_per_byte)


def vendor_stack(gpu: GpuSpec) -> str | None:
    """The serving stack of a card without CUDA (gpus.toml serving_stack), else None."""
    return gpu.serving_stack or None


# -- model arithmetic -----------------------------------------------------------------------


@cache
def matmul_params(spec: ModelSpec) -> int:
    """Weights one token multiplies by: active parameters less the embedding table (a row
    lookup), plus the output head when it is tied to that table (still a matmul)."""
    total = 0
    for t in tensors(spec):
        if t.role == "token_embd":
            continue
        if t.role.removesuffix("_bias") in EXPERT_ROLES:
            total += t.elements * spec.active_experts // spec.experts
        else:
            total += t.elements
    if spec.tied_embeddings:
        total += spec.vocab * spec.hidden
    return total


def _head_params(spec: ModelSpec) -> int:
    return spec.vocab * spec.hidden


def attention_flops_per_token(spec: ModelSpec, context: int) -> float:
    # QK^T and AV over the context: 2 x 2 x layers x context x (heads x head_dim) per token,
    # (PaLM appendix B counts 12 L H Q T for training = 3 x this forward term); sliding-window
    # layers attend at most their window, linear-attention layers keep no per-token scores.
    windowed = spec.sliding_layers if spec.sliding_window else 0
    full = spec.attention_layers - windowed
    span = full * context + windowed * min(context, spec.sliding_window or context)
    return 4 * span * spec.q_dim


def decode_attention_flops_per_token(spec: ModelSpec, context: int) -> float:
    """Attention FLOPs of one decoded token. Multi-head latent attention decodes with the
    up-projections absorbed (DeepSeek-V2 section 2.1.2; FlashMLA, TensorRT-LLM, SGLang): every
    head scores against the (kv_lora_rank + rope)-wide latent and sums the kv_lora_rank-wide
    latent values, 2 x heads x (2 x rank + rope) FLOPs per cached token a layer, ~2.8x the
    decompressed form's that prefill runs (DeepSeek-V3: 576 + 512 wide, not 192 + 128)."""
    if spec.attention != "mla" or not spec.kv_lora_rank:
        return attention_flops_per_token(spec, context)
    span = spec.attention_layers * context
    return 2 * span * spec.heads * (2 * spec.kv_lora_rank + spec.qk_rope_head_dim)


def _active_weight_split(spec: ModelSpec, quant: str, users: int) -> tuple[float, float]:
    """Bytes a decode step reads: (dense weights, read once; the experts the batch touches)."""
    size = weight_bytes(spec, quant)
    total = float(size.total_bytes)
    total -= size.by_role.get("token_embd", 0)  # a row lookup, not a matmul
    if spec.tied_embeddings:
        total += size.by_role.get("token_embd", 0)  # ... unless it is the output head too
    if not spec.is_moe:
        return total, 0.0
    expert_bytes = sum(size.by_role.get(r, 0) for r in EXPERT_ROLES)
    # Expected distinct experts a batch of `users` tokens routes to, top-k of E uniformly:
    # E * (1 - (1 - k/E)^users).
    k, e = spec.active_experts, spec.experts
    touched = e * (1 - (1 - k / e) ** users)
    return total - expert_bytes, expert_bytes * touched / e


# -- serving --------------------------------------------------------------------------------


def _serving_engine(gpu: GpuSpec, engine: str) -> str:
    # Cards without CUDA run their vendor's stack (MindIE / vLLM-Ascend on Ascend, ROCm builds
    # of vLLM and SGLang on Instinct): sized with the vLLM-class efficiencies from the card's
    # datasheet, as no published runs are there to fit.
    return "vllm" if gpu.vendor == "huawei" else engine


def _serve_alltoall_gbps(gpu: GpuSpec, ranks: int) -> float:
    """Per-GPU bandwidth of a serving engine's expert-parallel token exchange (GB/s)."""
    if ranks <= GPUS_PER_SERVER and gpu.has_nvlink:
        return gpu.nvlink_gbps / 2 * SERVE_ALLTOALL_NVLINK_SHARE
    return _alltoall_gbps(gpu, ranks)


def _link(gpu: GpuSpec, gpus: int) -> str:
    if gpus > GPUS_PER_SERVER:
        return "rdma"
    return "nvlink" if gpu.has_nvlink else "pcie"


def decode_step_s(spec: ModelSpec, gpu: GpuSpec, *, quant: str, context: int, users: int,
                  kv_bytes: int, tp: int, engine: str, ep: int = 1,
                  dp_attn: int = 1, prefill_tokens: float = 0.0,
                  prefill_rate: float | None = None) -> tuple[float, dict[str, float]]:
    """Seconds per decode step and its parts, kernels that run one after another: the GEMMs
    (weight reads or their compute, with the prompt chunks beside the decodes), attention (KV
    reads or its compute), MoE token permutes, fixed per-layer GPU time, MoE and MLA kernels,
    tensor-parallel all-reduces and expert-parallel all-to-alls (latency plus the rows' bytes);
    eager engines wait on the host when it launches slower than the GPU runs.
    `users` are one replica's; with attention data parallel (dp_attn groups of tp GPUs) each
    group reads its own copy of the dense weights and its own users' KV cache, and every GPU
    of the replica its share of the experts the whole batch touches."""
    efficiency = BANDWIDTH_EFFICIENCY[(engine, gpu.memory_kind)]
    if engine != "llama.cpp":
        efficiency *= STREAM_EFFICIENCY[weight_path(gpu, quant).stream]
    bandwidth = gpu.bandwidth_gbps * 1e9 * efficiency
    dense, experts = _active_weight_split(spec, quant, users)
    weights = dense + experts
    group_users = -(-users // dp_attn)
    kv = memory.kv_cache(spec, context=context, users=group_users, kv_bytes=kv_bytes, tp=1)
    # MLA's latent cache is not split by TP: every rank of the group reads all of it
    kv_read = kv if spec.attention == "mla" else kv / tp
    # TP splits each layer's bytes across GPUs read in parallel; a layer split's stages read
    # their layers one after another, so it adds capacity but no speed for one token.
    weights_s = (dense / tp + experts / (tp * dp_attn)) / bandwidth
    kv_s = kv_read / bandwidth
    # each new token multiplies by the active weights (the GEMMs, at the tensor peak of the
    # weights' compute format) ...
    gemm = 2 * spec.active_params * users / (
        tensor_tflops(gpu, quant, engine) * 1e12 * tp * dp_attn
        * utilization(gpu, PREFILL_EFFICIENCY[engine]))
    # ... and attends over its context in its own kernels (FlashAttention/FlashMLA in bf16),
    # which read the whole KV cache of every sequence each step: at large batches and long
    # contexts a large share of the step (MLA's 128 heads against the latent cache at 32k)
    attention = decode_attention_flops_per_token(spec, context) * users / (
        gpu.bf16_tflops * 1e12 * tp * dp_attn * utilization(gpu, PREFILL_EFFICIENCY[engine]))
    # Continuous batching with chunked prefill (vLLM, SGLang, TensorRT-LLM): the prompts of
    # arriving requests ride in the same forward passes as the decodes, sharing the weight
    # reads but adding their compute to every step.
    chunk = 0.0
    if prefill_tokens > 0:
        rate = prefill_rate or prefill_tokens_per_s(spec, gpu, quant=quant, context=context,
                                                    tp=tp, engine=engine)[0]
        chunk = prefill_tokens / (rate * dp_attn)
    gemm += chunk
    # The routed experts multiply in their own grouped-GEMM kernels, each expert's few rows
    # (tokens x k / experts a step) against its whole weight: they are bound by their own
    # roofline, their weight reads never hidden under the attention projections' compute (or
    # the reverse). Their share of the step's matmul FLOPs is their share of the active weights.
    expert_share = (memory.routed_expert_params(spec) * spec.active_experts / spec.experts
                    / spec.active_params) if spec.is_moe else 0.0
    dense_weights_s = dense / tp / bandwidth
    experts_weights_s = weights_s - dense_weights_s
    padding = expert_tile_padding(spec, users + prefill_tokens)
    matmul_s = split_matmul_s(dense_weights_s, experts_weights_s, gemm, expert_share, padding)
    layers = spec.layers * LAYER_OVERHEAD_S[engine]
    moe = spec.moe_layers * MOE_LAYER_S[engine]
    mla = spec.layers * MLA_LAYER_S[engine] if spec.attention == "mla" else 0.0
    comm = 0.0
    link = "nvlink" if gpu.has_nvlink else "pcie"
    # rows through one TP group's GEMMs this step: its decodes and the prompt tokens beside them
    rows = (users + prefill_tokens) / dp_attn
    allreduce_s = ALLREDUCE_S[link] + rows * allreduce_row_s(spec, gpu, tp)
    routing = 0.0
    if spec.is_moe:
        # every routed copy of a row's hidden state is permuted to its expert and back, and the
        # weighted sum read again (MOE_PERMUTE_BYTES passes, at a memory-bound kernel's share
        # of bandwidth): k copies a row, each GPU of an expert-parallel group its experts' share
        ranks = tp * dp_attn if ep > 1 else 1
        copies = rows * dp_attn / ranks * routed_copy_bytes(spec)
        routing = copies * MOE_PERMUTE_BYTES / (gpu.bandwidth_gbps * 1e9 * MOE_PERMUTE_EFFICIENCY)
    if ep > 1:
        # attention (and dense MLP) outputs all-reduced inside the TP group; each MoE layer
        # dispatches tokens to their experts' ranks and combines them back: two all-to-alls,
        # each a fixed latency plus the copies that leave the GPU
        ranks = tp * dp_attn
        comm = allreduces_per_pass(spec, tp, ep) * allreduce_s
        comm += 2 * spec.moe_layers * ALLTOALL_S[_link(gpu, ranks)]
        if gathers_rows(gpu, dp_attn):
            comm += rows * dp_attn * gathered_row_s(spec, gpu, tp=tp, dp_attn=dp_attn)
        else:
            comm += copies * exchange_byte_s(gpu, ranks)
    elif tp > 1:
        comm = allreduces_per_pass(spec, tp, ep) * allreduce_s
    # A step runs its GEMMs and its attention one after the other, each bound by its own
    # roofline: the weight reads hide under the GEMMs' compute (or the reverse), the KV reads
    # under attention's, never one under the other. (At batch 1 both are bound by their reads,
    # and the sum is the step's bytes over the bandwidth.)
    device = (matmul_s + max(kv_s, attention) + routing + layers + moe + mla + comm
              + STEP_OVERHEAD_S[engine])
    host = (spec.layers * HOST_LAYER_S.get(engine, 0.0)
            + spec.moe_layers * spec.experts * HOST_EXPERT_S.get(engine, 0.0))
    parts = {"read": weights_s + kv_s, "compute": gemm + attention, "weights": weights_s,
             "gemm": gemm, "kv": kv_s, "attention": attention, "routing": routing,
             "layers": layers, "moe": moe,
             "mla": mla, "comm": comm, "host": host, "bytes": weights + kv,
             "efficiency": efficiency, "prefill": chunk, "device": device,
             "matmul": matmul_s, "dense_weights": dense_weights_s,
             "experts_weights": experts_weights_s, "expert_share": expert_share,
             "padding": padding}
    return max(device, host), parts


def allreduces_per_pass(spec: ModelSpec, tp: int, ep: int) -> int:
    """Tensor-parallel all-reduces in one forward pass: two a layer (attention and MLP outputs);
    with expert parallelism the MoE layers' outputs come back by the all-to-all instead, so the
    attention of every layer and the dense MLPs only."""
    if tp <= 1:
        return 0
    if ep > 1:
        return spec.layers + (spec.layers - spec.moe_layers)
    return 2 * spec.layers


def allreduce_row_s(spec: ModelSpec, gpu: GpuSpec, tp: int) -> float:
    """Seconds one row's hidden state adds to a ring all-reduce over `tp` GPUs inside a server:
    2(t-1)/t of its bf16 values leave each GPU."""
    return spec.hidden * 2 * 2 * (tp - 1) / tp / (_intra_gbps(gpu) * 1e9)


def routed_copy_bytes(spec: ModelSpec) -> float:
    """Bytes of one row's routed copies in a forward pass: its hidden state (bf16) to each of
    its k experts at every MoE layer."""
    return spec.active_experts * spec.moe_layers * spec.hidden * 2


def exchange_byte_s(gpu: GpuSpec, ranks: int) -> float:
    """Seconds per byte of routed copies a GPU dispatches and combines back over an
    expert-parallel group of `ranks` GPUs: (ranks-1)/ranks of them leave it, each way."""
    return 2 * (ranks - 1) / ranks / (_serve_alltoall_gbps(gpu, ranks) * 1e9)


def gathers_rows(gpu: GpuSpec, dp_attn: int) -> bool:
    """Whether attention groups exchange their rows for the experts by all-gather and
    reduce-scatter rather than by DeepEP's all-to-all. DeepEP needs Hopper's instructions and
    NVLink peer access between every pair of a server's GPUs, and RDMA between servers
    (deepseek-ai/DeepEP README: 'Use another MoE all-to-all backend when the participating GPUs
    do not form a full-P2P domain'); elsewhere vLLM's default backend, allgather_reducescatter
    ('works with any EP+DP configuration', docs.vllm.ai expert parallel deployment), gathers
    every attention group's rows onto every GPU of the DP group and sums them back."""
    return dp_attn > 1 and not deepep_runs(gpu)


def gathered_row_s(spec: ModelSpec, gpu: GpuSpec, *, tp: int, dp_attn: int) -> float:
    """Seconds one row adds to a pass's expert exchange by all-gather and reduce-scatter: at
    every MoE layer its hidden state reaches the GPUs of the other dp_attn - 1 groups and its
    partial sums come back, (dp-1)/dp of the rows through each GPU's link each way. Every GPU
    of a TP group takes part in its own DP group's collective (vLLM gathers over the DP group:
    without sequence parallelism the TP ranks hold the same rows), so across servers a PCIe
    server's port carries its cards' copies together."""
    ranks = tp * dp_attn
    return (2 * spec.moe_layers * spec.hidden * 2 * (dp_attn - 1) / dp_attn
            / (_alltoall_gbps(gpu, ranks) * 1e9))


def prefill_comm_s_per_token(spec: ModelSpec, gpu: GpuSpec, *, tp: int, engine: str,
                             ep: int = 1, dp_attn: int = 1) -> float:
    """Seconds of communication per prompt token when one prompt is prefilled on its own, at
    the link rates decode_step_s charges a step's rows: every tensor-parallel all-reduce of the
    token's hidden state and, with expert parallelism, each MoE layer's dispatch and combine of
    its k routed copies. The prompt sits in one attention group of `tp` GPUs, so those GPUs
    send all of its copies (across servers of PCIe cards, through the one Ethernet port the
    server's cards share). Each chunk of PREFILL_UBATCH tokens also pays the collectives'
    fixed latencies. vLLM runs the collectives between the GEMMs, not under them."""
    link = "nvlink" if gpu.has_nvlink else "pcie"
    allreduces = allreduces_per_pass(spec, tp, ep)
    per_token = allreduces * allreduce_row_s(spec, gpu, tp)
    latency = allreduces * ALLREDUCE_S[link]
    if ep > 1 and spec.is_moe:
        ranks = tp * dp_attn
        if gathers_rows(gpu, dp_attn):
            per_token += gathered_row_s(spec, gpu, tp=tp, dp_attn=dp_attn)
        else:
            per_token += routed_copy_bytes(spec) / tp * exchange_byte_s(gpu, ranks)
        latency += 2 * spec.moe_layers * ALLTOALL_S[_link(gpu, ranks)]
    return per_token + latency / PREFILL_UBATCH[engine]


def expert_tile_padding(spec: ModelSpec, rows: float) -> float:
    """Compute a step's grouped expert GEMMs spend per useful row when `rows` tokens are routed
    (top-k of the experts, uniformly): each touched expert multiplies its m rows in row tiles,
    the last one half empty on average; kernels size the tile to the rows up to
    EXPERT_TILE_ROWS (vLLM's fused-MoE BLOCK_SIZE_M 16-128, CUTLASS's grouped tiles), so the
    waste is m/2 for m up to a tile and a half tile beyond it."""
    if rows <= 0 or not spec.is_moe:
        return 1.0
    k, e = spec.active_experts, spec.experts
    touched = e * (1 - (1 - k / e) ** rows)
    m = rows * k / touched
    return 1 + min(m, EXPERT_TILE_ROWS) / (2 * m)


def split_matmul_s(dense_weights_s: float, experts_weights_s: float, gemm_s: float,
                   expert_share: float, padding: float = 1.0) -> float:
    """A step's matmul time: the dense GEMMs and the routed experts' grouped GEMMs each at
    their own roofline (weight reads or compute, whichever is longer), one after the other; the
    experts' compute counts their tiles' empty rows (expert_tile_padding)."""
    return (max(dense_weights_s, gemm_s * (1 - expert_share))
            + max(experts_weights_s, gemm_s * expert_share * padding))


def int8_tensor_tops(gpu: GpuSpec) -> float:
    """Dense int8 tensor peak: the datasheet's, else the FP8 rate (the same units on Ada,
    Hopper and Blackwell), else twice the 16-bit rate (every NVIDIA part since Turing). Before
    Turing there is no int8 tensor path: Pascal multiplies int8 by dp4a, four products per fp32
    lane (P40: 4 x 11.76 = 47 TOPS, its datasheet's INT8), and Volta's int8 weights run as its
    fp16 tensor GEMMs."""
    if gpu.half_dtype == "fp32":
        return 4 * gpu.bf16_tflops  # bf16_tflops holds the fp32 rate there (gpus.toml)
    if gpu.architecture == "volta":
        return gpu.fp16_tflops
    return gpu.int8_tops or gpu.fp8_tflops or 2 * gpu.fp16_tflops


def warpgroup_mma_peak(gpu: GpuSpec) -> bool:
    """Cards whose dense tensor peak needs warpgroup MMAs (wgmma, tcgen05): Hopper and the
    SXM Blackwell parts (B200, B300); the RTX/PRO Blackwell boards run mma.sync at full rate."""
    return gpu.architecture == "hopper" or (gpu.architecture == "blackwell"
                                            and gpu.form_factor == "sxm")


def mmq_prefill(quant: str, engine: str, build: str | None) -> bool:
    """Whether llama.cpp multiplies the prompt on int8 tensor cores (MMQ, builds since June
    2024) rather than dequantizing to fp16 for cuBLAS: quantized GGUF weights, current build."""
    return (engine == "llama.cpp" and get_quant(quant).family == "gguf"
            and (build or LLAMACPP_BUILDS[0]) == "mmq")


def prefill_tokens_per_s(spec: ModelSpec, gpu: GpuSpec, *, quant: str, context: int, tp: int,
                         engine: str, build: str | None = None,
                         efficiency: float | None = None) -> tuple[float, float]:
    """Prompt tokens/s and the utilization of the tensor peak it assumes (the dense int8 peak
    for llama.cpp's MMQ kernels, else the weights' compute format's); `efficiency` replaces
    the engine's PREFILL_EFFICIENCY (VLLM_LOAD_PREFILL_EFFICIENCY under load)."""
    n = matmul_params(spec) - _head_params(spec)  # logits only for the last prompt token
    attention = attention_flops_per_token(spec, context // 2) / 2  # causal: half the scores
    # attention multiplies 16-bit Q, K and V (FlashAttention kernels), whatever the weights
    peak = tensor_tflops(gpu, quant, engine)
    u = utilization(gpu, efficiency or PREFILL_EFFICIENCY[engine], peak)
    if mmq_prefill(quant, engine, build):
        mmq_u = MMQ_INT8_SHARE * (SYNC_MMA_SHARE if warpgroup_mma_peak(gpu) else 1.0)
        per_token = (2 * n / (int8_tensor_tops(gpu) * 1e12 * mmq_u)
                     + attention / (peak * 1e12 * u))
        return tp / per_token, mmq_u
    per_token = (2 * n + attention) / (peak * 1e12 * u)
    if engine == "llama.cpp" and get_quant(quant).family == "gguf":
        per_token += n * DEQUANT_BYTES / PREFILL_UBATCH[engine] / (gpu.bandwidth_gbps * 1e9)
    return tp / per_token, u


def interleaved_prompt_tokens(users: int, prompt: int, output: int) -> tuple[float, float]:
    """Prompt tokens each decode step carries in steady state under continuous batching: every
    request brings `prompt` tokens for the `output` it generates, so N users add N x P / O prompt
    tokens a step. (What slows one user's decoding: the other N-1 users' prompts; what bounds
    the total throughput: all N.) Nothing without an answer length or with one user."""
    if users <= 1 or output <= 0:
        return 0.0, 0.0
    return (users - 1) * prompt / output, users * prompt / output


def chunked_step_s(step: Callable[[float], float], per_step: float, chunk: float) -> float:
    """Mean seconds per step of vLLM's scheduler when the waiting prompts bring `per_step`
    prompt tokens a step on average and it takes each in whole chunks of `chunk` tokens (its
    max_num_batched_tokens; a shorter prompt whole): where they are fewer than one chunk, that
    share of the steps carries a chunk and the steps between decode alone, their weight reads
    hidden under no prompt's compute; where they are more, every step carries them. `step`
    gives one step's seconds with that many prompt tokens beside the decodes."""
    if chunk <= 0 or per_step >= chunk:
        return step(per_step)
    share = per_step / chunk
    return share * step(chunk) + (1 - share) * step(0.0)


def full_load_step_s(spec: ModelSpec, gpu: GpuSpec, *, quant: str, context: int, users: int,
                     kv_bytes: int, tp: int, engine: str, ep: int, dp_attn: int, prompt: int,
                     output: int, budget: int) -> float:
    """Mean seconds per step of vLLM's scheduler under maximum load: `users` sequences (one
    replica's) decode while the requests that replace finished ones bring users x prompt /
    output prompt tokens a step on average, each attention group's prompts in chunks of up to
    `budget` tokens (chunked_step_s) at vLLM's prefill rate under load
    (VLLM_LOAD_PREFILL_EFFICIENCY)."""
    eng = _serving_engine(gpu, engine)
    rate, _u = prefill_tokens_per_s(spec, gpu, quant=quant, context=context, tp=tp, engine=eng,
                                    efficiency=VLLM_LOAD_PREFILL_EFFICIENCY)

    def step(prefill_tokens: float) -> float:
        return decode_step_s(spec, gpu, quant=quant, context=context, users=users,
                             kv_bytes=kv_bytes, tp=tp, engine=eng, ep=ep, dp_attn=dp_attn,
                             prefill_tokens=prefill_tokens, prefill_rate=rate)[0]

    per_step = users * prompt / output if output > 0 else 0.0
    return chunked_step_s(step, per_step, min(prompt, budget) * dp_attn)


class LoadedServing(NamedTuple):
    step_s: float  # one user's mean seconds per output token
    first_token_s: float  # seconds from a prompt's arrival to its first token
    chunks: int  # steps its prompt takes


def vllm_loaded_serving(spec: ModelSpec, gpu: GpuSpec, *, quant: str, context: int, users: int,
                        kv_bytes: int, tp: int, engine: str, ep: int, dp_attn: int, prompt: int,
                        output: int, own_rate: float) -> LoadedServing:
    """One user's decode and time to the first token among `users` (one replica's) under vLLM's
    scheduler: the other users' prompts, (users - 1) x prompt / output tokens a step, come in
    whole chunks of max_num_batched_tokens (chunked_step_s) at vLLM's prefill rate under load,
    as full_load_step_s takes them; a user's own prompt takes ceil(prompt / budget) steps,
    each a chunk at `own_rate` (a lone prompt's GEMM rate, so that one more user adds its
    decodes to the lone prompt's time rather than a second rate) beside the other users'
    decodes, and its first token comes at the end of the last, after the rest of the step in
    progress when it arrived."""
    eng = _serving_engine(gpu, engine)
    rate, _u = prefill_tokens_per_s(spec, gpu, quant=quant, context=context, tp=tp, engine=eng,
                                    efficiency=VLLM_LOAD_PREFILL_EFFICIENCY)
    budget = memory.vllm_batch_defaults(gpu.name, gpu.memory_bytes).tokens

    def step(prefill_tokens: float, decodes: int = users, at: float = rate) -> float:
        return decode_step_s(spec, gpu, quant=quant, context=context, users=decodes,
                             kv_bytes=kv_bytes, tp=tp, engine=eng, ep=ep, dp_attn=dp_attn,
                             prefill_tokens=prefill_tokens, prefill_rate=at)[0]

    others = (users - 1) * prompt / output if output > 0 else 0.0
    chunk = min(prompt, budget) * dp_attn
    per_token = chunked_step_s(step, others, chunk)
    # a prompt arrives during a step in progress and waits out the rest of it: the mean
    # residual of a renewal process, E[S^2] / 2E[S] (steps carrying a chunk are the long ones)
    share = min(1.0, others / chunk) if chunk > 0 else 0.0
    squares = (share * step(chunk) ** 2 + (1 - share) * step(0.0) ** 2 if share < 1
               else step(others) ** 2)
    wait = squares / (2 * per_token)
    # the prompt's own chunks: one attention group's, the others' groups decoding beside it
    whole, rest = divmod(max(1, prompt), budget)
    chunks = [budget] * whole + ([rest] if rest else [])
    first = wait + sum(step(c * dp_attn, users - 1, own_rate) for c in chunks)
    return LoadedServing(per_token, first, len(chunks))


def serve_speed(spec: ModelSpec, gpu: GpuSpec, *, quant: str, context: int, users: int,
                kv_bytes: int, tp: int, pp: int, engine: str | None = None, ep: int = 1,
                dp_attn: int = 1, prompt: int = 0, output: int = 0,
                build: str | None = None, scheduler: str = "vllm") -> ServeSpeed:
    """Decode is bandwidth bound (plus fixed per-layer costs that dominate small and MoE models
    at batch 1); prefill is compute bound. Several users on vLLM's scheduler take the prompts in
    its whole chunks (vllm_loaded_serving); elsewhere (scheduler="trtllm", llama.cpp,
    transformers) the other users' prompts are spread over the decode steps
    (interleaved_prompt_tokens)."""
    asked = engine or engine_for(quant)
    eng = _serving_engine(gpu, asked)
    # several users on vLLM: its scheduler's whole-prompt chunks (vllm_loaded_serving)
    prefill, u = prefill_tokens_per_s(spec, gpu, quant=quant, context=context, tp=tp, engine=eng,
                                      build=build)
    loaded = None
    if eng == "vllm" and scheduler == "vllm" and users > 1 and prompt > 0:
        loaded = vllm_loaded_serving(spec, gpu, quant=quant, context=context, users=users,
                                     kv_bytes=kv_bytes, tp=tp, engine=eng, ep=ep,
                                     dp_attn=dp_attn, prompt=prompt, output=output,
                                     own_rate=prefill)
    others, everyone = interleaved_prompt_tokens(users, prompt, output) if not loaded else (0, 0)
    step, p = decode_step_s(spec, gpu, quant=quant, context=context, users=users,
                            kv_bytes=kv_bytes, tp=tp, engine=eng, ep=ep, dp_attn=dp_attn,
                            prefill_tokens=others, prefill_rate=prefill)
    per_seq = 1 / step
    aggregate = per_seq * users
    # a lone prompt's time to the first token: its GEMMs, then the collectives between them (the
    # decode step above already charges the rows it prefills beside the decodes)
    comm = prefill_comm_s_per_token(spec, gpu, tp=tp, engine=eng, ep=ep, dp_attn=dp_attn)
    first_token_rate = 1 / (1 / prefill + comm)
    if loaded:
        per_seq = 1 / loaded.step_s
        # the prompt's rate up to its first token, which the service level divides it by
        first_token_rate = prompt / loaded.first_token_s
        aggregate = per_seq * users
    if loaded and output > 0:
        aggregate = users / full_load_step_s(
            spec, gpu, quant=quant, context=context, users=users, kv_bytes=kv_bytes, tp=tp,
            engine=eng, ep=ep, dp_attn=dp_attn, prompt=prompt, output=output,
            budget=memory.vllm_batch_defaults(gpu.name, gpu.memory_bytes).tokens)
    elif everyone:
        # the total throughput also carries each user's own prompt: the same step with the
        # extra prompt tokens' compute
        extra = (everyone - others) / (prefill * dp_attn)
        device = p["device"] - p["matmul"] + split_matmul_s(
            p["dense_weights"], p["experts_weights"], p["gemm"] + extra, p["expert_share"],
            p["padding"])
        aggregate = users / max(device, p["host"])
    detail = _("decode: {gb:.2f} GB read per step over {gpus} at {eff:.0%} of {bw:.0f} GB/s"
               " + {layers} layers x {us:.0f} us ({engine})").format(
        gb=p["bytes"] / 1e9, gpus=counted(tp * pp, "GPU"), eff=p["efficiency"], bw=gpu.bandwidth_gbps,
        layers=spec.layers, us=LAYER_OVERHEAD_S[eng] * 1e6,
        engine=_stack_names(gpu.serving_stack) if gpu.vendor == "huawei" else eng)
    if p["moe"]:
        detail += _("; MoE routing and expert kernels {ms:.1f} ms per step").format(
            ms=p["moe"] * 1e3)
    if p["mla"]:
        detail += _("; MLA kernels {ms:.1f} ms per step").format(ms=p["mla"] * 1e3)
    if (p["moe"] or p["mla"]) and users == 1:
        detail += _(" (published batch-1 runs of one MoE setup differ about 2x: expect"
                    " {low:.0f}-{high:.0f} tokens/s)").format(
            low=per_seq * MOE_BATCH1_RANGE[0], high=per_seq * MOE_BATCH1_RANGE[1])
    if p["comm"] and ep > 1 and gathers_rows(gpu, dp_attn):
        detail += _("; expert-parallel all-gathers, reduce-scatters and all-reduces {ms:.1f} ms"
                    " (DeepEP's all-to-all needs Hopper-class cards with NVLink between every"
                    " pair and RDMA between servers: {card} exchanges every row of the {dp}"
                    " attention groups, as vLLM's allgather_reducescatter does)").format(
            ms=p["comm"] * 1e3, card=gpu.display, dp=dp_attn)
    elif p["comm"] and ep > 1:
        detail += _("; expert-parallel all-to-alls and all-reduces {ms:.1f} ms").format(
            ms=p["comm"] * 1e3)
    elif p["comm"]:
        detail += _("; {n} tensor-parallel all-reduces {ms:.1f} ms").format(
            n=2 * spec.layers, ms=p["comm"] * 1e3)
    if p["host"] > p["read"] + p["layers"]:
        detail += _("; host-bound: Python launches {ms:.0f} ms of kernels per step").format(
            ms=p["host"] * 1e3)
    if mmq_prefill(quant, eng, build):
        detail += _("; prefill at {u:.0%} of {tops:.0f} int8 TOPS: llama.cpp builds since June"
                    " 2024 multiply quantized weights on int8 tensor cores (MMQ; build=cublas for"
                    " older builds)").format(u=u, tops=int8_tensor_tops(gpu))
        if warpgroup_mma_peak(gpu):
            detail += _(", at half the rate of the warpgroup MMAs this card's peak needs")
    else:
        detail += _("; prefill at {u:.0%} of {tflops:.0f} TFLOPS").format(
            u=u, tflops=tensor_tflops(gpu, quant, eng))
        if eng == "llama.cpp" and get_quant(quant).family == "gguf":
            detail += _(" as llama.cpp builds before June 2024 ran it (weights dequantized to"
                        " FP16 for cuBLAS)")
    stack = vendor_stack(gpu)
    if gpu.vendor == "huawei":
        detail += _("; {card} has no CUDA, so llama.cpp's CUDA backend and TensorRT-LLM do not"
                    " apply: estimated for {stack} from the datasheet's {bw:.0f} GB/s and"
                    " {tflops:.0f} TFLOPS with the vLLM efficiencies above (no published runs"
                    " to check)").format(card=gpu.display, stack=_stack_names(stack or ""),
                                          bw=gpu.bandwidth_gbps, tflops=gpu.bf16_tflops)
    elif stack:
        detail += _("; {card} runs {stack}").format(card=gpu.display, stack=gpu.stack_text)
    if p["prefill"]:
        detail += _("; under load each step also prefills {tokens:.0f} prompt tokens of the other"
                    " users in chunks ({ms:.1f} ms)").format(tokens=others, ms=p["prefill"] * 1e3)
    if loaded:
        budget = memory.vllm_batch_defaults(gpu.name, gpu.memory_bytes).tokens
        if output > 0:
            detail += _("; at {users} users vLLM takes the others' prompts in whole chunks of up"
                        " to {budget:,} tokens at {eff:.0%} of the prefill peak (its rate under"
                        " load; a mean step {ms:.1f} ms)").format(
                users=users, budget=budget, eff=VLLM_LOAD_PREFILL_EFFICIENCY,
                ms=loaded.step_s * 1e3)
        detail += _("; a prompt's first token comes after {chunks} of up to {budget:,} tokens,"
                    " each beside {decodes} decoding: {s:.2f} s").format(
            chunks=counted(loaded.chunks, "step"), budget=budget,
            decodes=counted(users - 1, "sequence"), s=loaded.first_token_s)
    elif comm * prefill >= PREFILL_COMM_SHOWN:
        detail += _("; a prompt's collectives take {us:.0f} us a token beside {gemm:.0f} us of"
                    " its GEMMs: {rate:,.0f} prompt tokens/s").format(
            us=comm * 1e6, gemm=1e6 / prefill, rate=first_token_rate)
    return ServeSpeed(decode_per_sequence=per_seq, decode_aggregate=aggregate,
                      prefill=first_token_rate, engine=asked if eng == asked else eng,
                      detail=detail)


# -- training -------------------------------------------------------------------------------


def train_flops_per_token(spec: ModelSpec, *, method: MethodSpec, checkpointing: str,
                          seq: int) -> float:
    """Hardware FLOPs per token: forward 2N + attention; backward 4N for trained weights
    (input and weight gradients) but 2N for frozen ones (LoRA/QLoRA: input gradients only), and
    twice the attention forward either way (attention has no weights); full recomputation
    repeats the forward, attention recomputation (Megatron's core_attn, Korthikanti et al. 2022)
    the attention only. Selective recomputation repeats no matmul and no attention: it keeps
    their outputs and recomputes norms and activation functions (memory.SELECTIVE_TEXT), memory-bound
    work counted as time by selective_recompute_s. So 8N with full recomputation and 6N without
    for full fine-tuning, 6N and 4N for adapters (their own r x (d_in + d_out) matrices are a
    rounding error). N counts matmul weights only.
    """
    n = matmul_params(spec)
    attention = attention_flops_per_token(spec, seq) / 2  # causal mask: half the scores
    forward = 2 * n + attention
    backward = (2 if method.adapters else 4) * n + 2 * attention
    recompute = {"full": forward, "attention": attention}.get(checkpointing, 0.0)
    return forward + backward + recompute


def train_attention_flops_per_token(spec: ModelSpec, *, checkpointing: str, seq: int) -> float:
    """The attention matmuls' share of train_flops_per_token (scores and values: forward, twice
    in the backward, again when recomputed). FP8 training keeps them in bf16: torchao's float8
    converts nn.Linear modules only (torchtitan's 2024-12 benchmarks: 'both BFLOAT16 Tensor Core
    and FP8 Tensor Core are involved'), Transformer Engine's DotProductAttention runs FP8 only
    when fp8_dpa is set (off by default), DeepSeek-V3 keeps attention operators in BF16 (its
    report, section 3.3.1)."""
    attention = attention_flops_per_token(spec, seq) / 2  # causal mask: half the scores
    recompute = 1 if checkpointing in ("full", "attention") else 0
    return attention * (3 + recompute)


def selective_recompute_s(spec: ModelSpec, gpu: GpuSpec, *, tokens: float, tp: int,
                          pp: int) -> float:
    """Seconds a micro-batch spends recomputing what selective checkpointing dropped: each
    dropped tensor is written again from its kept input (read once, written once) at the card's
    HBM bandwidth, over this rank's share of the layers and of each token's width."""
    every = memory.layer_activation_bytes(spec, "none", False, "all", 0)
    kept = memory.layer_activation_bytes(spec, "selective", False, "all", 0)
    dropped = max(0.0, sum(every) - sum(kept)) / tp
    return 2 * dropped * tokens * spec.layers / pp / (gpu.bandwidth_gbps * 1e9)


def _bus_gbps(gpu: GpuSpec, gpus: int) -> float:
    """Bus bandwidth of a data-parallel collective over `gpus` cards (GB/s, nccl-tests busbw)."""
    if gpus > GPUS_PER_SERVER:
        if not gpu.has_nvlink:
            return INTER_NODE_PCIE_SERVER_GBPS
        nics = NICS_PER_SERVER * INTER_NODE_GBPS.get(gpu.pcie_gen, INTER_NODE_GBPS[4])
        return min(nics, _intra_gbps(gpu))
    return _intra_gbps(gpu)


def _group_gbps(gpu: GpuSpec, gpus: int, spread: int) -> float:
    """Bus bandwidth of a data-parallel group whose members sit `spread` GPUs apart (Megatron's
    rank order puts TP innermost, then CP, EP and DP, PP outermost: the TP x EP ranks between two
    holders of the same parameters). Across servers NCCL reduces inside each server first, then
    every member sends its share through its own NIC: a group with one member a server (TP 8,
    or EP 8's expert copies) moves everything through one NIC, a group filling the server
    through all of them."""
    if gpus <= GPUS_PER_SERVER:
        return _intra_gbps(gpu)
    members = max(1, GPUS_PER_SERVER // max(1, spread))
    return _bus_gbps(gpu, gpus) * min(GPUS_PER_SERVER, members) / GPUS_PER_SERVER


def _intra_gbps(gpu: GpuSpec) -> float:
    if gpu.has_nvlink:
        return gpu.nvlink_gbps / 2 * NVLINK_EFFICIENCY
    return PCIE_BUS_GBPS.get(gpu.pcie_gen, 12.0)


def goodput(gpus: int) -> float:
    """Share of wall-clock time spent on steps that count, with restarts at scale."""
    return 1 / (1 + FAILURES_PER_GPU_HOUR * gpus * HOURS_LOST_PER_FAILURE)


def fp8_training(gpu: GpuSpec, precision: str) -> bool:
    """Whether the run's GEMMs execute in FP8: asked for (precision=fp8) on a card with FP8
    tensor cores; Ampere and Ascend cards have none and run the bf16 recipe."""
    return precision == "fp8" and bool(gpu.fp8_tflops)


def _alltoall_gbps(gpu: GpuSpec, ranks: int) -> float:
    """Per-GPU bandwidth of an expert-parallel all-to-all over `ranks` GPUs: NVLink (or PCIe)
    inside a server; across servers every GPU sends through its own NIC (DeepEP internode:
    ~45 GB/s of RDMA per H800 GPU), a PCIe server's shared ports split over its cards."""
    if ranks <= GPUS_PER_SERVER:
        return _intra_gbps(gpu)
    if not gpu.has_nvlink:
        return INTER_NODE_PCIE_SERVER_GBPS / GPUS_PER_SERVER
    return INTER_NODE_GBPS.get(gpu.pcie_gen, INTER_NODE_GBPS[4])


class MoeFramework(StrEnum):
    """How a training plan runs an MoE layer: the framework engine/launch.py launches for it."""

    # LLaMA-Factory / DeepSpeed on Hugging Face modules: a Python loop over the experts
    transformers = "transformers"
    # Megatron-LM: grouped GEMM, alltoall token dispatcher (NCCL all-to-all, in series)
    megatron = "megatron"
    # Megatron's flex dispatcher with DeepEP kernels, all-to-all partly overlapped
    deepep = "deepep"
    # DeepSeek-V3's own: FP8 GEMMs, DualPipe hiding DeepEP's all-to-all under compute
    dualpipe = "dualpipe"


def dispatch_gbps(gpu: GpuSpec, ranks: int, framework: str) -> float:
    """Per-GPU rate of routed copies through an all-to-all over `ranks` GPUs: DeepEP at the
    link's, Megatron's alltoall dispatcher through its HBM-bound processing and the link in
    series."""
    link = _alltoall_gbps(gpu, ranks) * DEEPEP_EFFICIENCY
    if framework != "megatron":
        return link
    return 1 / (1 / link + 1 / (MEGATRON_DISPATCH_HBM_SHARE * gpu.bandwidth_gbps))


def deepep_runs(gpu: GpuSpec) -> bool:
    """DeepEP's kernels need NVLink and Hopper's (or a later card's) instructions: the cards
    with FP8 tensor cores among the NVLink ones."""
    return gpu.has_nvlink and bool(gpu.fp8_tflops)


def moe_framework(gpu: GpuSpec, *, tp: int, pp: int, ep: int, fp8: bool = False,
                  framework: str | None = None) -> MoeFramework:
    """How the plan's framework (engine/frameworks.py; unnamed: LLaMA-Factory for data-parallel
    plans, Megatron for the rest) runs an MoE layer. Hugging Face modules loop over the
    experts; NeMo AutoModel dispatches through DeepEP where the card runs it; Megatron (and
    torchtitan's NCCL all-to-all) keeps the alltoall dispatcher at EP 8 and under, as its Qwen3
    and gpt-oss recipes do, and beyond one server runs DeepEP's internode kernels where they
    exist, as DeepSeek-V3 (EP 64 over 2048 H800) and Megatron's large-EP recipes do. FP8
    training at such a degree is DeepSeek-V3's recipe, DualPipe included."""
    fw = framework_for(framework, tp=tp, pp=pp, ep=ep)
    if fw.hf_modules:
        return MoeFramework.transformers
    if fw.sharding == "megatron" and ep > GPUS_PER_SERVER and deepep_runs(gpu):
        return MoeFramework.dualpipe if fp8 else MoeFramework.deepep
    if fw.deepep and ep > 1 and deepep_runs(gpu):
        return MoeFramework.deepep
    return MoeFramework.megatron


class MoeRouting(NamedTuple):
    local_s: float  # permutation, per-expert loop and shape-bound expert GEMMs: in series
    alltoall_s: float  # dispatch and combine over the EP group
    framework: MoeFramework


def expert_gemm_s(spec: ModelSpec, gpu: GpuSpec, *, tokens: float, ep: int, tp: int, pp: int,
                  full_recompute: bool, rate: float) -> float:
    """Seconds a micro-batch's routed-expert GEMMs take on one GPU beyond their FLOPs at `rate`
    (FLOP/s): a local expert multiplies only tokens x top_k x ep / experts rows, yet reads its
    whole weight from HBM in every pass (forward, recomputed forward, input gradient) and reads
    and writes its fp32 weight gradient once. Below the card's FLOPs-per-byte ridge the GEMMs
    wait on memory (a roofline by shape): fine-grained experts (Qwen3's 128 of width 768) split
    by tensor parallelism at a few thousand tokens a micro-batch are memory-bound, whole experts
    gathered from 8-64 EP ranks are not."""
    passes = 3 + (1 if full_recompute else 0)  # forward, two backward GEMMs, recompute
    copies = tokens / tp * spec.moe_layers / pp * spec.active_experts
    flops = copies * 3 * spec.hidden * spec.moe_intermediate * 2 * passes
    local = memory.routed_expert_params(spec) / (ep * tp * pp)
    # 16-bit weight read in each pass but the weight-gradient one, fp32 gradient read + write
    memory_s = local * (2 * (passes - 1) + 8) / (gpu.bandwidth_gbps * 1e9
                                                  * MOE_PERMUTE_EFFICIENCY)
    return max(0.0, memory_s - flops / rate)


def moe_routing(spec: ModelSpec, gpu: GpuSpec, *, tokens: float, ep: int, tp: int, pp: int,
                passes: int, rate: float = float("inf"), fp8: bool = False,
                framework: str | None = None) -> MoeRouting:
    """A micro-batch's MoE cost on one GPU beyond its FLOPs, by the framework the plan launches:
    every pass (forward, backward, recomputed forward) permutes each token's top-k copies in
    HBM around the expert GEMMs (2 x k x hidden x 2 bytes a token a MoE layer, written and read
    again), the GEMMs wait on memory where experts see few rows (expert_gemm_s), Hugging Face's
    per-expert loop pays the host per expert, and with expert parallelism (ep-1)/ep of the
    copies go out and come back over the EP group's links (Megatron's alltoall dispatcher
    through its HBM-bound processing and the link in series, DeepEP at the link's bandwidth).
    Sequence parallelism splits the tokens over TP."""
    moe = moe_framework(gpu, tp=tp, pp=pp, ep=ep, fp8=fp8, framework=framework)
    if not spec.is_moe:
        return MoeRouting(0.0, 0.0, moe)
    copies = tokens / tp * spec.moe_layers / pp * spec.active_experts * spec.hidden * 2 * passes
    local = copies * MOE_PERMUTE_BYTES / (gpu.bandwidth_gbps * 1e9 * MOE_PERMUTE_EFFICIENCY)
    local += expert_gemm_s(spec, gpu, tokens=tokens, ep=ep, tp=tp, pp=pp,
                           full_recompute=passes == 3, rate=rate)
    if moe == MoeFramework.transformers:
        local += spec.experts * spec.moe_layers * passes * HOST_EXPERT_S["transformers"]
    # experts split by TP alone see the TP group's tokens through its sequence-parallel
    # all-gathers (counted with the tensor-parallel traffic): no all-to-all
    if ep <= 1:
        return MoeRouting(local, 0.0, moe)
    ranks = ep * tp
    sent = copies * 2 * (ranks - 1) / ranks
    return MoeRouting(local, sent / (dispatch_gbps(gpu, ranks, moe) * 1e9), moe)


def expert_tensors(spec: ModelSpec) -> int:
    """Separate parameters the routed experts of one MoE layer are in Hugging Face's per-expert
    modules: each expert's matrices (and biases) on their own."""
    roles = {t.role for t in tensors(spec) if t.role.removesuffix("_bias") in EXPERT_ROLES}
    return len(roles) * spec.experts


def zero3_fetch_s(spec: ModelSpec, fw: Framework, *, zero: int, dp: int, passes: int,
                  pp: int = 1) -> float:
    """Seconds a micro-batch waits on DeepSpeed ZeRO-3 fetching expert parameters one at a
    time (ZERO3_FETCH_S each, every pass): Hugging Face MoE layers under DeepSpeed only. FSDP
    gathers a wrapped block's flat parameter at once; Megatron and native MoE layers keep
    their experts whole or sharded by expert parallelism."""
    if not (spec.is_moe and fw.hf_modules and fw.sharding == "deepspeed" and zero >= 3
            and dp > 1):
        return 0.0
    return passes * spec.moe_layers / pp * expert_tensors(spec) * ZERO3_FETCH_S


def train_speed(spec: ModelSpec, gpu: GpuSpec, *, gpus: int, method: MethodSpec, checkpointing: str,
                seq: int, batch: int, zero: int, tp: int, tokens: int | None,
                trainable: int, offload: str = "none", pp: int = 1, ep: int = 1,
                precision: str = "bf16", cp: int = 1, framework: str | None = None
                ) -> TrainSpeed:
    """Cluster tokens/s = GPUs x peak x utilization / FLOPs per token, slowed by tensor-parallel
    all-reduces, MoE token routing (expert-parallel all-to-alls), the pipeline bubble, QLoRA's
    dequantization, offload, whatever gradient or shard traffic does not hide under compute,
    and restarts at scale. FP8 runs the GEMMs at the card's FP8 peak; its share of that peak
    follows from the same FEED rule (twice the FLOPs per byte of bandwidth)."""
    flops_token = train_flops_per_token(spec, method=method, checkpointing=checkpointing, seq=seq)
    fp8 = fp8_training(gpu, precision)
    peak_tflops = gpu.fp8_tflops if fp8 and gpu.fp8_tflops else gpu.bf16_tflops
    u = train_utilization(gpu, peak_tflops)
    multi_server = MULTI_SERVER_EFFICIENCY if gpus > GPUS_PER_SERVER else 1.0
    u *= multi_server
    peak = peak_tflops * 1e12
    tokens_step = seq * batch  # per data-parallel rank per micro-batch
    dp = max(1, gpus // (tp * pp * cp))
    ep = ep if 1 < ep <= dp and dp % ep == 0 else 1
    # FP8 recipes cast the linear layers' GEMMs only: attention's score and value matmuls stay in
    # bf16 (FlashAttention), at the bf16 peak and its own share of it
    attention_flops = train_attention_flops_per_token(spec, checkpointing=checkpointing,
                                                      seq=seq) if fp8 else 0.0
    bf16_rate = gpu.bf16_tflops * 1e12 * train_utilization(gpu, gpu.bf16_tflops) * multi_server
    # a TP x PP x CP group shares each micro-batch; a context-parallel rank holds 1/cp of it
    compute_s = ((flops_token - attention_flops) / (peak * u) + attention_flops / bf16_rate) \
        * tokens_step / (tp * pp * cp)
    rank_tokens = tokens_step / cp
    passes = 3 if checkpointing == "full" else 2  # forward (+ recompute) + backward
    fw = framework_for(framework, tp=tp, pp=pp, ep=ep, cp=cp)
    moe = moe_routing(spec, gpu, tokens=rank_tokens, ep=ep, tp=tp, pp=pp, passes=passes,
                      rate=peak * u, fp8=fp8, framework=framework)
    # ZeRO-3 fetches outside the prefetch trace wait in series with the layer that needs them
    fetch_s = zero3_fetch_s(spec, fw, zero=zero, dp=dp, passes=passes, pp=pp)
    # the next expert GEMM needs the tokens: routing waits on Megatron's all-to-alls; DeepEP's
    # run beside the other micro-batch's compute, wholly under DualPipe, partly otherwise
    deepep = moe.framework in (MoeFramework.deepep, MoeFramework.dualpipe)
    overlapped_s = moe.alltoall_s if deepep else 0.0
    hidden_share = OVERLAP["sharded"] if moe.framework == MoeFramework.dualpipe \
        else OVERLAP["other"]
    routing_s = moe.local_s + moe.alltoall_s - overlapped_s + fetch_s
    dequant_s = 0.0
    if method.quantized_base:
        dequant_s = passes * spec.params / (tp * pp) * QLORA_DEQUANT_BYTES / (
            gpu.bandwidth_gbps * 1e9)
    tp_s = 0.0
    if tp > 1:
        # Megatron TP: two all-reduces of the micro-batch's hidden states per layer forward,
        # two backward (two more when the forward is recomputed), ring volume 2(t-1)/t
        count = 2 * passes
        volume = count * spec.layers / pp * rank_tokens * spec.hidden * 2 * 2 * (tp - 1) / tp
        tp_s = volume / (_intra_gbps(gpu) * 1e9)
    cp_s = context_parallel_s(spec, gpu, tokens=tokens_step, cp=cp, tp=tp, pp=pp,
                              passes=passes)
    # Data-parallel traffic: a ring all-reduce of 16-bit gradients moves 2 x 2 bytes per
    # parameter once per optimizer step, spread over the accumulated micro-batches; ZeRO-3 also
    # all-gathers the weights in forward and backward and reduce-scatters every micro-batch
    # (3 x 2 bytes, not amortized). The frozen LoRA base is gathered too under ZeRO-3.
    global_tokens = global_batch_tokens(method, gpus, tokens)
    accumulation = max(1, round(global_tokens / (dp * tokens_step)))
    comm_s = 0.0
    gathered_share = 0.0
    sharded_s = 0.0
    holders = dp * cp  # ranks holding the same parameters: gradients reduce over all of them
    if holders > 1:
        ring = (holders - 1) / holders
        # expert parallelism: a rank holds 1/ep of the routed experts, shared with the
        # holders / ep ranks of its expert-data-parallel group (none when ep takes them all)
        held = memory.expert_parallel_local(trainable, spec, ep) if not method.adapters \
            else trainable
        experts = memory.routed_expert_params(spec) // ep if ep > 1 and not method.adapters \
            else 0
        expert_holders = max(1, holders // ep) if experts else holders
        expert_ring = (expert_holders - 1) / expert_holders
        if zero >= 3:
            # gathered in forward and backward, gradients reduce-scattered: 3 x 2 bytes a
            # parameter every micro-batch (the frozen LoRA base gathered as well)
            per_param = 6
            volume = held / (tp * pp) * per_param * ring
            if method.adapters:
                volume += spec.params / (tp * pp) * 2 * 2 * ring
            gathered = (spec.params if method.adapters else held) / (tp * pp) * 4 * ring
            gathered_share = min(1.0, gathered / volume)
            dense_volume = volume - experts / (tp * pp) * per_param * ring
        else:
            per_param = 4 / accumulation  # one ring all-reduce per optimizer step
            dense_volume = (held - experts) / (tp * pp) * per_param * ring
        comm_s = (dense_volume / (_group_gbps(gpu, gpus, tp) * 1e9)
                  + experts / (tp * pp) * per_param * expert_ring
                  / (_group_gbps(gpu, gpus, tp * ep) * 1e9))
    recompute_s = (selective_recompute_s(spec, gpu, tokens=rank_tokens, tp=tp, pp=pp)
                   if checkpointing == "selective" else 0.0)
    busy_s = compute_s + dequant_s + routing_s + recompute_s
    if zero >= 3:
        exposed_s = sharded_exposed_s(
            spec, fw, gather_s=comm_s * gathered_share, reduce_s=comm_s * (1 - gathered_share),
            busy_s=busy_s,
            forward_share=forward_share(spec, method=method, checkpointing=checkpointing,
                                        seq=seq), layers=spec.layers / pp)
        sharded_s = exposed_s
        exposed_s += max(0.0, tp_s + cp_s - OVERLAP["other"] * busy_s)
    else:
        exposed_s = max(0.0, tp_s + cp_s + comm_s - OVERLAP["other"] * busy_s)
    exposed_s += max(0.0, overlapped_s - hidden_share * busy_s)
    offload_s = 0.0
    if offload in ("optimizer", "all"):
        # ZeRO-Offload (Ren et al. 2021): every micro-batch's 16-bit gradients go down to host
        # memory as backward produces them (2 bytes/param); once per optimizer step the CPU runs
        # Adam over ~16 bytes/param of states and the updated 16-bit weights come back up
        shard = trainable / (tp * pp) / dp
        offload_s = (shard * 2 / (HOST_LINK_GBPS * 1e9)
                     + (shard * 2 / (HOST_LINK_GBPS * 1e9) + shard * 16 / (CPU_ADAM_GBPS * 1e9))
                     / accumulation)
    if offload == "all":
        # weights live on the host: every pass copies the rank's 16-bit shard up before
        # gathering it, and every micro-batch's gradient shard goes back down (FSDP CPU offload)
        offload_s += (passes + 1) * spec.params / (tp * pp) / dp * 2 / (HOST_LINK_GBPS * 1e9)
    # Interleaved 1F1B pipeline bubble: (pp - 1) idle slots per v x accumulation micro-batch
    # slots (Narayanan et al. 2021); pipeline stages trade it for not gathering weights
    bubble = (pp - 1) / (PP_VIRTUAL_STAGES * accumulation + pp - 1) if pp > 1 else 0.0
    step_s = (busy_s + exposed_s) / (1 - bubble) + offload_s
    kept = goodput(gpus)
    tps = dp * tokens_step / step_s * kept
    hours = tokens / tps * gpus / 3600 if tokens else None
    mfu = flops_token * tps / (gpus * peak)
    bound = (_("communication-bound") if exposed_s > 0.25 * busy_s else _("compute-bound"))
    detail = _("{gflop:.1f} GFLOP per token ({rule} + attention) at {u:.0%} utilization of"
               " {tflops:.0f} TFLOPS ({e:.0%} in the matmuls, less memory-bound work at"
               " {ratio:.0f} FLOPs/byte); {bound} (compute {compute:.2f} s vs traffic"
               " {traffic:.2f} s per micro-batch over {bus:.0f} GB/s)").format(
        gflop=flops_token / 1e9, rule=_rule(method, checkpointing), u=u,
        tflops=peak_tflops, e=TRAIN_EFFICIENCY,
        ratio=peak_tflops * 1e3 / gpu.bandwidth_gbps, bound=bound, compute=busy_s,
        traffic=comm_s, bus=_bus_gbps(gpu, gpus))
    if gpus > GPUS_PER_SERVER:
        detail += _("; across servers, {share:.0%} of one server's utilization (median of"
                    " published multi-server runs)").format(share=MULTI_SERVER_EFFICIENCY)
    if zero >= 3 and comm_s:
        ahead = (deepspeed_prefetch_share(spec, spec.layers / pp)
                 if fw.sharding == "deepspeed" else 1.0)
        detail += _("; {framework} gathers {ahead:.0%} of each layer's weights ahead of it, the"
                    " rest on demand: {s:.2f} s of sharded traffic exposed per micro-batch"
                    ).format(framework=_(fw.label), ahead=ahead, s=sharded_s)
    if pp > 1:
        detail += _("; pipeline bubble {bubble:.0%}").format(bubble=bubble)
    if cp > 1:
        detail += _("; context parallel CP={cp}: each rank holds {tokens} tokens of every "
                    "sequence and passes K and V around the ring, {s:.2f} s per micro-batch "
                    "before overlap").format(cp=cp, tokens=round(rank_tokens), s=cp_s)
    if spec.is_moe:
        detail += _("; MoE layers in {framework}: {moe}, {how}, {s:.2f} s per micro-batch"
                    " beyond their FLOPs").format(
            framework=_(fw.label), moe=_(MOE_FRAMEWORK_NAMES[moe.framework]),
            s=moe.local_s + moe.alltoall_s,
            how=_("expert parallel EP={ep}, all-to-all at {bw:.0f} GB/s").format(
                ep=ep, bw=dispatch_gbps(gpu, ep * tp, moe.framework)) if ep > 1
            else _("experts split by tensor parallelism") if tp > 1
            else _("every expert on every GPU"))
    if fetch_s:
        detail += _("; DeepSpeed ZeRO-3 fetches {count:,} expert parameters one at a time per"
                    " micro-batch ({ms:.1f} ms each, outside its prefetch trace): {s:.1f} s"
                    ).format(count=round(fetch_s / ZERO3_FETCH_S), ms=ZERO3_FETCH_S * 1e3,
                             s=fetch_s)
    if fp8:
        detail += _("; FP8 GEMMs in the linear layers at {tflops:.0f} TFLOPS peak, attention in"
                    " bf16 at {bf16:.0f}").format(tflops=peak_tflops, bf16=gpu.bf16_tflops)
    elif precision == "fp8":
        detail += _("; {card} has no FP8 tensor cores: the bf16 recipe").format(card=gpu.display)
    if dequant_s:
        detail += _("; NF4 dequantization {s:.2f} s per micro-batch").format(s=dequant_s)
    if offload_s:
        detail += _("; CPU offload adds {s:.2f} s per micro-batch (gradients to host at {link:.0f}"
                    " GB/s, CPU Adam at {adam:.0f} GB/s): {times:.2f}x the time").format(
            s=offload_s, link=HOST_LINK_GBPS, adam=CPU_ADAM_GBPS,
            times=step_s / (step_s - offload_s))
    if kept < 0.995:
        detail += _("; {lost:.0%} of time lost to restarts at {gpus}").format(
            lost=1 - kept, gpus=counted(gpus, "GPU"))
    return TrainSpeed(tokens_per_s=tps, gpu_hours=hours, mfu=mfu, detail=detail)


def forward_share(spec: ModelSpec, *, method: MethodSpec, checkpointing: str, seq: int) -> float:
    """Share of a step's FLOPs in the forward pass; the rest (backward, with the recomputed
    forward that checkpointing runs inside it) is the backward pass."""
    forward = 2 * matmul_params(spec) + attention_flops_per_token(spec, seq) / 2
    total = train_flops_per_token(spec, method=method, checkpointing=checkpointing, seq=seq)
    return forward / total


def deepspeed_prefetch_share(spec: ModelSpec, layers: float) -> float:
    """Share of a decoder layer's weights DeepSpeed ZeRO-3 has in flight ahead of the module
    that needs them: the "auto" stage3_prefetch_bucket_size (0.9 x hidden^2) over the layer."""
    bucket = DEEPSPEED_PREFETCH_SHARE_OF_HIDDEN_SQUARED * spec.hidden ** 2
    layer_params = spec.params / max(1.0, layers)
    return min(1.0, bucket / layer_params)


def sharded_exposed_s(spec: ModelSpec, fw: Framework, *, gather_s: float, reduce_s: float,
                      busy_s: float, forward_share: float, layers: float) -> float:
    """Seconds of ZeRO-3/FSDP traffic a micro-batch waits on: `gather_s` of weight all-gathers
    (half in the forward, half in the backward) and `reduce_s` of gradient reduce-scatters (in
    the backward), beside `busy_s` of compute split by `forward_share`. Per layer the traffic
    the framework has in flight ahead hides under the layer beside it (max(0, traffic -
    compute)); the first layer's gather in each pass and the last layer's reduce-scatter have
    nothing beside them; DeepSpeed's gathers beyond its prefetch bucket wait in series."""
    if gather_s + reduce_s <= 0:
        return 0.0
    layers = max(1.0, layers)
    ahead = deepspeed_prefetch_share(spec, layers) if fw.sharding == "deepspeed" else 1.0
    exposed = (1 - ahead) * gather_s  # fetched on demand, in series with compute
    gather_layer = ahead * gather_s / 2 / layers  # prefetched, per pass per layer
    reduce_layer = reduce_s / layers
    forward_layer = busy_s * forward_share / layers
    backward_layer = busy_s * (1 - forward_share) / layers
    exposed += gather_layer + (layers - 1) * max(0.0, gather_layer - forward_layer)
    exposed += gather_layer + (layers - 1) * max(0.0, gather_layer + reduce_layer
                                                 - backward_layer) + reduce_layer
    return exposed


def context_parallel_bytes(spec: ModelSpec, *, tokens: float, cp: int, tp: int, pp: int,
                           passes: int) -> float:
    """Bytes one rank sends for ring attention in one micro-batch of `tokens` (Megatron /
    Transformer Engine context parallelism; ring attention, Liu et al. 2023): its K and V chunk
    travels cp - 1 hops per forward (and per recomputed forward), and backward sends K and V
    round again with their gradients (twice the forward). K and V at the attention's own
    widths: GQA's few KV heads, split over TP with at least one a rank; MLA's decompressed K
    and V. Small beside the matmuls for GQA models."""
    if cp <= 1:
        return 0.0
    if spec.attention == "mla":
        kv_width = (spec.q_dim + spec.heads * spec.v_head_dim) / tp
    else:
        kv_width = 2 * math.ceil(spec.kv_heads / tp) * spec.head_dim
    units = passes + 1  # forward (+ recompute) once each, backward twice
    return units * spec.attention_layers / pp * tokens / cp * kv_width * 2 * (cp - 1)


def context_parallel_s(spec: ModelSpec, gpu: GpuSpec, *, tokens: float, cp: int, tp: int,
                       pp: int, passes: int) -> float:
    """Ring attention's traffic time for one micro-batch, over NVLink while TP x CP stays in one
    server and over the network beyond it."""
    volume = context_parallel_bytes(spec, tokens=tokens, cp=cp, tp=tp, pp=pp, passes=passes)
    return volume / (_bus_gbps(gpu, tp * cp) * 1e9) if volume else 0.0


def _rule(method: MethodSpec, checkpointing: str) -> str:
    n = (4 if method.adapters else 6) + {"full": 2}.get(checkpointing, 0)
    return f"{n}N"
