"""Expert parallelism for MoE (issue 23): experts sharded whole over EP ranks, attention data
parallel for MLA models, the block-FP8 rule that forces EP, and what EP does to memory and speed."""

from __future__ import annotations

from engine import ask, catalog
from engine.plan import Strategy, _experts_split_ok, _moe_variants
from engine.request import Request

MODELS = catalog.models()


def _serve(model: str, **more) -> Request:
    return Request(model=model, method="inference", **more)


def test_block_fp8_experts_that_tp_cannot_split_go_expert_parallel() -> None:
    coder = MODELS["qwen3-coder-480b-a35b"]  # moe_intermediate 2560: 320 per rank at TP 8
    assert not _experts_split_ok(coder, _serve("x", quant="fp8"), 8)
    assert _experts_split_ok(coder, _serve("x", quant="fp8"), 4)
    assert _experts_split_ok(coder, _serve("x", quant="bf16"), 8)  # no blocks in bf16
    variants = _moe_variants(coder, _serve("x", quant="fp8"), Strategy(8, 1, 1, None, "none"))
    assert all(v.ep == 8 for v in variants)  # TP-split experts are not offered
    plan = ask("qwen3-coder-480b-a35b inference gpu=h20 gpus=8").plans[0]
    assert plan.settings.ep == 8 and "EP=8" in plan.strategy


def test_expert_parallel_keeps_the_memory_of_tensor_parallel() -> None:
    tp = ask("qwen3-235b-a22b inference quant=bf16 gpu=h100-sxm gpus=8 tp=8").plans[0]
    ep_plans = [p for p in ask("qwen3-235b-a22b inference quant=bf16 gpu=h100-sxm gpus=8").plans]
    assert tp.memory.weights == ep_plans[0].memory.weights


def test_dp_attention_holds_many_more_mla_users() -> None:
    spec = MODELS["deepseek-v3"]
    req = _serve("deepseek-v3", quant="fp8", users=256, context=8192, gpu="h200", gpus=8)
    from engine.plan import _cached_components, users_held
    gpu = catalog.gpus()["h200"]
    tp8 = Strategy(8, 1, 1, None, "none", ep=8)
    dp8 = Strategy(1, 1, 1, None, "none", ep=8, dp_attn=8)
    # the latent KV is copied on every TP rank, but split by users over DP groups
    assert _cached_components(spec, req, dp8).kv_cache < _cached_components(spec, req, tp8).kv_cache / 6
    # the attention weights are copied per DP group instead
    assert _cached_components(spec, req, dp8).weights > _cached_components(spec, req, tp8).weights
    assert users_held(spec, req, dp8, 8, gpu) > 3 * users_held(spec, req, tp8, 8, gpu)
    plan = ask("deepseek-v3 inference gpu=h200 gpus=8 users=256 context=8k").plans[0]
    assert plan.settings.dp_attention > 1 and plan.service.users_held >= 256


def test_one_user_is_served_with_tensor_parallel_attention() -> None:
    plan = ask("deepseek-v3 inference gpu=h200 gpus=8").plans[0]
    assert plan.settings.dp_attention == 1 and plan.settings.tp == 8
