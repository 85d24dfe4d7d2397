"""What the user asked for, in the two shapes it takes on its way to the engine.

`Draft` is a request as far as it has been said: what one command line or one thread reply gave,
merged turn by turn in a Slack thread and stored there as it is. `Request` is the validated,
complete question the engine answers; every field has a stated default, and `None` means "let
the planner choose" (card, count, sharding) or "depends on the method" (checkpointing, quant).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from functools import cache
from operator import itemgetter
from typing import Any, Literal, NamedTuple, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ConfigDict, Field

from engine.frameworks import FRAMEWORK_NAMES, recipe_defaults
from engine.market import MARKET_CURRENCY, MarketChoice, choose_market
from engine.methods import METHOD_NAMES, MethodSpec, method
from engine.quant import get_quant

Method = Literal[METHOD_NAMES]  # type: ignore[valid-type]  # the names in engine/methods.py
Precision = Literal["bf16", "fp16", "fp32", "fp8"]
Optimizer = Literal["adamw", "adamw-bf16", "adamw-8bit", "paged-adamw-8bit", "sgd"]
Checkpointing = Literal["none", "selective", "full", "attention"]
Offload = Literal["none", "optimizer", "all", "activations"]
Loss = Literal["full", "chunked", "fused"]
Engine = Literal["vllm", "transformers", "llama.cpp"]
FrameworkName = Literal[FRAMEWORK_NAMES]  # type: ignore[valid-type]  # engine/frameworks.py
Targets = Literal["attn", "all"]
KvDtype = Literal["fp16", "fp8"]
Currency = Literal["CNY", "USD"]
Market = Literal["china", "global"]



_REJECT = object()
_BOUNDS = ((annotated_types.Gt, lambda v, m: v > m.gt), (annotated_types.Ge, lambda v, m: v >= m.ge),
           (annotated_types.Lt, lambda v, m: v < m.lt), (annotated_types.Le, lambda v, m: v <= m.le))


def _value_for(annotation: Any, value: Any) -> Any:
    """`value` as the field would store it, when it plainly has the annotated type; else
    _REJECT (and the caller leaves the value to pydantic's validation)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        for option in get_args(annotation):
            got = _value_for(option, value)
            if got is not _REJECT:
                return got
        return _REJECT
    if origin is Literal:
        return value if value in get_args(annotation) and type(value) is str else _REJECT
    if annotation is type(None):
        return None if value is None else _REJECT
    if annotation is float and type(value) in (int, float):
        return float(value)
    if annotation in (int, str, bool):
        return value if type(value) is annotation else _REJECT
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(value, dict):
        made = construct_checked(annotation, value)
        return _REJECT if made is None else made
    return _REJECT


def construct_checked(cls: type[BaseModel], values: Mapping[str, Any]) -> Any:
    """`cls(**values)` without building cls's validation schema, when every value already has
    its field's type and lies within its bounds (what the grammar produces); None when anything
    needs pydantic to judge it. Building a schema costs more than answering (issue 11)."""
    fields = cls.model_fields
    out: dict[str, Any] = {}
    for name, value in values.items():
        info = fields.get(name)
        if info is None:
            return None
        got = _value_for(info.annotation, value)
        if got is _REJECT:
            return None
        if got is not None and not all(check(got, m) for kind, check in _BOUNDS
                                       for m in info.metadata if isinstance(m, kind)):
            return None
        out[name] = got
    if any(f.is_required() and name not in out for name, f in fields.items()):
        return None
    return cls.model_construct(**out)

# Serving defaults. A reader keeps pace with about 15 tokens/s (roughly 10 English words or 20
# Chinese characters a second, faster than people read). The first token of a prompt as long as
# the context asked for may take as long as prefilling it at 800 tokens/s (a full 8k prompt in
# 10 s), never less than 2 s (MLPerf Inference's Llama 2 70B server limit, set for prompts of a
# few hundred tokens).
READING_PACE = 15.0
# MODEL for the largest catalog model a box (gpu= and gpus=) trains or serves with the method;
# MODEL left out with a box means the same (engine/capacity.py answers it)
LARGEST_MODEL = "largest"
LARGEST_WORDS = ("largest", "biggest")
TTFT_FLOOR_S = 2.0
PREFILL_FLOOR = 800.0


class Money(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    amount: float = Field(gt=0)
    currency: Currency | None = None  # None: the answer's currency (CNY unless currency=)


class Request(BaseModel):
    """A sizing question. Bytes and tokens are plain integers."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    model: str
    method: Method
    gpu: str | None = None
    gpus: int | None = Field(None, ge=1, le=131_072)  # Llama 3 used 16,384 H100; room above
    seq: int | None = Field(None, ge=1, le=10_000_000)
    batch: int = Field(1, ge=1, le=4096)
    precision: Precision = "bf16"
    optimizer: Optimizer | None = None  # None: the method's default (optimizer_used)
    checkpointing: Checkpointing | None = None
    zero: int | None = Field(None, ge=0, le=3)
    offload: Offload | None = None
    tp: int | None = Field(None, ge=1, le=64)
    ep: int | None = Field(None, ge=1, le=1024)  # MoE: experts sharded over this many ranks
    cp: int | None = Field(None, ge=1, le=64)  # training: ranks each sequence is split over
    pp: int | None = Field(None, ge=1, le=128)  # training: pipeline stages the layers split into
    rank: int = Field(16, ge=1, le=1024)
    targets: Targets = "all"
    quant: str | None = None
    context: int = Field(4096, ge=1, le=10_000_000)
    # Serving: the prompt and answer lengths of one request (context = prompt + answer). Unset,
    # the prompt is the context less the answer, and the answer is a reasoning model's typical
    # output (engine.sizing.with_model_defaults) or none.
    prompt: int | None = Field(None, ge=1, le=10_000_000)
    output: int | None = Field(None, ge=1, le=10_000_000)
    users: int = Field(1, ge=1, le=100_000)
    kv: KvDtype = "fp16"
    tokens: int | None = Field(None, ge=1)
    headroom: float = Field(0.2, ge=0, le=1)
    # Recipe knobs that move memory more than the formula does (torchtune exposes all three).
    loss: Loss = "full"
    fused_step: bool = False
    compile: bool = False
    # Training batches of one length (packed or fixed-length sequences: True) or SFT samples of
    # varying length padded per batch (False); None: as the framework does (memory.logits)
    packing: bool | None = None
    engine: Engine | None = None
    # llama.cpp's quantized matmuls: int8 tensor cores (MMQ, builds since June 2024; None) or
    # dequantized to fp16 for cuBLAS (older builds, GGML_CUDA_FORCE_CUBLAS)
    build: Literal["mmq", "cublas"] | None = None
    # Training: the framework the run uses (engine/frameworks.py); None: the plan's default
    framework: FrameworkName | None = None
    budget: Money | None = None
    currency: Currency | None = None
    region: str | None = None
    hours: float | None = Field(None, gt=0, le=744)
    months: int = Field(36, ge=1, le=120)
    power_price: float | None = Field(None, gt=0, le=100)
    goal: Literal["cost", "time"] = "cost"
    # Where the asker buys or rents (engine/market.py): None follows the question.
    market: Market | None = None
    asked_in: Literal["zh", "en"] | None = None  # the question's language, set by the grammar
    mode: Literal["buy", "rent"] | None = None  # only buying, or only renting
    # The team already has gpu= (gpus=): those cards are priced at what running them costs
    # (power and operations), never bought or rented; other cards are priced as usual.
    owned: bool = False
    # Service level when serving, deadline when training (tokens=): plans that miss are ranked
    # after those that meet them.
    min_speed: float | None = Field(None, gt=0, le=10_000)  # tokens/s per user
    ttft: float | None = Field(None, gt=0, le=3600)  # seconds to the first token
    replicas: int | None = Field(None, ge=1, le=4096)  # independent copies serving users=
    gpu_util: float | None = Field(None, ge=0.3, le=1)  # vLLM's gpu_memory_utilization
    days: float | None = Field(None, gt=0, le=3650)  # wall-clock days a tokens= run may take
    # the memory said without a card's name (24G显存, 48GB cards): only cards of that memory
    card_memory: float | None = Field(None, gt=0, le=1024)  # GB
    host_memory: float | None = Field(None, gt=0, le=65_536)  # GB of host RAM a server has
    # Serving traffic (engine/traffic.py): requests a day, with prompt= and output= per request,
    # become concurrent users (Little's law) and tokens a month.
    requests: float | None = Field(None, gt=0, le=1e10)  # requests per day
    peak: float | None = Field(None, ge=1, le=100)  # busiest hour's traffic / the day's average

    def __hash__(self) -> int:
        # requests key the planner's caches: every field's value, so the variants an answer
        # searches (headroom=0, offload=, mode=buy, ...) do not collide and each look-up
        # pays pydantic's slow __eq__ only for an equal request
        return hash(_field_values(self.__dict__))

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> Request:
        """`Request(**values)`; validated by pydantic only when a value is not plainly of its
        field's type and bounds, so errors read exactly as validation words them."""
        implied = recipe_defaults(values.get("framework"), dict(values))
        if implied:
            values = {**values, **implied}
        checked = construct_checked(cls, values)
        return checked if checked is not None else cls(**values)

    @property
    def spec(self) -> MethodSpec:
        """The method's row in engine/methods.py."""
        return method(self.method)

    @property
    def optimizer_used(self) -> Optimizer:
        """optimizer=, else the method's default: AdamW, or 8-bit paged AdamW for QLoRA (as
        Unsloth and LLaMA-Factory's QLoRA recipes use)."""
        return self.optimizer or self.spec.default_optimizer  # type: ignore[return-value]

    @property
    def is_training(self) -> bool:
        return self.spec.training

    @property
    def is_serving(self) -> bool:
        return self.spec.serving

    @property
    def seq_len(self) -> int:
        # Training sequence length: 2048 for fine-tuning (torchtune's and most recipes'
        # max_seq_len default class), 4096 for pre-training (Llama 2's pre-training context).
        if self.seq is not None:
            return self.seq
        return 4096 if self.spec.pretraining else 2048

    @property
    def checkpointing_mode(self) -> Checkpointing:
        # Fine-tuning recipes (torchtune, QLoRA's reference code) turn full activation
        # checkpointing on by default; large pre-training runs use selective recomputation
        # (memory.SELECTIVE_TEXT: the LLaMA paper's recipe, Megatron's layernorm recompute);
        # inference has none.
        if self.checkpointing is not None:
            return self.checkpointing
        if self.spec.pretraining:
            return "selective"
        return "full" if self.is_training else "none"

    @property
    def market_choice(self) -> MarketChoice:
        """The market the answer serves and why (engine/market.py)."""
        return choose_market(market=self.market, region=self.region, asked_in=self.asked_in)

    @property
    def answer_currency(self) -> Currency:
        # the market's currency unless currency= says; a budget in another currency is
        # converted into it (engine/cost.py budget_in), it does not choose it
        if self.currency is not None:
            return self.currency
        return MARKET_CURRENCY[self.market_choice.market]  # type: ignore[return-value]

    @property
    def decode_floor(self) -> float:
        """Tokens/s each user must get: min_speed=, else a reading pace."""
        return self.min_speed if self.min_speed is not None else READING_PACE

    @property
    def answer_tokens(self) -> int:
        """Tokens one answer runs to: output=, else what is left of the context after prompt=,
        else none (the whole context is prompt)."""
        if self.output is not None:
            return min(self.output, self.context)
        if self.prompt is not None:
            return max(0, self.context - self.prompt)
        return 0

    @property
    def prompt_tokens(self) -> int:
        """Tokens of one prompt: prompt=, else the context less the answer (at least 1)."""
        if self.prompt is not None:
            return min(self.prompt, self.context)
        return max(1, self.context - self.answer_tokens)

    @property
    def ttft_ceiling(self) -> float:
        """Seconds to the first token for one prompt: ttft=, else prompt / 800 tokens/s and at
        least 2 s (an 8k prompt in 10 s, 128k in 160 s)."""
        if self.ttft is not None:
            return self.ttft
        return max(TTFT_FLOOR_S, self.prompt_tokens / PREFILL_FLOOR)

    @property
    def deadline_days(self) -> float:
        """Wall-clock days a tokens= run may take: days=, else 30 (fine-tuning) or 90."""
        if self.days is not None:
            return self.days
        return 90.0 if self.spec.pretraining else 30.0

    @property
    def hours_per_month(self) -> float:
        # A served model runs around the clock; a training server is busy part-time: the seeds
        # note most teams use under 30% of their cards (0.3 x 730 h).
        if self.hours is not None:
            return self.hours
        return 730.0 if self.is_serving else 219.0

    @property
    def serving_engine(self) -> Engine:
        """GGUF files run in llama.cpp; everything else is sized for vLLM unless engine= says."""
        if self.engine is not None:
            return self.engine
        return _default_engine(self.weight_quant)

    @property
    def weight_quant(self) -> str:
        """Storage format of the (frozen or served) weights."""
        if self.quant is not None:
            return self.quant
        return self.spec.default_quant or self.precision


# every field's value by name (whatever order __dict__ was filled in): Request.__hash__
_field_values = itemgetter(*Request.model_fields)


@cache
def _default_engine(quant: str) -> Engine:
    return "llama.cpp" if get_quant(quant).family == "gguf" else "vllm"


class Draft(NamedTuple):
    """A request as far as it has been said: model, method and options, each JSON-ready (a
    budget is `{"amount": 150000.0, "currency": "CNY"}`), so a thread stores it field by field and
    `engine.parse.build_request` completes it. Absent fields take the request's defaults."""

    values: Mapping[str, Any] = {}

    @property
    def model(self) -> str | None:
        return self.values.get("model")

    @property
    def method(self) -> str | None:
        return self.values.get("method")

    @property
    def options(self) -> dict[str, Any]:
        return {k: v for k, v in self.values.items() if k not in ("model", "method")}

    def __bool__(self) -> bool:
        return bool(self.values)

    def merged(self, change: Draft) -> Draft:
        """This draft with `change` applied; a None value in `change` removes the field."""
        values = {**self.values, **change.values}
        return Draft({k: v for k, v in values.items() if v is not None})

    def changes_from(self, previous: Draft) -> list[tuple[str, Any, Any]]:
        """(field, before, after) for every field of this draft that `previous` did not have."""
        return [(name, previous.values.get(name), value) for name, value in self.values.items()
                if previous.values.get(name) != value]
