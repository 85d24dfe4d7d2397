"""The answer document: what `--json` prints and what the bot renders.

Field names are a public contract (docs/JSON.md); add fields, never rename them.
Memory values are bytes per GPU.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable
from functools import cache
from typing import Any, Literal, NamedTuple, Self, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field


def _takes_float(annotation: Any) -> bool:
    if annotation is float:
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        return float in get_args(annotation)
    return False


_MISSING = object()


class _Layout(NamedTuple):
    template: dict[str, Any]  # every field in declaration order: its default, or _MISSING
    names: frozenset[str]
    refill: tuple[tuple[str, Callable[[], Any]], ...]  # mutable defaults and factories: fresh
    required: frozenset[str]
    floats: frozenset[str]


def _fresh(value: Any) -> Callable[[], Any]:
    return lambda: copy.copy(value)  # mutable defaults are copied, as pydantic copies them


@cache
def _layout(cls: type[BaseModel]) -> _Layout:
    # what model_construct works out on every call, worked out once per class
    assert not cls.__pydantic_post_init__ and not cls.__private_attributes__, cls
    fields = cls.model_fields
    template: dict[str, Any] = {}
    refill: list[tuple[str, Callable[[], Any]]] = []
    for name, f in fields.items():
        if f.default_factory is not None:
            template[name] = _MISSING
            refill.append((name, f.default_factory))  # type: ignore[arg-type]
        elif f.is_required():
            template[name] = _MISSING
        else:
            template[name] = f.default
            if isinstance(f.default, list | dict | set):
                refill.append((name, _fresh(f.default)))
    return _Layout(template=template, names=frozenset(fields), refill=tuple(refill),
                   required=frozenset(n for n, f in fields.items() if f.is_required()),
                   floats=frozenset(n for n, f in fields.items() if _takes_float(f.annotation)))


class _Doc(BaseModel):
    # Schemas are built only when one is needed (--json, tests): the text answer never pays for
    # them (issue 11: the CLI's start-up time).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    @classmethod
    def build(cls, **fields: Any) -> Self:
        """A document from values the engine computed, without validation: whole numbers for
        float fields become floats (as validation would make them) and defaults are filled.
        tests/engine/test_schema.py checks built documents against their validated twins."""
        layout = _layout(cls)
        if not fields.keys() <= layout.names:
            raise TypeError(f"{cls.__name__} has no field {sorted(fields.keys() - layout.names)}")
        if not layout.required <= fields.keys():
            raise TypeError(f"{cls.__name__} needs {sorted(layout.required - fields.keys())}")
        values = layout.template.copy()  # keeps the declaration order validation would give
        values.update(fields)
        for name in layout.floats & fields.keys():
            if type(fields[name]) is int:
                values[name] = float(fields[name])
        for name, make in layout.refill:
            if name not in fields:
                values[name] = make()
        doc = cls.__new__(cls)
        object.__setattr__(doc, "__dict__", values)  # what model_construct sets, and no more
        object.__setattr__(doc, "__pydantic_fields_set__", set(fields))
        object.__setattr__(doc, "__pydantic_extra__", None)
        object.__setattr__(doc, "__pydantic_private__", None)
        return doc


class Memory(_Doc):
    weights: int
    gradients: int
    optimizer: int
    activations: int
    kv_cache: int
    overhead: int
    # blocks PyTorch's caching allocator keeps reserved beyond the live tensors, up to what the
    # card has free: a reserved peak and nvidia-smi see them on top of total; released when an
    # allocation would fail, so not in total and not in the verdict
    reserve: int = Field(0, description="allocator cache beyond total on this card (shown by "
                                        "max_memory_reserved and nvidia-smi, not needed to fit)")
    reused: int = Field(0, description="gradient and activation bytes never live at once")
    total: int = Field(description="the six components above minus reused: the peak")
    headroom: int = Field(description="margin kept free: total x headroom fraction")
    capacity: int = Field(description="card memory as the driver reports it")
    usable: int = Field(0, description="what the engine lets the model use (vLLM reserves "
                                       "gpu_memory_utilization 0.9 of the card)")
    fits: bool = Field(description="verdict is fits: total + headroom within the card")
    verdict: str = Field("fits", description="fits | tight (runs, with less than headroom "
                                             "free) | no (does not run)")
    host_offload: int = Field(0, description="bytes moved to host RAM by offload=")
    detail: dict[str, str] = Field(default_factory=dict, description="formula per component")


class Speed(_Doc):
    decode_tokens_per_s: float | None = Field(None, description="per sequence, at users=")
    decode_tokens_per_s_aggregate: float | None = Field(None, description="all users together")
    prefill_tokens_per_s: float | None = None
    train_tokens_per_s: float | None = Field(None, description="whole plan, all GPUs")
    train_gpu_hours: float | None = Field(None, description="for tokens= (null without it)")
    train_hours: float | None = Field(None, description="wall-clock hours for tokens=")
    mfu: float | None = None
    detail: str = ""


class BuyCost(_Doc):
    capex: float | None
    monthly_depreciation: float | None
    monthly_power: float
    monthly_ops: float | None
    monthly_total: float | None


class RentCost(_Doc):
    per_gpu_hour: float | None
    monthly: float | None
    kind: str | None = Field(None, description="the price kind the plan's size uses: "
                                               "rent_card_hour (a listing, up to one server) | "
                                               "rent_server_month (dedicated servers) | "
                                               "rent_cluster_hour (reserved cluster)")
    hourly: bool | None = Field(None, description="billed per hour of use (else by the month)")
    monthly_low: float | None = Field(None, description="when listings and dedicated servers "
                                                        "differ more than 2x: the month at the "
                                                        "listing's rate")
    monthly_high: float | None = Field(None, description="... and at the dedicated rate")
    min_hours: float | None = Field(None, description="shortest term a job is billed")
    servers: int | None = None
    where: str = Field("", description="at cluster scale: who rents such capacity")


class JobCost(_Doc):
    hours: float | None = Field(None, description="wall-clock hours of the job")
    rent: float | None = None
    buy_share: float | None = Field(None, description="owning cost attributable to the job")
    tokens: int | None = Field(None, description="tokens the job trains")
    assumed_tokens: bool = Field(False, description="true when tokens= was not given: one "
                                                    "assumed epoch (fine-tune) or 20 tokens "
                                                    "per parameter (pre-training)")


class Cost(_Doc):
    """Amounts in `currency`; null where the catalog has no price for that option."""

    currency: str
    hours_per_month: float
    months: int
    buy: BuyCost
    rent: RentCost
    break_even_hours_per_month: float | None
    seeds_claim_hours_per_month: float = Field(400, description="the seeds' fixed threshold")
    job: JobCost
    mode: str | None = Field(None, description="buy or rent: cheaper over `months`, among the "
                                              "ways the market allows (and the budget, if any); "
                                              "owned: cards the team has (query.owned), priced "
                                              "at running cost only (buy.monthly_total = "
                                              "power + operations; no capex, no rent)")
    horizon_total: float | None = None
    within_budget: bool | None = None
    budget: float | None = Field(None, description="the budget in `currency`, if one was given")
    rent_horizon_total: float | None = Field(
        None, description="renting for the job (tokens=) or `months`: what a budget is held to")
    buy_allowed: bool = Field(True, description="the card can be bought in the market")
    rent_allowed: bool = Field(True, description="the card can be rented in the market")
    price_sources: list[str] = []
    stale: list[str] = []
    stale_purchases: list[str] = Field(default_factory=list, description=(
        "the purchase prices in `stale` (over 12 months old): a buy figure to re-quote"))
    notes: list[str] = []


class Settings(_Doc):
    """The knobs this plan resolved to, so a reader can rerun it exactly."""

    tp: int
    dp: int
    pp: int
    zero: int | None
    offload: str
    checkpointing: str
    precision: str
    optimizer: str | None
    quant: str
    seq: int | None
    batch: int | None
    context: int | None
    users: int | None
    replicas: int = Field(1, description="independent copies of the model serving `users`")
    engine: str | None = Field(None, description="serving engine the plan is sized for")
    framework: str | None = Field(None, description="training framework the plan is sized for "
                                  "(framework=, else llama-factory for data-parallel plans and "
                                  "megatron for the rest; engine/frameworks.py)")
    ep: int = Field(1, description="MoE: ranks the routed experts are sharded over whole "
                                   "(expert parallel); 1 = none")
    dp_attention: int = Field(1, description="serving MoE: attention data-parallel groups, each "
                                             "of `tp` GPUs with its own users' KV cache (SGLang "
                                             "--enable-dp-attention --dp N; vLLM "
                                             "--data-parallel-size N); 1 = none")
    prompt: int | None = Field(None, description="serving: prompt tokens per request")
    output: int | None = Field(None, description="serving: answer tokens per request")
    release: str | None = Field(None, description="serving: Hugging Face repo of the official "
                                                  "release served (null: converted by the user)")
    kernel: str | None = Field(None, description="serving: how the card runs the weights: "
                                                 "bf16 | fp8-w8a8 | w8a16-marlin | "
                                                 "int8-w8a8-ascend | mxfp4-native | w4a16-mxfp4 "
                                                 "| bf16-upcast | w4a16 | w4a16-fp16 | "
                                                 "w4a8-ascend | bnb | bnb-fp16 | as-fp16 | "
                                                 "as-fp32 | gguf (engine/formats.py)")
    compute: str | None = Field(None, description="serving: the tensor-core format the matrix "
                                                  "multiplies run in: bf16 | fp8 | int8 | fp32")
    fused_step: bool = Field(False, description="optimizer step fused into backward")
    cp: int = Field(1, description="training: context-parallel ranks that split each sequence "
                                   "(ring attention); 1 = none")
    loss: str = Field("full", description="full | chunked | fused (linear) cross-entropy")


class Access(_Doc):
    """Whether the asker can get this card in their market (engine/data/availability.toml)."""

    market: str
    status: str = Field(description="new | secondary | rental | grey | unavailable | unknown")
    can_buy: bool
    can_rent: bool
    note: str = ""
    source: str = ""
    as_of: str = ""


class Service(_Doc):
    """The service level a serving plan gives, or the deadline a training run keeps."""

    meets: bool = Field(description="meets every floor, ceiling and deadline below")
    decode_floor: float | None = Field(None, description="tokens/s each user must get")
    decode_per_user: float | None = None
    ttft_ceiling_s: float | None = Field(None, description="seconds to the first token allowed")
    ttft_s: float | None = Field(None, description="seconds to the first token of a prompt of "
                                                  "`prompt` tokens among `users` (vLLM: its "
                                                  "chunks beside the others' decodes)")
    users_held: int | None = Field(None, description="users at `context` tokens the KV cache "
                                                     "holds with 10% to spare, all replicas")
    context: int | None = Field(None, description="serving: tokens per sequence (prompt + "
                                                  "answer) the KV cache is sized for")
    prompt: int | None = Field(None, description="serving: prompt tokens `ttft_s` is for")
    deadline_days: float | None = Field(None, description="for tokens=: days the run may take")
    days: float | None = Field(None, description="for tokens=: wall-clock days it takes")
    misses: list[str] = Field(default_factory=list, description="what falls short, in words")



class BomLine(_Doc):
    """One line of a plan's bill of materials: what, how much, and the rule behind it."""

    item: str = Field(description="servers | gpus | cpu | ram | nvme | nic | switch | power | "
                                  "rack | cooling")
    label: str = Field(description="the item in words")
    per_server: float | None = Field(None, description="quantity in one server, in `unit`")
    total: float | None = Field(None, description="quantity for the whole plan, in `unit`")
    unit: str = ""
    text: str = Field(description="the line as the answer says it, with its arithmetic")
    rule: str = Field(description="the rule or source the quantity follows")
    share: float | None = Field(None, description="share of the plan's purchase price, where the "
                                                  "catalog knows it (0-1)")
    amount: float | None = Field(None, description="that share in the cost's currency")


