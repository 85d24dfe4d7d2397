"""Per-GPU memory, one function per component. Bytes throughout.

Each function states its formula and source. They take plain numbers and a ModelSpec so the
planner can call them thousands of times per answer; engine/plan.py assembles them per plan.
"""

from __future__ import annotations

import math
from functools import cache
from typing import NamedTuple

from engine.architecture import EXPERT_ROLES, LINEAR_ROLES, ModelSpec, layer_params, tensors
from engine.i18n import N_

GIB = 1024**3

# -- training recipes -----------------------------------------------------------------------
# Bytes per trainable parameter: (weights, gradients, optimizer states incl. any fp32 master).
# Mixed-precision AdamW is the ZeRO paper's 2 + 2 + 12 (Rajbhandari et al. 2020, sec. 3.1);
# pure-bf16 AdamW keeps m and v in bf16 and no master (2 + 2 + 4); bitsandbytes 8-bit AdamW
# stores m and v in 8 bits with a block-wise fp32 absmax per 2048 values (2.004 bytes), on a
# 16-bit model with no master copy (torchtune and bitsandbytes usage); SGD keeps momentum.
RECIPES: dict[tuple[str, str], tuple[float, float, float]] = {
    ("adamw", "mixed"): (2, 2, 12),
    ("adamw", "fp32"): (4, 4, 8),
    ("adamw-bf16", "mixed"): (2, 2, 4),
    ("adamw-bf16", "fp32"): (4, 4, 4),
    ("adamw-8bit", "mixed"): (2, 2, 2.004),
    ("adamw-8bit", "fp32"): (4, 4, 2.004),
    ("paged-adamw-8bit", "mixed"): (2, 2, 2.004),
    ("paged-adamw-8bit", "fp32"): (4, 4, 2.004),
    ("sgd", "mixed"): (2, 2, 8),
    ("sgd", "fp32"): (4, 4, 4),
}
# the recipe as the answer's assumptions say it (N_: said in the asker's language by explain.py)
RECIPE_TEXT = {
    "adamw": N_("AdamW in mixed precision: 16-bit weights and gradients, fp32 master copy, "
                "fp32 m and v (2+2+12 = 16 bytes/param, ZeRO paper)"),
    "adamw-bf16": N_("AdamW in pure bf16: bf16 weights, gradients, m and v, no master copy "
                     "(2+2+4 = 8 bytes/param)"),
    "adamw-8bit": N_("8-bit AdamW (bitsandbytes): 16-bit weights and gradients, m and v in 8 "
                     "bits, no fp32 master (2+2+2 = 6 bytes/param; 10 with a master copy)"),
    "paged-adamw-8bit": N_("paged 8-bit AdamW (bitsandbytes): as adamw-8bit, with states in "
                           "CUDA unified memory that pages to host RAM under pressure"),
    "sgd": N_("SGD with momentum in mixed precision: 2+2+4 master+4 momentum = 12 "
              "bytes/param"),
}


def recipe_bytes(optimizer: str, precision: str) -> tuple[float, float, float]:
    return RECIPES[(optimizer, "fp32" if precision == "fp32" else "mixed")]


# -- model states -----------------------------------------------------------------------------


def sharded(total: float, *, tp: int, dp: int, zero_shards: bool) -> float:
    """ZeRO stage s shards a state over the data-parallel group when s reaches that state;
    tensor parallelism always splits it (Rajbhandari et al. 2020; Shoeybi et al. 2019)."""
    return total / tp / (dp if zero_shards else 1)


def training_weights(params: int, weight_bytes_per_param: float, *, tp: int, dp: int,
                     zero: int, offload_all: bool) -> float:
    # Weights: params x bytes, sharded over dp at ZeRO-3 / FSDP full shard, on host with
    # offload=all (ZeRO-Infinity), where only the gathered working set stays on the GPU.
    if offload_all:
        return 0.0
    return sharded(params * weight_bytes_per_param, tp=tp, dp=dp, zero_shards=zero >= 3)


