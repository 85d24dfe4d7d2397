"""framework= (engine/frameworks.py): read from key=value and from sentences in both languages,
stated in the answer, and used by the plan's shardings, the speed model and the launch command."""

from __future__ import annotations

from datetime import date

import pytest

import engine
from engine import speed
from engine.catalog import find_gpu, find_model
from engine.frameworks import FRAMEWORK_ALIASES, FRAMEWORKS
from engine.i18n import language
from engine.methods import method
from engine.parse import ParseError, parse
from engine.reader import read

TODAY = date(2026, 12, 2)

READS = [
    # English sentences
    ("qwen3-30b-a3b full finetune with deepspeed zero3", {"framework": "deepspeed", "zero": 3}),
    ("llama-3-8b pretrain on torchtitan gpus=8", {"framework": "torchtitan"}),
    ("llama-3-8b qlora using unsloth", {"framework": "unsloth", "method": "qlora"}),
    ("7b lora with LLaMA-Factory", {"framework": "llama-factory"}),
    ("qwen3-30b-a3b sft with NeMo AutoModel on 8 h100", {"framework": "nemo-automodel"}),
    ("qwen3-30b-a3b with ms-swift in megatron mode", {"framework": "megatron"}),
    ("qwen3-30b-a3b using ms-swift", {"framework": "ms-swift"}),
    ("llama-3-8b lora with the HF trainer", {"framework": "hf"}),
    ("8b full finetune on megatron-lm", {"framework": "megatron"}),
    ("8b full finetune with fsdp", {"framework": "fsdp"}),
    ("qwen3-8b lora via unsloth on a 4090", {"framework": "unsloth", "gpu": "rtx-4090"}),
    ("pretrain llama-3-8b with Megatron Bridge", {"framework": "megatron", "method": "pretrain"}),
    # Chinese sentences
    ("qwen3-30b-a3b 用megatron训", {"framework": "megatron", "method": "full-finetune"}),
    ("14b 全参 用deepspeed zero3训练 8卡a800", {"framework": "deepspeed", "zero": 3, "gpus": 8}),
    ("qwen3-30b-a3b 用ms-swift的megatron模式训练", {"framework": "megatron"}),
    ("7b lora 用 llama-factory", {"framework": "llama-factory", "method": "lora"}),
    ("qwen3-8b 全参微调 基于torchtitan", {"framework": "torchtitan"}),
    ("llama-3-8b qlora 用unsloth跑", {"framework": "unsloth"}),
    # key=value, with aliases
    ("qwen3-8b lora framework=trl", {"framework": "hf"}),
    ("qwen3-8b lora trainer=llamafactory", {"framework": "llama-factory"}),
    ("qwen3-8b full-finetune framework=swift", {"framework": "ms-swift"}),
    ("qwen3-8b full-finetune framework=megatron_bridge", {"framework": "megatron"}),
]


@pytest.mark.parametrize(("text", "slots"), READS)
def test_framework_is_read(text: str, slots: dict[str, object]) -> None:
    reading = read(text)
    for key, value in slots.items():
        assert reading.values.get(key) == value, (text, reading.values)
    assert not reading.skipped, (text, reading.skipped)
    assert f"framework={slots['framework']}" in reading.read


def test_a_framework_alone_means_training() -> None:
    assert read("qwen3-30b-a3b with megatron").values["method"] == "full-finetune"


def test_a_training_framework_is_not_read_into_serving() -> None:
    reading = read("qwen3-8b inference with deepspeed")
    assert "framework" not in reading.values
    assert any("training framework" in note for note in reading.notes)


def test_aliases_name_known_frameworks() -> None:
    assert set(FRAMEWORK_ALIASES.values()) <= set(FRAMEWORKS)


def test_an_unknown_framework_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ParseError) as err:
        parse("qwen3-8b lora framework=megatorn")
    assert err.value.suggestion == "framework=megatron"


@pytest.mark.parametrize("option", ["tp=2", "ep=8", "cp=2"])
def test_hugging_face_frameworks_refuse_model_parallelism(option: str) -> None:
    with pytest.raises(ParseError):
        parse(f"qwen3-30b-a3b full-finetune gpus=8 {option} framework=llama-factory")


def _plan(text: str):  # type: ignore[no-untyped-def]
    ans = engine.ask(text, today=TODAY)
    return ans, ans.plans[0]