class Traffic(_Doc):
    """Bytes a plan moves between servers, computed from its sharding."""

    kind: str = Field(description="data-parallel | fsdp | pipeline | context | expert | "
                                  "serving-pipeline")
    bytes_per_step: float = Field(description="bytes each GPU sends across servers per step")
    seconds_per_step: float | None = Field(None, description="the step the traffic must hide in")
    gbps_per_server: float | None = Field(None, description="Gb/s each server's NICs must carry "
                                                            "for the traffic to keep pace")
    text: str


class Bom(_Doc):
    """The whole server, not just the cards (issue 25): every line with its rule."""

    servers: int
    gpus_per_server: int
    lines: list[BomLine]
    traffic: list[Traffic] = Field(default_factory=list,
                                   description="inter-server traffic that sizes the NICs")
    currency: str | None = None
    notes: list[str] = Field(default_factory=list)


class ApiOffer(_Doc):
    """A hosted API for the same or a comparable model, priced for the same traffic."""

    provider: str
    api_model: str
    match: str = Field(description="same | comparable | similar: how it relates to the model asked")
    basis: str = Field(description="why it is the same or comparable, in words")
    currency: str = Field(description="the currency the provider quotes")
    input_per_m: float
    output_per_m: float
    cached_per_m: float = 0.0
    market: str = Field(description="china | global: where the provider bills")
    monthly: float | None = Field(None, description="the API's cost for the traffic a month, in "
                                                    "the answer's currency")
    per_m_tokens: float | None = Field(None, description="blended per million tokens at the "
                                                         "traffic's prompt/answer mix, answer's "
                                                         "currency")
    break_even_requests_per_day: float | None = Field(
        None, description="traffic at which the plan's monthly cost equals this API's")
    source: str
    quoted: str
    retrieved: str
    stale: bool = False


