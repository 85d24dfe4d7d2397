"""Hugging Face Hub look-up: the one engine module that touches the network.

Fetches a repo's config.json with huggingface_hub (which honours HF_ENDPOINT and HF_HUB_OFFLINE
and caches the file), maps it to a ModelSpec and keeps the mapped spec in a local JSON cache so
a later offline run still knows the model. Offline and unknown, it says so and names the
closest catalog entries.
"""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path
from typing import Any

from engine.architecture import ModelSpec
from engine.i18n import _
from engine.resolve import UnknownModel, closest_text

ARCH_MLP_PLAIN = ("gpt2", "gpt_neox", "phi", "falcon", "bloom", "opt", "starcoder2")


def cache_dir() -> Path:
    root = os.environ.get("GPUSIZE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "gpusize")
    return Path(root) / "models"


def _cache_path(repo_id: str) -> Path:
    return cache_dir() / (repo_id.replace("/", "--") + ".json")


def _first(cfg: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def config_to_spec(repo_id: str, cfg: dict[str, Any], *, source: str, retrieved: str) -> ModelSpec:
    """Map a transformers config.json to our fields; text_config for multimodal wrappers."""
    if "text_config" in cfg and "hidden_size" not in cfg:
        cfg = {**cfg["text_config"], "model_type": cfg.get("model_type", "")}
    model_type = str(cfg.get("model_type", ""))
    hidden = int(_first(cfg, "hidden_size", "n_embd", "d_model"))
    heads = int(_first(cfg, "num_attention_heads", "n_head"))
    kv_heads = int(_first(cfg, "num_key_value_heads", "multi_query_group_num", default=heads))
    head_dim = int(_first(cfg, "head_dim", default=hidden // heads))
    experts = int(_first(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=0))
    is_mla = bool(cfg.get("kv_lora_rank"))
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) else None
    layers = int(_first(cfg, "num_hidden_layers", "n_layer", "num_layers"))
    fields: dict[str, Any] = {
        "name": repo_id.lower(),
        "display": repo_id,
        "hf_repo": repo_id,
        "family": model_type or "unknown",
        "layers": layers,
        "hidden": hidden,
        "intermediate": int(_first(cfg, "intermediate_size", "ffn_hidden_size", default=4 * hidden)),
        "heads": heads,
        "kv_heads": heads if is_mla else kv_heads,
        "head_dim": int(cfg.get("v_head_dim", head_dim)) if is_mla else head_dim,
        "vocab": int(_first(cfg, "vocab_size", "padded_vocab_size")),
        "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "mlp": "plain" if model_type in ARCH_MLP_PLAIN else "gated",
        "qkv_bias": bool(_first(cfg, "attention_bias", "add_qkv_bias", default=model_type == "qwen2")),
        "attention": "mla" if is_mla else ("gqa" if kv_heads < heads else "mha"),
        "max_context": int(_first(cfg, "max_position_embeddings", "seq_length", default=4096)),
        "qk_norm": model_type in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text"),
        "norms_per_layer": 4 if model_type.startswith("gemma2") or model_type.startswith("gemma3") else 2,
        "source": source,
        "retrieved": retrieved,
    }
    if window:
        pattern = cfg.get("sliding_window_pattern")
        fields["sliding_window"] = int(window)
        fields["sliding_layers"] = (layers - layers // int(pattern)) if pattern else layers
    if experts:
        fields |= {
            "experts": experts,
            "active_experts": int(_first(cfg, "num_experts_per_tok", "top_k", default=2)),
            "shared_experts": int(_first(cfg, "n_shared_experts", default=0)),
            "moe_intermediate": int(_first(cfg, "moe_intermediate_size", "intermediate_size")),
            "dense_layers": int(_first(cfg, "first_k_dense_replace", default=0)),
        }
        if cfg.get("shared_expert_intermediate_size"):
            fields |= {"shared_experts": 1,
                       "shared_intermediate": int(cfg["shared_expert_intermediate_size"]),
                       "shared_expert_gate": True}
    if is_mla:
        fields |= {k: int(cfg.get(k) or 0) for k in ("q_lora_rank", "kv_lora_rank",
                                                      "qk_nope_head_dim", "qk_rope_head_dim",
                                                      "v_head_dim")}
        fields["router_bias"] = cfg.get("topk_method") == "noaux_tc"
    return ModelSpec(**fields)


def lookup(repo_id: str) -> ModelSpec:
    """The spec for a Hub repo id: from the local cache, else fetched; UnknownModel if neither."""
    path = _cache_path(repo_id)
    if path.exists():
        try:
            return ModelSpec(**json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError):
            path.unlink(missing_ok=True)  # a corrupt cache entry: fetch again
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

        # One quick metadata probe without retries first: offline, hf_hub_download would back
        # off and retry for ~20 s before giving up.
        get_hf_file_metadata(hf_hub_url(repo_id, "config.json", endpoint=endpoint), timeout=5,
                             endpoint=endpoint)
        local = hf_hub_download(repo_id, "config.json", endpoint=endpoint, etag_timeout=5)
        cfg = json.loads(Path(local).read_text(encoding="utf-8"))
        spec = config_to_spec(repo_id, cfg, source=f"{endpoint}/{repo_id}/blob/main/config.json",
                              retrieved=date.today().isoformat())
    except ImportError as err:
        raise UnknownModel(_("unknown model {model}: it is not in the catalog and huggingface_hub "
                             "is not installed (pip install 'gpusize[hub]').").format(
            model=repo_id)) from err
    except Exception as err:  # network, 404, gated repo, malformed config: one clear line
        raise UnknownModel(_(
            "unknown model {model}: not in the catalog, and its config.json could not be fetched "
            "from {endpoint} ({reason}). Closest catalog entries: {closest}.").format(
            model=repo_id, endpoint=endpoint, reason=type(err).__name__,
            closest=closest_text(repo_id))) from err
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec.model_dump_json(), encoding="utf-8")
    return spec
