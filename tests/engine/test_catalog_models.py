"""The bundled model catalog (engine/data/models.toml) against its published totals.

Every row's fields must rebuild the checkpoint's published parameter total exactly through the
tensor inventory; rows without an exact published total are listed here with the reason.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from engine import catalog
from engine.architecture import (
    active_params,
    checkpoint_extras,
    checkpoint_params,
    mtp_params,
    tensors,
    total_params,
)

MODELS = catalog.models()
PUBLISHED = sorted(n for n, m in MODELS.items() if m.published_params is not None)

REQUIRED = (
    "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3.1-8b", "llama-3.1-70b",
    "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b", "llama-3.3-70b", "qwen2.5-0.5b",
    "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b",
    "qwen3-0.6b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b", "qwen3-30b-a3b",
    "qwen3-235b-a22b", "mistral-7b", "mistral-7b-v0.3", "mixtral-8x7b", "mixtral-8x22b",
    "deepseek-v3", "deepseek-r1", "gemma-2-2b", "gemma-2-9b", "gemma-2-27b", "gemma-3-1b",
    "gemma-3-4b", "gemma-3-12b", "gemma-3-27b", "phi-3-mini", "phi-3-medium", "phi-4", "glm-4-9b",
    "yi-1.5-6b", "yi-1.5-9b", "yi-1.5-34b", "internlm2.5-7b", "internlm2.5-20b", "baichuan2-7b",
    "baichuan2-13b",
)
# 2025-26 releases (issue 13).
REQUIRED_2026 = (
    "gpt-oss-20b", "gpt-oss-120b", "llama-4-scout", "llama-4-maverick", "qwen3-coder-480b-a35b",
    "qwen3-coder-30b-a3b", "qwen3-235b-a22b-instruct-2507", "qwen3-30b-a3b-instruct-2507",
    "qwen3-4b-instruct-2507", "glm-4.5", "glm-4.5-air", "glm-4.6", "kimi-k2", "minimax-m1",
    "minimax-m2", "deepseek-v3.1", "deepseek-v3.2-exp", "deepseek-r1-distill-qwen-1.5b",
    "deepseek-r1-distill-qwen-7b", "deepseek-r1-distill-qwen-14b", "deepseek-r1-distill-qwen-32b",
    "deepseek-r1-distill-llama-8b", "deepseek-r1-distill-llama-70b", "qwen2.5-vl-3b",
    "qwen2.5-vl-7b", "qwen3-vl-2b", "qwen3-vl-4b", "qwen3-vl-8b", "qwen3-vl-32b",
    "qwen3-vl-30b-a3b", "qwen3-vl-235b-a22b",
)

# Rows left without published_params, and why (the comment above each row says more).
UNPUBLISHED = {
    "qwen3-0.6b": "the Hub total counts the stored copy of the tied output matrix",
    "phi-3-medium": "no exact published total could be read",
    "glm-4-9b": "no Hub safetensors total could be read",
    "baichuan2-7b": "pytorch .bin checkpoint: no safetensors total, no exact figure published",
    "baichuan2-13b": "pytorch .bin checkpoint: no safetensors total, no exact figure published",
    "kimi-k2": "the Hub total holds 3,416 elements the inventory cannot place (reconciled below)",
    "deepseek-r1-distill-qwen-7b": "no exact published total could be read",
    "qwen3-vl-32b": "no exact published total could be read",
}


def test_every_row_loads_and_the_catalog_is_large() -> None:
    assert len(MODELS) >= 30
    for name, spec in MODELS.items():
        assert spec.name == name == name.lower()
        assert tensors(spec) and total_params(spec) > 0


def test_every_requested_model_is_present() -> None:
    assert not set(REQUIRED) - set(MODELS)
    assert not set(REQUIRED_2026) - set(MODELS)


@pytest.mark.parametrize("name", PUBLISHED)
def test_fields_reproduce_the_published_total(name: str) -> None:
    spec = MODELS[name]
    # The Hub's safetensors total counts every stored element: weights, MTP modules, FP8
    # scales; a few FP8 repos' totals leave the scales out (published_without_scales).
    scales = checkpoint_extras(spec) if spec.published_without_scales else 0
    assert checkpoint_params(spec) - scales == spec.published_params
    assert spec.params_source


def test_llama_3_1_8b_is_exact() -> None:
    assert total_params(MODELS["llama-3.1-8b"]) == 8_030_261_248


def test_rows_without_a_published_total_are_the_documented_ones() -> None:
    assert {n for n, m in MODELS.items() if m.published_params is None} == set(UNPUBLISHED)


def test_qwen3_0_6b_hub_total_counts_the_tied_head_twice() -> None:
    spec = MODELS["qwen3-0.6b"]
    assert spec.tied_embeddings
    assert total_params(spec) + spec.vocab * spec.hidden == 751_632_384


@pytest.mark.parametrize(
    ("name", "low", "high"),
    [
        ("mixtral-8x7b", 12.8e9, 13.0e9),  # "12.9B active"
        ("mixtral-8x22b", 39.0e9, 39.3e9),  # "39B active"
        ("qwen3-30b-a3b", 3.2e9, 3.4e9),  # "3.3B activated"
        ("qwen3-235b-a22b", 22.0e9, 22.3e9),  # "22B activated"
        ("deepseek-v3", 37.0e9, 38.0e9),  # "37B activated"
        ("deepseek-r1", 37.0e9, 38.0e9),
        # Model cards' active counts leave out the embedding (a lookup, not a matmul); ours
        # keep it, so the bounds sit one embedding table above the card where it matters.
        ("gpt-oss-120b", 5.6e9, 5.8e9),  # card 5.13B + 201,088 x 2,880 embedding
        ("gpt-oss-20b", 4.1e9, 4.25e9),  # card 3.61B + the embedding
        ("llama-4-scout", 17.0e9, 17.3e9),  # "17B active"
        ("llama-4-maverick", 17.0e9, 17.3e9),  # "17B active"
        ("qwen3-coder-480b-a35b", 35.0e9, 35.6e9),  # "35B activated"
        ("glm-4.5", 32.0e9, 34.0e9),  # "32 billion active"
        ("glm-4.5-air", 12.0e9, 13.7e9),  # "12 billion active"
        ("kimi-k2", 32.0e9, 33.5e9),  # "32 billion activated"
        ("minimax-m1", 45.5e9, 48.5e9),  # card 45.9B, without the embedding and head
        ("minimax-m2", 10.0e9, 11.1e9),  # "10B active"
        ("deepseek-v3.2-exp", 37.5e9, 38.5e9),  # V3.1 plus the indexer
    ],
)
def test_moe_active_params_are_sane(name: str, low: float, high: float) -> None:
    spec = MODELS[name]
    assert spec.is_moe and 0 < spec.active_experts < spec.experts
    assert low < active_params(spec) < high < total_params(spec)


def test_dense_active_params_exclude_the_vision_tower() -> None:
    for spec in MODELS.values():
        if not spec.is_moe:
            assert active_params(spec) == total_params(spec) - spec.vision_params


# head_dim as config.json states it, where it is not hidden / heads.
HEAD_DIM_FROM_CONFIG = {
    "qwen3-0.6b": 128, "qwen3-4b": 128, "qwen3-32b": 128, "qwen3-30b-a3b": 128,
    "qwen3-235b-a22b": 128, "gemma-2-2b": 256, "gemma-2-9b": 256, "gemma-2-27b": 128,
    "gemma-3-1b": 256, "gemma-3-4b": 256, "gemma-3-12b": 256, "gemma-3-27b": 128,
}


@pytest.mark.parametrize(("name", "head_dim"), sorted(HEAD_DIM_FROM_CONFIG.items()))
def test_head_dim_comes_from_config(name: str, head_dim: int) -> None:
    spec = MODELS[name]
    assert spec.head_dim == head_dim != spec.hidden // spec.heads


def test_sliding_window_layers() -> None:
    assert (MODELS["mistral-7b"].sliding_window, MODELS["mistral-7b"].sliding_layers) == (4096, 32)
    for name, spec in MODELS.items():
        if spec.family == "gemma2":
            assert spec.sliding_window == 4096 and spec.sliding_layers == spec.layers // 2
        elif spec.family.startswith("gemma3"):  # 5 local : 1 global
            assert spec.sliding_layers == spec.layers - spec.layers // 6
        elif spec.family.startswith("qwen"):  # use_sliding_window = false
            assert spec.sliding_layers == 0, name
        assert spec.sliding_layers <= spec.layers
        assert bool(spec.sliding_window) == bool(spec.sliding_layers), name


def test_components_outside_the_inventory_are_exact() -> None:
    # Llama 2 *-hf: the classic 6,738,415,616 plus 32 x 64 stored rotary inv_freq elements.
    llama2 = MODELS["llama-2-7b"]
    assert total_params(llama2) == 6_738_415_616 == checkpoint_params(llama2) - 32 * 64
    # DeepSeek-V3: the 671B stack, the MTP module and the FP8 block scales (stack 40,838,232,
    # MTP layer 702,264).
    ds = MODELS["deepseek-v3"]
    assert checkpoint_extras(ds) == 40_838_232 + 702_264
    assert mtp_params(ds) == 13_463_426_304
    assert ds.params == 671_026_419_200
    # Gemma 3 4B: text stack plus the SigLIP tower and projector.
    gemma = MODELS["gemma-3-4b"]
    assert total_params(gemma) - gemma.vision_params == 3_880_263_168
    for spec in MODELS.values():
        assert bool(spec.vision_params) == bool(spec.vision_note), spec.name


def test_every_row_cites_its_config_and_date() -> None:
    for spec in MODELS.values():
        assert re.fullmatch(r"https://huggingface\.co/[\w.-]+/[\w.-]+/blob/main/config\.json",
                            spec.source), spec.name
        assert dt.date.fromisoformat(spec.retrieved) <= dt.date.today()
        assert spec.hf_repo and spec.source.startswith(f"https://huggingface.co/{spec.hf_repo}/")
        assert spec.display and spec.family


def test_hf_repos_and_aliases_are_unique() -> None:
    repos = [m.hf_repo.lower() for m in MODELS.values() if m.hf_repo]
    assert len(repos) == len(set(repos))
    owner: dict[str, str] = {}
    for spec in MODELS.values():
        keys = {spec.name, spec.display, *spec.aliases}
        if spec.hf_repo:
            keys |= {spec.hf_repo, spec.hf_repo.split("/", 1)[1]}
        for key in {catalog.normalize(k) for k in keys}:
            assert owner.setdefault(key, spec.name) == spec.name, (key, owner[key], spec.name)


def test_every_name_alias_and_repo_resolves_to_its_row() -> None:
    for spec in MODELS.values():
        for key in (spec.name, spec.display, *spec.aliases, spec.hf_repo or spec.name):
            found = catalog.find_model(key)
            assert found is not None and found.name == spec.name, key


# --- Typed checkpoint extras: MTP modules apart from params --------------------------------


def test_deepseek_reports_671b_with_the_mtp_module_apart() -> None:
    for name in ("deepseek-v3", "deepseek-r1", "deepseek-v3.1"):
        spec = MODELS[name]
        assert spec.params == 671_026_419_200  # the paper's 671B: what serving loads
        assert spec.mtp_params == 13_463_426_304  # the card's "14B" MTP module
        assert spec.checkpoint_params == 684_531_386_000
        assert spec.active_params < spec.params  # MTP is not part of a token's forward pass


def test_mtp_module_layout() -> None:
    # One MoE decoder layer + enorm/hnorm/shared_head.norm + eh_proj [2h -> h], plus the
    # stored copies of embed_tokens and shared_head.head where the release keeps them.
    glm45, glm46 = MODELS["glm-4.5"], MODELS["glm-4.6"]
    h, v = glm45.hidden, glm45.vocab
    moe_layer = sum(t.elements for t in tensors(glm45) if t.layer == glm45.layers - 1)
    assert mtp_params(glm46) == moe_layer + 3 * h + 2 * h * h
    assert mtp_params(glm45) == mtp_params(glm46) + 2 * v * h
    assert glm45.params == glm46.params == 352_797_829_024
    for spec in MODELS.values():
        assert bool(spec.mtp_params) == (spec.mtp_layers > 0), spec.name
        assert spec.params == total_params(spec)


# --- Architecture features of the 2025-26 models ------------------------------------------


def _layer(spec_name: str, layer: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in tensors(MODELS[spec_name]):
        if t.layer == layer:
            out[t.role] = out.get(t.role, 0) + t.elements
    return out


def test_gpt_oss_sinks_biases_and_alternating_windows() -> None:
    spec = MODELS["gpt-oss-120b"]
    layer = _layer("gpt-oss-120b", 0)
    assert layer["attn_sinks"] == 64  # one per query head
    assert layer["attn_q_bias"] == 64 * 64 and layer["attn_output_bias"] == 2880
    assert layer["ffn_gate_inp_bias"] == 128  # router bias
    assert layer["ffn_up_exps_bias"] == 128 * 2880 and layer["ffn_down_exps_bias"] == 128 * 2880
    assert (spec.sliding_window, spec.sliding_layers) == (128, spec.layers // 2)
    # active: 4 of 128 experts' weights and biases
    expert = sum(v for k, v in layer.items() if k.removesuffix("_bias").endswith("_exps"))
    assert active_params(spec) == total_params(spec) - spec.layers * expert * 124 // 128


def test_llama4_moe_interleave_and_shared_expert() -> None:
    mav, scout = MODELS["llama-4-maverick"], MODELS["llama-4-scout"]
    assert mav.moe_layers == 24 and scout.moe_layers == 48
    dense, moe = _layer("llama-4-maverick", 0), _layer("llama-4-maverick", 1)
    assert "ffn_up_exps" not in dense and dense["ffn_up"] == 5120 * 16384
    assert moe["ffn_up_exps"] == 128 * 5120 * 8192 and moe["ffn_up_shexp"] == 5120 * 8192
    assert "ffn_up" not in moe
    # chunked local attention on 3 of 4 layers, 8192 tokens
    assert (mav.sliding_window, mav.sliding_layers) == (8192, 36)


def test_minimax_m1_hybrid_attention() -> None:
    spec = MODELS["minimax-m1"]
    assert spec.attention_layers == 10  # attn_type_list: 1 softmax layer in every 8
    assert [i for i in range(spec.layers) if not spec.is_linear_attention(i)] == list(
        range(7, 80, 8))
    lightning = _layer("minimax-m1", 0)
    assert lightning["lin_attn_qkv"] == 6144 * 3 * 8192 and "attn_k" not in lightning
    assert _layer("minimax-m1", 7)["attn_k"] == 6144 * 8 * 128


def test_minimax_m2_full_width_qk_norm() -> None:
    layer = _layer("minimax-m2", 0)
    assert layer["attn_q_norm"] == 48 * 128 and layer["attn_k_norm"] == 8 * 128


def test_deepseek_v32_indexer_per_layer() -> None:
    v32, v31 = MODELS["deepseek-v3.2-exp"], MODELS["deepseek-v3.1"]
    per_layer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert per_layer == 13_959_424
    assert v32.params - v31.params == 61 * per_layer
    assert v32.mtp_params - v31.mtp_params == per_layer


def test_kimi_k2_hub_total_reconciliation() -> None:
    # Hub: 1,026,408,235,864 = our weights + 3,416 (61 x 56) unplaced elements, no FP8 scales;
    # the repo's byte count 1,029,173,256,720 does include the scales (pinned in test_quant).
    spec = MODELS["kimi-k2"]
    assert total_params(spec) + 61 * 56 == 1_026_408_235_864
    assert checkpoint_extras(spec) == 62_495_192 and spec.mtp_params == 0


# --- Vision towers: recomputed from each config's vision_config ---------------------------


def _qwen25_vl_tower(out_hidden: int, depth: int = 32, h: int = 1280, mlp: int = 3420) -> int:
    # Conv3d patch embed (no bias); blocks: 2 RMSNorms, qkv + proj, SwiGLU gate/up/down, all
    # with biases; merger: RMSNorm, Linear(4h, 4h), Linear(4h, out), both with biases.
    patch = 3 * 2 * 14 * 14 * h
    block = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * (h * mlp + mlp) + (mlp * h + h)
    merger = h + (4 * h * 4 * h + 4 * h) + (4 * h * out_hidden + out_hidden)
    return patch + depth * block + merger


def _qwen3_vl_tower(out_hidden: int, depth: int, h: int, mlp: int) -> int:
    # Conv3d patch embed with bias, 2,304 learned positions; blocks: 2 LayerNorms, qkv + proj,
    # fc1/fc2, all with biases; a merger with LayerNorm(h) and three DeepStack mergers with
    # LayerNorm(4h), each Linear(4h, 4h) + Linear(4h, out) with biases.
    patch = 3 * 2 * 16 * 16 * h + h
    block = 4 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * mlp + mlp) + (mlp * h + h)
    mlp_part = (4 * h * 4 * h + 4 * h) + (4 * h * out_hidden + out_hidden)
    return patch + 2304 * h + depth * block + (2 * h + mlp_part) + 3 * (8 * h + mlp_part)


def _llama4_tower(text_hidden: int) -> int:
    h, mlp, layers = 1408, 5632, 34
    patch = 3 * 14 * 14 * h + h + ((336 // 14) ** 2 + 1) * h + 2 * 2 * h  # + class, pos, LNs
    block = 4 * (h * h + h) + (h * mlp + mlp) + (mlp * h + h) + 2 * 2 * h
    adapter = mlp * 4096 + 4096 * 4096  # pixel-shuffle MLP, no biases
    return patch + layers * block + adapter + 4096 * text_hidden


@pytest.mark.parametrize(
    ("name", "tower"),
    [
        ("qwen2.5-vl-3b", _qwen25_vl_tower(2048)),
        ("qwen2.5-vl-7b", _qwen25_vl_tower(3584)),
        ("qwen3-vl-2b", _qwen3_vl_tower(2048, 24, 1024, 4096)),
        ("qwen3-vl-4b", _qwen3_vl_tower(2560, 24, 1024, 4096)),
        ("qwen3-vl-8b", _qwen3_vl_tower(4096, 27, 1152, 4304)),
        ("qwen3-vl-32b", _qwen3_vl_tower(5120, 27, 1152, 4304)),
        ("qwen3-vl-30b-a3b", _qwen3_vl_tower(2048, 27, 1152, 4304)),
        ("qwen3-vl-235b-a22b", _qwen3_vl_tower(4096, 27, 1152, 4304)),
        ("llama-4-scout", _llama4_tower(5120)),
        ("llama-4-maverick", _llama4_tower(5120)),
    ],
)
def test_vision_towers_follow_their_vision_config(name: str, tower: int) -> None:
    spec = MODELS[name]
    assert spec.vision_params == tower
    assert spec.params == sum(t.elements for t in tensors(spec)) + tower  # loaded: in params


def test_every_vision_note_states_its_total() -> None:
    for spec in MODELS.values():
        if spec.vision_params:
            assert f"{spec.vision_params:,} in all" in spec.vision_note, spec.name


def test_vision_language_text_stacks_match_their_text_models() -> None:
    # "Where the text tower sizes the same": each VL row's stack equals its text sibling's.
    pairs = {"qwen2.5-vl-7b": "qwen2.5-7b", "qwen2.5-vl-3b": "qwen2.5-3b",
             "qwen3-vl-8b": "qwen3-8b", "qwen3-vl-4b": "qwen3-4b", "qwen3-vl-32b": "qwen3-32b",
             "qwen3-vl-30b-a3b": "qwen3-30b-a3b", "qwen3-vl-235b-a22b": "qwen3-235b-a22b"}
    for vl, text in pairs.items():
        assert MODELS[vl].params - MODELS[vl].vision_params == MODELS[text].params, vl


# --- Native formats ----------------------------------------------------------------------


def test_native_formats_are_known_schemes_with_a_source() -> None:
    from engine.quant import QUANTS

    for spec in MODELS.values():
        assert spec.native_quant in QUANTS, spec.name
        if spec.native_quant != "bf16":
            assert spec.native_source.startswith("https://"), spec.name
        # block scales belong to native FP8 releases only
        assert bool(spec.fp8_block) == (spec.native_quant == "fp8"), spec.name
    natives = {n: m.native_quant for n, m in MODELS.items() if m.native_quant != "bf16"}
    assert natives == {
        "deepseek-v3": "fp8", "deepseek-r1": "fp8", "deepseek-v3.1": "fp8",
        "deepseek-v3.2-exp": "fp8", "kimi-k2": "fp8", "minimax-m2": "fp8",
        "gpt-oss-20b": "mxfp4", "gpt-oss-120b": "mxfp4",
    }
