"""Weight memory per quantization scheme: float checkpoints, bitsandbytes, GPTQ/AWQ, FP8, MXFP4,
GGUF.

Every size is computed tensor by tensor from the inventory in engine.architecture, using the
storage layout of the library that produces the checkpoint (sources cited where each rule is
applied). GGUF files are sized by reproducing llama.cpp's per-tensor type choice
(`llama_tensor_get_type` in src/llama-quant.cpp) and ggml's block layouts (ggml-common.h).

Results are cached per (spec, quant): the first call walks the tensor list once, later calls are
a dictionary look-up.

For GPU sizing note that llama.cpp keeps token_embd in host memory even with every layer
offloaded (its loader reports it as the "CPU buffer"); WeightSize.by_role["token_embd"] gives
that share.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Literal, NamedTuple

from engine.architecture import (
    ATTN_ROLES,
    EXPERT_ROLES,
    LINEAR_ROLES,
    MLA_ROLES,
    ModelSpec,
    Tensor,
    fp8_block_scales,
    is_fp8_block_quantized,
    mtp_tensors,
    tensors,
)
from engine.i18n import _, current

Family = Literal["float", "bnb", "gptq_awq", "fp8", "mxfp4", "gguf"]

LLAMA_QUANT = "https://github.com/ggml-org/llama.cpp/blob/master/src/llama-quant.cpp"
GGML_COMMON = "https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h"
BNB_FUNCTIONAL = (
    "https://github.com/bitsandbytes-foundation/bitsandbytes/blob/main/bitsandbytes/functional.py"
)
OCP_MX = "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf"


class QuantScheme(NamedTuple):
    """A user-facing quantization choice and where its storage layout is defined."""

    name: str
    family: Family
    nominal_bits: float  # bits per quantized weight, before overheads
    description: str
    source: str  # URL of the code or spec that defines the layout


def _q(name: str, family: Family, bits: float, description: str, source: str) -> QuantScheme:
    return QuantScheme(
        name=name, family=family, nominal_bits=bits, description=description, source=source
    )


QUANTS: dict[str, QuantScheme] = {
    q.name: q
    for q in (
        _q("bf16", "float", 16, "bfloat16 checkpoint, every tensor 2 bytes",
           "https://pytorch.org/docs/stable/tensor_attributes.html#torch.dtype"),
        _q("fp16", "float", 16, "float16 checkpoint, every tensor 2 bytes",
           "https://pytorch.org/docs/stable/tensor_attributes.html#torch.dtype"),
        _q("fp32", "float", 32, "float32 checkpoint, every tensor 4 bytes",
           "https://pytorch.org/docs/stable/tensor_attributes.html#torch.dtype"),
        _q("fp8", "fp8", 8,
           "FP8 E4M3 linear layers with one fp32 scale per output channel "
           "(llm-compressor FP8_DYNAMIC as vLLM loads it), or per 128 x 128 block for models "
           "released that way (DeepSeek-V3, fp8_block); embeddings and lm_head 16-bit",
           "https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/layers/"
           "quantization/utils/fp8_utils.py"),
        _q("mxfp4", "mxfp4", 4,
           "OCP MXFP4 on the MoE expert matrices: 4-bit E2M1 values with one E8M0 scale per 32 "
           "(4.25 bits); attention, router, embeddings and lm_head bf16, as gpt-oss ships and "
           "vLLM's Mxfp4MoEMethod loads it (dense layers are not converted)", OCP_MX),
        _q("int8", "bnb", 8,
           "bitsandbytes LLM.int8(): int8 linear weights with an fp32 absmax per row",
           "https://github.com/bitsandbytes-foundation/bitsandbytes/blob/main/bitsandbytes/nn/"
           "modules.py"),
        _q("nf4", "bnb", 4,
           "bitsandbytes NF4, blocksize 64, double-quantized absmax (QLoRA); "
           "embeddings and lm_head 16-bit", BNB_FUNCTIONAL),
        _q("gptq", "gptq_awq", 4,
           "GPTQ 4-bit, group size 128: packed int32 qweight, fp16 scales and packed 4-bit "
           "zeros per group and column, int32 g_idx per input row",
           "https://github.com/AutoGPTQ/AutoGPTQ/blob/main/auto_gptq/nn_modules/qlinear/"
           "qlinear_cuda_old.py"),
        _q("awq", "gptq_awq", 4,
           "AWQ 4-bit GEMM, group size 128: packed int32 qweight and zeros, fp16 scales",
           "https://github.com/casper-hansen/AutoAWQ/blob/main/awq/modules/linear/gemm.py"),
        _q("int4", "gptq_awq", 4,
           "alias: GPTQ/AWQ-style 4-bit, group size 128 (sized as GPTQ, the larger of the two)",
           "https://github.com/AutoGPTQ/AutoGPTQ/blob/main/auto_gptq/nn_modules/qlinear/"
           "qlinear_cuda_old.py"),
        _q("q2_k", "gguf", 2, "llama.cpp Q2_K mix (mostly q2_K, attn_v/ffn_down/attn_output "
           "q3_K or q4_K)", LLAMA_QUANT),
        _q("q3_k_m", "gguf", 3, "llama.cpp Q3_K_M mix (q3_K, attn_v/ffn_down/attn_output "
           "q4_K-q5_K)", LLAMA_QUANT),
        _q("q4_0", "gguf", 4, "llama.cpp Q4_0 (legacy 32-element blocks, fp16 scale), "
           "output q6_K", LLAMA_QUANT),
        _q("q4_k_m", "gguf", 4, "llama.cpp Q4_K_M mix (q4_K, half of attn_v/ffn_down q6_K, "
           "output q6_K)", LLAMA_QUANT),
        _q("q5_k_m", "gguf", 5, "llama.cpp Q5_K_M mix (q5_K, half of attn_v/ffn_down q6_K, "
           "output q6_K)", LLAMA_QUANT),
        _q("q6_k", "gguf", 6, "llama.cpp Q6_K (every matrix q6_K)", LLAMA_QUANT),
        _q("q8_0", "gguf", 8, "llama.cpp Q8_0 (every matrix q8_0)", LLAMA_QUANT),
    )
}

# Spellings users type that mean one of the schemes above (the grammar's quant= reads these too).
ALIASES: dict[str, str] = {
    "f16": "fp16", "float16": "fp16", "half": "fp16",
    "bfloat16": "bf16", "f32": "fp32", "float32": "fp32",
    "fp8_e4m3": "fp8", "e4m3": "fp8", "w8a8_fp8": "fp8", "mx_fp4": "mxfp4",
    "bnb4": "nf4", "bnb_nf4": "nf4", "4bit": "nf4", "qlora": "nf4",
    "bnb8": "int8", "llm_int8": "int8", "8bit": "int8",
    "w4a16": "int4", "gptq_int4": "gptq", "awq_int4": "awq",
    "q4_k": "q4_k_m", "q5_k": "q5_k_m", "q3_k": "q3_k_m",
    "q4km": "q4_k_m", "q5km": "q5_k_m", "q3km": "q3_k_m", "q8": "q8_0", "q4": "q4_0",
}


@lru_cache(maxsize=256)
def canonical_quant(name: str) -> str:
    """A spelling as the catalog names it (`Q4-K-M` -> q4_k_m, `4bit` -> nf4); unknown names come
    back normalised but unresolved."""
    key = name.strip().lower().replace("-", "_").replace(".", "_").replace(" ", "_")
    return ALIASES.get(key, key)



def get_quant(name: str | QuantScheme) -> QuantScheme:
    """Look a scheme up by name or alias, any case; `Q4_K_M`, `q4-k-m` and `q4_k_m` all work."""
    if isinstance(name, QuantScheme):
        return name
    key = canonical_quant(name)
    if key not in QUANTS:
        raise ValueError(f"unknown quantization {name!r}; choose from {', '.join(QUANTS)}")
    return QUANTS[key]


# --------------------------------------------------------------------------------------------
# GGUF block layouts (ggml/src/ggml-common.h). Quantized rows are stored as whole blocks.
# --------------------------------------------------------------------------------------------


class GgufBlock(NamedTuple):
    bytes_per_block: int
    elements_per_block: int


QK_K = 256  # super-block size of the k-quants (ggml-common.h: #define QK_K 256)

GGUF_BLOCKS: dict[str, GgufBlock] = {
    "f32": GgufBlock(4, 1),  # ggml.c type_traits[GGML_TYPE_F32]: sizeof(float), blck_size 1
    "f16": GgufBlock(2, 1),  # ggml.c type_traits[GGML_TYPE_F16]: sizeof(ggml_fp16_t), blck_size 1
    "bf16": GgufBlock(2, 1),  # ggml.c type_traits[GGML_TYPE_BF16]: sizeof(ggml_bf16_t)
    # block_q4_0 { ggml_half d; uint8_t qs[QK4_0/2]; }, QK4_0 = 32 -> 2 + 16
    "q4_0": GgufBlock(18, 32),
    # block_q4_1 { ggml_half d, m; uint8_t qs[QK4_1/2]; }, QK4_1 = 32 -> 4 + 16
    "q4_1": GgufBlock(20, 32),
    # block_q5_0 { ggml_half d; uint8_t qh[4]; uint8_t qs[QK5_0/2]; }, QK5_0 = 32 -> 2 + 4 + 16
    "q5_0": GgufBlock(22, 32),
    # block_q5_1 { ggml_half d, m; uint8_t qh[4]; uint8_t qs[QK5_1/2]; } -> 4 + 4 + 16
    "q5_1": GgufBlock(24, 32),
    # block_q8_0 { ggml_half d; int8_t qs[QK8_0]; }, QK8_0 = 32 -> 2 + 32
    "q8_0": GgufBlock(34, 32),
    # block_iq4_nl { ggml_half d; uint8_t qs[QK4_NL/2]; }, QK4_NL = 32 -> 2 + 16
    "iq4_nl": GgufBlock(18, 32),
    # block_q2_K { uint8_t scales[QK_K/16]; uint8_t qs[QK_K/4]; ggml_half d, dmin; } -> 16+64+4
    "q2_K": GgufBlock(84, QK_K),
    # block_q3_K { uint8_t hmask[QK_K/8]; qs[QK_K/4]; scales[12]; ggml_half d; } -> 32+64+12+2
    "q3_K": GgufBlock(110, QK_K),
    # block_q4_K { ggml_half d, dmin; uint8_t scales[K_SCALE_SIZE=12]; qs[QK_K/2]; } -> 4+12+128
    "q4_K": GgufBlock(144, QK_K),
    # block_q5_K { ggml_half d, dmin; scales[12]; qh[QK_K/8]; qs[QK_K/2]; } -> 4+12+32+128
    "q5_K": GgufBlock(176, QK_K),
    # block_q6_K { uint8_t ql[QK_K/2]; qh[QK_K/4]; int8_t scales[QK_K/16]; ggml_half d; }
    #   -> 128+64+16+2
    "q6_K": GgufBlock(210, QK_K),
}

UNQUANTIZED_GGUF_TYPES = frozenset({"f32", "f16", "bf16"})

# llama-quantize file types we support -> the default tensor type for that file type
# (llama_ftype_get_default_type in src/llama-quant.cpp).
GGUF_FTYPES: dict[str, str] = {
    "q2_k": "q2_K",  # LLAMA_FTYPE_MOSTLY_Q2_K   -> GGML_TYPE_Q2_K
    "q3_k_m": "q3_K",  # LLAMA_FTYPE_MOSTLY_Q3_K_M -> GGML_TYPE_Q3_K
    "q4_0": "q4_0",  # LLAMA_FTYPE_MOSTLY_Q4_0   -> GGML_TYPE_Q4_0
    "q4_k_m": "q4_K",  # LLAMA_FTYPE_MOSTLY_Q4_K_M -> GGML_TYPE_Q4_K
    "q5_k_m": "q5_K",  # LLAMA_FTYPE_MOSTLY_Q5_K_M -> GGML_TYPE_Q5_K
    "q6_k": "q6_K",  # LLAMA_FTYPE_MOSTLY_Q6_K   -> GGML_TYPE_Q6_K
    "q8_0": "q8_0",  # LLAMA_FTYPE_MOSTLY_Q8_0   -> GGML_TYPE_Q8_0
}

# tensor_type_fallback() in src/llama-quant.cpp: when a row (ne[0]) is not a whole number of
# blocks, k-quants fall back to a 32-element type. Current llama.cpp maps Q2_K/Q3_K to Q4_0
# (older trees used IQ4_NL, which has the same 18-byte/32 block).
_FALLBACK: dict[str, str] = {
    "q2_K": "q4_0",  # case GGML_TYPE_Q2_K / Q3_K: return_type = GGML_TYPE_Q4_0
    "q3_K": "q4_0",
    "q4_K": "q5_0",  # case GGML_TYPE_Q4_K: return_type = GGML_TYPE_Q5_0
    "q5_K": "q5_1",  # case GGML_TYPE_Q5_K: return_type = GGML_TYPE_Q5_1
    "q6_K": "q8_0",  # case GGML_TYPE_Q6_K: return_type = GGML_TYPE_Q8_0
}


def gguf_tensor_bytes(ggml_type: str, elements: int, row: int) -> int:
    """Bytes of one tensor of `elements` values stored as rows of `row` values."""
    block = GGUF_BLOCKS[ggml_type]
    rows = elements // row if row else 1
    per_row = -(-(row or elements) // block.elements_per_block) * block.bytes_per_block
    return rows * per_row


# --------------------------------------------------------------------------------------------
# llama.cpp's per-tensor type choice
# --------------------------------------------------------------------------------------------


def _normalize_ftype(ftype: str) -> str:
    key = get_quant(ftype).name
    if key not in GGUF_FTYPES:
        raise ValueError(f"{ftype!r} is not a GGUF file type; choose from {', '.join(GGUF_FTYPES)}")
    return key


def _category(role: str) -> str:
    """tensor_get_category(): substring matches on the GGUF tensor name, in llama.cpp's order."""
    if role == "output":
        return "output"  # name == "output.weight"
    if role == "token_embd":
        return "token_embd"  # name == "token_embd.weight"
    if role == "attn_kv_b":
        return "attn_v"  # ATTENTION_KV_B: category_is_attn_v() treats it like attn_v
    if role == "attn_v":
        return "attn_v"  # find("attn_v.weight")
    if role == "attn_k":
        return "attn_k"  # find("attn_k.weight")
    if role == "attn_q":
        return "attn_q"  # find("attn_q.weight")
    if role == "attn_output":
        return "attn_output"  # find("attn_output.weight")
    if role.startswith("ffn_up"):
        return "ffn_up"  # find("ffn_up"): also ffn_up_exps, ffn_up_shexp
    if role.startswith("ffn_gate"):
        return "ffn_gate"  # find("ffn_gate"): also ffn_gate_exps, ffn_gate_shexp
    if role.startswith("ffn_down"):
        return "ffn_down"  # find("ffn_down"): also ffn_down_exps, ffn_down_shexp
    # attn_q_a, attn_q_b, attn_kv_a_mqa, attn_k_b, attn_v_b ("attn_v_b.weight" does not
    # contain "attn_v.weight"): OTHER, they keep the file type's default.
    return "other"


