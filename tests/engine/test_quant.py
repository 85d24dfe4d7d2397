"""engine.quant: block layouts, llama.cpp's per-tensor type choice, and sizes against published
GGUF files and tables. Each published number names where it was read."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from engine.architecture import ModelSpec, Tensor, tensors
from engine.catalog import find_model, models
from engine.quant import (
    GGUF_BLOCKS,
    MXFP4_BITS,
    NF4_BITS,
    QUANTS,
    QuantScheme,
    WeightSize,
    checkpoint_bytes,
    get_quant,
    gguf_file_bytes,
    gguf_metadata_bytes,
    gguf_tensor_bytes,
    gguf_tensor_type,
    gguf_tensors,
    weight_bytes,
)

GIB = 2**30
MIB = 2**20

# llama.cpp tools/quantize/README.md, table "meta-llama/Llama-3.1-8B": bits/weight, size (GiB).
# https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/README.md
LLAMA_CPP_TABLE_8B = {
    "q2_k": (3.1593, 2.95),
    "q4_k_m": (4.8944, 4.58),
    "q5_k_m": (5.7036, 5.33),
    "q6_k": (6.5633, 6.14),
    "q8_0": (8.5008, 7.95),
}

# bartowski's imatrix GGUFs of Impish_Mind_8B (a Llama-3.1-8B fine-tune, same shapes), llama.cpp
# b4273, file sizes in decimal GB: https://huggingface.co/bartowski/Impish_Mind_8B-GGUF
# (the same sizes bartowski lists for Meta-Llama-3.1-8B-Instruct-GGUF).
BARTOWSKI_8B_GB = {
    "q2_k": 3.18,
    "q3_k_m": 4.02,
    "q4_0": 4.68,
    "q4_k_m": 4.92,
    "q5_k_m": 5.73,
    "q6_k": 6.60,
    "q8_0": 8.54,
}


def spec(**fields) -> ModelSpec:
    base = dict(display="test", max_context=4096, source="test", retrieved="2026-11-30")
    return ModelSpec(**(base | fields))


# Mixtral-8x7B shapes with the 32,002-token vocabulary of Nous-Hermes-2-Mixtral-8x7B-DPO.
MIXTRAL = spec(
    name="mixtral-test", family="mixtral", layers=32, hidden=4096, intermediate=0, heads=32,
    kv_heads=8, head_dim=128, vocab=32002, experts=8, active_experts=2, moe_intermediate=14336,
)
# The first Meta-Llama-3.1-405B-Instruct upload had 16 KV heads (410.08 B params).
LLAMA_405B_16KV = spec(
    name="llama-405b-16kv", layers=126, hidden=16384, intermediate=53248, heads=128,
    kv_heads=16, head_dim=128, vocab=128256,
)
# deepseek-ai/DeepSeek-V2-Lite config.json (15,706,484,224 params).
DEEPSEEK_V2_LITE = spec(
    name="deepseek-v2-lite-test", family="deepseek2", layers=27, hidden=2048,
    intermediate=10944, heads=16, kv_heads=16, head_dim=128, vocab=102400, experts=64,
    active_experts=6, shared_experts=2, moe_intermediate=1408, dense_layers=1, attention="mla",
    kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
)
# google/gemma-2-9b config.json: tied embeddings, 4 norms per layer (9,241,705,984 params).
GEMMA2_9B = spec(
    name="gemma-2-9b-test", family="gemma2", layers=42, hidden=3584, intermediate=14336,
    heads=16, kv_heads=8, head_dim=256, vocab=256000, tied_embeddings=True, norms_per_layer=4,
)
# Qwen/Qwen2.5-0.5B config.json: hidden 896 is not a multiple of 256 (k-quant fallbacks).
QWEN25_05B = spec(
    name="qwen2.5-0.5b-test", family="qwen2", layers=24, hidden=896, intermediate=4864,
    heads=14, kv_heads=2, head_dim=64, vocab=151936, tied_embeddings=True, qkv_bias=True,
)
# Llama-3-70B-like: 80 layers with GQA is LLM_TYPE_70B in llama.cpp.
LLAMA_70B = spec(
    name="llama-70b-test", layers=80, hidden=8192, intermediate=28672, heads=64, kv_heads=8,
    head_dim=128, vocab=128256,
)

ARCHETYPES = [MIXTRAL, LLAMA_405B_16KV, DEEPSEEK_V2_LITE, GEMMA2_9B, QWEN25_05B, LLAMA_70B]


@pytest.fixture(scope="module")
def llama8b() -> ModelSpec:
    found = find_model("llama-3.1-8b")
    assert found is not None
    return found


# ---------------------------------------------------------------- block layouts and registry


@pytest.mark.parametrize(
    ("kind", "nbytes", "elements"),
    [
        ("q4_K", 144, 256),  # block_q4_K: 2*ggml_half + 12 scales + 128 quants
        ("q6_K", 210, 256),  # block_q6_K: 128 ql + 64 qh + 16 scales + ggml_half
        ("q8_0", 34, 32),  # block_q8_0: ggml_half + 32 int8
        ("q4_0", 18, 32),  # block_q4_0: ggml_half + 16 nibble bytes
        ("q2_K", 84, 256),  # block_q2_K: 16 scales + 64 quants + 2*ggml_half
        ("q3_K", 110, 256),  # block_q3_K: 32 hmask + 64 quants + 12 scales + ggml_half
        ("q5_K", 176, 256),  # block_q5_K: 2*ggml_half + 12 scales + 32 qh + 128 qs
        ("q4_1", 20, 32),
        ("q5_0", 22, 32),
        ("q5_1", 24, 32),
        ("f16", 2, 1),
        ("f32", 4, 1),
    ],
)
def test_gguf_block_layouts(kind: str, nbytes: int, elements: int) -> None:
    block = GGUF_BLOCKS[kind]
    assert (block.bytes_per_block, block.elements_per_block) == (nbytes, elements)


def test_registry_names_and_families() -> None:
    expected = {
        "bf16": "float", "fp16": "float", "fp32": "float", "fp8": "fp8", "int8": "bnb",
        "int4": "gptq_awq", "awq": "gptq_awq", "gptq": "gptq_awq", "nf4": "bnb", "mxfp4": "mxfp4",
        "q2_k": "gguf", "q3_k_m": "gguf", "q4_0": "gguf", "q4_k_m": "gguf", "q5_k_m": "gguf",
        "q6_k": "gguf", "q8_0": "gguf",
    }
    assert {k: v.family for k, v in QUANTS.items()} == expected
    for scheme in QUANTS.values():
        assert isinstance(scheme, QuantScheme)
        assert scheme.source.startswith("https://")
    with pytest.raises(Exception):  # noqa: B017 - frozen pydantic model
        QUANTS["nf4"].nominal_bits = 3  # type: ignore[misc]


def test_get_quant_spellings() -> None:
    assert get_quant("Q4_K_M").name == "q4_k_m"
    assert get_quant("q4-k-m").name == "q4_k_m"
    assert get_quant("BF16").name == "bf16"
    assert get_quant(QUANTS["awq"]) is QUANTS["awq"]
    with pytest.raises(ValueError, match="unknown quantization"):
        get_quant("q7_z")


def test_nf4_bits() -> None:
    # QLoRA sec. 3: 4 + 8/64 + 32/(64*256) = 4.127 bits per parameter with double quantization.
    assert abs(NF4_BITS - 4.127) < 5e-4


def test_nf4_on_one_linear_layer() -> None:
    s = spec(name="one", layers=1, hidden=4096, intermediate=4096, heads=32, kv_heads=32,
             head_dim=128, vocab=32000)
    size = weight_bytes(s, "nf4")
    linear = sum(t.elements for t in tensors(s) if t.role == "ffn_up")
    assert 8 * size.by_role["ffn_up"] / linear == pytest.approx(4.127, abs=1e-3)
    assert {"token_embd", "output"} <= set(size.kept_16bit)
    assert "4.127 bits" in size.note


# ------------------------------------------------------------------- llama.cpp type choices


def types_by_role(s: ModelSpec, ftype: str, **kw) -> dict[tuple[str, int | None], str]:
    return {(t.role, t.layer): gguf_tensor_type(s, t, ftype, **kw) for t in gguf_tensors(s)}


def test_use_more_bits_layers_q4_k_m(llama8b: ModelSpec) -> None:
    # use_more_bits(i, 32): i < 4, i >= 28, or (i - 4) % 3 == 2.
    more = [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
    types = types_by_role(llama8b, "Q4_K_M")
    for i in range(32):
        want = "q6_K" if i in more else "q4_K"
        assert types[("attn_v", i)] == want
        assert types[("ffn_down", i)] == want
        assert types[("attn_q", i)] == types[("ffn_up", i)] == "q4_K"
        assert types[("attn_norm", i)] == "f32"
    assert types[("output", None)] == "q6_K"
    assert types[("token_embd", None)] == "q4_K"


def test_llama_8b_q4_k_m_tensor_counts_match_a_loader_log(llama8b: ModelSpec) -> None:
    # llama.cpp loading a Llama-3-8B (same shapes) Q4_K_M: "type f32: 65, q4_K: 193, q6_K: 33",
    # "CPU buffer size = 281.81 MiB" (token_embd, kept on the host), "CUDA0 buffer size =
    # 4403.49 MiB". developer0hye/llama-3-korean-bllossom-8b-q4-docker, README.md.
    counts = Counter(gguf_tensor_type(llama8b, t, "q4_k_m") for t in gguf_tensors(llama8b))
    assert counts == {"f32": 65, "q4_K": 193, "q6_K": 33}
    size = weight_bytes(llama8b, "q4_k_m")
    assert size.by_role["token_embd"] / MIB == pytest.approx(281.81, abs=0.01)
    assert (size.total_bytes - size.by_role["token_embd"]) / MIB == pytest.approx(4403.49, abs=0.01)


def test_q3_k_m_rules(llama8b: ModelSpec) -> None:
    types = types_by_role(llama8b, "q3_k_m")
    assert [types[("attn_v", i)] for i in range(4)] == ["q5_K", "q5_K", "q4_K", "q4_K"]
    assert [types[("ffn_down", i)] for i in range(3)] == ["q5_K", "q5_K", "q4_K"]  # n/16 = 2
    assert types[("attn_output", 5)] == "q4_K"
    assert types[("attn_q", 5)] == types[("ffn_gate", 5)] == "q3_K"


def test_q2_k_rules(llama8b: ModelSpec) -> None:
    types = types_by_role(llama8b, "q2_k")
    assert types[("attn_v", 7)] == "q4_K"  # n_gqa = 4
    assert types[("ffn_down", 7)] == types[("attn_output", 7)] == "q3_K"
    assert types[("attn_k", 7)] == types[("token_embd", None)] == "q2_K"
    mha = spec(name="mha", layers=32, hidden=4096, intermediate=11008, heads=32, kv_heads=32,
               head_dim=128, vocab=32000)
    assert types_by_role(mha, "q2_k")[("attn_v", 7)] == "q3_K"  # n_gqa = 1


def test_q4_0_imatrix_rule(llama8b: ModelSpec) -> None:
    plain = types_by_role(llama8b, "q4_0")
    imat = types_by_role(llama8b, "q4_0", imatrix=True)
    assert plain[("ffn_down", 0)] == "q4_0"
    assert [imat[("ffn_down", i)] for i in range(5)] == ["q4_1"] * 4 + ["q4_0"]  # i < n/8
    assert plain[("output", None)] == "q6_K"


def test_70b_attn_v_bump() -> None:
    types = types_by_role(LLAMA_70B, "q4_k_m")
    # use_more_bits(i, 80) is false for i = 11; Q4_K becomes Q5_K on a LLM_TYPE_70B model.
    assert types[("attn_v", 11)] == "q5_K"
    assert types[("attn_v", 0)] == "q6_K"
    assert types_by_role(LLAMA_70B, "q3_k_m")[("attn_v", 11)] == "q5_K"


def test_eight_expert_rules() -> None:
    types = types_by_role(MIXTRAL, "q4_k_m")
    assert types[("attn_v", 3)] == types[("attn_k", 3)] == "q8_0"
    assert types[("attn_output", 3)] == "q5_K"
    assert types[("ffn_down_exps", 0)] == "q6_K"  # layer parsed from the name: 0 < 32/8
    assert types[("ffn_down_exps", 4)] == "q4_K"
    assert types[("ffn_gate_inp", 3)] == "f32"
    assert types_by_role(MIXTRAL, "q6_k")[("attn_v", 3)] == "q8_0"


def test_tied_embeddings_get_the_output_rule() -> None:
    assert types_by_role(GEMMA2_9B, "q4_k_m")[("token_embd", None)] == "q6_K"
    assert types_by_role(GEMMA2_9B, "q8_0")[("token_embd", None)] == "q8_0"
    # 896 % 256 != 0 -> Q8_0 for the shared embedding/output.
    assert types_by_role(QWEN25_05B, "q4_k_m")[("token_embd", None)] == "q8_0"


def test_row_size_fallbacks() -> None:
    # tensor_type_fallback(): ncols % 256 != 0 -> Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, Q3_K->Q4_0.
    assert types_by_role(QWEN25_05B, "q4_k_m")[("attn_q", 0)] == "q5_0"
    assert types_by_role(QWEN25_05B, "q5_k_m")[("ffn_up", 0)] == "q5_1"
    assert types_by_role(QWEN25_05B, "q6_k")[("attn_k", 0)] == "q8_0"
    assert types_by_role(QWEN25_05B, "q3_k_m")[("ffn_gate", 3)] == "q4_0"
    assert types_by_role(QWEN25_05B, "q4_k_m")[("ffn_down", 3)] == "q4_K"  # 4864 = 19 * 256
    assert types_by_role(QWEN25_05B, "q4_k_m")[("attn_q_bias", 3)] == "f32"
    # DeepSeek-V2-Lite experts are 1408 wide: their ffn_down rows fall back too.
    assert types_by_role(DEEPSEEK_V2_LITE, "q6_k")[("ffn_down_exps", 5)] == "q8_0"
    odd = Tensor("ffn_up", 0, 100 * 8, 100, 8)  # 100 % 32 != 0 -> F16
    assert gguf_tensor_type(QWEN25_05B, odd, "q4_k_m") == "f16"


def test_mla_kv_b_split_and_legacy() -> None:
    split = types_by_role(DEEPSEEK_V2_LITE, "q4_k_m")
    assert split[("attn_k_b", 3)] == "q5_0"  # ne[0] = qk_nope_head_dim = 128 -> fallback
    assert split[("attn_v_b", 3)] == "q4_K"  # OTHER: default type
    kv_b = next(t for t in tensors(DEEPSEEK_V2_LITE) if t.role == "attn_kv_b" and t.layer == 0)
    assert gguf_tensor_type(DEEPSEEK_V2_LITE, kv_b, "q4_k_m") == "q6_K"  # attn_v-like, layer 0
    total = sum(t.elements for t in tensors(DEEPSEEK_V2_LITE))
    assert sum(t.elements for t in gguf_tensors(DEEPSEEK_V2_LITE)) == total


# ------------------------------------------------------- sizes against published numbers


@pytest.mark.parametrize(("quant", "published"), sorted(LLAMA_CPP_TABLE_8B.items()))
def test_llama_8b_bits_per_weight_match_llama_cpp_table(
    llama8b: ModelSpec, quant: str, published: tuple[float, float]
) -> None:
    bpw, gib = published
    size = weight_bytes(llama8b, quant)
    # We reproduce the table to its last printed digit (brief asked for 3%).
    assert size.bits_per_weight == pytest.approx(bpw, abs=5e-4)
    assert size.total_bytes / GIB == pytest.approx(gib, abs=0.005)


def test_llama_8b_q4_0_matches_llama_bench(llama8b: ModelSpec) -> None:
    # llama-bench "llama 8B Q4_0 | 4.33 GiB | 8.03 B" (Llama-3.1-8B, no imatrix):
    # ArmDeveloperEcosystem/arm-learning-paths, content/learning-paths/servers-and-cloud-
    # computing/arcee-foundation-model-on-aws/07_evaluating_the_quantized_models.md
    size = weight_bytes(llama8b, "q4_0")
    assert size.total_bytes / GIB == pytest.approx(4.33, abs=0.005)
    assert size.bits_per_weight == pytest.approx(4.636, abs=1e-3)


@pytest.mark.parametrize(("quant", "gb"), sorted(BARTOWSKI_8B_GB.items()))
def test_llama_8b_file_sizes_match_bartowski(llama8b: ModelSpec, quant: str, gb: float) -> None:
    # bartowski quantizes with an imatrix (only Q4_0's mix depends on it). Our metadata estimate
    # leaves out the BPE merges (~6 MB), so we sit a little under the published size.
    estimate = gguf_file_bytes(llama8b, quant, imatrix=True) / 1e9
    assert estimate == pytest.approx(gb, rel=0.003)
    assert estimate < gb + 0.005


def test_gguf_bytes_exclude_metadata(llama8b: ModelSpec) -> None:
    size = weight_bytes(llama8b, "q4_k_m")
    meta = gguf_metadata_bytes(llama8b)
    assert 2e6 < meta < 10e6
    assert gguf_file_bytes(llama8b, "q4_k_m") == size.total_bytes + meta
    with pytest.raises(ValueError):
        gguf_file_bytes(llama8b, "nf4")


def test_mixtral_q3_k_m_matches_gguf_parser() -> None:
    # gguf-parser on Nous-Hermes-2-Mixtral-8x7B-DPO.Q3_K_M.gguf: "21 GiB | 46.70 B | 3.86 bpw".
    # https://github.com/gpustack/gguf-parser-go/blob/main/README.md
    size = weight_bytes(MIXTRAL, "q3_k_m")
    assert size.params == 46_702_809_088
    assert size.bits_per_weight == pytest.approx(3.86, abs=0.005)
    assert size.total_bytes / GIB == pytest.approx(21.0, abs=0.01)


def test_llama_405b_q2_k_matches_gguf_parser() -> None:
    # gguf-parser on MaziyarPanahi Meta-Llama-3.1-405B-Instruct.Q2_K: "140.81 GiB | 410.08 B |
    # 2.95 bpw" (gpustack/gguf-parser-go README.md).
    size = weight_bytes(LLAMA_405B_16KV, "q2_k")
    assert size.total_bytes / GIB == pytest.approx(140.81, abs=0.005)
    assert size.bits_per_weight == pytest.approx(2.95, abs=0.005)


@pytest.mark.parametrize(
    ("quant", "gb"),
    [("q8_0", 16.70), ("q6_k", 14.07), ("q5_k_m", 11.85), ("q4_k_m", 10.36), ("q3_k_m", 8.13),
     ("q2_k", 6.43)],
)
def test_deepseek_v2_lite_matches_published_files(quant: str, gb: float) -> None:
    # legraphista/DeepSeek-V2-Lite-IMat-GGUF file sizes (llama.cpp PR #7519 era):
    # https://huggingface.co/legraphista/DeepSeek-V2-Lite-IMat-GGUF
    assert DEEPSEEK_V2_LITE.params == 15_706_484_224
    assert gguf_file_bytes(DEEPSEEK_V2_LITE, quant) / 1e9 == pytest.approx(gb, rel=0.002)


def test_deepseek_coder_v2_lite_q6_k_exact_bytes() -> None:
    # bartowski/DeepSeek-Coder-V2-Lite-Instruct-GGUF Q6_K (llama.cpp b3166, before the kv_b
    # split) is 14,066,972,416 bytes (HF LFS size). Legacy layout: one attn_kv_b per layer.
    legacy = sum(
        gguf_tensor_bytes(gguf_tensor_type(DEEPSEEK_V2_LITE, t, "q6_k"), t.elements, t.d_in)
        for t in tensors(DEEPSEEK_V2_LITE)
    )
    estimate = legacy + gguf_metadata_bytes(DEEPSEEK_V2_LITE)
    assert estimate == pytest.approx(14_066_972_416, rel=3e-4)
    assert estimate < 14_066_972_416


@pytest.mark.parametrize(
    ("quant", "gb"),
    [("q8_0", 9.83), ("q6_k", 7.59), ("q5_k_m", 6.65), ("q4_k_m", 5.76), ("q3_k_m", 4.76),
     ("q2_k", 3.81)],
)
def test_gemma2_9b_matches_bartowski(quant: str, gb: float) -> None:
    # https://huggingface.co/bartowski/gemma-2-9b-it-GGUF (llama.cpp b3389), decimal GB.
    assert GEMMA2_9B.params == 9_241_705_984
    assert gguf_file_bytes(GEMMA2_9B, quant) / 1e9 == pytest.approx(gb, rel=0.003)


@pytest.mark.parametrize(
    ("quant", "gb"), [("q6_k", 0.51), ("q5_k_m", 0.42), ("q4_k_m", 0.40), ("q4_0", 0.35)]
)
def test_qwen25_05b_matches_bartowski(quant: str, gb: float) -> None:
    # https://huggingface.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF (imatrix), decimal GB rounded
    # to 0.01; most rows of this model fall back from k-quants to q5_0/q5_1/q8_0/q4_0. Our
    # metadata leaves out the ~3 MB of BPE merges, so the estimate is a hair low.
    assert QWEN25_05B.params == 494_032_768
    estimate = gguf_file_bytes(QWEN25_05B, quant, imatrix=True) / 1e9
    assert gb - 0.01 < estimate < gb + 0.005


# ------------------------------------------------------------------------ other layouts


def test_float_sizes(llama8b: ModelSpec) -> None:
    assert weight_bytes(llama8b, "bf16").total_bytes == 2 * 8_030_261_248
    assert weight_bytes(llama8b, "fp16").total_bytes == 2 * 8_030_261_248
    assert weight_bytes(llama8b, "fp32").total_bytes == 4 * 8_030_261_248
    assert weight_bytes(llama8b, "bf16").bits_per_weight == 16


def test_quantized_layer_layouts(llama8b: ModelSpec) -> None:
    h, v = 4096, 128256
    linear = sum(t.elements for t in tensors(llama8b) if t.role in
                 ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"))
    rows = sum(t.elements // t.d_in for t in tensors(llama8b) if t.role in
               ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"))
    kept = 2 * (2 * v * h + 65 * h)  # embeddings, lm_head, 65 norms in 16 bit

    int8 = weight_bytes(llama8b, "int8")
    assert int8.total_bytes == linear + 4 * rows + kept

    fp8 = weight_bytes(llama8b, "fp8")
    assert fp8.total_bytes == linear + 4 * rows + kept
    assert "per-channel" in fp8.note and "output" in fp8.kept_16bit

    awq = weight_bytes(llama8b, "awq")
    gptq = weight_bytes(llama8b, "gptq")
    groups_x_cols = sum(t.elements // 128 for t in tensors(llama8b) if t.role in
                        ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                         "ffn_down"))
    assert awq.total_bytes == linear // 2 + 2 * groups_x_cols + groups_x_cols // 2 + kept
    g_idx = 4 * sum(t.d_in for t in tensors(llama8b) if t.role in
                    ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                     "ffn_down"))
    assert gptq.total_bytes == awq.total_bytes + g_idx
    int4 = weight_bytes(llama8b, "int4")
    assert (int4.total_bytes, int4.by_type) == (gptq.total_bytes, gptq.by_type)

def test_weight_size_shape(llama8b: ModelSpec) -> None:
    for name in QUANTS:
        size = weight_bytes(llama8b, name)
        assert isinstance(size, WeightSize)
        assert size.total_bytes == sum(size.by_type.values()) == sum(size.by_role.values())
        assert size.bits_per_weight == pytest.approx(8 * size.total_bytes / size.params)
        assert size.note.endswith(".") and size.note.count(". ") == 0


# ------------------------------------------------------------------ ordering and speed


ORDER = ["q2_k", "q3_k_m", "q4_0", "q4_k_m", "q5_k_m", "q6_k", "q8_0", "bf16"]


@pytest.mark.parametrize(
    "model", list(models().values()) + ARCHETYPES, ids=lambda m: m.name
)
def test_monotonic_sizes(model: ModelSpec) -> None:
    size = {q: weight_bytes(model, q).total_bytes for q in ORDER}
    assert size["q2_k"] < size["q3_k_m"] <= size["q4_k_m"]
    assert size["q4_0"] <= size["q4_k_m"] < size["q5_k_m"] < size["q6_k"] < size["q8_0"]
    assert size["q8_0"] < size["bf16"]
    # Where some rows are not a multiple of 256, llama.cpp stores Q3_K_M's q3_K rows as q4_0
    # and bumps attn_v/ffn_down, so Q3_K_M can outgrow Q4_0 (bartowski's Qwen2.5-0.5B: Q3_K_L
    # 0.37 GB > Q4_0 0.35 GB). Everywhere else the order is strict.
    if all(t.d_in % 256 == 0 for t in gguf_tensors(model) if t.d_in):
        assert size["q3_k_m"] < size["q4_0"]
    nf4, int8 = weight_bytes(model, "nf4"), weight_bytes(model, "int8")
    assert nf4.total_bytes < int8.total_bytes < size["bf16"]


def test_cached_call_is_fast(llama8b: ModelSpec) -> None:
    weight_bytes(llama8b, "q4_k_m")
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        weight_bytes(llama8b, "Q4_K_M")
    assert (time.perf_counter() - start) / n < 100e-6


# --- Native formats: MXFP4 (gpt-oss) and block FP8 (DeepSeek-V3 family) ----------------------


def test_mxfp4_block_layout() -> None:
    # OCP MX v1.0: 32 E2M1 values (16 bytes) share one E8M0 scale (1 byte) -> 4.25 bits, on
    # the routed experts only (gpt-oss's modules_to_not_convert, vLLM's Mxfp4MoEMethod)
    assert MXFP4_BITS == 4.25
    size = weight_bytes(MIXTRAL, "mxfp4")
    experts = [t for t in tensors(MIXTRAL) if t.role.endswith("_exps")]
    values = sum(t.elements for t in experts)
    assert size.by_type["mxfp4 e2m1"] == values // 2
    assert size.by_type["e8m0 block scales"] == values // 32
    assert size.by_type["bf16"] == 2 * (MIXTRAL.params - values)  # attention, router, head
    assert "attn_q" in size.kept_16bit and "ffn_gate_inp" in size.kept_16bit
    assert "ffn_up_exps" not in size.kept_16bit


@pytest.mark.parametrize(("name", "gib"), [("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)])
def test_gpt_oss_native_size_matches_the_model_card(name: str, gib: float) -> None:
    # gpt-oss model card (arXiv:2508.10925) table 1, "Checkpoint size": 60.8 GiB and 12.8 GiB.
    spec = models()[name]
    assert spec.native_quant == "mxfp4"
    size = weight_bytes(spec, spec.native_quant).total_bytes
    assert size == checkpoint_bytes(spec)
    assert size / GIB == pytest.approx(gib, rel=0.02)
    assert round(size / GIB, 1) == gib


def test_gpt_oss_120b_native_size_matches_ollamas_mxfp4_gguf() -> None:
    # Ollama's gpt-oss:120b, the MXFP4 GGUF (experts MXFP4, the rest 16/32-bit, plus metadata
    # and tokenizer): 65,290,180,781 bytes in its /api/tags listing, as recorded in public docs.
    size = weight_bytes(models()["gpt-oss-120b"], "mxfp4").total_bytes
    assert size == 65_248_815_744
    assert 0 < 65_290_180_781 - size < 0.001 * size


def test_mxfp4_leaves_dense_models_in_bf16() -> None:
    llama = models()["llama-3.1-8b"]
    mx = weight_bytes(llama, "mxfp4")
    assert mx.total_bytes == weight_bytes(llama, "bf16").total_bytes
    assert "has none" in mx.note


def test_deepseek_v3_native_checkpoint_bytes_are_exact() -> None:
    # Hub dtype breakdown: BF16 3,918,786,560 + F8_E4M3 680,571,043,840 + F32 41,555,600
    ds = models()["deepseek-v3"]
    assert checkpoint_bytes(ds) == 2 * 3_918_786_560 + 680_571_043_840 + 4 * 41_555_600
    # what serving loads (no MTP module): between the 671B of FP8 and the full download
    served = weight_bytes(ds, ds.native_quant)
    assert 671e9 < served.total_bytes < 689e9
    assert served.by_type["fp32 block scales"] == 4 * 40_838_232
    assert served.params == 671_026_419_200


def test_block_fp8_only_for_block_releases() -> None:
    # the same "fp8" request on a bf16 release is llm-compressor's per-channel layout
    llama = weight_bytes(models()["llama-3.1-8b"], "fp8")
    assert "fp32 channel scales" in llama.by_type and "fp32 block scales" not in llama.by_type


def test_kimi_k2_native_bytes_reconcile_with_the_hub() -> None:
    # Hub byte count 1,029,173,256,720 (recorded in public code) = ours + the 3,416 unplaced
    # BF16 elements x 2 bytes (see test_catalog_models.test_kimi_k2_hub_total_reconciliation).
    assert checkpoint_bytes(models()["kimi-k2"]) + 2 * 61 * 56 == 1_029_173_256_720


def test_vision_towers_stay_16_bit() -> None:
    vl = models()["qwen3-vl-8b"]
    for quant in ("nf4", "fp8", "awq"):
        size = weight_bytes(vl, quant)
        assert size.by_role["vision"] == 2 * vl.vision_params and "vision" in size.kept_16bit
    gguf = weight_bytes(vl, "q4_k_m")
    assert gguf.params == vl.params - vl.vision_params  # the tower goes to the mmproj file


@pytest.mark.parametrize(("model", "quant"), [("qwen2.5-7b", "nf4"), ("qwen2.5-72b", "q4_k_m"),
                                              ("deepseek-v3", "fp8"), ("gpt-oss-20b", "mxfp4"),
                                              ("qwen2.5-vl-7b", "awq"), ("llama-3.1-8b", "bf16")])
def test_the_note_is_written_in_the_language_asked(model: str, quant: str) -> None:
    """The sizes are cached once; the note follows the language of each call, both ways."""
    from engine.i18n import language

    spec = find_model(model)
    english = weight_bytes(spec, quant)
    with language("zh"):
        chinese = weight_bytes(spec, quant)
    assert english.note != chinese.note and any("\u4e00" <= c <= "\u9fff" for c in chinese.note)
    assert weight_bytes(spec, quant).note == english.note  # not the cached Chinese one
    assert english._replace(note="") == chinese._replace(note="")  # the same bytes
    if quant != "bf16":  # the figures stay: bits per weight overall
        assert f"{english.bits_per_weight:.2f}" in chinese.note
