"""Published runs on named cards (engine/data/runs.toml): what someone ran, on which cards, and
what it took. An answer cites one where a plan or an alternative matches it, and ranking treats a
plan that matches a published run as known to run even when the formula leaves it tight.

A run matches a plan when the method is the same, the plan's model is within MATCH_SIZE of the
run's (total parameters, and active parameters too for a mixture of experts; dense and MoE never
match each other), the card count is the same and each card has at least the run's memory (a
24 GB RTX 3090 can hold what a 24 GB RTX 4090 held).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from engine import catalog, datacache, memory
from engine.architecture import ModelSpec, total_params
from engine.i18n import N_, _
from engine.methods import method
from engine.schema import Settings

MATCH_SIZE = 0.2  # a model within 20% of the run's parameters
# runs.toml's `recipe` texts, marked for translation (tests/engine/test_runs.py checks each row's
# recipe is one of these): a new row's recipe is added here too
RECIPE_TEXT = (
    N_("8-bit paged AdamW with the optimizer step fused into backward, activation "
       "checkpointing, chunked loss, torch.compile"),
    N_("LoRA rank 8, bf16 optimizer states, activation checkpointing, chunked loss, "
       "torch.compile"),
    N_("QLoRA rank 8, activation checkpointing, chunked loss, torch.compile"),
    N_("QLoRA with 8-bit AdamW and Unsloth's offloaded gradient checkpointing, router frozen"),
    N_("QLoRA with 8-bit AdamW and Unsloth's offloaded gradient checkpointing"),
    N_("QLoRA sharded with FSDP over the two cards, parameters offloaded to CPU (about 107 GB "
       "of host RAM), activation checkpointing"),
    N_("GGUF Q4_K_M in llama.cpp, layers split over the two cards (39.59 GiB of weights, about "
       "half on each)"),
)


class Run(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    model: str
    method: str
    gpu: str
    gpus: int
    memory: float
    unit: str
    tokens_per_s: float | None = None
    who: str
    recipe: str
    settings: dict[str, Any] = {}
    # a vendor's statement of the memory ("works on just 17.5GB VRAM"), not a logged peak, and
    # without the configuration it was measured in: cited as stated, never as measured
    stated: bool = False
    source: str
    retrieved: str

    @property
    def memory_bytes(self) -> float:
        return self.memory * (memory.GIB if self.unit == "GiB" else 1e9)

    @property
    def spec(self) -> ModelSpec:
        return catalog.models()[self.model]

    def text(self) -> str:
        """"torchtune ran Llama 3.1 8B full fine-tune on 1 x GeForce RTX 4090 at 18.9 GiB per GPU
        (8-bit paged AdamW ...), 1,650 tokens/s; source"; a stated figure says so."""
        gpu = catalog.gpus()[self.gpu].display
        model = catalog.models()[self.model].display
        speed = (_(", {rate:,.0f} tokens/s").format(rate=self.tokens_per_s)
                 if self.tokens_per_s else "")
        form = (N_("{who} states {model} {method} runs on {n} x {card} in {memory:g} {unit} per "
                   "GPU ({recipe}; a vendor's figure, its configuration not given){speed}; "
                   "{source}") if self.stated else
                N_("{who} ran {model} {method} on {n} x {card} at {memory:g} {unit} per GPU "
                   "({recipe}){speed}; {source}"))
        return _(form).format(
            who=self.who, model=model, method=_method_label(self.method), n=self.gpus, card=gpu,
            memory=self.memory, unit=self.unit, recipe=_(self.recipe), speed=speed,
            source=self.source.split(" ; ")[0])


def _method_label(name: str) -> str:
    return _(method(name).label)


def load_runs() -> tuple[Run, ...]:
    import tomllib

    return tuple(Run(**row) for row in tomllib.loads(datacache.data_text("runs.toml"))["run"])


@cache
def runs() -> tuple[Run, ...]:
    return datacache.load("runs", data=("runs.toml",), code=("runs.py",), build=load_runs)


def _recipe_covers(run: Run, settings: Settings | None) -> bool:
    """Whether a plan with `settings` uses the run's memory-saving recipe (or one as light): the
    weight format, the offload, and for full-weight training an optimizer no heavier than the
    run's with its fused step; None: any recipe."""
    if settings is None:
        return True
    want = run.settings
    if "quant" in want and settings.quant != want["quant"]:
        return False
    if want.get("offload", "none") not in ("none", settings.offload):
        return False
    if run.method in ("full-finetune", "pretrain"):
        precision = settings.precision or "bf16"
        mine = memory.recipe_bytes(settings.optimizer or "adamw", precision)[2]
        theirs = memory.recipe_bytes(want.get("optimizer", "adamw"), precision)[2]
        paged = want.get("optimizer") == "paged-adamw-8bit"
        if mine > theirs or (paged and settings.optimizer != "paged-adamw-8bit"):
            return False
        if want.get("fused_step") and not settings.fused_step:
            return False
    return True


def matching(spec: ModelSpec, method: str, gpu: str, gpus: int, *, quant: str | None = None,
             settings: Settings | None = None) -> Run | None:
    """The published run that shows `method` on `spec` runs on `gpus` x `gpu`, if one does; a
    served run counts only for the weight format it served (`quant`), and with `settings` only
    for a plan that uses the run's memory-saving recipe."""
    card = catalog.gpus()[gpu]
    for run in runs():
        if run.method != method or run.gpus != gpus or run.spec.is_moe != spec.is_moe:
            continue
        if quant is not None and run.settings.get("quant", quant) != quant:
            continue
        if not _recipe_covers(run, settings):
            continue
        if card.memory_bytes < catalog.gpus()[run.gpu].memory_bytes * 0.99:
            continue
        if _near(_params(spec), _params(run.spec)) and (
                not spec.is_moe or _near(spec.active_params, run.spec.active_params)):
            return run
    return None


def _params(spec: ModelSpec) -> float:
    return float(spec.published_params or total_params(spec))


def _near(a: float, b: float) -> bool:
    return abs(a / b - 1) <= MATCH_SIZE