class ApiComparison(_Doc):
    """Serving: the plan beside the hosted APIs for the same traffic (issue 25)."""

    currency: str
    mode: str | None = Field(None, description="buy | rent: how the plan's monthly cost is counted")
    monthly: float | None = Field(None, description="the plan's cost a month")
    requests_per_day: float = Field(description="the traffic compared: given, or the plan's "
                                                "capacity at the assumed utilization")
    tokens_per_month: float
    prompt_tokens: int | None = Field(None, description="tokens in, per request compared")
    answer_tokens: int | None = Field(None, description="tokens out, per request compared")
    users: int | None = Field(None, description="concurrent users the compared plan holds")
    capacity_requests_per_day: float | None = Field(
        None, description="requests a day the plan serves at the service level, at its peak factor")
    utilization: float | None = Field(None, description="average load over the plan's capacity")
    per_m_tokens: float | None = Field(None, description="the plan's cost per million tokens "
                                                         "at that traffic")
    offers: list[ApiOffer] = Field(default_factory=list)
    verdict: str = ""
    notes: list[str] = Field(default_factory=list)


class TrafficDoc(_Doc):
    """requests= turned into concurrency and tokens by Little's law (engine/traffic.py)."""

    requests_per_day: float
    prompt_tokens: int
    answer_tokens: int
    peak_factor: float
    seconds_per_request: float = Field(description="W: the longest a request may take at the "
                                                   "service level")
    peak_requests_per_s: float
    mean_in_flight: float = Field(description="Little's law L = rate x W at the peak")
    users: int = Field(description="concurrency sized for: the 99th percentile in flight")
    tokens_per_month: float
    text: str
    assumed: list[str] = Field(default_factory=list)


