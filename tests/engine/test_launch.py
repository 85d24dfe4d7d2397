"""How to run the plan (engine/launch.py): every command and config key is one the engine
accepts at the version read into engine/data/engines.toml, and every value is the one the answer
sized the plan with."""

from __future__ import annotations

import json
import re
import shlex
from datetime import date

import pytest

import engine
from engine.bom import step_tokens
from engine.launch import (
    LF_ATTN_TARGETS,
    LF_OPTIM,
    engine_tables,
    unknown_keys,
    unknown_options,
)
from engine.parse import parse
from engine.schema import Answer, Launch, Plan

PROGRAMS = {"vllm": "vllm", "python": "sglang", "llama-server": "llama.cpp",
            "torchrun": "torchrun"}
QUESTIONS = (
    "qwen3-32b inference", "qwen3-32b inference gpu=4090 gpus=8",
    "llama-3.1-70b serve users=20", "qwen2.5-72b inference quant=awq context=8k users=20",
    "qwen2.5-72b inference quant=q4_k_m", "qwen2.5-14b inference quant=int8 kv=fp8",
    "qwen2.5-7b inference quant=gptq", "qwen2.5-7b inference quant=fp8",
    "qwen2.5-7b inference quant=nf4", "gpt-oss-120b inference", "deepseek-v3 inference",
    "llama-3.1-405b inference gpu=h100-sxm", "llama-3.1-8b inference engine=transformers",
    "qwen2.5-7b inference users=200 gpu=4090 gpus=4",
    "13B full-finetune", "llama-3.1-8b lora", "llama-3.1-8b qlora gpu=4090",
    "70B full-finetune gpu=h800 gpus=8 offload=all", "70B full-finetune gpu=h800 gpus=16",
    "7B full-finetune gpu=a100-80gb gpus=16 zero=0", "7B pretrain tokens=1T",
    "70B pretrain tokens=2T", "llama-3.1-8b full-finetune optimizer=adamw-8bit checkpointing=none",
    "7B full-finetune loss=chunked", "llama-3.1-8b full-finetune gpu=h100-sxm gpus=8 zero=2",
    "qwen3-30b-a3b lora", "mixtral-8x7b full-finetune gpu=h100-sxm gpus=16",
    # named training frameworks (engine/frameworks.py)
    "qwen3-30b-a3b full-finetune gpu=h100-sxm gpus=8 ep=8 framework=nemo-automodel",
    "llama-3.1-8b pretrain gpu=h100-sxm gpus=8 zero=3 framework=torchtitan",
    "llama-3.1-8b qlora gpu=4090 framework=unsloth",
    "llama-3.1-8b full-finetune gpu=h100-sxm gpus=8 framework=megatron",
)


def _top(text: str) -> Plan:
    ans: Answer = engine.ask(text, today=date(2026, 12, 2))
    assert ans.plans and ans.plans[0].launch, text
    return ans.plans[0]


def _engine_of(command: str, launch: Launch) -> str:
    first = shlex.split(command)[0]
    if first == "torchrun":
        return "torchrun"
    return launch.engine if launch.engine != "llamafactory" else PROGRAMS[first]


def _split_torchrun(command: str) -> tuple[str, str]:
    """(torchrun's own part, the script's part) of a torchrun line."""
    words = shlex.split(command)
    for i, word in enumerate(words):
        if word.endswith(".py") or word in ("llamafactory.launcher",):
            return shlex.join(words[:i]), shlex.join(words[i + 1:])
    return command, ""


def _dotted(config: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_dotted(value, path + "."))
        else:
            out[path] = value
    return out


@pytest.mark.parametrize("text", QUESTIONS)
def test_every_option_is_accepted_at_the_stated_version(text: str) -> None:
    plan = _top(text)
    tables = engine_tables()
    for launch in plan.launch:
        assert launch.version in {t.version for t in tables.values()}
        for command in launch.commands:
            if command.startswith("torchrun"):
                own, rest = _split_torchrun(command)
                assert unknown_options("torchrun", own) == [], command
                if launch.engine == "megatron":
                    assert unknown_options("megatron", rest) == [], command
            else:
                assert unknown_options(launch.engine, command) == [], command
        if "train.yaml" in launch.files:
            pairs = dict(line.split(": ", 1) for line in launch.files["train.yaml"].splitlines())
            assert unknown_keys("llamafactory", list(pairs), pairs) == [], pairs
        if "ds_config.json" in launch.files:
            flat = _dotted(json.loads(launch.files["ds_config.json"]))
            values = {k: v for k, v in flat.items() if k in tables["deepspeed"].choices}
            assert unknown_keys("deepspeed", list(flat), values) == [], flat


