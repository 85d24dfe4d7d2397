"""How to run the plan: the commands (and config files) that start it, with exactly the
parallel sizes, context, memory share, quantization and training recipe the answer assumed.

Serving: vLLM (`vllm serve`), SGLang (`python -m sglang.launch_server`) or llama.cpp
(`llama-server`), whichever the plan was sized for, then the other CUDA engine as an equivalent.
Training: LLaMA-Factory (`llamafactory-cli`'s trainer launched by torchrun) with a DeepSpeed ZeRO
config for data-parallel plans, Megatron-LM's `pretrain_gpt.py` for tensor- or pipeline-parallel
ones. Every option written here is one the engine accepts at the version named in
engine/data/engines.toml (read from its own argument definitions by scripts/engine_flags.py);
tests/engine/test_launch.py checks each command against that table.
"""

from __future__ import annotations

import json
import shlex
from functools import cache
from typing import Any, NamedTuple

from engine import datacache, speed
from engine.architecture import ModelSpec
from engine.bom import layout, step_tokens
from engine.catalog import GpuSpec
from engine.frameworks import FRAMEWORKS, Framework, framework_for
from engine.i18n import N_, _
from engine.request import Request
from engine.schema import Launch, Plan

HEAD = "$HEAD_IP"  # the first server's address, as the commands leave it to fill in
PORTS = {"vllm": 8000, "sglang": 30000, "llama.cpp": 8080}
MASTER_PORT = 29500
MEGATRON_SCRIPT = "pretrain_gpt.py"
SGLANG_DIST_PORT = 5000


class EngineTable(NamedTuple):
    """One engine's accepted options at a version (engine/data/engines.toml)."""

    name: str
    program: str
    version: str
    source: str
    read: str
    flags: frozenset[str]
    choices: dict[str, tuple[str, ...]]


def load_engine_tables() -> dict[str, EngineTable]:
    import tomllib  # only when the cached table is missing or out of date

    data = tomllib.loads(datacache.data_text("engines.toml"))
    return {e["name"]: EngineTable(name=e["name"], program=e["program"], version=e["version"],
                                   source=e["source"], read=e["read"],
                                   flags=frozenset(e["flags"]),
                                   choices={k: tuple(v) for k, v in e.get("choices", {}).items()})
            for e in data["engine"]}


@cache
def engine_tables() -> dict[str, EngineTable]:
    return datacache.load("engines", data=("engines.toml",), code=("launch.py",),
                          build=load_engine_tables)


def _version(name: str) -> str:
    return engine_tables()[name].version


def _targets(name: str) -> str:
    t = engine_tables()[name]
    return _("options checked against {name} {version} ({source}, read {read})").format(
        name=t.name, version=t.version, source=t.source, read=t.read)


def _cmd(words: list[Any]) -> str:
    return " ".join(shlex.quote(str(w)) if not str(w).startswith("$") else str(w) for w in words)


MODEL_DIR = "$MODEL_DIR"  # a generic size (13B, 70B) names no checkpoint: the reader's own


def _repo(spec: ModelSpec) -> str:
    return spec.hf_repo or MODEL_DIR


def _model_notes(spec: ModelSpec) -> list[str]:
    if spec.hf_repo:
        return []
    return [_("{name}: set {dir} to your checkpoint's directory (Hugging Face format)").format(
        name=spec.display, dir=MODEL_DIR)]


# -- serving ---------------------------------------------------------------------------------

# Weight formats as each engine names them; None: the checkpoint says it (no flag needed).
VLLM_QUANT = {"fp8": "fp8", "awq": "awq", "gptq": "gptq", "int4": "gptq", "int8":
              "compressed-tensors", "mxfp4": "mxfp4"}
SGLANG_QUANT = {"fp8": "fp8", "awq": "awq", "gptq": "gptq", "int4": "gptq", "int8": "w8a8_int8",
                "mxfp4": "mxfp4", "nf4": "bitsandbytes"}
