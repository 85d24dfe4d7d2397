"""How a card runs a weight format: natively, weight-only, converted or upcast.

A checkpoint's format says what is stored; the card decides what its matrix units compute. FP8
tensor cores exist from Ada and Hopper on (and on AMD's CDNA3); Ampere (A100, A800, RTX 3090,
A6000) has none, so vLLM runs FP8 checkpoints there weight-only, the Marlin kernel
dequantizing each FP8 tile to bf16 as it streams (vLLM's Fp8LinearMethod and FBGEMMFp8Config:
`use_marlin = not has_device_capability(89)`). Huawei's CANN stack runs neither FP8 nor the
CUDA-only AWQ/GPTQ kernels: MindIE and vLLM-Ascend serve 8-bit models as W8A8 INT8 converted
with msModelSlim (SGLang's DeepSeek guide: INT8 on Atlas 800I A3). MXFP4 (gpt-oss) has native
FP4 tensor cores only on Blackwell; Hopper and Ampere run it weight-only (W4A16).

Every plan names the path, so no answer calls a card's bf16 matmuls "FP8".
"""

from __future__ import annotations

from functools import cache
from typing import Literal, NamedTuple

from engine.catalog import GpuSpec
from engine.i18n import N_, _
from engine.quant import get_quant

Compute = Literal["bf16", "fp16", "fp8", "int8", "fp32"]
# share of datasheet bandwidth a batch-1 decode step keeps when the kernel dequantizes in
# registers (engine/speed.py STREAM_EFFICIENCY has the sources): Marlin W8A16 and W8A8 INT8
# stream like vLLM's GPTQ-Int8 rows (~0.8), 4-bit weight-only kernels ~0.7
Stream = Literal["float", "fp8", "w8", "w4", "gguf", "bnb"]


class WeightPath(NamedTuple):
    quant: str  # the format the GPU holds (sizes memory)
    kernel: str  # what runs, for settings and JSON: "fp8-w8a8", "w8a16-marlin", ...
    compute: Compute  # the tensor-core format the matrix multiplies run in
    stream: Stream  # decode's weight-streaming class
    native: bool  # the card computes in the stored format as stored
    label: str  # marked for translation: the path in a few words


KERNEL_LABELS = {
    "bf16": "bf16",  # a format name: the same in every language
    "fp16": "fp16",
    "fp32": "fp32",
    "fp8-w8a8": N_("FP8 W8A8 on the card's FP8 tensor cores"),
    "w8a16-marlin": N_("W8A16: FP8 weights dequantized to bf16 by the Marlin kernel (no FP8 "
                       "tensor cores), bf16 compute"),
    "int8-w8a8-ascend": N_("W8A8 INT8: converted from the release with msModelSlim (CANN runs "
                           "no FP8), int8 compute"),
    "mxfp4-native": N_("MXFP4 on FP4 tensor cores"),
    "w4a16-mxfp4": N_("W4A16: MXFP4 weights dequantized to bf16 (no FP4 tensor cores)"),
    "bf16-upcast": N_("upcast to bf16 (the stack has no kernel for the release's format)"),
    "w4a16": N_("W4A16: 4-bit weights dequantized to bf16 (Marlin/GEMM kernels)"),
    "w4a16-fp16": N_("W4A16: 4-bit weights dequantized to fp16 (GPTQ/AWQ GEMM kernels; the card "
                     "has no bf16)"),
    "w4a8-ascend": N_("W4A8: re-quantized with msModelSlim (CANN runs no AWQ/GPTQ kernels)"),
    "bnb": N_("bitsandbytes weight-only, bf16 compute"),
    "bnb-fp16": N_("bitsandbytes weight-only, fp16 compute (the card has no bf16)"),
    "gguf": N_("GGUF blocks dequantized in llama.cpp's kernels"),
    "as-fp16": N_("16-bit weights loaded as fp16: the card has no bf16 (Volta, Turing)"),
    "as-fp32": N_("16-bit weights computed in fp32: the card has neither bf16 nor fast fp16 "
                  "(Pascal)"),
}


