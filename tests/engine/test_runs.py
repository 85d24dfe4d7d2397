"""Published runs (engine/data/runs.toml): each repeats a validation setup, and matches only what
it shows."""

from __future__ import annotations

import tomllib
from pathlib import Path

from engine import runs
from engine.parse import parse
from engine.resolve import resolve_model

SETUPS = {s["id"]: s for s in tomllib.loads(
    (Path(__file__).resolve().parents[2] / "validation" / "setups.toml").read_text(
        encoding="utf-8"))["setup"]}


def test_every_run_repeats_a_validation_setup() -> None:
    assert runs.runs()
    for run in runs.runs():
        setup = SETUPS[run.id]
        req = parse(setup["query"])
        assert (req.gpu, req.gpus, req.method) == (run.gpu, run.gpus, run.method), run.id
        assert setup["source"].split(" ; ")[0] == run.source.split(" ; ")[0], run.id
        assert run.recipe in runs.RECIPE_TEXT, run.id  # translatable
        for key in run.settings:  # the settings are request fields
            assert key in type(req).model_fields, (run.id, key)


def test_a_run_matches_the_same_size_method_and_memory() -> None:
    eight, _ = resolve_model("8B")
    assert runs.matching(eight, "lora", "rtx-3090", 1).id == "torchtune-8b-lora-1x4090"
    assert runs.matching(eight, "lora", "rtx-4090", 2) is None  # another card count
    assert runs.matching(eight, "lora", "rtx-a4000", 1) is None  # 16 GB: less than the run's
    assert runs.matching(eight, "pretrain", "rtx-4090", 1) is None
    big, _ = resolve_model("70B")
    assert runs.matching(big, "lora", "rtx-4090", 1) is None


def test_dense_and_moe_never_match_each_other() -> None:
    moe, _ = resolve_model("qwen3-30b-a3b")
    dense, _ = resolve_model("30B")
    assert runs.matching(moe, "qlora", "rtx-4090", 1).id == "unsloth-qwen3-30b-a3b-qlora-1x24gb"
    assert runs.matching(dense, "qlora", "rtx-4090", 1) is None


def test_a_served_run_counts_only_for_its_weight_format() -> None:
    spec, _ = resolve_model("70B")
    assert runs.matching(spec, "inference", "rtx-4090", 2, quant="q4_k_m") is not None
    assert runs.matching(spec, "inference", "rtx-4090", 2, quant="bf16") is None


def test_a_run_vouches_only_for_plans_using_its_recipe() -> None:
    """torchtune's 8B full fine-tune on a 4090 used 8-bit paged AdamW fused into backward: it
    says nothing about plain AdamW on a bigger card."""
    from engine.schema import Settings

    spec, _ = resolve_model("llama-3.1-8b")

    def settings(**kw: object) -> Settings:
        base = dict(tp=1, dp=1, pp=1, zero=None, offload="none", checkpointing="full",
                    precision="bf16", optimizer="adamw", quant="bf16", seq=2048, batch=1,
                    context=None, users=None)
        return Settings.build(**{**base, **kw})

    assert runs.matching(spec, "full-finetune", "h200", 1, settings=settings()) is None
    light = settings(optimizer="paged-adamw-8bit", fused_step=True)
    assert runs.matching(spec, "full-finetune", "h200", 1, settings=light) is not None
