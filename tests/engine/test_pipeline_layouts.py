"""Published training layouts (issue 23): pp= pins the pipeline stages, FSDP2 frameworks shard
everything beside expert parallelism, and data-parallel groups pay for the NICs their members
share."""

from __future__ import annotations

import pytest

from engine import ask, catalog, speed
from engine.methods import method
from engine.parse import ParseError, parse

MODELS = catalog.gpus(), catalog.models()
GPUS, SPECS = MODELS


def test_pp_pins_the_pipeline_stages_a_run_published() -> None:
    asked = "gpt-oss-120b pretrain gpu=h100-sxm gpus=64 seq=4096 batch=4 ep=8 framework=megatron"
    for pp in (1, 2, 4):
        settings = ask(f"{asked} tp=1 pp={pp}").plans[0].settings
        assert (settings.pp, settings.tp, settings.ep) == (pp, 1, 8)
    # inside one server too, where no layout is staged unless asked
    assert ask("llama-3.1-8b pretrain gpu=h100-sxm gpus=8 pp=2 framework=megatron"
               ).plans[0].settings.pp == 2


def test_pp_that_does_not_divide_the_cards_is_refused() -> None:
    with pytest.raises(ParseError) as err:
        parse("llama-3.1-70b pretrain gpu=h100-sxm gpus=24 tp=8 pp=2")
    assert "pp=2" in str(err.value) and "gpus=24" in str(err.value)
    with pytest.raises(ParseError):  # Hugging Face model code runs data parallel only
        parse("llama-3.1-70b pretrain gpu=h100-sxm gpus=16 pp=2 framework=llama-factory")


def test_fsdp2_frameworks_shard_everything_beside_expert_parallelism() -> None:
    """NeMo AutoModel's tables: 'FSDP 8, EP 8' in one server (weights, gradients and states
    sharded); under a pipeline the stages keep weights and gradients whole (ZeRO-1's memory)."""
    one = ask("qwen3-30b-a3b pretrain gpu=h100-sxm gpus=8 seq=4096 batch=4 checkpointing=full "
              "ep=8 framework=nemo-automodel").plans[0]
    assert (one.settings.ep, one.settings.zero) == (8, 3)
    staged = ask("deepseek-v3 pretrain gpu=h100-sxm gpus=256 seq=4096 checkpointing=full tp=1 "
                 "pp=4 ep=64 framework=nemo-automodel").plans[0]
    assert (staged.settings.pp, staged.settings.ep, staged.settings.zero) == (4, 64, 1)
    assert staged.verdict != "no"  # the published run fits its 80 GB cards
    # Megatron keeps its distributed optimizer (ZeRO-1) with expert parallelism
    megatron = ask("qwen3-30b-a3b pretrain gpu=h100-sxm gpus=8 seq=4096 batch=4 "
                   "checkpointing=full ep=8 framework=megatron").plans[0]
    assert megatron.settings.zero == 1


def test_a_group_with_one_member_a_server_goes_through_one_nic() -> None:
    h100 = GPUS["h100-sxm"]
    whole = speed._group_gbps(h100, 64, 1)
    assert whole == speed._bus_gbps(h100, 64)
    assert speed._group_gbps(h100, 64, 8) == pytest.approx(whole / 8)  # TP 8 or EP 8
    assert speed._group_gbps(h100, 64, 2) == pytest.approx(whole / 2)
    assert speed._group_gbps(h100, 8, 8) == speed._intra_gbps(h100)  # one server: NVLink


def test_expert_gradients_reduce_over_their_own_group_only() -> None:
    """EP 64 over 64 GPUs leaves every expert on one rank: no expert gradient to reduce, so
    the step is faster than EP 8's, whose expert copies sync across 8 servers."""
    spec, h100 = SPECS["gpt-oss-120b"], GPUS["h100-sxm"]
    kw = dict(gpus=64, method=method("pretrain"), checkpointing="none", seq=4096, batch=1,
              zero=1, tp=1, tokens=None, trainable=spec.params, framework="megatron")
    assert "traffic 0.00 s" in speed.train_speed(spec, h100, ep=64, **kw).detail
    assert "traffic 0.00 s" not in speed.train_speed(spec, h100, ep=8, **kw).detail


def test_megatron_with_deepep_is_a_framework_of_its_own() -> None:
    """Megatron-Core's flex dispatcher (DeepEP / HybridEP) at every EP size on Hopper-class
    cards, as Megatron-Bridge's 26.x Qwen3-30B-A3B recipes run it; plain Megatron keeps its
    alltoall dispatcher inside a server."""
    assert parse("qwen3-30b-a3b pretrain framework=megatron-hybridep").framework == \
        "megatron-deepep"
    assert parse("train qwen3-30b-a3b with megatron + deepep on 16 h100").framework == \
        "megatron-deepep"
    assert parse("train qwen3-30b-a3b with megatron on 16 h100").framework == "megatron"
    h100, a800 = GPUS["h100-sxm"], GPUS["a800"]
    assert speed.moe_framework(h100, tp=1, pp=1, ep=8, framework="megatron-deepep") == "deepep"
    assert speed.moe_framework(h100, tp=1, pp=1, ep=8, framework="megatron") == "megatron"
    assert speed.moe_framework(a800, tp=1, pp=1, ep=8, framework="megatron-deepep") == \
        "megatron"  # no DeepEP on Ampere
    plan = ask("qwen3-30b-a3b pretrain gpu=b200 gpus=8 seq=4096 batch=4 checkpointing=none "
               "tp=1 ep=8 framework=megatron-deepep").plans[0]
    assert "DeepEP" in plan.speed.detail


def test_a_long_pre_training_run_steps_larger() -> None:
    """DeepSeek-V3's 14.8T tokens stepped at up to 63M tokens (~235k steps): a run's global
    batch keeps it within 500k optimizer steps, so its gradient sync is amortized as it was."""
    pre = method("pretrain")
    assert speed.global_batch_tokens(pre, 8) == 4_000_000
    assert speed.global_batch_tokens(pre, 16_384) == 16_384 * 1024
    assert speed.global_batch_tokens(pre, 2048, 14.8e12) == int(14.8e12 // 500_000)
    assert speed.global_batch_tokens(method("full-finetune"), 2048, 14.8e12) == 262_144
