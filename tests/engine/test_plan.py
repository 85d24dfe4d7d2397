"""Planning: pinned configurations, per-card smallest counts, and monotonic properties."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine import catalog, plan
from engine.family import template_spec
from engine.parse import parse
from engine.prices import price_book
from engine.resolve import resolve_model
from engine.sizing import answer_for, prepared

GIB = 1024**3
BOOK = price_book()
TODAY = date(2026, 12, 2)


def mem(text: str):
    """The first plan's memory as `engine.ask` computes it, without the answer's extras (the
    box's capacity over the whole catalog, alternatives): 0.3-0.9 s an ask, 3 ms this way."""
    req = parse(text)
    spec, _ = resolve_model(req.model)
    plans, _, _ = plan.ranked_plans(spec, prepared(spec, req), today=TODAY, book=BOOK)
    return plans[0].memory


def test_pinned_plan_is_first_and_evaluated_even_when_it_does_not_fit() -> None:
    ans = engine.ask("llama-3.1-8b full-finetune gpu=4090 gpus=1")
    assert ans.pinned and ans.plans[0].gpu == "rtx-4090" and ans.plans[0].gpus == 1
    m = ans.plans[0].memory
    assert not m.fits
    # 8.03B x (2 + 2 + 12) bytes of model states alone
    assert m.weights + m.gradients + m.optimizer == pytest.approx(8_030_261_248 * 16, rel=1e-6)
    assert m.total == pytest.approx(m.weights + m.gradients + m.optimizer + m.activations
                                    + m.kv_cache + m.overhead - m.reused, abs=7)
    # one GPU, gradients freed between steps: gradients and activations interleave in backward
    assert m.reused == min(m.gradients, m.activations)
    assert m.headroom == pytest.approx(m.total * 0.2, abs=1)


def test_pinned_multi_gpu_picks_lightest_zero_stage_that_fits() -> None:
    plan = engine.ask("llama-3.1-8b full-finetune gpu=a100-80gb gpus=8").plans[0]
    assert plan.memory.fits and plan.settings.zero == 1  # optimizer sharding suffices
    forced = engine.ask("llama-3.1-8b full-finetune gpu=a100-80gb gpus=8 zero=3").plans[0]
    assert forced.settings.zero == 3 and forced.memory.total < plan.memory.total


def test_unpinned_smallest_count_per_card() -> None:
    ans = engine.ask("llama-3.1-8b full-finetune market=global")
    by_card = {p.gpu: p for p in ans.plans}
    # 8.03B x 16 B = 128 GB of model states: one 80 GB card cannot hold them, two can
    assert by_card["h100-sxm"].gpus == 2 and by_card["h100-sxm"].memory.fits
    # 24 GB cards need more of them than 80 GB cards
    assert by_card["rtx-4090"].gpus > by_card["h100-sxm"].gpus
    for p in ans.plans:
        if not catalog.gpus()[p.gpu].has_nvlink:
            # PCIe-only boards: one server of them tight rather than two (engine/recommend.py)
            assert p.verdict != "no" and (p.memory.fits or p.gpus <= 8)
            continue
        assert p.memory.fits
        # and one card fewer would not have fitted (or it is already the minimum)
        if p.gpus > 1:
            smaller = engine.ask(f"llama-3.1-8b full-finetune gpu={p.gpu} gpus={p.gpus // 2} "
                                 "market=global")
            assert not smaller.plans[0].memory.fits


def test_serving_uses_tensor_parallel_inside_a_server_nvlink_or_pcie() -> None:
    # vLLM splits a layer across the cards of one server (PCIe included, at its all-reduce cost,
    # in the speed detail); across servers it splits by layers; llama.cpp only splits by layers
    ans = engine.ask("llama-3.1-70b inference market=global")
    by_card = {p.gpu: p for p in ans.plans}
    a100 = by_card["a100-80gb"].settings
    assert a100.tp == by_card["a100-80gb"].gpus and a100.pp == 1
    pcie = engine.ask("llama-3.1-70b inference gpu=4090 gpus=8").plans[0]
    assert pcie.settings.tp == 8 and "over PCIe" in pcie.strategy
    two = engine.ask("llama-3.1-70b inference gpu=4090 gpus=16").plans[0].settings
    assert two.tp <= 8 and two.tp * two.pp * two.replicas == 16
    gguf = engine.ask("llama-3.1-70b inference quant=q4_k_m gpu=4090 gpus=2").plans[0]
    assert gguf.settings.tp == 1 and gguf.settings.pp == 2 and gguf.settings.engine == "llama.cpp"


def test_offload_moves_states_to_host() -> None:
    base = mem("llama-3.1-8b full-finetune gpu=h100 gpus=1")
    off = mem("llama-3.1-8b full-finetune gpu=h100 gpus=1 offload=optimizer")
    assert off.optimizer == 0 and off.host_offload == pytest.approx(8_030_261_248 * 12, rel=1e-6)
    assert off.total < base.total


def test_qlora_far_below_lora_far_below_full() -> None:
    q = mem("llama-3.1-8b qlora gpu=4090 gpus=1")
    lo = mem("llama-3.1-8b lora gpu=4090 gpus=1")
    full = mem("llama-3.1-8b full-finetune gpu=4090 gpus=1")
    assert q.total < lo.total < full.total
    assert q.fits  # the seeds: LoRA/QLoRA of 7B fits one 24 GB card


def test_inference_70b_bf16_weights_and_seed_inconsistency() -> None:
    # 70.6B x 2 bytes = 141 GB: the seeds' "1x H200 141GB" cannot also hold 20% headroom
    m = mem("llama-3.1-70b inference gpu=h200 gpus=1")
    assert m.weights == pytest.approx(70_553_706_496 * 2, rel=1e-3)
    assert not m.fits


def test_kv_cache_scales_with_users_in_plans() -> None:
    one = mem("llama-3.1-8b serve gpu=h100 gpus=1 context=8k users=1")
    many = mem("llama-3.1-8b serve gpu=h100 gpus=1 context=8k users=20")
    assert many.kv_cache == 20 * one.kv_cache


def test_assumptions_name_recipe_checkpointing_and_headroom() -> None:
    text = " ".join(engine.ask("13B full-finetune").assumptions)
    for needle in ("AdamW", "checkpointing", "headroom 20%", "template", "2048"):
        assert needle in text


def test_template_sizes_match_the_request() -> None:
    for size, billions in (("13B", 13), ("0.5B", 0.5), ("70B", 70), ("7B", 7)):
        spec, note = template_spec(size)
        assert spec.params == pytest.approx(billions * 1e9, rel=0.08), size
        assert "template" in note
    moe, _ = template_spec("8x7B")
    assert moe.experts == 8 and moe.active_experts == 2 and moe.active_params < moe.params


SIZES = st.sampled_from(["1B", "3B", "7B", "13B", "34B", "70B"])


@settings(max_examples=25, deadline=None)
@given(seq=st.sampled_from([512, 1024, 2048, 4096]), batch=st.integers(1, 8),
       method=st.sampled_from(["full-finetune", "lora", "qlora"]))
def test_plan_memory_grows_with_seq_and_batch(seq: int, batch: int, method: str) -> None:
    # Activations grow strictly; the peak never shrinks (it can stay flat while gradients,
    # which interleave with activations in backward, are the larger of the two).
    q = f"llama-3.1-8b {method} gpu=h100 gpus=1 seq={seq} batch={batch}"
    base = mem(q)
    for more in (mem(q.replace(f"seq={seq}", f"seq={seq * 2}")),
                 mem(q.replace(f"batch={batch}", f"batch={batch + 1}"))):
        assert more.activations > base.activations
        assert more.total >= base.total


@settings(max_examples=20, deadline=None)
@given(a=SIZES, b=SIZES, method=st.sampled_from(["full-finetune", "lora", "qlora", "inference"]))
def test_larger_model_never_needs_less_memory(a: str, b: str, method: str) -> None:
    small, large = sorted((a, b), key=lambda s: float(s[:-1]))
    q = "{} " + method + " gpu=h200 gpus=1"
    assert mem(q.format(small)).total <= mem(q.format(large)).total


@settings(max_examples=20, deadline=None)
@given(stage=st.integers(0, 2), gpus=st.sampled_from([2, 4, 8]))
def test_sharding_never_grows_memory(stage: int, gpus: int) -> None:
    q = "llama-3.1-8b full-finetune gpu=a100-80gb gpus={} zero={} tp=1"
    allocated = lambda m: m.weights + m.gradients + m.optimizer  # noqa: E731
    assert allocated(mem(q.format(gpus, stage + 1))) <= allocated(mem(q.format(gpus, stage)))
    # more data-parallel GPUs at ZeRO-3 never need more per GPU
    assert mem(q.format(gpus * 2, 3)).total <= mem(q.format(gpus, 3)).total


def test_answer_for_takes_any_spec_without_the_catalog() -> None:
    spec, _ = template_spec("2B")
    ans = answer_for(spec, parse("2B lora gpu=4090 gpus=1"))
    assert ans.plans[0].memory.fits and ans.model.template


@pytest.mark.slow  # a sweep: seconds of CPU (the fast tier's budget is a minute in all)
def test_every_catalog_model_answers_every_method() -> None:
    for name in catalog.models():
        for method in ("full-finetune", "lora", "qlora", "inference", "pretrain"):
            ans = engine.ask(f"{name} {method}")
            assert ans.assumptions and ans.model.params > 0, (name, method)


@pytest.mark.parametrize("text", ["qwen2.5-72b qlora gpu=4090 gpus=2 zero=3 offload=all",
                                  "llama-3.1-70b qlora gpu=4090 gpus=1 offload=all"])
def test_offload_all_counts_the_frozen_base_in_host_memory(text: str) -> None:
    """QLoRA with FSDP parameter offload keeps the 4-bit base on the host, not only the adapters:
    the host memory per GPU holds at least the base's share."""
    from engine.quant import weight_bytes

    ans = engine.ask(text)
    plan = ans.plans[0]
    assert plan.settings.offload == "all"
    s = plan.settings
    base = weight_bytes(catalog.models()[ans.model.name], s.quant).total_bytes
    share = base / s.tp / s.pp / s.dp
    assert plan.memory.host_offload >= share