def zero3_gather_buffer(spec: ModelSpec, weight_bytes_per_param: float, *, tp: int, dp: int,
                        zero: int, offload_all: bool) -> float:
    # ZeRO-3/FSDP all-gathers one block to compute and prefetches the next: two blocks' full
    # 16-bit weights (FSDP forward_prefetch / DeepSpeed stage3_prefetch_bucket_size).
    if zero < 3 or (dp == 1 and not offload_all):
        return 0.0
    largest = max(layer_params(spec), spec.vocab * spec.hidden)
    return 2 * largest * weight_bytes_per_param / tp


@cache
def routed_expert_params(spec: ModelSpec) -> int:
    """Parameters of the routed experts (shared experts and routers excluded): what expert
    parallelism shards whole over its ranks."""
    return sum(t.elements for t in tensors(spec) if t.role.removesuffix("_bias") in EXPERT_ROLES)


def expert_parallel_local(params: int, spec: ModelSpec, ep: int) -> int:
    """Parameters one rank holds of `params` when the routed experts are sharded over `ep`
    ranks (Megatron expert parallelism): the dense part whole, 1/ep of the experts."""
    if ep <= 1:
        return params
    experts = routed_expert_params(spec)
    return params - experts + experts // ep


def largest_tensor(spec: ModelSpec) -> int:
    """Elements of the largest single stored tensor (usually the embedding table)."""
    return max(t.elements for t in tensors(spec))


def gradients_live_with_activations(grads: float, acts: float, *, interleaved: bool) -> float:
    # When gradients are freed after each step (zero_grad(set_to_none=True), PyTorch's default
    # since 2.0) and no bucket holds them (one GPU, or FSDP/ZeRO-3), backward creates each
    # layer's gradients as it frees that layer's activations: the peak is
    # max(activations, gradients), not their sum. DDP and ZeRO-1/2 keep persistent gradient
    # buckets/partitions, so there the two add up.
    return min(grads, acts) if interleaved else 0.0


def gradients(trainable: int, grad_bytes: float, *, tp: int, dp: int, zero: int,
              offload_all: bool) -> float:
    # Gradients: trainable params x bytes; sharded from ZeRO-2 on; host with offload=all.
    if offload_all:
        return 0.0
    return sharded(trainable * grad_bytes, tp=tp, dp=dp, zero_shards=zero >= 2)


def optimizer_states(trainable: int, state_bytes: float, *, tp: int, dp: int, zero: int,
                     offloaded: bool) -> float:
    # Optimizer states (and the fp32 master copy): sharded from ZeRO-1 on; offload moves them
    # to host memory and runs the step on the CPU (ZeRO-Offload, Ren et al. 2021).
    if offloaded:
        return 0.0
    return sharded(trainable * state_bytes, tp=tp, dp=dp, zero_shards=zero >= 1)


# -- LoRA --------------------------------------------------------------------------------------

# Attention projections, MiniMax-M1's lightning layers included (qkv_proj, output_gate,
# out_proj are those layers' attention matrices).
ATTN_TARGETS = frozenset({"attn_q", "attn_k", "attn_v", "attn_output", "attn_q_a", "attn_q_b",
                          "attn_kv_a_mqa", "attn_kv_b", "lin_attn_qkv", "lin_attn_gate",
                          "lin_attn_output"})
MLP_TARGETS = frozenset({"ffn_gate", "ffn_up", "ffn_down", "ffn_gate_shexp", "ffn_up_shexp",
                         "ffn_down_shexp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"})


@cache
def lora_params(spec: ModelSpec, rank: int, targets: str) -> int:
    # LoRA adds A (r x d_in) and B (d_out x r) to each targeted matrix: r * (d_in + d_out)
    # (Hu et al. 2021). Routed experts get one adapter pair per expert.
    chosen = ATTN_TARGETS if targets == "attn" else ATTN_TARGETS | MLP_TARGETS
    total = 0
    for t in tensors(spec):
        if t.role in chosen:
            copies = spec.experts if t.role.endswith("_exps") else 1
            total += copies * rank * (t.d_in + t.d_out)
    return total


# -- activations ---------------------------------------------------------------------------------


