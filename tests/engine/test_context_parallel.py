"""Context parallelism for long-sequence training (issue 23): the sequence split over CP ranks
divides the activations, the parameters stay whole on each, ring attention's K/V traffic costs
time, and the plan search reaches for it where nothing else fits (Llama 3.1 405B at 8K on 16,384
H100s, which Meta trained there)."""

from __future__ import annotations

import pytest

from engine import ask, catalog, speed
from engine.methods import method
from engine.plan import CP_MIN_SEQ, Strategy, _cached_components, _context_parallel
from engine.request import Request

MODELS = catalog.models()


def _pretrain(model: str, **more) -> Request:
    return Request(model=model, method="pretrain", **more)


@pytest.mark.parametrize("model", ["llama-3.1-70b", "qwen2.5-72b"])
def test_context_parallel_divides_activations_not_model_states(model: str) -> None:
    spec = MODELS[model]
    req = _pretrain(model, seq=16384, checkpointing="none", gpu="h100-sxm", gpus=64)
    whole = _cached_components(spec, req, Strategy(8, 8, 1, 1, "none"))
    split = _cached_components(spec, req, Strategy(8, 4, 1, 1, "none", cp=2))
    # every saved tensor is per token: half the tokens, half the activations (and logits)
    assert split.activations == pytest.approx(whole.activations / 2, rel=1e-6)
    # the cp ranks hold the same weights; the distributed optimizer shards over dp x cp
    assert split.weights == whole.weights
    assert split.optimizer == pytest.approx(whole.optimizer, rel=1e-9)


def test_context_parallel_only_for_long_sequences() -> None:
    base = [Strategy(8, 16, 1, 1, "none"), Strategy(8, 16, 1, 3, "none")]
    assert _context_parallel(_pretrain("llama-3.1-70b", seq=CP_MIN_SEQ // 2), base) == []
    long = _context_parallel(_pretrain("llama-3.1-70b", seq=32768), base)
    assert long and all(s.cp > 1 and s.dp * s.cp == 16 for s in long)
    # each rank keeps a chunk of at least 4K tokens
    assert all(32768 // s.cp >= 4096 for s in long)


@pytest.mark.parametrize("model,gpu", [("llama-3.1-405b", "h100-sxm"),
                                       ("llama-3.1-70b", "h800")])
def test_ring_attention_costs_time_never_saves_it(model: str, gpu: str) -> None:
    spec, card = MODELS[model], catalog.gpus()[gpu]
    common = dict(gpus=256, method=method("pretrain"), checkpointing="none", seq=8192,
                  batch=1, zero=1, tp=8, tokens=None, trainable=spec.params)
    plain = speed.train_speed(spec, card, **common)
    ring = speed.train_speed(spec, card, cp=2, **common)
    assert ring.tokens_per_s <= plain.tokens_per_s
    # GQA's few KV heads: the ring's traffic is a small share of the compute
    assert ring.tokens_per_s > 0.9 * plain.tokens_per_s
    assert speed.context_parallel_s(spec, card, tokens=8192, cp=4, tp=8, pp=1, passes=2) > \
        speed.context_parallel_s(spec, card, tokens=8192, cp=2, tp=8, pp=1, passes=2)


def test_llama3_405b_fits_where_meta_trained_it() -> None:
    plan = ask("llama-3.1-405b pretrain gpu=h100-sxm gpus=16384 tokens=15.6T seq=8192 "
               "checkpointing=none").plans[0]
    assert plan.verdict != "no"
    assert plan.settings.cp > 1 or plan.settings.pp > 1
    assert plan.settings.tp * plan.settings.pp * plan.settings.cp * plan.settings.dp == 16384
    if plan.settings.cp > 1:
        assert f"CP={plan.settings.cp}" in plan.strategy
        assert f"--context-parallel-size {plan.settings.cp}" in plan.launch[0].commands[0]


def test_short_sequences_keep_their_plans() -> None:
    plan = ask("llama-3.1-70b pretrain gpu=h100-sxm gpus=256 seq=4096").plans[0]
    assert plan.settings.cp == 1


def test_cp_pins_or_forbids_context_parallelism() -> None:
    """cp=1 asks the run as measured without it; cp=N pins it (as ep= does for experts)."""
    asked = "llama-3.1-405b pretrain gpu=h100-sxm gpus=16384 seq=8192 checkpointing=none"
    assert ask(asked + " cp=1").plans[0].settings.cp == 1
    assert ask(asked + " cp=4").plans[0].settings.cp == 4
    # Hugging Face model code has no context parallelism
    assert ask(asked + " framework=deepspeed").plans[0].settings.cp == 1


def test_context_parallel_only_where_nothing_else_runs() -> None:
    # torchtitan's 8K Llama 3.1 8B on 8 H100 NVL ran without CP; a layout without it that runs
    # (even tight) is kept
    plan = ask("llama-3.1-8b pretrain gpu=h100-nvl gpus=8 seq=8192 batch=1 zero=3").plans[0]
    assert plan.verdict != "no" and plan.settings.cp == 1
