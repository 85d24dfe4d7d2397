"""What a framework does by default that moves memory (engine/frameworks.py RECIPE_DEFAULTS):
Unsloth's fused linear cross-entropy and offloaded gradient checkpoints, filled in only where
the question leaves the knob unset."""

from __future__ import annotations

import pytest

from engine import ask
from engine.parse import parse


def test_unsloth_implies_its_fused_loss_and_offloaded_checkpoints() -> None:
    req = parse("qwen3-30b-a3b qlora gpu=rtx-4090 gpus=1 framework=unsloth")
    assert (req.loss, req.checkpointing_mode, req.offload) == ("fused", "full", "activations")
    plain = parse("qwen3-30b-a3b qlora gpu=rtx-4090 gpus=1")
    assert (plain.loss, plain.offload) == ("full", None)


@pytest.mark.parametrize("extra,loss,offload", [
    ("loss=full", "full", "activations"),          # a knob the question sets is kept
    ("checkpointing=none", "fused", None),          # no checkpoints, nothing to offload
    ("seq=256", "fused", None),                     # Unsloth keeps plain checkpointing < 512
    ("offload=optimizer", "fused", "optimizer"),
])
def test_unsloth_defaults_yield_to_the_question(extra: str, loss: str, offload: str | None) -> None:
    req = parse(f"llama-3.1-8b qlora gpu=rtx-4090 gpus=1 framework=unsloth {extra}")
    assert (req.loss, req.offload) == (loss, offload)


@pytest.mark.parametrize("model,gpu", [("qwen3-30b-a3b", "rtx-4090"), ("llama-3.1-8b", "rtx-a4000"),
                                       ("gpt-oss-20b", "l4")])
def test_unsloth_needs_less_than_hugging_face_defaults(model: str, gpu: str) -> None:
    hf = ask(f"{model} qlora gpu={gpu} gpus=1 seq=2048 batch=2").plans[0].memory
    unsloth = ask(f"{model} qlora gpu={gpu} gpus=1 seq=2048 batch=2 framework=unsloth").plans[0]
    assert unsloth.memory.total < hf.total
    # the answer says what it assumed
    assert any("loss=fused" in line for line in ask(
        f"{model} qlora gpu={gpu} gpus=1 framework=unsloth").assumptions)


def test_unsloth_qwen3_moe_qlora_runs_on_24gb() -> None:
    """Unsloth: 'Qwen3-30B-A3B works on just 17.5GB VRAM'; with its defaults gpusize no longer
    says it cannot run on a 24 GB card (it sizes adapters on every expert: about 22 GiB)."""
    plan = ask("qwen3-30b-a3b qlora gpu=rtx-4090 gpus=1 seq=2048 batch=2 rank=16 "
               "optimizer=adamw-8bit framework=unsloth").plans[0]
    assert plan.verdict != "no"
