"""Model architectures: the config.json fields that size a model, and its tensor inventory.

Parameter counts are derived from the tensor inventory, never from ratios: the same
inventory drives GGUF per-tensor quantization, NF4 (which tensors are linear) and LoRA
targets, so a wrong shape shows up as a wrong total against the published count.
"""

from __future__ import annotations

from functools import cache
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

AttentionKind = Literal["mha", "gqa", "mla"]
MlpKind = Literal["gated", "plain"]
NormKind = Literal["rmsnorm", "layernorm"]

# Tensor roles. "linear" roles are 2-D matrices that quantizers and LoRA act on.
ATTN_ROLES = ("attn_q", "attn_k", "attn_v", "attn_output")
MLA_ROLES = ("attn_q_a", "attn_q_b", "attn_kv_a_mqa", "attn_kv_b", "attn_output")
MLP_ROLES = ("ffn_gate", "ffn_up", "ffn_down")
EXPERT_ROLES = ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps")
SHARED_EXPERT_ROLES = ("ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp")
LINEAR_ROLES = frozenset(
    ATTN_ROLES + MLA_ROLES + MLP_ROLES + EXPERT_ROLES + SHARED_EXPERT_ROLES + ("ffn_gate_inp",)
)


class Tensor(NamedTuple):
    """One stored tensor: its role (llama.cpp's GGUF names), layer (None outside the stack),
    element count, and for matrices the input and output widths (rows x cols)."""

    role: str
    layer: int | None
    elements: int
    d_in: int = 0
    d_out: int = 0