def test_the_answer_states_the_framework_or_its_default() -> None:
    named, plan = _plan("qwen3-8b full-finetune gpu=h100-sxm gpus=8 framework=ms-swift")
    assert plan.settings.framework == "ms-swift"
    assert any("framework=ms-swift" in line for line in named.assumptions)
    unnamed, plan = _plan("qwen3-8b full-finetune gpu=h100-sxm gpus=8")
    assert any("training framework not named" in line for line in unnamed.assumptions)
    assert plan.settings.framework in ("llama-factory", "megatron")
    with language("zh"):
        zh, _plan_zh = _plan("qwen3-8b full-finetune gpu=h100-sxm gpus=8 framework=unsloth")
    assert any("训练框架" in line for line in zh.assumptions)


def test_hugging_face_frameworks_plan_data_parallel_only() -> None:
    ans = engine.ask("qwen3-30b-a3b full-finetune gpu=h100-sxm gpus=16 framework=deepspeed",
                     today=TODAY, every_plan=True)
    assert ans.plans
    for plan in ans.plans:
        assert (plan.settings.tp, plan.settings.pp, plan.settings.ep) == (1, 1, 1)


@pytest.mark.parametrize("text", [
    "13B full-finetune", "llama-3.1-70b full-finetune gpu=h100-sxm gpus=16",
    "qwen3-32b full-finetune gpu=a800 gpus=8", "llama-3.1-70b lora gpu=h100-sxm gpus=8"])
def test_megatron_layouts_shard_optimizer_states_only(text: str) -> None:
    """Megatron's distributed optimizer is ZeRO-1: no plan launched as Megatron (tensor or
    pipeline parallel, no framework named) claims ZeRO-2 or 3, which are DeepSpeed's or FSDP's."""
    for plan in engine.ask(text, today=TODAY, every_plan=True).plans:
        if plan.settings.tp > 1 or plan.settings.pp > 1:
            assert plan.settings.zero <= 1, (plan.gpu, plan.strategy)


def test_zero3_asked_is_data_parallel_unless_the_framework_runs_fsdp_with_tp() -> None:
    asked = "llama-2-70b lora gpu=h100-sxm gpus=8 seq=2048 batch=8 zero=3"
    for plan in engine.ask(asked, today=TODAY, every_plan=True).plans:
        assert (plan.settings.tp, plan.settings.pp, plan.settings.zero) == (1, 1, 3)
    # torchtitan runs FSDP2 beside tensor parallelism: both are its to choose
    titan = engine.ask(asked + " framework=torchtitan tp=2", today=TODAY).plans[0]
    assert (titan.settings.tp, titan.settings.zero) == (2, 3)


# -- speed: each framework moves it the way its execution model says -----------------------

SPEC = find_model("qwen3-30b-a3b")
H100 = find_gpu("h100-sxm")
A800 = find_gpu("a800")


def _tps(gpu, framework: str | None, *, gpus: int = 8, ep: int = 1, zero: int = 1,  # type: ignore[no-untyped-def]
         batch: int = 1, spec=SPEC, mode: str = "pretrain") -> float:
    return speed.train_speed(spec, gpu, gpus=gpus, method=method(mode),
                             checkpointing="selective", seq=4096, batch=batch, zero=zero, tp=1,
                             tokens=None, trainable=spec.params, ep=ep,
                             framework=framework).tokens_per_s


def test_deepep_frameworks_dispatch_faster_than_the_alltoall_dispatcher() -> None:
    assert _tps(H100, "nemo-automodel", ep=8) > 1.5 * _tps(H100, "megatron", ep=8)
    # no DeepEP on Ampere: NeMo AutoModel falls back to an NCCL all-to-all there
    assert _tps(A800, "nemo-automodel", ep=8) == pytest.approx(_tps(A800, "torchtitan", ep=8))


def test_hugging_face_modules_loop_over_experts_slower_than_grouped_gemm() -> None:
    assert _tps(H100, "llama-factory", zero=2) < _tps(H100, "torchtitan", zero=2)


def test_deepspeed_zero3_pays_per_expert_fetches_that_fsdp_does_not() -> None:
    deepspeed = _tps(A800, "ms-swift", gpus=16, zero=3)
    fsdp = _tps(A800, "fsdp", gpus=16, zero=3)
    assert deepspeed < 0.5 * fsdp
    # ZeRO-2 gathers nothing, so DeepSpeed and FSDP over the same modules run alike
    assert _tps(A800, "ms-swift", gpus=16, zero=2) == pytest.approx(
        _tps(A800, "fsdp", gpus=16, zero=2))
    # fetches are per micro-batch: a larger micro-batch spreads them over more tokens
    assert _tps(A800, "ms-swift", gpus=16, zero=3, batch=4) > 2 * deepspeed
    # the fetch count follows the model: 3 matrices x 128 experts x 48 layers per pass
    assert speed.expert_tensors(SPEC) == 3 * 128