def _flag(command: str, name: str) -> str | None:
    words = shlex.split(command)
    return words[words.index(name) + 1] if name in words else None


@pytest.mark.parametrize("text", [q for q in QUESTIONS if "inference" in q or "serve" in q])
def test_serving_commands_say_what_the_answer_sized(text: str) -> None:
    plan = _top(text)
    native = engine.ask(text, today=date(2026, 12, 2)).model.native_quant
    s = plan.settings
    launch = plan.launch[0]
    command = launch.commands[0]
    if launch.engine == "llama.cpp":
        users = -(-(s.users or 1) // s.replicas)
        assert int(_flag(command, "--parallel") or 0) == users
        assert int(_flag(command, "--ctx-size") or 0) == (s.context or 0) * users
        return
    names = {"vllm": ("--tensor-parallel-size", "--max-model-len", "--gpu-memory-utilization",
                      "--pipeline-parallel-size"),
             "sglang": ("--tp-size", "--context-length", "--mem-fraction-static", "--pp-size")}
    tp, ctx, util, pp = names[launch.engine]
    # SGLang counts attention data-parallel groups' GPUs in --tp-size, vLLM in -dp
    assert int(_flag(command, tp) or 0) == s.tp * (s.dp_attention if launch.engine == "sglang"
                                                  else 1)
    if s.release:
        assert s.release in shlex.split(command)  # the official release the plan serves
    assert int(_flag(command, ctx) or 0) == s.context
    assert float(_flag(command, util) or 0) == pytest.approx(
        plan.memory.usable / plan.memory.capacity, abs=0.006)
    assert int(_flag(command, pp) or 1) == s.pp
    if s.quant in ("awq", "gptq", "fp8") and s.quant != native and not s.release \
            and launch.engine == "vllm":  # a conversion names its format
        assert _flag(command, "--quantization") is not None
    for other in plan.launch[1:]:
        assert other.engine in ("vllm", "sglang") and other.engine != launch.engine


@pytest.mark.parametrize("text", [q for q in QUESTIONS if "inference" not in q
                                  and "serve" not in q])
def test_training_commands_say_what_the_answer_sized(text: str) -> None:
    plan = _top(text)
    s = plan.settings
    launch = plan.launch[0]
    command = launch.commands[0]
    servers = -(-plan.gpus // 8)
    assert int(_flag(command, "--nnodes") or 1) == servers
    assert int(_flag(command, "--nproc-per-node") or 0) == plan.gpus // servers
    if launch.engine == "megatron":
        assert int(_flag(command, "--tensor-model-parallel-size") or 0) == s.tp
        assert int(_flag(command, "--pipeline-model-parallel-size") or 0) == s.pp
        assert int(_flag(command, "--micro-batch-size") or 0) == s.batch
        assert int(_flag(command, "--seq-length") or 0) == s.seq
        return
    assert launch.engine == "llamafactory" and s.tp == s.pp == 1
    job = dict(line.split(": ", 1) for line in launch.files["train.yaml"].splitlines())
    assert int(job["cutoff_len"]) == s.seq
    assert int(job["per_device_train_batch_size"]) == s.batch
    assert job["finetuning_type"] == ("lora" if plan.method in ("lora", "qlora") else "full")
    if plan.method == "qlora":
        assert job["quantization_bit"] == "4"
    if (s.zero or 0) >= 1 or s.offload in ("optimizer", "all"):
        ds = json.loads(launch.files["ds_config.json"])
        assert ds["zero_optimization"]["stage"] == (s.zero or 0)
        assert ds["train_micro_batch_size_per_gpu"] == s.batch
        assert ds["gradient_accumulation_steps"] == int(job["gradient_accumulation_steps"])
        if s.offload in ("optimizer", "all"):
            assert ds["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
        if s.offload == "all":
            assert ds["zero_optimization"]["offload_param"]["device"] == "cpu"
    else:
        assert "deepspeed" not in job
    if s.checkpointing == "none":
        assert job["disable_gradient_checkpointing"] == "true"


def test_the_table_rejects_what_an_engine_does_not_take() -> None:
    assert unknown_options("vllm", "vllm serve m --tensor-parallel-size 2 --no-such-flag 1") == [
        "--no-such-flag"]
    assert unknown_options("vllm", "vllm serve m --quantization bogus") == [
        "--quantization bogus"]
    assert unknown_options("sglang", "python -m sglang.launch_server --tensor-parallel 2") == [
        "--tensor-parallel"]
    assert unknown_keys("deepspeed", ["zero_optimization.stage", "zero_optimisation.stage"],
                        {"zero_optimization.stage": "4"}) == [
        "zero_optimisation.stage", "zero_optimization.stage=4"]


def test_every_table_names_its_version_and_source() -> None:
    for table in engine_tables().values():
        assert table.version and table.source and re.fullmatch(r"\d{4}-\d{2}-\d{2}", table.read)
        assert len(table.flags) > 20, table.name


def test_a_plan_that_does_not_run_has_no_commands() -> None:
    ans = engine.ask("70B full-finetune gpu=4090 gpus=1")
    assert ans.plans[0].verdict == "no" and ans.plans[0].launch == []


@pytest.mark.parametrize("text", ["qwen3-32b inference gpu=4090 gpus=8",
                                  "llama-3.1-8b inference gpu=4090 gpus=1"])
def test_a_box_you_own_is_launched_at_its_capacity(text: str) -> None:
    """At the most users for the context asked, and that whole context: the typical request
    the API comparison serves with it is shorter, and must not shrink the engine's limit."""
    ans = engine.ask(text)
    assert ans.capacity is not None
    context = ans.plans[0].settings.context or 0  # the context asked (a reasoning model's 36k)
    row = max((r for r in ans.capacity.rows if r.context <= context), key=lambda r: r.context)
    command = ans.plans[0].launch[0].commands[0]
    assert int(_flag(command, "--max-num-seqs") or 0) == row.users
    assert int(_flag(command, "--max-model-len") or 0) == row.context == context


@pytest.mark.parametrize("text", [
    "llama-3.1-8b full-finetune gpu=h100-sxm gpus=8 checkpointing=selective fused_step=true",
    "7B full-finetune loss=chunked tokens=1B", "llama-3.1-8b lora targets=attn tokens=200M",
    "7B full-finetune offload=activations", "7B full-finetune precision=fp16 gpu=a100-80gb gpus=4",
    "llama-3.1-8b qlora gpu=4090 optimizer=paged-adamw-8bit"])
def test_the_trainer_s_arguments_follow_the_recipe(text: str) -> None:
    """LLaMA-Factory's arguments: the optimizer step holds the speed model's tokens, tokens= is
    a step count, the loss, targets, precision and optimizer are the recipe's, and what the
    trainer cannot do is said beside the command."""
    plan = _top(text)
    launch = plan.launch[0]
    if launch.engine != "llamafactory":
        pytest.skip(f"{launch.engine} plan")
    req = parse(text)
    s = plan.settings
    job = dict(line.split(": ", 1) for line in launch.files["train.yaml"].splitlines())
    seq, batch, acc = (int(job[k]) for k in ("cutoff_len", "per_device_train_batch_size",
                                             "gradient_accumulation_steps"))
    step = seq * batch * acc * s.dp
    target = step_tokens(req, plan.gpus)
    assert abs(step - target) <= seq * batch * s.dp / 2 + 1e-9  # the nearest whole accumulation
    assert f"{step:,} tokens per optimizer step" in " ".join(launch.notes)
    if req.tokens:
        assert int(job["max_steps"]) == max(1, round(req.tokens / step))
    assert ("enable_liger_kernel" in job) == (req.loss in ("chunked", "fused"))
    if req.spec.adapters:
        assert job["lora_target"] == ("all" if req.targets == "all" else LF_ATTN_TARGETS)
    assert job["optim"] == LF_OPTIM[req.optimizer_used]
    assert ("fp16" in job) == (req.precision == "fp16")
    assert ("bf16" in job) == (req.precision in ("bf16", "fp8"))
    notes = " ".join(launch.notes)
    assert ("LLaMA-Factory's trainer cannot select" in notes) == (s.checkpointing == "selective")
    assert ("fused_step" in notes) == req.fused_step
    assert ("activation offload is not a LLaMA-Factory option" in notes) == (
        s.offload == "activations")


@pytest.mark.parametrize("question,modules", [
    ("llama-3.1-70b pretrain gpu=h100-sxm gpus=64 checkpointing=selective", ["layernorm"]),
    ("qwen3-30b-a3b pretrain gpu=h100-sxm gpus=16 checkpointing=selective ep=8",
     ["layernorm", "moe_act"]),
    ("llama-3.1-70b pretrain gpu=h100-sxm gpus=64 checkpointing=core_attn", ["core_attn"]),
])
def test_megatron_selective_recomputes_what_memory_drops(question: str, modules: list[str]) -> None:
    """checkpointing=selective is one thing: norms (and the experts' activation) recomputed, every
    matmul output kept; Megatron's default core_attn module is never what is launched."""
    plan = engine.ask(question).plans[0]
    words = plan.launch[0].commands[0].split()
    assert plan.launch[0].engine == "megatron"
    at = words.index("--recompute-modules")
    assert words[at + 1:at + 1 + len(modules)] == modules
    assert ("core_attn" in words) == (plan.settings.checkpointing == "attention")
