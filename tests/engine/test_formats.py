"""Weight formats as releases (issue 23): which official release a plan serves, and how the card
really runs it. No card without FP8 tensor cores (Ampere, Ascend) is ever said to compute in FP8."""

from __future__ import annotations

import pytest

import engine
from engine import ask, catalog, speed
from engine.catalog import find_gpu
from engine.formats import weight_path
from engine.quant import QUANTS, weight_bytes

GPUS = catalog.gpus()
NO_FP8 = [g for g in GPUS.values() if g.architecture == "ampere" or g.vendor == "huawei"]


def test_the_catalog_knows_which_cards_lack_fp8() -> None:
    assert {"a800", "a100-80gb", "rtx-3090", "ascend-910b", "ascend-910c"} <= {g.name for g in NO_FP8}
    assert all(not g.fp8_tflops for g in NO_FP8)


@pytest.mark.parametrize("quant", sorted(QUANTS))
def test_no_ampere_or_ascend_path_computes_in_fp8(quant: str) -> None:
    for gpu in NO_FP8:
        path = weight_path(gpu, quant)
        assert path.compute != "fp8", (gpu.name, quant, path)
        assert speed.tensor_tflops(gpu, quant) <= gpu.bf16_tflops * (2 if gpu.int8_tops else 1)
        if quant == "fp8":
            assert not path.native
            assert path.kernel == ("int8-w8a8-ascend" if gpu.vendor == "huawei"
                                   else "w8a16-marlin")


def test_fp8_runs_natively_where_the_card_has_fp8_tensor_cores() -> None:
    for name in ("h20", "h100-sxm", "h800", "l40s", "l20", "rtx-4090", "mi300x"):
        path = weight_path(GPUS[name], "fp8")
        assert path.native and path.compute == "fp8", name
        assert speed.tensor_tflops(GPUS[name], "fp8") == GPUS[name].fp8_tflops


@pytest.mark.parametrize("card", ["a800", "a100-80gb", "rtx-a6000", "ascend-910b", "ascend-910c"])
def test_plans_on_cards_without_fp8_never_say_fp8_compute(card: str) -> None:
    for query in (f"qwen3-235b-a22b inference gpu={card}", f"deepseek-v3 inference gpu={card}",
                  f"llama-3.1-405b inference gpu={card} quant=fp8",
                  f"gpt-oss-120b inference gpu={card}"):
        for plan in ask(query).plans:
            assert plan.settings.compute != "fp8", (query, plan.settings)
            assert "FP8 compute" not in plan.strategy, (query, plan.strategy)


def test_the_official_fp8_release_is_served_next_to_bf16() -> None:
    ans = ask("qwen3-235b-a22b inference gpu=h20")
    top = ans.plans[0]
    assert top.settings.quant == "fp8" and top.settings.release == "Qwen/Qwen3-235B-A22B-FP8"
    assert top.settings.kernel == "fp8-w8a8" and "FP8 weights (Qwen/Qwen3-235B-A22B-FP8)" in top.strategy
    assert "Qwen/Qwen3-235B-A22B-FP8" in " ".join(ans.assumptions)
    # asked for bf16, only bf16 is planned
    bf16 = ask("qwen3-235b-a22b inference gpu=h20 quant=bf16").plans[0]
    assert bf16.settings.quant == "bf16" and bf16.settings.release == "Qwen/Qwen3-235B-A22B"


def test_an_fp8_release_on_ampere_is_labelled_weight_only() -> None:
    plan = ask("qwen3-coder-480b-a35b inference gpu=a800 gpus=8").plans[0]
    assert plan.settings.quant == "fp8" and plan.settings.kernel == "w8a16-marlin"
    assert plan.settings.compute == "bf16" and "W8A16" in plan.strategy


def test_ascend_converts_fp8_releases_to_int8() -> None:
    plan = ask("deepseek-r1 inference gpu=910b gpus=16").plans[0]
    assert plan.settings.kernel == "int8-w8a8-ascend" and plan.settings.compute == "int8"
    assert "msModelSlim" in plan.strategy


def test_llama_405b_fp8_keeps_attention_and_edge_blocks_in_bf16() -> None:
    spec = catalog.models()["llama-3.1-405b"]
    size = weight_bytes(spec, "fp8")
    assert size.by_role["attn_q"] == 2 * sum(
        1 for _ in range(spec.layers)) * spec.hidden * spec.q_dim  # every q projection in bf16
    # 124 of 126 FFNs in FP8 (one byte a weight), the first and last in bf16
    ffn = 3 * spec.hidden * spec.intermediate
    assert sum(size.by_role[r] for r in ("ffn_gate", "ffn_up", "ffn_down")) == pytest.approx(
        124 * ffn + 2 * 2 * ffn, rel=0.01)
    # the official FP8 release fits one 8 x 80 GB server
    top = ask("llama-3.1-405b inference gpu=h100-sxm").plans[0]
    assert top.gpus == 8 and top.settings.quant == "fp8" and top.service.meets


