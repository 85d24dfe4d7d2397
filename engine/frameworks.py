"""Training frameworks: the one table of names the grammar reads for framework= and the
execution model each implies, which the speed model (engine/speed.py), the plan's shardings
(engine/plan.py) and the launch command (engine/launch.py) read.

A tool is named by what it runs: LLaMA-Factory, ms-swift's `swift sft`, TRL and Unsloth train
Hugging Face model code (each MoE expert its own module, looped over in Python) sharded by
DeepSpeed; torchtitan and NeMo AutoModel run their own MoE layers (grouped GEMM) under PyTorch
FSDP2 with expert parallelism, NeMo AutoModel dispatching tokens with DeepEP; Megatron-LM,
Megatron-Core, Megatron-Bridge, NeMo and ms-swift's `megatron sft` run Megatron.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from engine.i18n import N_


class Framework(NamedTuple):
    name: str  # canonical, in framework= and the answer's JSON
    label: str  # marked for translation: what it runs, said in the assumptions
    # Hugging Face model code: an MoE layer loops over its experts in Python (transformers < 5),
    # each expert's matrices separate parameters; no tensor, pipeline or expert parallelism
    hf_modules: bool
    # how data-parallel ranks shard the model: DeepSpeed ZeRO (one all-gather per parameter
    # fetched outside its prefetch trace), PyTorch FSDP (one flat gather per wrapped block) or
    # Megatron's distributed optimizer
    sharding: Literal["deepspeed", "fsdp", "megatron"]
    # expert-parallel token dispatch through DeepEP's kernels where the card runs them (NVLink
    # Hopper and later), else NCCL all-to-all with host-synchronised split sizes
    deepep: bool
    launch: Literal["megatron", "llamafactory"]  # the command engine/launch.py writes

    @property
    def model_parallel(self) -> bool:
        """Whether it runs tensor, pipeline and expert parallelism."""
        return not self.hf_modules


# Execution models: (hf_modules, sharding, deepep, launch) as Framework's fields say them
_MODELS: dict[str, tuple[bool, str, bool, str]] = {
    "megatron": (False, "megatron", False, "megatron"),
    "megatron-flex": (False, "megatron", True, "megatron"),
    "fsdp2-deepep": (False, "fsdp", True, "megatron"),
    "fsdp2": (False, "fsdp", False, "megatron"),
    "hf-fsdp": (True, "fsdp", False, "llamafactory"),
    "hf-deepspeed": (True, "deepspeed", False, "llamafactory"),
}
_ROWS = (
    ("megatron", "megatron", N_("Megatron-LM / Megatron-Core (grouped GEMM, alltoall token "
                                "dispatcher, distributed optimizer)")),
    ("megatron-deepep", "megatron-flex", N_("Megatron-LM / Megatron-Core with the flex token "
                                            "dispatcher (DeepEP or HybridEP kernels), "
                                            "distributed optimizer")),
    ("nemo-automodel", "fsdp2-deepep", N_("NeMo AutoModel (PyTorch FSDP2, grouped GEMM, DeepEP "
                                          "token dispatch)")),
    ("torchtitan", "fsdp2", N_("torchtitan (PyTorch FSDP2, grouped GEMM, NCCL all-to-all token "
                               "dispatch)")),
    ("fsdp", "hf-fsdp", N_("PyTorch FSDP over Hugging Face modules (one gather per decoder "
                           "layer, a Python loop over the experts)")),
    ("deepspeed", "hf-deepspeed", N_("DeepSpeed over Hugging Face modules (a Python loop over "
                                     "the experts)")),
    ("hf", "hf-deepspeed", N_("Hugging Face Transformers / TRL Trainer with DeepSpeed (a Python "
                              "loop over the experts)")),
    ("llama-factory", "hf-deepspeed", N_("LLaMA-Factory (Hugging Face modules, DeepSpeed)")),
    ("ms-swift", "hf-deepspeed", N_("ms-swift swift sft (Hugging Face modules, DeepSpeed)")),
    ("unsloth", "hf-deepspeed", N_("Unsloth (Hugging Face modules with its Triton kernels)")),
)
FRAMEWORKS: dict[str, Framework] = {
    name: Framework(name, label, *_MODELS[model])  # type: ignore[arg-type]
    for name, model, label in _ROWS}
FRAMEWORK_NAMES = tuple(FRAMEWORKS)

# Other spellings of the same tools, and the tools that run one of the execution models above
FRAMEWORK_ALIASES = {
    "megatron-lm": "megatron", "megatron-core": "megatron", "mcore": "megatron",
    "megatron-bridge": "megatron", "nemo": "megatron", "megatron-swift": "megatron",
    "ms-swift-megatron": "megatron", "swift-megatron": "megatron",
    "megatron-flex": "megatron-deepep", "megatron-hybridep": "megatron-deepep",
    "mcore-deepep": "megatron-deepep", "megatron-bridge-deepep": "megatron-deepep",
    "automodel": "nemo-automodel", "nemo_automodel": "nemo-automodel",
    "titan": "torchtitan", "fsdp2": "fsdp", "torchtune": "fsdp", "accelerate": "hf",
    "transformers": "hf", "huggingface": "hf", "trl": "hf", "hf-trainer": "hf",
    "llamafactory": "llama-factory", "llama_factory": "llama-factory", "swift": "ms-swift",
    "ms_swift": "ms-swift", "modelscope-swift": "ms-swift", "ds": "deepspeed",
}

# The words sentences name them by (engine/en_input.py; Chinese questions name them in Latin
# letters, read by the same rows): ms-swift's Megatron mode before ms-swift alone
FRAMEWORK_WORDS: tuple[tuple[str, str, str], ...] = (
    (r"\b(?:ms[- ]?)?swift\s*(?:的|'s|in|with)?\s*megatron(?:\s*(?:mode|backend|模式|后端))?|"
     r"\bmegatron[- ]swift\b|\bmegatron\s+sft\b", "megatron", "ms-swift megatron"),
    (r"\b(?:megatron(?:[- ](?:lm|core|bridge))?|mcore)\s*(?:with|\+|和|配|用)?\s*(?:the\s+)?"
     r"(?:deep\s?ep|hybrid[- ]?ep|flex(?:\s+(?:token\s+)?dispatcher)?)\b", "megatron-deepep",
     "megatron deepep"),
    (r"\bmegatron(?:[- ](?:lm|core|bridge))?\b|\bmcore\b", "megatron", "megatron"),
    (r"\bnemo[- ]?automodel\b|\bautomodel\b", "nemo-automodel", "nemo automodel"),
    (r"\btorch\s?titan\b", "torchtitan", "torchtitan"),
    (r"\b(?:torchtune|fsdp2?)\b", "fsdp", "fsdp"),
    (r"\bdeep\s?speed\b", "deepspeed", "deepspeed"),
    (r"\bllama[- _]?factory\b", "llama-factory", "llama-factory"),
    (r"\bms[- _]?swift\b|\bswift\s+sft\b", "ms-swift", "ms-swift"),
    (r"\bunsloth\b", "unsloth", "unsloth"),
    (r"\btrl\b|\b(?:hugging\s?face|hf)\s+(?:trainer|transformers|trl)\b", "hf", "hf trainer"),
)

# What a framework does by default that moves memory, filled in where the question leaves the
# knob unset. Unsloth computes the loss with its fused linear cross-entropy
# (unsloth_fused_ce_loss, unless UNSLOTH_RETURN_LOGITS=1: the logits never exist whole) and its
# get_peft_model default use_gradient_checkpointing="unsloth" offloads each checkpointed block
# input to host RAM from 512 tokens up (unslothai/unsloth 015bdef, unsloth/models/llama.py and
# _utils.py apply_unsloth_gradient_checkpointing).
RECIPE_DEFAULTS: dict[str, dict[str, str]] = {
    "unsloth": {"loss": "fused", "checkpointing": "full", "offload": "activations"}}
RECIPE_DEFAULTS_TEXT = {
    "unsloth": N_("Unsloth's defaults assumed unless set: fused linear cross-entropy (loss=fused) "
                  "and its gradient checkpointing, which offloads each block's input to host RAM "
                  "from 512 tokens up (checkpointing=full offload=activations)")}
OFFLOADED_CHECKPOINTS_MIN_SEQ = 512  # Unsloth keeps plain checkpointing below this


def recipe_defaults(name: str | None, values: dict[str, object]) -> dict[str, object]:
    """The knobs framework `name` sets by default that `values` (a question's settings) leave
    unset; its offloaded checkpoints only with checkpointing on and sequences of 512 and more."""
    implied = dict(RECIPE_DEFAULTS.get(name or "", {}))
    if values.get("checkpointing", implied.get("checkpointing")) != "full":
        implied.pop("offload", None)
    seq = values.get("seq")
    if isinstance(seq, int) and seq < OFFLOADED_CHECKPOINTS_MIN_SEQ:
        implied.pop("offload", None)
    return {key: value for key, value in implied.items() if values.get(key) is None}


# Without framework=: data-parallel plans run LLaMA-Factory (Hugging Face modules under
# DeepSpeed), tensor-, pipeline-, expert- or context-parallel ones Megatron (engine/launch.py)
DEFAULT_DATA_PARALLEL = "llama-factory"
DEFAULT_MODEL_PARALLEL = "megatron"


def framework_for(name: str | None, *, tp: int, pp: int, ep: int, cp: int = 1) -> Framework:
    """The framework a plan runs: the one asked for, else the default for its shape."""
    if name is not None:
        return FRAMEWORKS[name]
    parallel = tp > 1 or pp > 1 or ep > 1 or cp > 1
    return FRAMEWORKS[DEFAULT_MODEL_PARALLEL if parallel else DEFAULT_DATA_PARALLEL]
