"""The training and serving methods gpusize sizes: one table that every layer reads.

A method is a row here plus its memory and FLOPs formulas (engine/memory.py, engine/speed.py),
which branch on the row's flags, never on its name. Adding DPO or distillation means a row
(aliases, flags, formats, what-ifs) and, where its arithmetic differs, a formula.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from engine.i18n import N_


class Variant(NamedTuple):
    """A change a practitioner tries next when a plan does not fit (engine/alternatives.py)."""

    change: str  # marked for translation, e.g. N_("with LoRA")
    update: dict[str, Any]  # request fields to change


class MethodSpec(NamedTuple):
    name: str  # canonical name in requests, JSON and the grammar
    aliases: tuple[str, ...]  # other English spellings the grammar accepts
    zh_aliases: tuple[str, ...]  # Chinese phrasings (engine/zh_input.py)
    label: str  # in a sentence: "it holds the full fine-tune at ..."
    title: str  # on a button or heading
    serving: bool  # a served model: KV cache, decode speed; else a training run
    adapters: bool  # trains low-rank adapters on a frozen base (no weight gradients)
    quantized_base: bool  # the frozen base is stored in 4 bits and dequantized per matmul
    pretraining: bool  # pre-training scale: long sequences, selective recompute, 4M-token steps
    quants: tuple[str, ...]  # weight formats this method can use
    default_quant: str | None  # the base's format when quant= is not given (None: precision)
    quant_hint: str  # why another format is refused
    variants: tuple[Variant, ...]  # what would fit instead, cheapest in effort first
    whatif: bool  # offered as a what-if button under an answer
    # the optimizer when optimizer= is not given: QLoRA recipes (Unsloth, LLaMA-Factory) page
    # 8-bit AdamW states to host memory; the rest train with AdamW
    default_optimizer: str = "adamw"

    @property
    def training(self) -> bool:
        return not self.serving


SERVING_QUANTS = (
    "bf16", "fp16", "fp8", "mxfp4", "int8", "int4", "awq", "gptq", "nf4",
    "q2_k", "q3_k_m", "q4_0", "q4_k_m", "q5_k_m", "q6_k", "q8_0",
)
_NOT_QUANTIZED = N_("quantized weights are for inference (or qlora)")
_CHECKPOINT_8BIT = Variant(N_("with full checkpointing + 8-bit AdamW"),
                           {"checkpointing": "full", "optimizer": "adamw-8bit"})
_CHUNKED = Variant(N_("with full checkpointing and chunked loss"),
                   {"checkpointing": "full", "loss": "chunked"})
_QLORA = Variant(N_("with QLoRA"), {"method": "qlora", "quant": None})

METHODS: dict[str, MethodSpec] = {m.name: m for m in (
    MethodSpec(
        name="full-finetune", aliases=("full", "fft", "sft", "fullfinetune", "full-ft", "finetune",
                                       "fine-tune", "full-fine-tune"),
        zh_aliases=("全参数微调", "全参微调", "全量微调", "全量参数微调", "全参训练", "全量训练",
                    "全参", "监督微调"),
        label=N_("full fine-tune"), title=N_("Full fine-tune"),
        serving=False, adapters=False, quantized_base=False, pretraining=False,
        # training updates 16/32-bit weights
        quants=("bf16", "fp16"), default_quant=None, quant_hint=_NOT_QUANTIZED,
        variants=(Variant(N_("with LoRA"), {"method": "lora"}), _QLORA, _CHECKPOINT_8BIT,
                  Variant(N_("with optimizer offload to CPU"), {"offload": "optimizer", "zero": None})),
        whatif=True),
    MethodSpec(
        name="lora", aliases=(), zh_aliases=("LoRA微调", "LoRA训练", "低秩微调"),
        label="LoRA", title="LoRA",
        serving=False, adapters=True, quantized_base=False, pretraining=False,
        # a frozen base in 16 or 8 bit (FP8 and MXFP4 as released); 4-bit bases are QLoRA
        quants=("bf16", "fp16", "int8", "fp8", "mxfp4"), default_quant=None,
        quant_hint=N_("4-bit bases are qlora"),
        variants=(_QLORA, _CHUNKED), whatif=True),
    MethodSpec(
        name="qlora", aliases=(), zh_aliases=("QLoRA微调", "QLoRA训练", "量化LoRA"),
        label="QLoRA", title="QLoRA",
        serving=False, adapters=True, quantized_base=True, pretraining=False,
        quants=("nf4",), default_quant="nf4", quant_hint=N_("QLoRA's base is NF4"),
        variants=(_CHUNKED,), whatif=True, default_optimizer="paged-adamw-8bit"),
    MethodSpec(
        name="inference", aliases=("serve", "infer", "serving", "deploy"),
        zh_aliases=("推理部署", "推理服务", "在线推理", "本地部署", "私有化部署", "私有部署",
                    "推理", "部署", "服务化", "上线"),
        label=N_("serving"), title=N_("Serve (inference)"),
        serving=True, adapters=False, quantized_base=False, pretraining=False,
        quants=SERVING_QUANTS, default_quant=None, quant_hint="",
        variants=(Variant(N_("with FP8 weights"), {"quant": "fp8"}),
                  Variant(N_("with 4-bit AWQ weights"), {"quant": "awq"}),
                  Variant(N_("with an fp8 KV cache"), {"kv": "fp8"}),
                  Variant(N_("with GGUF Q4_K_M in llama.cpp"), {"quant": "q4_k_m"})),
        whatif=True),
    MethodSpec(
        name="pretrain", aliases=("pre-train", "pretraining"),
        zh_aliases=("预训练", "继续预训练", "增量预训练", "从头训练", "从零训练"),
        label=N_("pre-training"), title=N_("Pre-train"),
        serving=False, adapters=False, quantized_base=False, pretraining=True,
        quants=("bf16", "fp16"), default_quant=None, quant_hint=_NOT_QUANTIZED,
        variants=(_CHECKPOINT_8BIT,), whatif=False),
)}
METHOD_NAMES: tuple[str, ...] = tuple(METHODS)
# every spelling the grammar reads as a method, lower case
METHOD_WORDS: dict[str, str] = {word: m.name for m in METHODS.values()
                                for word in (m.name, *m.aliases)}


def method(name: str) -> MethodSpec:
    """The row for a canonical method name (requests are validated against METHOD_NAMES)."""
    return METHODS[name]