class ModelSpec(BaseModel):
    """The architecture fields of one model, as config.json states them, with provenance."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str = Field(description="catalog key, lower case, e.g. llama-3.1-8b")
    display: str = Field(description="human name, e.g. Llama 3.1 8B")
    hf_repo: str | None = None
    aliases: tuple[str, ...] = ()
    family: str = "llama"
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    intermediate: int = Field(ge=0, description="dense MLP width (0 when every layer is MoE)")
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    vocab: int = Field(gt=0)
    tied_embeddings: bool = False
    mlp: MlpKind = "gated"
    norm: NormKind = "rmsnorm"
    norms_per_layer: int = 2
    qk_norm: bool = False
    qkv_bias: bool = False
    attn_output_bias: bool = False
    mlp_bias: bool = False
    attention: AttentionKind = "gqa"
    max_context: int = Field(gt=0)
    # Sliding-window attention: `sliding_window` tokens on `sliding_layers` of the layers
    # (Mistral 7B v0.1: all 32; Gemma 2: every other layer; Gemma 3: 5 of every 6).
    sliding_window: int = 0
    sliding_layers: int = 0
    # Mixture of experts.
    experts: int = 0
    active_experts: int = 0
    shared_experts: int = 0
    moe_intermediate: int = 0
    shared_intermediate: int = 0
    dense_layers: int = Field(
        0, description="leading dense layers (DeepSeek first_k_dense_replace)"
    )
    router_bias: bool = False
    shared_expert_gate: bool = False
    # Multi-head latent attention (DeepSeek-V2/V3).
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # Checkpoint-only tensors: stored in the published files and counted in the Hub's
    # safetensors total, but not weights the model computes with, so they stay out of the
    # tensor inventory (GGUF converters drop them) and are added by checkpoint_extras().
    # Llama 2 *-hf conversions store model.layers.N.self_attn.rotary_emb.inv_freq.
    rope_inv_freq_stored: bool = False
    # FP8 block-quantized checkpoints: quantization_config.weight_block_size (DeepSeek-V3: 128).
    fp8_block: int = Field(0, ge=0)
    # Parameters outside the decoder stack that the checkpoint stores (vision tower,
    # multi-token-prediction module), counted in totals but not in per-token compute.
    extra_params: int = 0
    extra_params_note: str = ""
    published_params: int | None = None
    params_source: str = ""
    source: str = Field(description="URL of the config.json the fields come from")
    retrieved: str = Field(description="date the source was read, YYYY-MM-DD")
    template: bool = Field(False, description="shape from a family template, not a real config")

    def __hash__(self) -> int:
        # specs key many caches; hashing a few fields (equal specs agree on them) is far
        # cheaper than pydantic's hash of all fifty
        return hash((self.name, self.layers, self.hidden, self.intermediate, self.experts))

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def q_dim(self) -> int:
        if self.attention == "mla":
            return self.heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def params(self) -> int:
        return total_params(self)

    @property
    def active_params(self) -> int:
        return active_params(self)


def _norm(spec: ModelSpec, width: int) -> int:
    # RMSNorm stores a weight; LayerNorm a weight and a bias.
    return width * (2 if spec.norm == "layernorm" else 1)


def _linear(role: str, layer: int | None, d_in: int, d_out: int, bias: bool) -> list[Tensor]:
    out = [Tensor(role, layer, d_in * d_out, d_in, d_out)]
    if bias:
        out.append(Tensor(role + "_bias", layer, d_out))
    return out


def _attention(spec: ModelSpec, i: int) -> list[Tensor]:
    h = spec.hidden
    if spec.attention == "mla":
        # DeepSeek-V2/V3 MLA: low-rank query and a compressed joint KV latent plus a shared
        # rope key (modeling_deepseek.py DeepseekV3Attention).
        qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim
        out: list[Tensor] = []
        if spec.q_lora_rank:
            out += _linear("attn_q_a", i, h, spec.q_lora_rank, False)
            out.append(Tensor("attn_q_a_norm", i, spec.q_lora_rank))
            out += _linear("attn_q_b", i, spec.q_lora_rank, spec.heads * qk, False)
        else:
            out += _linear("attn_q", i, h, spec.heads * qk, False)
        out += _linear("attn_kv_a_mqa", i, h, spec.kv_lora_rank + spec.qk_rope_head_dim, False)
        out.append(Tensor("attn_kv_a_norm", i, spec.kv_lora_rank))
        out += _linear(
            "attn_kv_b", i, spec.kv_lora_rank,
            spec.heads * (spec.qk_nope_head_dim + spec.v_head_dim), False,
        )
        out += _linear("attn_output", i, spec.heads * spec.v_head_dim, h, spec.attn_output_bias)
        return out
    # q, k, v and output projections; GQA shares each k/v head across heads/kv_heads queries.
    out = _linear("attn_q", i, h, spec.q_dim, spec.qkv_bias)
    out += _linear("attn_k", i, h, spec.kv_dim, spec.qkv_bias)
    out += _linear("attn_v", i, h, spec.kv_dim, spec.qkv_bias)
    out += _linear("attn_output", i, spec.q_dim, h, spec.attn_output_bias)
    if spec.qk_norm:  # Qwen3, Gemma 3: RMSNorm over head_dim on q and k
        out += [Tensor("attn_q_norm", i, spec.head_dim), Tensor("attn_k_norm", i, spec.head_dim)]
    return out


def _mlp(spec: ModelSpec, i: int, width: int, roles: tuple[str, str, str]) -> list[Tensor]:
    # Gated MLPs (SwiGLU/GeGLU) have gate, up and down matrices; plain ones up and down.
    gate, up, down = roles
    h = spec.hidden
    out: list[Tensor] = []
    if spec.mlp == "gated":
        out += _linear(gate, i, h, width, spec.mlp_bias)
    out += _linear(up, i, h, width, spec.mlp_bias)
    out += _linear(down, i, width, h, spec.mlp_bias)
    return out


def _experts(spec: ModelSpec, i: int) -> list[Tensor]:
    h, e, w = spec.hidden, spec.experts, spec.moe_intermediate
    out = _linear("ffn_gate_inp", i, h, e, False)  # router
    if spec.router_bias:  # DeepSeek-V3 e_score_correction_bias
        out.append(Tensor("ffn_gate_inp_bias", i, e))
    mats = 3 if spec.mlp == "gated" else 2
    roles = EXPERT_ROLES if mats == 3 else EXPERT_ROLES[1:]
    for role in roles:
        d_in, d_out = (w, h) if role == "ffn_down_exps" else (h, w)
        out.append(Tensor(role, i, e * d_in * d_out, d_in, d_out))
    if spec.shared_experts:
        width = spec.shared_intermediate or spec.moe_intermediate * spec.shared_experts
        out += _mlp(spec, i, width, SHARED_EXPERT_ROLES)
        if spec.shared_expert_gate:  # Qwen2-MoE sigmoid gate on the shared expert
            out += _linear("ffn_gate_shexp_gate", i, h, 1, False)
    return out


@cache
def tensors(spec: ModelSpec) -> tuple[Tensor, ...]:
    """Every stored tensor of the checkpoint, in GGUF role names."""
    h, v = spec.hidden, spec.vocab
    out: list[Tensor] = [Tensor("token_embd", None, v * h, h, v)]

    def block(moe: bool) -> list[Tensor]:
        # one block's tensors (layer 0); every block of its kind has the same shapes
        one = [Tensor("attn_norm", 0, _norm(spec, h)), Tensor("ffn_norm", 0, _norm(spec, h))]
        # Gemma 2/3 add post-attention and post-MLP norms: 4 per layer.
        one += [Tensor("post_norm", 0, _norm(spec, h))] * (spec.norms_per_layer - 2)
        one += _attention(spec, 0)
        return one + (_experts(spec, 0) if moe else _mlp(spec, 0, spec.intermediate, MLP_ROLES))

    dense, sparse = block(False), (block(True) if spec.is_moe else [])
    for i in range(spec.layers):
        shapes = sparse if spec.is_moe and i >= spec.dense_layers else dense
        out += [Tensor(t.role, i, t.elements, t.d_in, t.d_out) for t in shapes]
    out.append(Tensor("output_norm", None, _norm(spec, h)))
    if not spec.tied_embeddings:
        out.append(Tensor("output", None, v * h, h, v))
    return tuple(out)


def _rope_inv_freq(spec: ModelSpec) -> int:
    # Llama 2 *-hf conversions saved each layer's rotary_emb.inv_freq buffer, head_dim/2
    # floats; the Hub total counts them (Llama-2-7b-hf: 6,738,417,664 = 6,738,415,616 + 32 x 64).
    return spec.layers * (spec.head_dim // 2) if spec.rope_inv_freq_stored else 0


def _block_scales(spec: ModelSpec) -> int:
    # DeepSeek-V3 ships FP8 with weight_block_size [128, 128]: every attention, MLP and expert
    # matrix has a float32 weight_scale_inv of ceil(out/128) x ceil(in/128); the router and the
    # embeddings stay BF16 (model.safetensors.index.json). The Hub's F32 bucket, 41,555,600, is
    # these stack scales, the MTP layer's (in extra_params) and the 59 x 256 router biases.
    if not spec.fp8_block:
        return 0
    b = spec.fp8_block
    total = 0
    for t in tensors(spec):
        if t.role in LINEAR_ROLES and t.role != "ffn_gate_inp":
            stacked = t.elements // (t.d_in * t.d_out)  # routed experts share one tensor
            total += stacked * -(-t.d_in // b) * -(-t.d_out // b)
    return total


@cache
def checkpoint_extras(spec: ModelSpec) -> int:
    """Elements the published checkpoint stores besides weights and extra_params (rotary
    buffers, FP8 block scales): counted in the Hub total, not in compute or GGUF files."""
    return _rope_inv_freq(spec) + _block_scales(spec)


@cache
def total_params(spec: ModelSpec) -> int:
    return sum(t.elements for t in tensors(spec)) + spec.extra_params + checkpoint_extras(spec)


@cache
def active_params(spec: ModelSpec) -> int:
    """Parameters one token touches: routed experts count top_k of n (shared always)."""
    if not spec.is_moe:
        return total_params(spec) - spec.extra_params - checkpoint_extras(spec)
    total = 0
    for t in tensors(spec):
        if t.role in EXPERT_ROLES:
            total += t.elements * spec.active_experts // spec.experts
        else:
            total += t.elements
    return total


@cache
def layer_params(spec: ModelSpec) -> int:
    """Largest transformer block's parameters: what ZeRO-3/FSDP gathers at once."""
    per_layer: dict[int, int] = {}
    for t in tensors(spec):
        if t.layer is not None:
            per_layer[t.layer] = per_layer.get(t.layer, 0) + t.elements
    return max(per_layer.values())