def _use_more_bits(i_layer: int, n_layers: int) -> bool:
    # use_more_bits lambda: i_layer < n_layers/8 || i_layer >= 7*n_layers/8
    #                       || (i_layer - n_layers/8)%3 == 2   (C integer division)
    return (
        i_layer < n_layers // 8
        or i_layer >= 7 * n_layers // 8
        or (i_layer - n_layers // 8) % 3 == 2
    )


def _is_llm_type_70b(spec: ModelSpec) -> bool:
    """qs.model.type == LLM_TYPE_70B: llama.cpp's size class from the layer count.

    llama arch (Llama 2/3 70B, Mistral-family dense): 80 layers with GQA
    (`case 80: type = n_head() == n_head_kv() ? LLM_TYPE_65B : LLM_TYPE_70B`);
    qwen2 arch (Qwen2/2.5-72B): `case 80: type = LLM_TYPE_70B`.
    """
    if spec.layers != 80 or spec.is_moe:
        return False
    family = spec.family.lower()
    if family.startswith(("llama", "mistral", "codellama")):
        return spec.heads != spec.kv_heads
    return family.startswith(("qwen2", "qwq")) or family == "qwen"


def _n_gqa(spec: ModelSpec) -> int:
    # hparams.n_gqa() = n_head / n_head_kv (integer division)
    return max(1, spec.heads // spec.kv_heads)


def gguf_tensor_type(
    spec: ModelSpec, tensor: Tensor, ftype: str, *, imatrix: bool = False
) -> str:
    """The ggml type llama-quantize gives `tensor` in a `ftype` file (e.g. "Q4_K_M" -> "q6_K").

    Mirrors llama_tensor_get_type() / llama_tensor_get_type_impl() / tensor_type_fallback() in
    src/llama-quant.cpp (ggml-org/llama.cpp master, read 2026-11-30), for the file types in
    GGUF_FTYPES and the llama, qwen, gemma, mixtral/MoE and deepseek (MLA) architectures.
    `imatrix` only matters for Q4_0 (first ffn_down layers become q4_1). Falcon-only branches,
    fused attn_qkv tensors and the IQ*/TQ*/MXFP4 file types are not modelled.
    """
    ft = _normalize_ftype(ftype)
    role = tensor.role

    # tensor_allows_quantization(): "quantize only 2D and 3D tensors" (ggml_n_dims < 2 -> no).
    # Norms, biases and scalars are 1-D and were written as F32 by convert_hf_to_gguf.py
    # ("n_dims <= 1 or new_name.endswith('_norm.weight') -> F32").
    if tensor.d_in == 0 or role.endswith("_norm") or role.endswith("_bias"):
        return "f32"
    # "do not quantize expert gating tensors": ffn_gate_inp.weight; convert writes it as F32
    # (FFN_GATE_INP is in its always-F32 list).
    if role == "ffn_gate_inp":
        return "f32"
    # A [d_in, 1] matrix (Qwen2-MoE shared-expert gate) has ggml_n_dims == 1: not quantized,
    # left in the 16-bit type convert wrote.
    if tensor.d_out <= 1:
        return "f16"

    new_type = GGUF_FTYPES[ft]
    category = _category(role)
    ncols = tensor.d_in  # ne[0]: the row length, i.e. the input width
    layer = tensor.layer if tensor.layer is not None else 0
    n_layer = spec.layers
    n_expert = spec.experts
    tied = spec.tied_embeddings

    # "for arches that share the same tensor between the token embeddings and the output, we
    # quantize the token embeddings with the quantization of the output tensor"
    if category == "output" or (tied and category == "token_embd"):
        # `nx % qk_k != 0` with qk_k = ggml_blck_size(new_type) -> Q8_0
        if ncols % GGUF_BLOCKS[new_type].elements_per_block != 0:
            new_type = "q8_0"
        # `else if (new_type != GGML_TYPE_Q8_0) new_type = GGML_TYPE_Q6_K;`
        elif new_type != "q8_0":
            new_type = "q6_K"
    elif category == "token_embd":
        pass  # only the IQ*/TQ* file types change token_embd; ours keep the default
    elif category == "attn_v":
        # qs.i_attention_wv counts attn_v-like tensors in file order (= layer index) and
        # qs.n_attention_wv their total (= number of attention layers).
        i_wv, n_wv = layer, n_layer
        if ft == "q2_k":
            # `new_type = n_gqa() >= 4 ? GGML_TYPE_Q4_K : GGML_TYPE_Q3_K;`
            new_type = "q4_K" if _n_gqa(spec) >= 4 else "q3_K"
        elif ft == "q3_k_m":
            # `new_type = qs.i_attention_wv < 2 ? GGML_TYPE_Q5_K : GGML_TYPE_Q4_K;`
            new_type = "q5_K" if i_wv < 2 else "q4_K"
        elif ft in ("q4_k_m", "q5_k_m") and _use_more_bits(i_wv, n_wv):
            # `(Q4_K_M || Q5_K_M) && use_more_bits(i_attention_wv, n_attention_wv) -> Q6_K`
            new_type = "q6_K"
        if _is_llm_type_70b(spec) and new_type in ("q3_K", "q4_K"):
            # `if (qs.model.type == LLM_TYPE_70B) { if (Q3_K || Q4_K) new_type = Q5_K; }`
            new_type = "q5_K"
        if n_expert == 8:
            # `if (n_expert == 8) new_type = GGML_TYPE_Q8_0;` ("trades just ~128MB")
            new_type = "q8_0"
    elif category == "attn_k":
        if n_expert == 8:
            new_type = "q8_0"  # ATTENTION_K: `if (n_expert == 8) new_type = GGML_TYPE_Q8_0;`
    elif category == "ffn_down":
        # layer_info(): for n_expert > 1 the layer is parsed from "blk.%d."; otherwise it is the
        # running ffn_down counter, which equals the layer index. n_layer = hparams.n_layer.
        i_layer = layer
        if ft == "q2_k":
            new_type = "q3_K"  # `if (ftype == Q2_K) new_type = GGML_TYPE_Q3_K;`
        elif ft == "q3_k_m":
            # `i_layer < n_layer/16 ? Q5_K : arch != FALCON || use_more_bits ? Q4_K : Q3_K`
            new_type = "q5_K" if i_layer < n_layer // 16 else "q4_K"
        elif ft == "q4_k_m":
            # non-Falcon: `if (use_more_bits(i_layer, n_layer)) new_type = GGML_TYPE_Q6_K;`
            if _use_more_bits(i_layer, n_layer):
                new_type = "q6_K"
        elif ft == "q5_k_m":
            # `ftype == Q5_K_M && use_more_bits(i_layer, n_layer) -> Q6_K`
            if _use_more_bits(i_layer, n_layer):
                new_type = "q6_K"
        elif ft == "q4_0" and imatrix and i_layer < n_layer // 8:
            # `(Q4_0 || Q5_0) && qs.has_imatrix && i_layer < n_layer/8 -> Q4_1 / Q5_1`
            new_type = "q4_1"
    elif category == "attn_output":
        if n_expert == 8:
            # `if (n_expert == 8) { if (Q2_K || Q3_K_M || Q4_K_M || ...) new_type = Q5_K; }`
            if ft in ("q2_k", "q3_k_m", "q4_k_m"):
                new_type = "q5_K"
        elif ft == "q2_k":
            new_type = "q3_K"  # `if (ftype == Q2_K) new_type = GGML_TYPE_Q3_K;`
        elif ft == "q3_k_m":
            new_type = "q4_K"  # `else if (ftype == Q3_K_M) new_type = GGML_TYPE_Q4_K;`
    # attn_q, ffn_gate, ffn_up and OTHER keep the default for these file types.

    # tensor_type_fallback(): `if (ncols % qk_k != 0)` pick a 32-element type, and F16 when
    # even that does not divide the row ("must use F16 due to unusual shape").
    if ncols % GGUF_BLOCKS[new_type].elements_per_block != 0:
        new_type = _FALLBACK.get(new_type, "f16")
        if ncols % GGUF_BLOCKS[new_type].elements_per_block != 0:
            new_type = "f16"
    return new_type


def gguf_tensors(spec: ModelSpec) -> tuple[Tensor, ...]:
    """The tensors as convert_hf_to_gguf.py writes them.

    Differences from the checkpoint inventory: the MLA kv_b projection is split into attn_k_b
    (ne = [qk_nope_head_dim, kv_lora_rank, n_head], k transposed) and attn_v_b
    (ne = [kv_lora_rank, v_head_dim, n_head]), as DeepseekV2Model.modify_tensors does for the
    absorbed-MLA kernels; and the vision tower (vision_params -> a separate mmproj file) is not
    in the file, nor are MTP modules (not in tensors(); DeepseekV3 conversion skips layer 61).
    """
    return _gguf_tensors(spec)


@lru_cache(maxsize=256)
def _gguf_tensors(spec: ModelSpec) -> tuple[Tensor, ...]:
    out: list[Tensor] = []
    for t in tensors(spec):
        if t.role == "attn_kv_b":
            nope, rank, v_dim = spec.qk_nope_head_dim, spec.kv_lora_rank, spec.v_head_dim
            out.append(Tensor("attn_k_b", t.layer, spec.heads * nope * rank, nope, rank))
            out.append(Tensor("attn_v_b", t.layer, spec.heads * rank * v_dim, rank, v_dim))
        else:
            out.append(t)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# GGUF file overhead (metadata). Tensor data is exact; metadata is an estimate.
# --------------------------------------------------------------------------------------------

GGUF_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT (ggml/include/gguf.h): tensor data offsets align
# Serialized size of tokenizer.ggml.tokens per token: gguf-parser reports "TOKENS SIZE 2 MiB"
# for the 128,256-token Llama 3 vocabulary (gpustack/gguf-parser-go README, Llama-3.1-405B
# example; TokensSize = the array's size in the file, file_tokenizer.go) -> 16.35 bytes/token.
GGUF_TOKEN_STRING_BYTES = 2 * 1024 * 1024 / 128256
# tokenizer.ggml.token_type is an int32 array (GGUF spec, ggml/docs/gguf.md).
GGUF_TOKEN_TYPE_BYTES = 4


def _gguf_name_len(t: Tensor) -> int:
    # "blk.N.<role>.weight" / "<role>.weight" (LLM_TENSOR_NAMES); bias roles end ".bias".
    base = t.role.removesuffix("_bias")
    suffix = ".bias" if t.role.endswith("_bias") else ".weight"
    prefix = f"blk.{t.layer}." if t.layer is not None else ""
    return len(prefix) + len(base) + len(suffix)


def gguf_metadata_bytes(spec: ModelSpec) -> int:
    """Estimated non-tensor bytes of a GGUF file: header, tensor-info table, alignment padding
    and the tokenizer's token strings and types. BPE merges, the chat template and the other
    key/values (a few MB for BPE vocabularies) are not counted, so this is a lower bound."""
    n = len(_gguf_tensors(spec))
    header = 4 + 4 + 8 + 8  # magic, version, tensor_count, metadata_kv_count
    info = 0
    for t in _gguf_tensors(spec):
        n_dims = 1 if t.d_in == 0 else (3 if t.elements > t.d_in * t.d_out else 2)
        # gguf_tensor_info: name (u64 length + bytes), u32 n_dims, u64 dims[n], u32 type,
        # u64 offset
        info += 8 + _gguf_name_len(t) + 4 + 8 * n_dims + 4 + 8
    padding = n * GGUF_ALIGNMENT // 2  # average padding before each tensor's data
    vocab = round(spec.vocab * (GGUF_TOKEN_STRING_BYTES + GGUF_TOKEN_TYPE_BYTES))
    return header + info + padding + vocab


def gguf_file_bytes(spec: ModelSpec, quant: str | QuantScheme, *, imatrix: bool = False) -> int:
    """Estimated size of the .gguf file: exact tensor data plus gguf_metadata_bytes()."""
    scheme = get_quant(quant)
    if scheme.family != "gguf":
        raise ValueError(f"{scheme.name} is not a GGUF file type")
    return weight_bytes(spec, scheme, imatrix=imatrix).total_bytes + gguf_metadata_bytes(spec)


# --------------------------------------------------------------------------------------------
# Other layouts
# --------------------------------------------------------------------------------------------

NF4_BLOCKSIZE = 64  # quantize_4bit(..., blocksize=64) (bitsandbytes/functional.py)
NF4_DQ_BLOCKSIZE = 256  # compress_statistics: quantize_blockwise(absmax, blocksize=256)
# 4-bit code + one uint8 absmax per 64 + one fp32 absmax-of-absmax per 256 blocks
# (QLoRA, arXiv:2305.14314 sec. 3: 8/64 + 32/(64*256) = 0.127 bits per parameter).
NF4_BITS = 4 + 8 / NF4_BLOCKSIZE + 32 / (NF4_BLOCKSIZE * NF4_DQ_BLOCKSIZE)
GPTQ_GROUP = 128
# OCP MX v1.0 sec. 5: MXFP4 = blocks of 32 E2M1 (4-bit) elements sharing one E8M0 (8-bit) scale:
# (32 x 4 + 8) / 32 = 4.25 bits. gpt-oss stores them as *_blocks (uint8, two values a byte,
# [..., d_in/32, 16]) and *_scales (uint8, [..., d_in/32]) along each row's input dimension.
MXFP4_BLOCK = 32
MXFP4_BITS = 4 + 8 / MXFP4_BLOCK


def _mats(t: Tensor) -> int:
    """How many d_in x d_out matrices the tensor holds (experts for *_exps, else 1)."""
    return max(1, t.elements // (t.d_in * t.d_out))


def _nf4_bytes(t: Tensor) -> tuple[int, int]:
    """(packed 4-bit data, quantization state) for one Linear4bit per matrix."""
    n = t.d_in * t.d_out
    blocks = -(-n // NF4_BLOCKSIZE)
    data = -(-n // 2)  # two 4-bit codes per uint8
    # qabsmax uint8 per block + state2.absmax fp32 per 256 blocks + fp32 offset
    state = blocks + 4 * -(-blocks // NF4_DQ_BLOCKSIZE) + 4
    return data * _mats(t), state * _mats(t)


def _gptq_bytes(t: Tensor, g_idx: bool) -> dict[str, int]:
    mats, d_in, d_out = _mats(t), t.d_in, t.d_out
    groups = -(-d_in // GPTQ_GROUP)
    out = {
        "int4": mats * -(-d_in * d_out // 2),  # qweight: 8 x 4-bit per int32
        "fp16 scales": mats * 2 * groups * d_out,  # scales [groups, d_out] fp16
        "int4 zeros": mats * -(-groups * d_out // 2),  # qzeros [groups, d_out/8] int32
    }
    if g_idx:
        out["int32 g_idx"] = mats * 4 * d_in  # g_idx [d_in] int32 (GPTQ only)
    return out


# Linear layers the non-GGUF quantizers leave in 16 bit: the LM head (transformers'
# get_keys_to_not_convert / llm-compressor ignore=["lm_head"]), the MoE router and the shared
# expert's scalar gate (AutoAWQ modules_to_not_convert=["gate"], llm-compressor MoE recipes
# ignore "re:.*mlp.gate$"). token_embd is an nn.Embedding, never quantized.
_KEEP_16BIT_LINEAR = frozenset({"output", "ffn_gate_inp", "ffn_gate_shexp_gate"})


def _is_quantized_linear(t: Tensor) -> bool:
    return t.role in LINEAR_ROLES and t.role not in _KEEP_16BIT_LINEAR and t.d_out > 1


def _mxfp4_bytes(t: Tensor) -> tuple[int, int]:
    """(E2M1 data, E8M0 scales) of one expert tensor: each output row holds ceil(d_in/32)
    blocks of 16 bytes of values and 1 byte of scale."""
    blocks = _mats(t) * t.d_out * -(-t.d_in // MXFP4_BLOCK)
    return blocks * MXFP4_BLOCK // 2, blocks


# --------------------------------------------------------------------------------------------
# Public result
# --------------------------------------------------------------------------------------------


class WeightSize(NamedTuple):
    """Weight memory of one model under one quantization scheme."""

    quant: str
    total_bytes: int  # all weight tensors, bytes (no file metadata)
    params: int  # parameters these bytes hold
    bits_per_weight: float  # 8 * total_bytes / params
    by_type: dict[str, int]  # storage type -> bytes
    by_role: dict[str, int]  # tensor role -> bytes
    kept_16bit: list[str]  # roles left unquantized (16-bit; F32 for GGUF norms and routers)
    note: str  # how the format stores this model, in the language current when it was asked


def weight_bytes(
    spec: ModelSpec, quant: str | QuantScheme, *, imatrix: bool = False
) -> WeightSize:
    """Bytes of the model's weights stored as `quant` (see QUANTS). Cached per (spec, quant)
    and, for the note, per language."""
    return _weight_bytes_in(spec, get_quant(quant).name, imatrix, current())


@lru_cache(maxsize=1024)
def _weight_bytes_in(spec: ModelSpec, name: str, imatrix: bool, lang: str) -> WeightSize:
    size = _weight_bytes(spec, name, imatrix)
    if QUANTS[name].family == "gguf":
        return size._replace(note=_gguf_note(spec, name, imatrix, size))
    return size._replace(note=_note(spec, name, size.bits_per_weight))


@lru_cache(maxsize=1024)
def _weight_bytes(spec: ModelSpec, name: str, imatrix: bool) -> WeightSize:
    scheme = QUANTS[name]
    if scheme.family == "gguf":
        return _gguf_size(spec, name, imatrix)
    by_type, by_role, kept = _stored_bytes(spec, name, tensors(spec))
    return _size(name, spec.params, by_type, by_role, kept)


def _size(name: str, params: int, by_type: dict[str, int], by_role: dict[str, int],
          kept: set[str]) -> WeightSize:
    """The WeightSize of stored bytes (every format builds it here); the note is written per
    language by weight_bytes()."""
    total = sum(by_type.values())
    return WeightSize(quant=name, total_bytes=total, params=params,
                      bits_per_weight=8 * total / params, by_type=by_type, by_role=by_role,
                      kept_16bit=sorted(kept), note="")


def _stored_bytes(
    spec: ModelSpec, name: str, inventory: tuple[Tensor, ...]
) -> tuple[dict[str, int], dict[str, int], set[str]]:
    """Bytes of `inventory` and the vision tower stored as the non-GGUF scheme `name`:
    (bytes by storage type, bytes by role, roles left 16-bit)."""
    by_type: dict[str, int] = {}
    by_role: dict[str, int] = {}
    kept: set[str] = set()

    def add(kind: str, role: str, nbytes: int) -> None:
        by_type[kind] = by_type.get(kind, 0) + nbytes
        by_role[role] = by_role.get(role, 0) + nbytes

    fam = QUANTS[name].family
    half = "fp16" if fam == "gptq_awq" else "bf16"
    block = fp8_block_size(spec) if fam == "fp8" else 0
    kept_fp8 = fp8_bf16_parts(spec) if fam == "fp8" else ()
    for t in inventory:
        if fam == "fp8" and _kept_by_release(spec, t, kept_fp8):
            add("bf16", t.role, 2 * t.elements)
            kept.add(t.role)
        elif fam == "float":
            add(name, t.role, t.elements * (4 if name == "fp32" else 2))
        elif fam == "mxfp4":
            # gpt-oss quantization_config.modules_to_not_convert: self_attn, router,
            # embed_tokens, lm_head -> only the routed experts' matrices are MXFP4.
            if t.role in EXPERT_ROLES:
                data, scales = _mxfp4_bytes(t)
                add("mxfp4 e2m1", t.role, data)
                add("e8m0 block scales", t.role, scales)
            else:
                add("bf16", t.role, 2 * t.elements)
                kept.add(t.role)
        elif block:
            # Block-FP8 release (DeepSeek-V3 model.safetensors.index.json, Qwen3-*-FP8): FP8
            # matrices with a float32 weight_scale_inv per 128 x 128 block; the router's
            # e_score_correction_bias is float32; the rest bf16.
            if is_fp8_block_quantized(t):
                add("fp8_e4m3", t.role, t.elements)
                add("fp32 block scales", t.role, 4 * fp8_block_scales(spec, t, block))
            elif t.role == "ffn_gate_inp_bias":
                add("fp32", t.role, 4 * t.elements)
            else:
                add("bf16", t.role, 2 * t.elements)
                kept.add(t.role)
        elif not _is_quantized_linear(t):
            add(half, t.role, 2 * t.elements)
            kept.add(t.role)
        elif name == "nf4":
            data, state = _nf4_bytes(t)
            add("nf4", t.role, data)
            add("nf4 absmax (double-quantized)", t.role, state)
        elif name == "int8":
            add("int8", t.role, t.elements)
            add("fp32 row scales", t.role, 4 * t.elements // t.d_in)  # SCB: one per out row
        elif fam == "gptq_awq":
            for kind, nbytes in _gptq_bytes(t, g_idx=name != "awq").items():
                add(kind, t.role, nbytes)
        else:  # fp8
            add("fp8_e4m3", t.role, t.elements)
            add("fp32 channel scales", t.role, 4 * t.elements // t.d_in)
    if spec.vision_params:
        # Vision tower and projector: kept at 16 bit (fp32 for fp32) whatever the scheme, as
        # quantizers skip them (llm-compressor ignore "re:visual.*", AutoAWQ/bnb skip vision).
        kind = name if fam == "float" else half
        add(kind, "vision", spec.vision_params * (4 if name == "fp32" else 2))
        if fam != "float":
            kept.add("vision")
    return by_type, by_role, kept


def fp8_block_size(spec: ModelSpec) -> int:
    """Block size of FP8 weight scales: the native checkpoint's, else the official FP8
    release's (Qwen3-*-FP8: 128); 0 = one scale per output row."""
    if spec.fp8_block:
        return spec.fp8_block
    rel = spec.release("fp8")
    return rel.fp8_block if rel else 0


def fp8_bf16_parts(spec: ModelSpec) -> tuple[str, ...]:
    """What the official FP8 release leaves in bf16 beyond embeddings, head, norms, router."""
    rel = spec.release("fp8")
    return rel.bf16_parts if rel else ()


_ATTENTION_MATRICES = frozenset(ATTN_ROLES + MLA_ROLES)


def _kept_by_release(spec: ModelSpec, t: Tensor, parts: tuple[str, ...]) -> bool:
    if not parts or t.role not in LINEAR_ROLES:
        return False
    if "attention" in parts and t.role in _ATTENTION_MATRICES:
        return True
    return "edge_layers" in parts and t.layer in (0, spec.layers - 1)


def native_quant(spec: ModelSpec) -> QuantScheme:
    """The scheme the release ships its weights in (ModelSpec.native_quant)."""
    return get_quant(spec.native_quant)


def checkpoint_bytes(spec: ModelSpec) -> int:
    """Bytes of the published checkpoint's tensors in its native format: the loaded weights,
    the vision tower, the MTP modules and FP8 block scales (safetensors headers aside); what a
    download of the release weighs."""
    inventory = tensors(spec) + mtp_tensors(spec)
    by_type, _, _ = _stored_bytes(spec, native_quant(spec).name, inventory)
    return sum(by_type.values())


def _note(spec: ModelSpec, name: str, bits: float) -> str:
    extra = _(" and the vision tower") if spec.vision_params else ""
    overall = _("{bits:.2f} bits per weight overall").format(bits=bits)
    if name == "mxfp4":
        if not spec.is_moe:
            return _("MXFP4 converts only MoE expert weights (gpt-oss's layout, vLLM's "
                     "Mxfp4MoEMethod); this model has none, so every tensor stays bf16.")
        return _("MXFP4 ({mx_bits:g} bits: E2M1 values, one E8M0 scale per {block}) on the MoE "
                 "expert weights; attention, router, embeddings, lm_head, norms{extra} in bf16, "
                 "as gpt-oss ships ({overall}).").format(mx_bits=MXFP4_BITS, block=MXFP4_BLOCK,
                                                         extra=extra, overall=overall)
    if name == "fp8" and fp8_bf16_parts(spec):
        return _("FP8 E4M3 feed-forward matrices with an fp32 scale per output row, as {model}'s "
                 "official FP8 release stores them; attention{edge}, embeddings, lm_head, norms"
                 "{extra} in bf16 ({overall}).").format(
            model=spec.display, extra=extra, overall=overall,
            edge=_(", the first and last blocks") if "edge_layers" in fp8_bf16_parts(spec)
            else "")
    if name == "fp8" and fp8_block_size(spec):
        return _("FP8 E4M3 linear layers with an fp32 scale per {block} x {block} block, as "
                 "{model} is released; embeddings, lm_head, norms, router{extra} in bf16 "
                 "({overall}).").format(block=fp8_block_size(spec), model=spec.display,
                                        extra=extra, overall=overall)
    if name in ("bf16", "fp16"):
        return _("Every tensor in {name} (2 bytes per parameter), as the checkpoint stores "
                 "it.").format(name=name)
    if name == "fp32":
        return _("Every tensor in fp32 (4 bytes per parameter).")
    if name == "nf4":
        return _("NF4 with double quantization ({nf4_bits:.3f} bits) on linear layers; "
                 "embeddings, lm_head, norms, router{extra} in bf16, as bitsandbytes' Linear4bit "
                 "leaves them ({overall}).").format(nf4_bits=NF4_BITS, extra=extra,
                                                    overall=overall)
    if name == "int8":
        return _("LLM.int8(): int8 linear weights plus one fp32 scale per output row; "
                 "embeddings, lm_head, norms, router{extra} in bf16 ({overall}).").format(
            extra=extra, overall=overall)
    if name in ("gptq", "awq", "int4"):
        label = {"gptq": "GPTQ", "awq": "AWQ", "int4": _("4-bit GPTQ/AWQ-style")}[name]
        gidx = _(", int32 g_idx per input row") if name != "awq" else ""
        return _("{label} group-128: 4-bit weights, an fp16 scale and a 4-bit zero point per "
                 "group and output column{gidx}; embeddings, lm_head, norms, router{extra} in "
                 "fp16 ({overall}).").format(label=label, gidx=gidx, extra=extra,
                                             overall=overall)
    return _("FP8 E4M3 linear layers with per-channel fp32 scales (llm-compressor FP8_DYNAMIC "
             "as vLLM loads it); embeddings, lm_head, norms, router{extra} in bf16 "
             "({overall}).").format(extra=extra, overall=overall)


@cache
def _gguf_metadata(spec: ModelSpec) -> int:
    return gguf_metadata_bytes(spec)


def _gguf_note(spec: ModelSpec, name: str, imatrix: bool, size: WeightSize) -> str:
    total = size.total_bytes
    mix = _(", ").join(
        f"{k} {100 * v / total:.0f}%"
        for k, v in sorted(size.by_type.items(), key=lambda kv: -kv[1])
        if 100 * v / total >= 1
    )
    skipped = (
        _("; the {params:,} vision-tower parameters are not in the file (mmproj)").format(
            params=spec.vision_params)
        if spec.vision_params
        else ""
    )
    how = _("with an imatrix") if imatrix else _("without an imatrix")
    return _("GGUF {name} as llama-quantize mixes it {how} ({mix}): {bits:.2f} bits per weight "
             "over the file's tensors, norms and router in F32; tensor data only, the file adds "
             "about {mb:.0f} MB of metadata{skipped}.").format(
        name=name.upper(), how=how, mix=mix, bits=size.bits_per_weight,
        mb=_gguf_metadata(spec) / 1e6, skipped=skipped)


def _gguf_size(spec: ModelSpec, name: str, imatrix: bool) -> WeightSize:
    by_type: dict[str, int] = {}
    by_role: dict[str, int] = {}
    kept: set[str] = set()
    params = 0
    for t in _gguf_tensors(spec):
        kind = gguf_tensor_type(spec, t, name, imatrix=imatrix)
        nbytes = gguf_tensor_bytes(kind, t.elements, t.d_in)
        by_type[kind] = by_type.get(kind, 0) + nbytes
        by_role[t.role] = by_role.get(t.role, 0) + nbytes
        params += t.elements
        if kind in UNQUANTIZED_GGUF_TYPES:
            kept.add(t.role)
    return _size(name, params, by_type, by_role, kept)