# What checkpointing=selective means, everywhere gpusize uses it (memory, speed, launch, the
# answer): the outputs of every matmul and of attention are kept, and the cheap elementwise ops
# between them (norms, the MLP's activation function and gating product) are recomputed in
# backward. This is PyTorch's selective activation checkpointing with an op policy that saves
# matmul outputs (torch.utils.checkpoint, create_selective_checkpoint_contexts, PyTorch 2.4+)
# and the LLaMA paper's recipe ("we save the activations that are expensive to compute, such as
# the outputs of linear layers", arXiv:2302.13971 sec. 2.4); Megatron runs it as
# --recompute-granularity selective --recompute-modules layernorm (moe_act for MoE experts).
# Megatron's older default, recomputing the attention core (Korthikanti et al. 2022), saves
# nothing once flash attention keeps no s x s scores, so it is not what gpusize sizes.
SELECTIVE_TEXT = N_("selective activation checkpointing: the outputs of every matmul and of "
                    "attention are kept; norms and the MLP's activation function are recomputed "
                    "in backward, no matmul is (PyTorch selective AC with a matmul-saving "
                    "policy, as the LLaMA paper trained; Megatron --recompute-modules "
                    "layernorm)")
# Megatron's other selective, its default before --recompute-modules (core_attn, Korthikanti et
# al. 2022) and what Megatron-core 0.6-era runs mean by "selective recomputation": the attention
# core is re-run in backward. Under flash attention it keeps every block's tensors (the core
# saves no s x s scores to drop), so it sizes as none and costs one more attention forward.
ATTENTION_TEXT = N_("attention recomputation (Megatron's --recompute-granularity selective with "
                    "its default core_attn module): every block keeps its saved tensors, since "
                    "flash attention stores no s x s scores to drop; backward re-runs the "
                    "attention forward")
# the modes under which every block keeps all it saved (no block is recomputed whole)
KEEPS_EVERY_BLOCK = frozenset({"none", "attention"})


class LayerActivations(NamedTuple):
    """Bytes per token of one block's saved activations, split by whether TP shards them."""

    replicated: float
    tp_sharded: float


@cache
def layer_activation_bytes(spec: ModelSpec, checkpointing: str, adapters: bool,
                           targets: str, rank: int) -> LayerActivations:
    """Saved tensors of one transformer block per token, 16-bit, flash attention.

    Korthikanti et al. 2022 (Reducing Activation Recomputation, sec. 4.1) count the tensors
    autograd keeps; their 34*s*b*h is GPT-3's block (4h MLP, GeLU, dropout). Here the same
    count is made from this architecture's widths, with flash/SDPA attention (no s^2 scores)
    and no dropout, as modern Llama-style models train:
      attention: norm input h, norm output h (q/k/v input), q+k+v, attention output (o input)
      MLP: norm input h, norm output h, gate and up outputs, act(gate), act*up (down input)
    selective: recompute norms and elementwise ops, keep matmul outputs (PyTorch selective AC).
    LoRA freezes the base (adapters=True): a frozen linear's input is saved only if an adapter
    sits on it. Eager mode's unfused norms add eager_norm_copies() on top.
    """
    b = 2  # bf16 activations
    h = spec.hidden
    if spec.attention == "mla":  # k and v as MLA decompresses them for attention
        qkv = spec.q_dim * 2 + spec.heads * spec.v_head_dim
        attn_out = spec.heads * spec.v_head_dim
    else:
        qkv = spec.q_dim + 2 * spec.kv_dim
        attn_out = spec.q_dim
    if spec.is_moe:
        width = spec.moe_intermediate * spec.active_experts + (
            spec.shared_intermediate or spec.moe_intermediate * spec.shared_experts)
    else:
        width = spec.intermediate
    gated = spec.mlp == "gated"
    frozen_mlp = adapters and targets == "attn"
    if checkpointing == "selective":
        replicated = b * (h + h + h)  # layer input, o_proj output, down_proj output
        sharded = b * (qkv + attn_out + (2 if gated else 1) * width)
    else:
        replicated = b * 4 * h  # two norm inputs and outputs (unsharded without seq. parallel)
        if frozen_mlp:
            replicated -= b * h  # MLP norm output feeds only frozen matrices
        mlp = (4 if gated else 2) * width - (width if frozen_mlp else 0)
        sharded = b * (qkv + attn_out + mlp)
    if adapters:
        # each adapter keeps its r-wide intermediate (A x) for B's gradient
        sharded += b * rank * (4 + (3 if targets == "all" else 0))
    return LayerActivations(replicated=replicated, tp_sharded=sharded)