def test_reasoning_models_are_served_at_their_output_length() -> None:
    ans = ask("qwen3-32b inference gpu=h20 gpus=1")
    plan = ans.plans[0]
    assert plan.settings.context == 4096 + 32768 and plan.settings.output == 32768
    assert plan.settings.prompt == 4096 and plan.service.prompt == 4096
    assert plan.service.users_held is not None and plan.service.context == plan.settings.context
    assert any("reasoning model" in line for line in ans.assumptions)
    # context= as asked is kept
    assert ask("qwen3-32b inference context=8k gpu=h20 gpus=1").plans[0].settings.context == 8192
    # not a reasoning model: the general default
    assert ask("qwen3-coder-30b-a3b inference gpu=h20 gpus=1").plans[0].settings.context == 4096


def test_the_kv_cache_must_hold_the_users_with_ten_percent_to_spare() -> None:
    # the users one pinned plan holds, then ask for exactly that many and one more
    base = ask("qwen2.5-72b inference gpu=h20 gpus=2 context=32k users=1").plans[0]
    held = base.service.users_held
    assert held > 1
    at = ask(f"qwen2.5-72b inference gpu=h20 gpus=2 context=32k users={held} replicas=1")
    over = ask(f"qwen2.5-72b inference gpu=h20 gpus=2 context=32k users={held + 1} replicas=1")
    assert not any("KV cache holds" in m for m in at.plans[0].service.misses)
    assert over.plans[0].verdict == "no" or any(
        "KV cache holds" in m for m in over.plans[0].service.misses)


@pytest.mark.parametrize("question", [
    "deepseek-r1 推理", "deepseek-v3 inference", "qwen3-coder-480b-a35b inference",
    "qwen3-235b-a22b inference budget=$200k", "llama-3.1-405b inference"])
def test_frontier_asks_recommend_a_runnable_official_fp8_release(question: str) -> None:
    """issue 23's done-means, asked as a buyer would: the recommendation runs, serves the maker's
    FP8 release and says so in its headline; no plan on an Ampere or Ascend card computes in
    FP8 (it runs the release weight-only, W8A16, or converted to int8)."""
    ans = ask(question)
    top = ans.plans[0]
    assert top.verdict != "no"
    assert top.settings.release and top.settings.quant == "fp8", top.settings
    assert "FP8" in ans.recommendation and top.settings.release in ans.recommendation
    for plan in ans.plans:
        if GPUS[plan.gpu] in NO_FP8:
            assert plan.settings.compute != "fp8", (plan.gpu, plan.settings)
            assert "FP8 compute" not in plan.strategy and "FP8 计算" not in plan.strategy


# -- cards before Ampere: what vLLM's kernels run there ------------------------------------

@pytest.mark.parametrize(("card", "quant", "runs"), [
    ("v100-32gb", "fp8", False), ("t4", "fp8", False), ("v100-32gb", "mxfp4", False),
    ("v100-32gb", "awq", False), ("t4", "awq", True), ("v100-32gb", "gptq", True),
    ("v100-32gb", "bf16", True), ("a100-80gb", "fp8", True), ("rtx-3090", "awq", True)])
def test_vllm_serves_only_what_its_kernels_run_on_the_card(card: str, quant: str,
                                                           runs: bool) -> None:
    from engine.formats import unsupported_weights

    gpu = find_gpu(card)
    assert (unsupported_weights(gpu, quant, "vllm") is None) is runs
    assert unsupported_weights(gpu, quant, "llama.cpp") is None  # GGUF path: not vLLM's kernels


def test_a_pinned_card_that_cannot_run_the_format_says_why_and_no_alternative_claims_it() -> None:
    ans = engine.ask("qwen2.5-14b inference gpu=v100-32gb gpus=1 quant=fp8")
    assert not ans.plans and "compute capability 8.0" in ans.recommendation
    asked = engine.ask("qwen2.5-14b inference gpu=v100-32gb gpus=1 users=4")
    for alt in asked.alternatives:
        if alt.plan is not None and alt.plan.gpu == "v100-32gb":
            assert alt.plan.settings.quant not in ("fp8", "awq", "mxfp4"), alt.change


@pytest.mark.parametrize("card", ["v100-32gb", "t4"])
def test_4bit_weights_compute_in_the_cards_half_format(card: str) -> None:
    path = weight_path(find_gpu(card), "gptq")
    assert path.compute == "fp16" and "bf16" not in path.kernel
    assert weight_path(find_gpu("a100-80gb"), "gptq").compute == "bf16"