CHECKPOINT_NOTE = {
    "awq": N_("an AWQ 4-bit checkpoint of {repo} (the model's own -AWQ release, or made with "
              "AutoAWQ)"),
    "gptq": N_("a GPTQ 4-bit checkpoint of {repo}"),
    "int4": N_("a 4-bit GPTQ checkpoint of {repo}"),
    "int8": N_("an INT8 (W8A8) checkpoint of {repo} made with llm-compressor"),
}


def _serving_shape(plan: Plan, gpu: GpuSpec) -> tuple[int, int, int, int]:
    """(GPUs per copy, copies per server, servers per copy, servers)."""
    s = plan.settings
    group = s.tp * s.dp_attention * s.pp
    lay = layout(gpu, plan.gpus)
    per_server = max(1, lay.per // group) if group <= lay.per else 1
    servers_per_copy = max(1, -(-group // lay.per))
    return group, per_server, servers_per_copy, lay.servers


def _model(spec: ModelSpec, plan: Plan) -> str:
    """The checkpoint to serve: the official release the plan chose (Qwen/Qwen3-32B-FP8), else
    the model's own repository."""
    return plan.settings.release or _repo(spec)


def _quant_notes(req: Request, spec: ModelSpec, table: dict[str, str], engine: str,
                 plan: Plan) -> tuple[list[str], list[str]]:
    """(flags, notes) for the weight format on an engine."""
    quant = plan.settings.quant or req.weight_quant
    if plan.settings.release and plan.settings.release != spec.hf_repo:
        return [], [_("{release}: the official {quant} release; the engine reads the format "
                      "from its config").format(release=plan.settings.release, quant=quant)]
    if quant in ("bf16", "fp16"):
        return (["--dtype", "float16"] if quant == "fp16" else []), []
    if quant == spec.native_quant:  # released in this format: the checkpoint's config says so
        return [], [_("{quant} as released: the engine reads the format from the checkpoint's "
                      "config").format(quant=quant)]
    flag = table.get(quant)
    if flag is None:
        return [], [_("{engine} {version} has no {quant} loader: use the other engine below")
                    .format(engine=engine, version=_version(engine), quant=quant)]
    notes = []
    if quant in CHECKPOINT_NOTE:
        notes.append(_(CHECKPOINT_NOTE[quant]).format(repo=_repo(spec)))
    elif quant == "fp8":
        notes.append(_("FP8 quantized when loading, from the 16-bit checkpoint"))
    elif quant == "nf4":
        notes.append(_("bitsandbytes NF4 quantized when loading"))
    return ["--quantization", flag], notes


def vllm_launch(spec: ModelSpec, req: Request, plan: Plan, gpu: GpuSpec) -> Launch:
    s = plan.settings
    _group, copies, spans, servers = _serving_shape(plan, gpu)
    users = -(-req.users // max(1, s.replicas))
    util = round(plan.memory.usable / plan.memory.capacity, 2) if plan.memory.capacity else 0.9
    quant, notes = _quant_notes(req, spec, VLLM_QUANT, "vllm", plan)
    words: list[Any] = ["vllm", "serve", _model(spec, plan), "--tensor-parallel-size", s.tp]
    if s.pp > 1:
        words += ["--pipeline-parallel-size", s.pp]
    if s.ep > 1:
        words += ["--enable-expert-parallel"]
    if s.dp_attention > 1:  # attention data parallel: one engine per group, experts across all
        words += ["--data-parallel-size", s.dp_attention * (copies if spans == 1 else 1)]
        if s.ep > 1 and speed.deepep_runs(gpu):
            # the all-to-all the speed assumes; vLLM's default gathers every row
            words += ["--all2all-backend", "deepep_low_latency"]
    elif copies > 1 and spans == 1:
        words += ["--data-parallel-size", copies]
    words += ["--max-model-len", s.context or req.context, "--gpu-memory-utilization", util,
              "--max-num-seqs", users, *quant]
    if req.kv == "fp8":
        words += ["--kv-cache-dtype", "fp8"]
    words += ["--host", "0.0.0.0", "--port", PORTS["vllm"]]
    commands = []
    if spans > 1:
        head = [*words, "--nnodes", spans, "--node-rank", 0, "--master-addr", HEAD]
        commands.append(_cmd(head))
        for rank in range(1, spans):
            commands.append(_cmd([*words[:-4], "--nnodes", spans, "--node-rank", rank,
                                  "--master-addr", HEAD, "--headless"]))
        notes.append(_("one copy of the model spans {n} servers: run the first command on the "
                       "head server ({head}) and the others on the rest").format(n=spans,
                                                                                  head=HEAD))
    else:
        commands.append(_cmd(words))
    if servers > spans:
        notes.append(_("run the same on each of the {n} servers and put a load balancer in "
                       "front ({copies} copies in all)").format(n=servers // spans,
                                                              copies=s.replicas))
    notes.append(_targets("vllm"))
    return Launch.build(engine="vllm", version=_version("vllm"), commands=commands,
                        notes=_model_notes(spec) + notes)


def sglang_launch(spec: ModelSpec, req: Request, plan: Plan, gpu: GpuSpec) -> Launch:
    s = plan.settings
    _group, copies, spans, servers = _serving_shape(plan, gpu)
    users = -(-req.users // max(1, s.replicas))
    util = round(plan.memory.usable / plan.memory.capacity, 2) if plan.memory.capacity else 0.9
    quant, notes = _quant_notes(req, spec, SGLANG_QUANT, "sglang", plan)
    words: list[Any] = ["python", "-m", "sglang.launch_server", "--model-path", _model(spec, plan),
                        "--tp-size", s.tp * s.dp_attention]
    if s.pp > 1:
        words += ["--pp-size", s.pp]
    if s.dp_attention > 1:  # SGLang counts the groups' GPUs in --tp-size
        words += ["--attn-dp-size", s.dp_attention]
    if s.ep > 1:
        words += ["--ep-size", s.ep]
        if s.dp_attention > 1 and speed.deepep_runs(gpu):
            # DeepEP's normal kernels for prompts, its low-latency ones for decoding
            words += ["--moe-a2a-backend", "deepep", "--deepep-mode", "auto"]
    if copies > 1 and spans == 1:
        words += ["--dp-size", copies]
    words += ["--context-length", s.context or req.context, "--mem-fraction-static", util,
              "--max-running-requests", users, *quant]
    if req.kv == "fp8":
        words += ["--kv-cache-dtype", "fp8_e4m3"]
    words += ["--host", "0.0.0.0", "--port", PORTS["sglang"]]
    commands = []
    if spans > 1:
        for rank in range(spans):
            commands.append(_cmd([*words, "--nnodes", spans, "--node-rank", rank,
                                  "--dist-init-addr", f"{HEAD}:{SGLANG_DIST_PORT}"]))
        notes.append(_("one copy spans {n} servers: run command i on server i ({head} first)")
                     .format(n=spans, head=HEAD))
    else:
        commands.append(_cmd(words))
    if servers > spans:
        notes.append(_("run the same on each of the {n} servers behind a load balancer").format(
            n=servers // spans))
    notes.append(_targets("sglang"))
    return Launch.build(engine="sglang", version=_version("sglang"), commands=commands,
                        notes=_model_notes(spec) + notes)


LLAMA_KV = {"fp16": "f16", "fp8": "q8_0"}  # llama.cpp has no fp8 cache: q8_0 is its 8-bit one


def llama_cpp_launch(spec: ModelSpec, req: Request, plan: Plan, gpu: GpuSpec) -> Launch:
    s = plan.settings
    users = -(-req.users // max(1, s.replicas))
    context = s.context or req.context
    gpus_per_copy = s.tp * s.dp_attention * s.pp
    quant = (s.quant or req.weight_quant).upper()
    gguf = f"{spec.name}-{quant}.gguf"
    words: list[Any] = ["llama-server", "-m", gguf, "--ctx-size", context * users,
                        "--parallel", users, "--n-gpu-layers", 999, "--flash-attn", "on"]
    if gpus_per_copy > 1:
        words += ["--split-mode", "layer", "--tensor-split", ",".join(["1"] * gpus_per_copy)]
    if req.kv == "fp8":
        words += ["--cache-type-k", LLAMA_KV["fp8"], "--cache-type-v", LLAMA_KV["fp8"]]
    words += ["--host", "0.0.0.0", "--port", PORTS["llama.cpp"]]
    notes = [_("{file}: convert {repo} with llama.cpp's convert_hf_to_gguf.py, then llama-quantize "
               "to {quant} (or download a published GGUF)").format(
        file=gguf, repo=_repo(spec), quant=quant),
             _("--ctx-size is shared by the {users} slots: {context} tokens each").format(
                 users=users, context=context)]
    if req.kv == "fp8":
        notes.append(_("llama.cpp has no FP8 cache: q8_0 is its 8-bit one"))
    if s.replicas > 1:
        notes.append(_("{n} copies: one llama-server per copy, each on its own GPUs "
                       "(CUDA_VISIBLE_DEVICES), behind a load balancer").format(n=s.replicas))
    notes.append(_targets("llama.cpp"))
    return Launch.build(engine="llama.cpp", version=_version("llama.cpp"),
                        commands=[_cmd(words)], notes=notes)


# -- training --------------------------------------------------------------------------------

LF_OPTIM = {"adamw": "adamw_torch", "adamw-bf16": "adamw_torch", "adamw-8bit": "adamw_bnb_8bit",
            "paged-adamw-8bit": "paged_adamw_8bit", "sgd": "sgd"}
LF_ATTN_TARGETS = "q_proj,k_proj,v_proj,o_proj"


def _accumulation(req: Request, plan: Plan) -> tuple[int, int, int]:
    """(sequence, micro-batch, gradient accumulation) as engine/speed.py counts a step."""
    s = plan.settings
    seq, batch = s.seq or req.seq_len, s.batch or req.batch
    dp = max(1, s.dp)
    return seq, batch, max(1, round(step_tokens(req, plan.gpus) / (dp * seq * batch)))


def deepspeed_config(req: Request, plan: Plan) -> dict[str, Any]:
    s = plan.settings
    _seq, batch, acc = _accumulation(req, plan)
    zero: dict[str, Any] = {"stage": s.zero or 0, "overlap_comm": True,
                            "contiguous_gradients": True}
    if s.offload in ("optimizer", "all"):
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if s.offload == "all":
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    if (s.zero or 0) >= 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    precision = {"bf16": {"enabled": req.precision in ("bf16", "fp8")}}
    if req.precision == "fp16":
        precision = {"fp16": {"enabled": True}}
    return {"train_micro_batch_size_per_gpu": batch, "gradient_accumulation_steps": acc,
            "gradient_clipping": 1.0, **precision, "zero_optimization": zero}


def llamafactory_launch(spec: ModelSpec, req: Request, plan: Plan, gpu: GpuSpec) -> Launch:
    s = plan.settings
    seq, batch, acc = _accumulation(req, plan)
    lay = layout(gpu, plan.gpus)
    method = req.spec
    job: dict[str, Any] = {
        "model_name_or_path": _repo(spec), "trust_remote_code": True,
        "stage": "pt" if method.pretraining else "sft", "do_train": True,
        "finetuning_type": "lora" if method.adapters else "full",
    }
    if method.adapters:
        job["lora_rank"] = req.rank
        job["lora_target"] = "all" if req.targets == "all" else LF_ATTN_TARGETS
    if method.quantized_base:
        job["quantization_bit"] = 4
        job["quantization_method"] = "bnb"
    files: dict[str, str] = {}
    if (s.zero or 0) >= 1 or s.offload in ("optimizer", "all"):
        files["ds_config.json"] = json.dumps(deepspeed_config(req, plan), indent=2)
        job["deepspeed"] = "ds_config.json"
    job.update({"dataset": "YOUR_DATASET", "template": "default", "cutoff_len": seq,
                "per_device_train_batch_size": batch, "gradient_accumulation_steps": acc,
                "optim": LF_OPTIM[req.optimizer]})
    if req.precision in ("bf16", "fp8"):  # FP8 GEMMs need Megatron's Transformer Engine
        job["bf16"] = True
        if req.optimizer == "adamw-bf16":
            job["pure_bf16"] = True
    elif req.precision == "fp16":
        job["fp16"] = True
    notes = []
    if s.checkpointing == "none":
        job["disable_gradient_checkpointing"] = True
    elif s.checkpointing == "selective":
        notes.append(_("sized with selective checkpointing (norms and activation functions "
                       "recomputed, matmul outputs kept), which LLaMA-Factory's trainer cannot "
                       "select: Hugging Face checkpoints whole layers (more compute, less memory "
                       "than sized)"))
    if req.loss in ("chunked", "fused"):
        # Liger's fused linear cross-entropy: never the whole logits (loss=fused exactly; for
        # chunked, less than sized)
        job["enable_liger_kernel"] = True
    if s.framework == "unsloth":
        job["use_unsloth"] = True  # Unsloth's Triton kernels under LLaMA-Factory's trainer
    if req.tokens:
        job["max_steps"] = max(1, round(req.tokens / (seq * batch * acc * max(1, s.dp))))
    job["output_dir"] = f"saves/{spec.name}/{req.method}"
    if req.fused_step:
        notes.append(_("fused_step (the optimizer step in backward) is torchtune's; LLaMA-Factory "
                       "keeps gradients for a step: expect the gradient memory back"))
    if s.offload == "activations":
        notes.append(_("activation offload is not a LLaMA-Factory option: torchtune's "
                       "enable_activation_offloading does it"))
    yaml = "\n".join(f"{k}: {_yaml(v)}" for k, v in job.items())
    files = {"train.yaml": yaml, **files}
    common = ["--nproc-per-node", lay.per, "-m", "llamafactory.launcher", "train.yaml"]
    if lay.servers > 1:
        command = _cmd(["torchrun", "--nnodes", lay.servers, "--node-rank", "$NODE_RANK",
                        "--master-addr", HEAD, "--master-port", MASTER_PORT, *common])
        notes.insert(0, _("run on each of the {n} servers with NODE_RANK 0..{last} ({head} is "
                          "rank 0)").format(n=lay.servers, last=lay.servers - 1, head=HEAD))
    else:
        command = _cmd(["torchrun", "--standalone", *common])
    notes.append(_("micro-batch {batch} x {acc} accumulation steps x {dp} data-parallel ranks = "
                   "{tokens:,} tokens per optimizer step").format(
        batch=batch, acc=acc, dp=s.dp, tokens=seq * batch * acc * s.dp))
    notes.append(_targets("llamafactory"))
    if "ds_config.json" in files:
        notes.append(_targets("deepspeed"))
    notes.append(_targets("torchrun"))
    return Launch.build(engine="llamafactory", version=_version("llamafactory"),
                        commands=[command], files=files, notes=_model_notes(spec) + notes)


def megatron_launch(spec: ModelSpec, req: Request, plan: Plan, gpu: GpuSpec) -> Launch:
    s = plan.settings
    seq, batch, acc = _accumulation(req, plan)
    lay = layout(gpu, plan.gpus)
    global_batch = batch * acc * max(1, s.dp)
    words: list[Any] = ["--tensor-model-parallel-size", s.tp, "--pipeline-model-parallel-size",
                        s.pp]
    if s.pp > 1 and spec.layers % (s.pp * speed.PP_VIRTUAL_STAGES) == 0:
        words += ["--num-layers-per-virtual-pipeline-stage",
                  spec.layers // (s.pp * speed.PP_VIRTUAL_STAGES)]
    if s.tp > 1:
        words += ["--sequence-parallel"]
    if s.cp > 1:
        words += ["--context-parallel-size", s.cp]
    sharding = FRAMEWORKS[s.framework].sharding if s.framework else "megatron"
    if (s.zero or 0) >= 3 and sharding != "megatron":
        words += ["--use-torch-fsdp2"]  # FSDP2 full shard, as torchtitan and NeMo AutoModel run
    elif (s.zero or 0) >= 1:
        words += ["--use-distributed-optimizer"]
    words += ["--micro-batch-size", batch, "--global-batch-size", global_batch,
              "--seq-length", seq, "--max-position-embeddings", spec.max_context,
              "--num-layers", spec.layers, "--hidden-size", spec.hidden,
              "--num-attention-heads", spec.heads, "--kv-channels", spec.head_dim]
    if spec.kv_heads < spec.heads:
        words += ["--group-query-attention", "--num-query-groups", spec.kv_heads]
    if spec.intermediate:
        words += ["--ffn-hidden-size", spec.intermediate]
    if spec.mlp == "gated":
        words += ["--swiglu"]
    if spec.is_moe:
        words += ["--num-experts", spec.experts, "--moe-router-topk", spec.active_experts,
                  "--moe-ffn-hidden-size", spec.moe_intermediate, "--moe-grouped-gemm"]
        if s.ep > 1:
            words += ["--expert-model-parallel-size", s.ep]
            # the dispatcher the speed was sized with: DeepEP through Megatron's flex dispatcher
            moe = speed.moe_framework(gpu, tp=s.tp, pp=s.pp, ep=s.ep, framework=s.framework,
                                      fp8=speed.fp8_training(gpu, req.precision))
            if moe in (speed.MoeFramework.deepep, speed.MoeFramework.dualpipe):
                words += ["--moe-token-dispatcher-type", "flex",
                          "--moe-flex-dispatcher-backend", "deepep"]
            else:
                words += ["--moe-token-dispatcher-type", "alltoall"]
    words += ["--normalization", "RMSNorm" if spec.norm == "rmsnorm" else "LayerNorm",
              "--position-embedding-type", "rope"]
    if not spec.tied_embeddings:
        words += ["--untie-embeddings-and-output-weights"]
    if not spec.mlp_bias:
        words += ["--disable-bias-linear"]
    mode = s.checkpointing
    if mode == "selective":
        # gpusize's selective (memory.SELECTIVE_TEXT): norms (and the experts' activation)
        # recomputed, every matmul output kept; Megatron's default core_attn would recompute
        # attention instead, which saves nothing under flash attention
        words += ["--recompute-granularity", mode, "--recompute-modules", "layernorm"]
        if spec.is_moe:
            words += ["moe_act"]
    elif mode == "attention":  # Megatron's own selective: the attention core re-run
        words += ["--recompute-granularity", "selective", "--recompute-modules", "core_attn"]
    elif mode == "full":
        words += ["--recompute-granularity", mode, "--recompute-method", "uniform",
                  "--recompute-num-layers", 1]
    if speed.fp8_training(gpu, req.precision):  # Transformer Engine FP8 GEMMs, bf16 elsewhere
        words += ["--fp8-format", "hybrid"]
    words += ["--bf16" if req.precision in ("bf16", "fp8") else "--fp16",
              "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", _repo(spec),
              "--data-path", "$DATA_PREFIX", "--save", "$CKPT_DIR", "--load", "$CKPT_DIR"]
    if req.tokens:
        words += ["--train-iters", max(1, round(req.tokens / (global_batch * seq)))]
    head = ["torchrun", "--nnodes", lay.servers, "--nproc-per-node", lay.per]
    if lay.servers > 1:
        head += ["--node-rank", "$NODE_RANK", "--master-addr", HEAD, "--master-port", MASTER_PORT]
    else:
        head += ["--standalone"]
    notes = [_("Megatron-LM's {script} (tensor and pipeline parallel; LLaMA-Factory's trainer "
               "has neither); data preprocessed with {tool}").format(
        script=MEGATRON_SCRIPT, tool="tools/preprocess_data.py")]
    if lay.servers > 1:
        notes.append(_("run on each of the {n} servers with NODE_RANK 0..{last}").format(
            n=lay.servers, last=lay.servers - 1))
    notes += [_targets("megatron"), _targets("torchrun")]
    return Launch.build(engine="megatron", version=_version("megatron"),
                        commands=[_cmd([*head, MEGATRON_SCRIPT, *words])],
                        notes=_model_notes(spec) + notes)


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def launch_for(spec: ModelSpec, req: Request, plan: Plan, gpu: GpuSpec) -> list[Launch]:
    """The commands that run the plan: the engine it was sized for first, then an equivalent;
    none for a plan that does not run."""
    if plan.verdict == "no":
        return []
    s = plan.settings
    if req.is_serving:
        if s.engine == "llama.cpp":
            return [llama_cpp_launch(spec, req, plan, gpu)]
        first = vllm_launch(spec, req, plan, gpu)
        other = sglang_launch(spec, req, plan, gpu)
        if req.weight_quant in SGLANG_QUANT and req.weight_quant not in VLLM_QUANT \
                and req.weight_quant != spec.native_quant:
            first, other = other, first  # vLLM cannot load it: SGLang first
        if s.engine == "transformers":
            first.notes.insert(0, _("sized for Hugging Face generate(); vLLM serves the same "
                                    "configuration far faster"))
        return [first, other]
    fw = FRAMEWORKS[s.framework] if s.framework else framework_for(None, tp=s.tp, pp=s.pp,
                                                                       ep=s.ep, cp=s.cp)
    launch = (megatron_launch if fw.launch == "megatron" else llamafactory_launch)(
        spec, req, plan, gpu)
    note = _framework_note(fw, launch.engine) if req.framework else None
    if note:
        launch.notes.insert(0, note)
    return [launch]


def _framework_note(fw: Framework, written: str) -> str | None:
    """What the command below is to a framework gpusize writes no config for."""
    if fw.name in ("megatron", "megatron-deepep", "llama-factory", "unsloth") \
            or fw.name == written:
        return None
    return _("gpusize writes no {framework} recipe: the {engine} command below runs the same "
             "plan (parallel sizes, micro-batch, accumulation, recomputation) and is what the "
             "speed was sized against; {framework} takes the same settings under its own "
             "names").format(framework=_(fw.label), engine=written)


def unknown_options(engine: str, command: str) -> list[str]:
    """Options (and choice values) in `command` that `engine`'s table does not accept."""
    table = engine_tables()[engine]
    words = shlex.split(command)
    program = shlex.split(table.program)
    if words[:len(program)] == program:  # `python -m sglang.launch_server`: not its options
        words = words[len(program):]
    bad = []
    for i, word in enumerate(words):
        if word.startswith("-") and not _is_number(word):
            if word not in table.flags:
                bad.append(word)
            elif word in table.choices and i + 1 < len(words) \
                    and words[i + 1] not in table.choices[word]:
                bad.append(f"{word} {words[i + 1]}")
    return bad


def unknown_keys(engine: str, keys: list[str], choices: dict[str, str]) -> list[str]:
    """Config keys (dotted paths for DeepSpeed) and choice values the table does not accept."""
    table = engine_tables()[engine]
    bad = [k for k in keys if k not in table.flags]
    bad += [f"{k}={v}" for k, v in choices.items()
            if k in table.choices and str(v) not in table.choices[k]]
    return bad


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True