def _per_token(per: LayerActivations, tp: int) -> float:
    # With tensor parallelism, training also splits the sequence for the norms and dropout
    # regions (Megatron-LM's sequence parallelism, Korthikanti et al. 2022 sec. 4.2.2: 34sbh/t),
    # so nothing per token stays replicated across the TP group.
    return (per.replicated + per.tp_sharded) / tp


# Bytes per token and norm that eager mode keeps beyond a fused norm: RMSNorm run op by op in
# fp32 leaves autograd its fp32 input and fp32 normalized copy (4h + 4h) beside the bf16 output
# (2h) a fused kernel keeps alone (torchtune's table: compile alone -15% peak, no checkpointing).
EAGER_NORM_BYTES_PER_HIDDEN = 6


def layers_holding_norm_copies(spec: ModelSpec, checkpointing: str, offloaded: bool) -> int:
    """Blocks whose norm intermediates are alive at the peak: every kept block without
    checkpointing; with selective or full checkpointing the norms are recomputed in backward,
    one block at a time, so only the block being recomputed holds them."""
    if checkpointing not in KEEPS_EVERY_BLOCK:
        return 1
    return min(2, spec.layers) if offloaded else spec.layers


def eager_norm_copies(spec: ModelSpec, *, seq: int, batch: int, tp: int, checkpointing: str,
                      offloaded: bool = False) -> float:
    # What torch.compile saves: it fuses each norm into one kernel, so autograd keeps the bf16
    # output and no fp32 copies; eager mode (compile=false) keeps 6h bytes more per norm and
    # token in every block that holds its norm intermediates.
    per_token = EAGER_NORM_BYTES_PER_HIDDEN * spec.hidden * spec.norms_per_layer / tp
    return seq * batch * per_token * layers_holding_norm_copies(spec, checkpointing, offloaded)


def activations(spec: ModelSpec, *, seq: int, batch: int, tp: int, checkpointing: str,
                adapters: bool, targets: str, rank: int, compiled: bool = False,
                offloaded: bool = False) -> float:
    # Per GPU: tokens x per-layer bytes x layers (none/selective), or layer inputs only plus one
    # block being recomputed at a time (full), Korthikanti et al. 2022 eq. 2 and sec. 5.
    # Selective likewise recomputes in backward what it dropped (norm and activation-function
    # outputs), one block at a time. Eager mode (compiled=False) adds the fp32 copies of unfused
    # norms (eager_norm_copies). Activation offloading (torchtune) keeps two layers' worth on the
    # GPU (the one computing and the one in transfer); the rest waits in host memory.
    tokens = seq * batch
    every = _per_token(layer_activation_bytes(spec, "none", adapters, targets, rank), tp)
    kept_layers = min(2, spec.layers) if offloaded else spec.layers
    eager = 0.0 if compiled else eager_norm_copies(
        spec, seq=seq, batch=batch, tp=tp, checkpointing=checkpointing, offloaded=offloaded)
    if checkpointing == "full":
        # each block's input, also split over the sequence under TP
        return tokens * (2 * spec.hidden * kept_layers / tp + every) + eager
    if checkpointing == "selective":
        kept = _per_token(layer_activation_bytes(spec, "selective", adapters, targets, rank), tp)
        return tokens * (kept * kept_layers + (every - kept)) + eager
    return tokens * every * kept_layers + eager


LOSS_CHUNKS = 8  # torchtune's CEWithChunkedOutputLoss default num_output_chunks
FULL_LOSS_BYTES_PER_LOGIT = 4 + 4 + 4  # see logits(): three fp32 s x b x V tensors at the peak