# vLLM's quantization kernels by compute capability (docs.vllm.ai "Supported Hardware" table
# for quantization, read 2026-12-03): FP8 and MXFP4 weights run through Marlin or FP8 tensor
# cores, Ampere (8.0) and later; AWQ needs Turing (7.5); GPTQ and bitsandbytes run from Volta.
# gpus.toml's architectures before Ampere, and the smallest each family needs.
PRE_AMPERE = ("volta", "turing", "pascal")
_NEEDS_AMPERE = ("fp8", "mxfp4")
_ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def unsupported_weights(gpu: GpuSpec, quant: str, engine: str) -> str | None:
    """Why `engine` cannot serve weights stored as `quant` on `gpu`, or None when it can
    (llama.cpp runs every GGUF on every CUDA card; Ascend converts, formats.weight_path)."""
    if engine not in ("vllm", "sglang") or gpu.architecture not in PRE_AMPERE:
        return None
    scheme = get_quant(quant)
    if scheme.family in _NEEDS_AMPERE:
        return _("{card}: {engine} runs {format} weights from Ampere on (compute capability "
                 "8.0); serve the 16-bit release, GPTQ, or GGUF in llama.cpp").format(
            card=gpu.display, engine=_ENGINE_NAMES[engine], format=scheme.name.upper())
    if scheme.name == "awq" and gpu.architecture == "volta":
        return _("{card}: {engine}'s AWQ kernels need Turing or later (compute capability "
                 "7.5); GPTQ runs on Volta").format(card=gpu.display, engine=_ENGINE_NAMES[engine])
    return None


def _fp8_tensor_cores(gpu: GpuSpec) -> bool:
    return bool(gpu.fp8_tflops)


@cache
def weight_path(gpu: GpuSpec, quant: str) -> WeightPath:
    """How `gpu` runs weights stored as `quant` (a name or alias from engine.quant.QUANTS)."""
    scheme = get_quant(quant)
    name, family = scheme.name, scheme.family
    ascend = gpu.vendor == "huawei"
    if family == "float":
        if gpu.half_dtype != "bf16" and name != "fp32":  # gpus.toml: V100, T4 (fp16), P40 (fp32)
            kernel = f"as-{gpu.half_dtype}"
            return WeightPath(name, kernel, gpu.half_dtype, "float", False, KERNEL_LABELS[kernel])
        compute: Compute = "fp32" if name == "fp32" else "bf16"
        return WeightPath(name, name, compute, "float", True, KERNEL_LABELS[name])
    if family == "fp8":
        if _fp8_tensor_cores(gpu):
            return WeightPath(name, "fp8-w8a8", "fp8", "fp8", True, KERNEL_LABELS["fp8-w8a8"])
        if ascend:
            return WeightPath(name, "int8-w8a8-ascend", "int8", "w8", False,
                              KERNEL_LABELS["int8-w8a8-ascend"])
        return WeightPath(name, "w8a16-marlin", "bf16", "w8", False,
                          KERNEL_LABELS["w8a16-marlin"])
    if family == "mxfp4":
        if gpu.architecture == "blackwell":
            return WeightPath(name, "mxfp4-native", "fp8", "w4", True,
                              KERNEL_LABELS["mxfp4-native"])
        if ascend:
            return WeightPath("bf16", "bf16-upcast", "bf16", "float", False,
                              KERNEL_LABELS["bf16-upcast"])
        return WeightPath(name, "w4a16-mxfp4", "bf16", "w4", False, KERNEL_LABELS["w4a16-mxfp4"])
    if family == "gptq_awq":
        if ascend:
            return WeightPath(name, "w4a8-ascend", "int8", "w4", False,
                              KERNEL_LABELS["w4a8-ascend"])
        if gpu.half_dtype != "bf16":  # V100, T4, P40: the kernels dequantize to fp16
            return WeightPath(name, "w4a16-fp16", "fp16", "w4", False,
                              KERNEL_LABELS["w4a16-fp16"])
        return WeightPath(name, "w4a16", "bf16", "w4", False, KERNEL_LABELS["w4a16"])
    if family == "bnb":
        if ascend:  # bitsandbytes is CUDA-only: 8-bit as W8A8, 4-bit as W4A8 (msModelSlim)
            kernel = "int8-w8a8-ascend" if name == "int8" else "w4a8-ascend"
            return WeightPath(name, kernel, "int8", "w8" if name == "int8" else "w4", False,
                              KERNEL_LABELS[kernel])
        if gpu.half_dtype != "bf16":
            return WeightPath(name, "bnb-fp16", "fp16", "bnb", False, KERNEL_LABELS["bnb-fp16"])
        return WeightPath(name, "bnb", "bf16", "bnb", False, KERNEL_LABELS["bnb"])
    return WeightPath(name, "gguf", "bf16", "gguf", False, KERNEL_LABELS["gguf"])


def compute_tflops(gpu: GpuSpec, path: WeightPath) -> float:
    """Dense tensor peak of the path's compute format: FP8 where it runs in FP8; INT8 at the
    card's INT8 rate when the datasheet gives one, else at its bf16 rate."""
    if path.compute == "fp8" and gpu.fp8_tflops:
        return gpu.fp8_tflops
    if path.compute == "int8" and gpu.int8_tops:
        return gpu.int8_tops
    return gpu.bf16_tflops
