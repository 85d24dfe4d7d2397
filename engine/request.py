"""What the user asked for: one validated request, shared by the CLI and the Slack bot.

Every field has a stated default; `None` means "let the planner choose" (card, count,
sharding) or "depends on the method" (checkpointing, quant).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Method = Literal["full-finetune", "lora", "qlora", "inference", "pretrain"]
Precision = Literal["bf16", "fp16", "fp32"]
Optimizer = Literal["adamw", "adamw-bf16", "adamw-8bit", "paged-adamw-8bit", "sgd"]
Checkpointing = Literal["none", "selective", "full"]
Offload = Literal["none", "optimizer", "all", "activations"]
Loss = Literal["full", "chunked"]
Engine = Literal["vllm", "transformers", "llama.cpp"]
Targets = Literal["attn", "all"]
KvDtype = Literal["fp16", "fp8"]
Currency = Literal["CNY", "USD"]

TRAINING_METHODS: tuple[Method, ...] = ("full-finetune", "lora", "qlora", "pretrain")
INFERENCE_QUANTS = (
    "bf16", "fp16", "fp8", "int8", "int4", "awq", "gptq", "nf4",
    "q2_k", "q3_k_m", "q4_0", "q4_k_m", "q5_k_m", "q6_k", "q8_0",
)


class Money(BaseModel):
    model_config = ConfigDict(frozen=True)

    amount: float = Field(gt=0)
    currency: Currency | None = None  # None: the answer's currency (CNY unless currency=)


class Request(BaseModel):
    """A sizing question. Bytes and tokens are plain integers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    method: Method
    gpu: str | None = None
    gpus: int | None = Field(None, ge=1, le=4096)
    seq: int | None = Field(None, ge=1, le=10_000_000)
    batch: int = Field(1, ge=1, le=4096)
    precision: Precision = "bf16"
    optimizer: Optimizer = "adamw"
    checkpointing: Checkpointing | None = None
    zero: int | None = Field(None, ge=0, le=3)
    offload: Offload | None = None
    tp: int | None = Field(None, ge=1, le=64)
    rank: int = Field(16, ge=1, le=1024)
    targets: Targets = "all"
    quant: str | None = None
    context: int = Field(4096, ge=1, le=10_000_000)
    users: int = Field(1, ge=1, le=100_000)
    kv: KvDtype = "fp16"
    tokens: int | None = Field(None, ge=1)
    headroom: float = Field(0.2, ge=0, le=1)
    # Recipe knobs that move memory more than the formula does (torchtune exposes all three).
    loss: Loss = "full"
    fused_step: bool = False
    compile: bool = False
    engine: Engine | None = None
    budget: Money | None = None
    currency: Currency | None = None
    region: str | None = None
    hours: float | None = Field(None, gt=0, le=744)
    months: int = Field(36, ge=1, le=120)
    power_price: float | None = Field(None, gt=0, le=100)
    goal: Literal["cost", "time"] = "cost"

    @property
    def is_training(self) -> bool:
        return self.method in TRAINING_METHODS

    @property
    def seq_len(self) -> int:
        # Training sequence length: 2048 for fine-tuning (torchtune's and most recipes'
        # max_seq_len default class), 4096 for pre-training (Llama 2's pre-training context).
        if self.seq is not None:
            return self.seq
        return 4096 if self.method == "pretrain" else 2048

    @property
    def checkpointing_mode(self) -> Checkpointing:
        # Fine-tuning recipes (torchtune, QLoRA's reference code) turn full activation
        # checkpointing on by default; large pre-training runs use selective recomputation
        # (Megatron-LM, Korthikanti et al. 2022); inference has none.
        if self.checkpointing is not None:
            return self.checkpointing
        if self.method == "pretrain":
            return "selective"
        return "full" if self.is_training else "none"

    @property
    def answer_currency(self) -> Currency:
        if self.currency is not None:
            return self.currency
        if self.budget is not None and self.budget.currency is not None:
            return self.budget.currency
        return "CNY"  # the seeds' market

    @property
    def hours_per_month(self) -> float:
        # A served model runs around the clock; a training server is busy part-time: the seeds
        # note most teams use under 30% of their cards (0.3 x 730 h).
        if self.hours is not None:
            return self.hours
        return 730.0 if self.method == "inference" else 219.0

    @property
    def serving_engine(self) -> Engine:
        """GGUF files run in llama.cpp; everything else is sized for vLLM unless engine= says."""
        if self.engine is not None:
            return self.engine
        from engine.quant import get_quant

        return "llama.cpp" if get_quant(self.weight_quant).family == "gguf" else "vllm"

    @property
    def weight_quant(self) -> str:
        """Storage format of the (frozen or served) weights."""
        if self.quant is not None:
            return self.quant
        if self.method == "qlora":
            return "nf4"
        return self.precision