# Every logits-sized (s x b x V) buffer one training step of a Hugging Face Transformers causal
# LM creates, in bytes per logit (transformers 4.36-4.45 LlamaForCausalLM.forward and the Trainer
# under accelerate's bf16 autocast; 4.46+ ForCausalLMLoss upcasts inside the loss the same way):
# forward, the head's bf16 output, its fp32 upcast (logits.float()), the shifted contiguous copy
# (logits[..., :-1, :]) and F.cross_entropy's log-softmax; backward, nll_loss's dense gradient,
# log-softmax's gradient, the slice's zero-filled gradient of the unshifted shape and its cast
# back to bf16 for the head's matmul. At most 12 of these 28 bytes are alive at once
# (FULL_LOSS_BYTES_PER_LOGIT), but over SFT batches of varying length PyTorch's caching
# allocator (no expandable segments, its default) keeps each in a block of its own: a block
# freed after a shorter batch, split since by smaller tensors, cannot hold the next longer
# batch's buffer, so the longest batch adds new segments for all of them and the reserve keeps
# them. Where every batch has one shape (packed or fixed-length sequences) the blocks are reused
# and only the 12 bytes alive count.
HF_STEP_LOGIT_BUFFERS: tuple[tuple[str, int], ...] = (
    ("head output, bf16", 2), ("fp32 upcast", 4), ("shifted copy", 4), ("log-softmax", 4),
    ("nll_loss gradient", 4), ("log-softmax gradient", 4), ("unshifted zero-filled gradient", 4),
    ("gradient cast to bf16", 2))
HF_VARIED_LENGTH_BYTES_PER_LOGIT = sum(size for _name, size in HF_STEP_LOGIT_BUFFERS)


# A compiled unfused loss (torch.compile over F.cross_entropy(logits.float(), labels): torchtitan
# compiles its loss with the model since 2025, torchtune with compile=True, the HF Trainer's
# torch_compile compiles the forward that computes it): inductor fuses the upcast, log-softmax
# and gather into reductions that keep a per-token log-sum-exp, and backward writes the gradient
# straight in bf16, so the step's only logits-sized buffers are the bf16 logits it saves (2) and
# their bf16 gradient (2).
COMPILED_LOSS_BYTES_PER_LOGIT = 2 + 2


def logits(spec: ModelSpec, *, seq: int, batch: int, tp: int, loss: str = "full",
           compiled: bool = False) -> float:
    # Output logits s*b*V at the loss's peak. An unfused fp32 cross-entropy (HF Transformers'
    # loss on logits.float(), torchtune's without chunks) peaks at 12 bytes per logit when
    # backward starts, with every block's activations still saved: the log-softmax kept from
    # forward (4), nll_loss's dense gradient into it (4) and log_softmax's gradient out (4).
    # HF's forward reaches the same 12: fp32 logits (4; the bf16 ones are freed once upcast),
    # the shifted contiguous copy (4) and the log-softmax (4). Chunked cross-entropy upcasts one
    # of 8 chunks at a time: 2 + 8/8 = 3 bytes. Split across TP ranks (vocab-parallel).
    # Dominant for 128k-256k vocabularies at long sequence; torchtune measured -15.8% peak from
    # chunking alone.
    if loss == "fused":
        return fused_loss_bytes(spec, tokens=seq * batch) / tp
    return seq * batch * spec.vocab * loss_bytes_per_logit(loss, compiled=compiled) / tp


def loss_bytes_per_logit(loss: str, *, compiled: bool) -> float:
    """Bytes alive per logit at the peak of a chunked or unfused (eager or compiled) loss."""
    if loss == "chunked":
        return 2 + 8 / LOSS_CHUNKS
    return COMPILED_LOSS_BYTES_PER_LOGIT if compiled else FULL_LOSS_BYTES_PER_LOGIT


def logit_blocks_kept(spec: ModelSpec, *, seq: int, batch: int, tp: int, loss: str,
                      varied_lengths: bool, compiled: bool = False) -> float:
    """Bytes the caching allocator holds reserved beyond the loss's live peak: with an unfused
    loss over batches of varying length, every logits-sized buffer of the step
    (HF_STEP_LOGIT_BUFFERS) less the 12 bytes logits() counts alive. Reserved, not allocated:
    torch.cuda.max_memory_reserved and nvidia-smi see it, max_memory_allocated does not."""
    if loss != "full" or not varied_lengths or compiled:  # compiled: both buffers alive
        return 0.0
    kept = HF_VARIED_LENGTH_BYTES_PER_LOGIT - FULL_LOSS_BYTES_PER_LOGIT
    return seq * batch * spec.vocab * kept / tp