class Launch(_Doc):
    """How to run the plan: commands and config files for one engine at a stated version."""

    engine: str = Field(description="vllm | sglang | llama.cpp | llamafactory")
    version: str = Field(description="the engine version the flags were checked against")
    commands: list[str]
    files: dict[str, str] = Field(default_factory=dict, description="file name -> contents")
    notes: list[str] = Field(default_factory=list)


class CapacityRow(_Doc):
    context: int
    users: int = Field(description="most concurrent users whose forward answer meets the service "
                                   "level (0: not even one)")
    decode_per_user: float | None = None
    ttft_s: float | None = None
    limit: str = Field(description="weights | kv-memory | bandwidth | compute | communication |"
                                   " prefill | cap: "
                                   "what stops one more user (weights: not even one fits)")
    limit_text: str = ""


class ModelFit(_Doc):
    """The largest catalog model a method runs on the box (serving: at the service level)."""

    method: str
    model: str | None
    display: str | None = None
    params: int | None = None
    verdict: str | None = None
    tokens_per_s: float | None = Field(None, description="training: the whole box; serving: per "
                                                         "user")
    recipe: str = Field("", description="training: the memory-saving recipe that makes it run "
                                         "(empty: it runs as asked)")
    recipe_update: dict[str, Any] = Field(default_factory=dict, description="the request fields "
                                          "that recipe sets")
    recipe_costs: str = Field("", description="what that recipe costs in speed, in words")
    host_ram_gb: float = Field(0.0, description="host RAM per GPU that recipe offloads to")
    next_model: str | None = Field(None, description="the next larger catalog model, which does "
                                                     "not run (or misses the service level)")
    limit: str = Field("", description="why next_model does not: memory per GPU or the service "
                                       "level, from its forward answer")


