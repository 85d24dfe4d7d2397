"""The answer document: what `--json` prints and what the bot renders.

Field names are a public contract (README "JSON output"); add fields, never rename them.
Memory values are bytes per GPU.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Memory(_Doc):
    weights: int
    gradients: int
    optimizer: int
    activations: int
    kv_cache: int
    overhead: int
    reused: int = Field(0, description="gradient and activation bytes never live at once")
    total: int = Field(description="the six components above minus reused: the peak")
    headroom: int = Field(description="margin kept free: total x headroom fraction")
    capacity: int = Field(description="card memory as the driver reports it")
    fits: bool = Field(description="total + headroom <= capacity")
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


class JobCost(_Doc):
    hours: float | None = Field(None, description="wall-clock hours of the tokens= job")
    rent: float | None = None
    buy_share: float | None = Field(None, description="owning cost attributable to the job")


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
    mode: str | None = Field(None, description="buy or rent: cheaper over `months`")
    horizon_total: float | None = None
    within_budget: bool | None = None
    price_sources: list[str] = []
    stale: list[str] = []
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


class Plan(_Doc):
    gpu: str
    gpu_display: str
    gpus: int
    method: str
    strategy: str
    settings: Settings
    memory: Memory
    speed: Speed = Speed()
    cost: Cost | None = None
    notes: list[str] = []


class ModelInfo(_Doc):
    name: str
    display: str
    params: int
    active_params: int
    source: str
    retrieved: str
    template: bool = False


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


class Answer(_Doc):
    query: str
    pinned: bool = Field(False, description="gpu= and gpus= given: plans[0] is that configuration")
    model: ModelInfo
    plans: list[Plan]
    recommendation: str = ""
    alternatives: list[Alternative] = []
    advice: list[str] = []
    trial: Trial | None = None
    assumptions: list[str]
    warnings: list[str] = []