def fused_loss_chunk(spec: ModelSpec, tokens: int) -> int:
    """Tokens whose logits a fused linear cross-entropy holds at once: Liger-Kernel's rule
    (ops/fused_linear_cross_entropy.py: ceil(V / H) chunks, rounded up to a power of two), so a
    chunk's logits weigh about as much as the hidden states."""
    inc_factor = -(-spec.vocab // spec.hidden)
    return min(tokens, 1 << max(0, math.ceil(math.log2(-(-tokens // inc_factor)))))


def fused_loss_bytes(spec: ModelSpec, *, tokens: int) -> float:
    # Fused linear cross-entropy (Liger-Kernel's, Unsloth's unsloth_fused_ce_loss, Apple's Cut
    # Cross-Entropy) multiplies the head chunk by chunk and computes the loss and its gradient in
    # the chunk's own 16-bit buffer: the full s x b x V logits never exist. Peak: one chunk's
    # logits (2 B each), the gradient into the hidden states it fills as it goes (2 B x H a
    # token) and the fp32 per-token loss (4 B).
    return fused_loss_chunk(spec, tokens) * spec.vocab * 2 + tokens * (spec.hidden * 2 + 4)


# -- inference -------------------------------------------------------------------------------------


def kv_cache(spec: ModelSpec, *, context: int, users: int, kv_bytes: int, tp: int,
             pp: int = 1) -> float:
    # KV cache = sum over layers of 2 x kv_heads x head_dim x bytes x tokens; sliding-window
    # layers hold at most the window; MLA stores the latent (kv_lora_rank + rope dim) once, no
    # x2 (DeepSeek-V2 paper sec. 2.1); TP splits kv heads with at least one per rank; a
    # pipeline/layer split holds its share of layers. tokens = context x users.
    if spec.attention == "mla":
        per_token_layer = (spec.kv_lora_rank + spec.qk_rope_head_dim) * kv_bytes
        if spec.index_heads:
            # DeepSeek-V3.2's indexer caches one FP8 key of index_head_dim per token and layer
            # plus an fp32 scale per 128 values (inference/model.py Indexer k_cache,
            # k_scale_cache), whatever the KV dtype.
            per_token_layer += spec.index_head_dim + 4 * -(-spec.index_head_dim // 128)
    else:
        heads_per_rank = math.ceil(spec.kv_heads / tp)
        per_token_layer = 2 * heads_per_rank * spec.head_dim * kv_bytes
    window_layers = spec.sliding_layers if spec.sliding_window else 0
    full_layers = spec.attention_layers - window_layers
    windowed = min(context, spec.sliding_window) if window_layers else 0
    per_sequence = per_token_layer * (full_layers * context + window_layers * windowed)
    # Lightning (linear) attention layers (MiniMax-M1) keep no per-token KV: each holds one
    # heads x head_dim x head_dim state per sequence, whatever the context, in float32 (the
    # reference kernel's kv accumulator, modeling_minimax_m1.py); TP splits the heads.
    linear_layers = spec.layers - spec.attention_layers
    per_sequence += linear_layers * math.ceil(spec.heads / tp) * spec.head_dim**2 * 4
    return per_sequence * users / pp


# Tokens one prefill pass holds at once: vLLM's chunked prefill (max_num_batched_tokens 2048),
# llama.cpp's physical batch (-ub 512); Hugging Face generate() prefills the whole prompt.
PREFILL_CHUNK = {"vllm": 2048, "llama.cpp": 512}


def inference_activations(spec: ModelSpec, *, context: int, users: int, tp: int,
                          engine: str = "vllm") -> float:
    # Prefill workspace for one chunk of prompt tokens; live per token: residual + norm
    # output, q/k/v, gate/up outputs and the act output (16-bit), plus fp32 logits for the
    # sampled positions (one per sequence).
    chunk = min(context * users, PREFILL_CHUNK.get(engine, context * users))
    return chunk * prefill_bytes_per_token(spec, tp) + users * spec.vocab * 4 / tp


def prefill_bytes_per_token(spec: ModelSpec, tp: int) -> float:
    """Activation bytes a prompt token keeps live in one layer's forward (16-bit): residual
    and norm output, q/k/v, the gate/up outputs and the act output, split by TP."""
    width = spec.intermediate or spec.moe_intermediate * max(spec.active_experts, 1)
    return 2 * (2 * spec.hidden + (spec.q_dim + 2 * spec.kv_dim + 3 * width) / tp)


class VllmBatchDefaults(NamedTuple):
    tokens: int  # max_num_batched_tokens: the prompt and decode tokens one step carries at most
    sequences: int  # max_num_seqs: the requests running at once at most


# `vllm serve` picks its scheduler budget by card (vllm/engine/arg_utils.py get_batch_defaults,
# v0.10-0.11): cards of 70 GiB or more, A100 excepted (vLLM PR #17885: a larger budget lowered
# its throughput), 8,192 tokens a step and 1,024 sequences; the others 2,048 and 256.
VLLM_LARGE_CARD_BYTES = 70 * GIB
VLLM_BATCH_DEFAULTS = (VllmBatchDefaults(8192, 1024), VllmBatchDefaults(2048, 256))


def vllm_batch_defaults(card_name: str, memory_bytes: int) -> VllmBatchDefaults:
    large = memory_bytes >= VLLM_LARGE_CARD_BYTES and "a100" not in card_name.lower()
    return VLLM_BATCH_DEFAULTS[0 if large else 1]


# The sampler's dummy run in vLLM's memory profile holds the fp32 logits of max_num_seqs
# requests and the probabilities computed from them: two fp32 copies of the vocabulary a row.
SAMPLER_FP32_COPIES = 2


def vllm_profile_peak(spec: ModelSpec, *, tp: int, defaults: VllmBatchDefaults) -> float:
    """Activation bytes per GPU vLLM's profile run measures before it sizes the KV pool
    (gpu_model_runner.profile_run): one forward of max_num_batched_tokens tokens, then the
    sampler over max_num_seqs rows, whose logits every tensor-parallel rank gathers whole."""
    return (defaults.tokens * prefill_bytes_per_token(spec, tp)
            + defaults.sequences * spec.vocab * 4 * SAMPLER_FP32_COPIES)


# -- runtime overhead ---------------------------------------------------------------------------

CUDA_CONTEXT = 0.5 * GIB  # CUDA context + cuBLAS/cuDNN workspaces of a PyTorch process
NCCL_BUFFERS = 2 * GIB  # per GPU once gpus > 1 (llm-d's measurement for vLLM TP)
FRAGMENTATION = 0.05  # share of allocated memory the caching allocator holds unused


# What each runtime reserves beyond the tensors. vLLM takes gpu_memory_utilization (0.9) of the
# card up front and fits weights, activations and the KV pool inside it; llama.cpp allocates
# static ggml buffers (no caching allocator, so no fragmentation) and splits layers with plain
# copies (no NCCL); Hugging Face device_map likewise moves activations between cards without
# NCCL. Training and vLLM's tensor/pipeline parallel groups talk through NCCL.
USABLE_SHARE = {"vllm": 0.9}
NO_NCCL = frozenset({"llama.cpp", "transformers"})
NO_FRAGMENTATION = frozenset({"llama.cpp"})


def overhead(allocated: float, *, gpus: int, engine: str | None = None
             ) -> tuple[float, float, float]:
    """(CUDA context, NCCL buffers, allocator fragmentation) in bytes, for `gpus` cards that work
    on one copy of the model together (a serving replica or a training job) under `engine`
    (None: training with PyTorch)."""
    nccl = NCCL_BUFFERS if gpus > 1 and engine not in NO_NCCL else 0.0
    frag = 0.0 if engine in NO_FRAGMENTATION else allocated * FRAGMENTATION
    return CUDA_CONTEXT, nccl, frag


def usable_share(engine: str | None, gpu_util: float | None = None) -> float:
    """Share of the card the engine lets the model use: vLLM's gpu_memory_utilization (0.9
    unless gpu_util= sets it), the whole card for the others."""
    if engine == "vllm" and gpu_util is not None:
        return gpu_util
    return USABLE_SHARE.get(engine or "", 1.0)


@cache
def largest_linear(spec: ModelSpec) -> int:
    """Elements of the largest single linear matrix (one expert for MoE), head excluded."""
    return max(
        t.elements // (spec.experts if t.role.endswith("_exps") else 1)
        for t in tensors(spec)
        if t.role in LINEAR_ROLES
    )