class Recipe(_Doc):
    """A training recipe on the box and how fast it runs."""

    change: str
    settings: Settings
    tokens_per_s: float
    verdict: str


class Capacity(_Doc):
    """What a box you own can serve or train (issue 25: the reverse question)."""

    gpu: str
    gpus: int
    decode_floor: float | None = None
    ttft_rule: str = ""
    rows: list[CapacityRow] = Field(default_factory=list)
    users: int | None = Field(None, description="users= given: the longest context they can share")
    longest_context: int | None = None
    largest: list[ModelFit] = Field(default_factory=list, description="training: largest models")
    fastest: Recipe | None = Field(None, description="training: the fastest recipe that fits")
    fastest_limit: str = Field("", description="training: what stops a faster recipe")
    recipes: list[Recipe] = Field(default_factory=list)
    text: str = ""

class Plan(_Doc):
    gpu: str
    gpu_display: str
    gpus: int
    method: str
    strategy: str
    settings: Settings
    memory: Memory
    speed: Speed = Field(default_factory=Speed)
    cost: Cost | None = Field(None, description="null when the plan does not run")
    notes: list[str] = []
    verdict: str = Field("fits", description="fits | tight | no: the memory verdict")
    access: Access | None = None
    service: Service | None = None
    published: str = Field("", description="a published run of this model size, method and "
                                           "card count: who ran it, at what memory, the source")
    change: str = Field("", description="what differs from the request (a recipe or count the "
                                        "budget search or the same-card search chose)")
    bom: Bom | None = Field(None, description="the whole server: null when the plan does not run")
    api: ApiComparison | None = Field(None, description="serving: hosted APIs for the same traffic")
    launch: list[Launch] = Field(default_factory=list, description="commands that run the plan, "
                                                                   "the sized engine first")


class ModelInfo(_Doc):
    name: str
    display: str
    params: int
    active_params: int
    source: str
    retrieved: str
    template: bool = False
    mtp_params: int = Field(0, description="multi-token-prediction module the checkpoint also "
                                           "stores, not loaded for serving (not in params)")
    native_quant: str = Field("bf16", description="format of the released weights")


class MarketInfo(_Doc):
    market: str = Field(description="china | global: whose cards, prices and rentals")
    reason: str
    excluded: list[str] = Field(default_factory=list,
                                description="cards left out: not obtainable in this market")


class Alternative(_Doc):
    """A change that makes the request fit (or fit the budget), with what it costs."""

    change: str
    plan: Plan


class Trial(_Doc):
    """The seeds' step 5: rent the top plan for one real epoch before buying."""

    gpu: str
    gpus: int
    epoch_tokens: int
    hours: float
    rent: float | None
    currency: str
    note: str


class Query(_Doc):
    """The question as typed and as read (engine/reader.py): a misreading is seen at once."""

    text: str
    read: list[str] = Field([], description="the slots read, in order: model, method, cards, ...")
    skipped: list[str] = Field([], description="words the answer did not need")
    question: Literal["fits", "fewest", "capacity"] | None = Field(
        None, description="does it fit / how many cards / how many users the cards serve")
    notes: list[str] = Field([], description="what the reading assumed")


class Answer(_Doc):
    query: Query
    pinned: bool = Field(False, description="gpu= and gpus= given: plans[0] is that configuration")
    owned: bool = Field(False, description="the team has the gpu= cards (owned=true, 我们有/we "
                                           "have): plans on them cost.mode owned, running cost only")
    model: ModelInfo
    method: str = Field("", description="the method sized (after the reader's defaults): named "
                                        "even when no plan runs")
    market: MarketInfo | None = None
    plans: list[Plan]
    recommendation: str = ""
    alternatives: list[Alternative] = []
    to_buy: list[Alternative] = Field(default_factory=list, description=(
        "the recommendation rents and budget= is given without mode=: the purchases the budget "
        "covers up front, cheapest per token first"))
    advice: list[str] = []
    trial: Trial | None = None
    assumptions: list[str]
    warnings: list[str] = []
    traffic: TrafficDoc | None = Field(None, description="requests= as concurrency and tokens")
    capacity: Capacity | None = Field(None, description="gpu= and gpus= given: what the box can "
                                                        "serve or train")
