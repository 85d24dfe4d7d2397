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

# Rows left without published_params, and why (the comment above each row says more).
UNPUBLISHED = {
    "qwen3-0.6b": "the Hub total counts the stored copy of the tied output matrix",
    "phi-3-medium": "no exact published total could be read",
    "glm-4-9b": "no Hub safetensors total could be read",
    "baichuan2-7b": "pytorch .bin checkpoint: no safetensors total, no exact figure published",
    "baichuan2-13b": "pytorch .bin checkpoint: no safetensors total, no exact figure published",
}


def test_every_row_loads_and_the_catalog_is_large() -> None:
    assert len(MODELS) >= 30
    for name, spec in MODELS.items():
        assert spec.name == name == name.lower()
        assert tensors(spec) and total_params(spec) > 0


def test_every_requested_model_is_present() -> None:
    assert not set(REQUIRED) - set(MODELS)


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
    for name in ("deepseek-v3", "deepseek-r1"):
        spec = MODELS[name]
        assert spec.params == 671_026_419_200  # the paper's 671B: what serving loads
        assert spec.mtp_params == 13_463_426_304  # the card's "14B" MTP module
        assert spec.checkpoint_params == 684_531_386_000
        assert spec.active_params < spec.params  # MTP is not part of a token's forward pass
