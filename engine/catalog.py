"""Bundled catalogs (models, GPUs, per-market availability) and fuzzy look-up over them.

The data lives in engine/data/*.toml; each row carries its source URL and the date it was read.
Loading is lazy and cached so the CLI pays for it once.
"""

from __future__ import annotations

import re
from datetime import date
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine import datacache
from engine.architecture import ModelSpec
from engine.i18n import N_, _

# GPUs in one server: the HGX/DGX baseboard's 8 (and the usual 8-slot PCIe chassis); tensor
# parallelism stays inside one, and more GPUs than this is several servers
GPUS_PER_SERVER = 8


class GpuSpec(BaseModel):
    """One accelerator as its datasheet states it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    display: str
    aliases: tuple[str, ...] = ()
    vendor: Literal["nvidia", "amd", "huawei"]
    architecture: str
    memory_gb: float = Field(gt=0, description="marketed capacity")
    memory_bytes: int = Field(gt=0, description="capacity the driver reports")
    memory_kind: Literal["gddr", "hbm"] = Field(description="GDDR/LPDDR boards vs HBM parts")
    bandwidth_gbps: float = Field(gt=0)
    bf16_tflops: float = Field(gt=0, description="dense, no sparsity")
    fp16_tflops: float = Field(gt=0)
    # the format "16-bit" matrix work runs in: fp16 on Volta/Turing (no bf16), fp32 on Pascal
    # (no tensor cores); where not bf16, bf16_tflops holds that format's dense rate
    half_dtype: Literal["bf16", "fp16", "fp32"] = "bf16"
    fp8_tflops: float | None = None
    int8_tops: float | None = None
    # the best dense bf16 matmul rate measured on the card (a published benchmark, in notes):
    # cards that hold clocks above the datasheet's rated boost measure near or above its peak
    measured_matmul_tflops: float | None = Field(None, gt=0)
    tdp_w: int = Field(gt=0)
    nvlink_gbps: float = Field(0, ge=0, description="0 = PCIe only")
    pcie_gen: int = 4
    form_factor: Literal["pcie", "sxm", "oam"] = "pcie"
    market: str = "global"
    serving_stack: str = Field("", description="empty = CUDA; else the vendor stack")
    notes: str = ""
    source: str
    retrieved: str

    @property
    def has_nvlink(self) -> bool:
        return self.nvlink_gbps > 0

    @property
    def stack_text(self) -> str:
        """serving_stack in the current language: the names as they are, the remark in
        parentheses translated (STACK_REMARKS)."""
        m = re.fullmatch(r"(.*?) \((.*)\)", self.serving_stack)
        if not m:
            return self.serving_stack
        return _("{names} ({remark})").format(names=m.group(1), remark=_(m.group(2)))


# The remarks gpus.toml's serving_stack makes in parentheses, marked so that answers can give
# them in Chinese (tests/engine/test_no_english_in_zh.py fails on a remark missing here).
STACK_REMARKS = (
    N_("no CUDA: TensorRT-LLM does not apply"),
    N_("no CUDA: llama.cpp CUDA, TensorRT-LLM and CUDA-only kernels such as FlashAttention do "
       "not apply"),
    N_("each 910C is two NPU devices to CANN; no CUDA: llama.cpp CUDA and TensorRT-LLM do not "
       "apply"),
    N_("Volta: no bf16, fp16 with loss scaling; no FlashAttention-2, xformers or SDPA attention "
       "instead"),
    N_("Turing: no bf16, fp16 with loss scaling; no FlashAttention-2, xformers or SDPA attention "
       "instead"),
    N_("Pascal: no tensor cores and no bf16, fp16 at 1/64 of fp32: computes in fp32; vLLM needs "
       "compute capability 7.0, llama.cpp runs it"),
)


Market = Literal["china", "global"]
MARKETS: tuple[Market, ...] = ("china", "global")
# new: bought new through legal channels; secondary: grey or second-hand market only;
# rental: rentable from clouds/IDCs in that market, not buyable new; grey: only through channels
# that evade export controls (never recommended); unavailable: none of these.
Status = Literal["new", "secondary", "rental", "grey", "unavailable"]


class Availability(BaseModel):
    """Whether a card can be had in a market (export controls, China-only SKUs), as of a date."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    card: str
    market: Market
    status: Status
    source: str
    as_of: date = Field(description="date the fact held (rule, report or listing)")
    retrieved: date = Field(description="date the source was read")
    note: str