def test_dense_models_pay_no_per_expert_fetch() -> None:
    dense = find_model("qwen2.5-14b")
    deepspeed = _tps(A800, "deepspeed", zero=3, spec=dense)
    fsdp = _tps(A800, "fsdp", zero=3, spec=dense)
    # only the gathers beyond DeepSpeed's prefetch bucket separate them: 4 of ZeRO-3's 6 bytes a
    # parameter, 7/8 of it over 140 GB/s at most, not thousands of 0.5 ms fetches
    gathers_s = dense.params * 4 * 7 / 8 / (speed._bus_gbps(A800, 8) * 1e9)
    step_s = 4096 / fsdp * 8
    assert fsdp > deepspeed > 4096 * 8 / (step_s + gathers_s)


def test_sharded_traffic_hides_per_layer_under_the_framework_prefetch() -> None:
    dense = find_model("llama-2-7b")
    fsdp, deepspeed = FRAMEWORKS["fsdp"], FRAMEWORKS["deepspeed"]
    layers = dense.layers
    # compute per layer beyond the traffic per layer: FSDP exposes only the first layer's
    # gather in each pass and the last reduce-scatter
    edge = speed.sharded_exposed_s(dense, fsdp, gather_s=2.0, reduce_s=1.0, busy_s=30.0,
                                   forward_share=1 / 3, layers=layers)
    assert edge == pytest.approx(2 * 1.0 / layers + 1.0 / layers)
    # per layer traffic beyond compute: the excess shows in every layer
    bound = speed.sharded_exposed_s(dense, fsdp, gather_s=2.0, reduce_s=1.0, busy_s=0.3,
                                    forward_share=1 / 3, layers=layers)
    assert bound > 3.0 - 0.3
    # DeepSpeed's prefetch bucket (0.9 hidden^2) is a small share of a 7B decoder layer: the
    # rest of its gathers waits in series even where FSDP hides them all
    ahead = speed.deepspeed_prefetch_share(dense, layers)
    assert 0 < ahead < 0.1
    ds = speed.sharded_exposed_s(dense, deepspeed, gather_s=2.0, reduce_s=1.0, busy_s=30.0,
                                 forward_share=1 / 3, layers=layers)
    assert ds == pytest.approx((1 - ahead) * 2.0 + ahead * 2.0 / layers + 1.0 / layers)


def test_the_unnamed_default_is_llama_factory_for_data_parallel_plans() -> None:
    assert _tps(A800, None, gpus=16, zero=3) == pytest.approx(
        _tps(A800, "llama-factory", gpus=16, zero=3))
    assert _tps(H100, None, ep=8) == pytest.approx(_tps(H100, "megatron", ep=8))


# -- launch: the command is the framework's ---------------------------------------------------

def _launch(text: str):  # type: ignore[no-untyped-def]
    _ans, plan = _plan(text)
    assert plan.launch, text
    return plan.launch[0]


def test_megatron_is_launched_even_for_a_data_parallel_plan() -> None:
    launch = _launch("llama-3.1-8b full-finetune gpu=h100-sxm gpus=8 tp=1 framework=megatron")
    assert launch.engine == "megatron"
    assert _launch("llama-3.1-8b full-finetune gpu=h100-sxm gpus=8 tp=1").engine == "llamafactory"


def test_hugging_face_frameworks_launch_llama_factory() -> None:
    launch = _launch("llama-3.1-8b qlora gpu=4090 framework=unsloth")
    assert launch.engine == "llamafactory"
    assert "use_unsloth: true" in launch.files["train.yaml"]
    swift = _launch("llama-3.1-8b full-finetune gpu=h100-sxm gpus=8 framework=ms-swift zero=3")
    assert swift.engine == "llamafactory"
    assert any("ms-swift" in note for note in swift.notes)


def test_the_moe_dispatcher_in_the_command_is_the_one_sized() -> None:
    deepep = _launch("qwen3-30b-a3b full-finetune gpu=h100-sxm gpus=8 ep=8 framework=nemo-automodel")
    assert "--moe-flex-dispatcher-backend deepep" in deepep.commands[0]
    alltoall = _launch("qwen3-30b-a3b full-finetune gpu=h100-sxm gpus=8 ep=8 framework=megatron")
    assert "--moe-token-dispatcher-type alltoall" in alltoall.commands[0]
    assert "deepep" not in alltoall.commands[0]