def _load(filename: str, table: str) -> list[dict]:
    import tomllib  # only when the cached catalog is missing or out of date

    return tomllib.loads(datacache.data_text(filename))[table]


def load_models() -> dict[str, ModelSpec]:
    """engine/data/models.toml, every row validated."""
    return {row["name"]: ModelSpec(**row) for row in _load("models.toml", "model")}


def load_gpus() -> dict[str, GpuSpec]:
    """engine/data/gpus.toml, every row validated."""
    return {row["name"]: GpuSpec(**row) for row in _load("gpus.toml", "gpu")}


@cache
def models() -> dict[str, ModelSpec]:
    return datacache.load("models", data=("models.toml",), code=("architecture.py",),
                          build=load_models)


@cache
def gpus() -> dict[str, GpuSpec]:
    return datacache.load("gpus", data=("gpus.toml",), code=("catalog.py",), build=load_gpus)


def load_availability() -> dict[tuple[str, str], Availability]:
    """engine/data/availability.toml, every row validated; a repeated pair is a data error."""
    index: dict[tuple[str, str], Availability] = {}
    for row in _load("availability.toml", "availability"):
        spec = Availability(**row)
        key = (spec.card, spec.market)
        if key in index:
            raise ValueError(f"availability.toml: two rows for {key}")
        index[key] = spec
    return index


@cache
def availability() -> dict[tuple[str, str], Availability]:
    """(card, market) -> whether the card can be had there."""
    return datacache.load("availability", data=("availability.toml",), code=("catalog.py",),
                          build=load_availability)


def normalize(text: str) -> str:
    """Lower-case and drop separators so `RTX-4090`, `rtx 4090` and `rtx4090` meet; dots stay
    (qwen2-57b must not become qwen2.5-7b)."""
    return re.sub(r"[\s_\-/:]+", "", text.lower())


@cache
def _model_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for spec in models().values():
        keys = [spec.name, spec.display, *spec.aliases]
        if spec.hf_repo:
            keys += [spec.hf_repo, spec.hf_repo.split("/", 1)[-1]]
        for key in keys:
            index.setdefault(normalize(key), spec.name)
    return index


@cache
def _gpu_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for spec in gpus().values():
        for key in (spec.name, spec.display, *spec.aliases):
            index.setdefault(normalize(key), spec.name)
    return index


def find_model(text: str) -> ModelSpec | None:
    """Exact look-up by name, display name, alias or Hugging Face repo id (any case)."""
    name = _model_index().get(normalize(text))
    return models()[name] if name else None


def find_gpu(text: str) -> GpuSpec | None:
    name = _gpu_index().get(normalize(text))
    return gpus()[name] if name else None


def closest(text: str, choices: list[str], n: int = 3) -> list[str]:
    """Nearest names by edit similarity, for "did you mean" lines."""
    import difflib  # only for "did you mean": not on the answer's path

    by_norm = {normalize(c): c for c in choices}
    hits = difflib.get_close_matches(normalize(text), list(by_norm), n=n, cutoff=0.5)
    return [by_norm[h] for h in hits]


def closest_models(text: str, n: int = 3) -> list[str]:
    return closest(text, [m.name for m in models().values()], n)


def closest_gpus(text: str, n: int = 3) -> list[str]:
    return closest(text, [g.name for g in gpus().values()], n)
