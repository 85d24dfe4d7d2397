"""Model architectures: the config.json fields that size a model, and its tensor inventory.

Parameter counts are derived from the tensor inventory, never from ratios: the same
inventory drives GGUF per-tensor quantization, NF4 (which tensors are linear) and LoRA
targets, so a wrong shape shows up as a wrong total against the published count.

Three totals, because a release ships more than serving loads:
- `params` (total_params): the weights a server loads by default, the figure answers report:
  the decoder stack (tensors()) plus any vision tower (vision_params; images need it, so it is
  loaded and counted, though a text-only token never runs it: active_params leaves it out).
- `mtp_params`: multi-token-prediction modules (DeepSeek-V3/R1, GLM-4.5). They ship in the
  checkpoint but only speculative decoding loads them (vLLM --speculative-config, SGLang
  EAGLE/NEXTN), so they are reported apart: DeepSeek-V3 is 671B, plus a 14B MTP module.
- `checkpoint_params`: what the Hub's safetensors total counts: params + mtp_params +
  checkpoint_extras (FP8 block scales, stored rotary buffers). Catalog rows are tested
  against this figure.
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
# MiniMax-M1 lightning (linear) attention: fused q/k/v, a sigmoid output gate, the output.
LINEAR_ATTN_ROLES = ("lin_attn_qkv", "lin_attn_gate", "lin_attn_output")
# DeepSeek-V3.2 lightning indexer: the query (from the q latent) and key projections.
INDEXER_ROLES = ("indexer_q", "indexer_k")
LINEAR_ROLES = frozenset(
    ATTN_ROLES + MLA_ROLES + MLP_ROLES + EXPERT_ROLES + SHARED_EXPERT_ROLES + LINEAR_ATTN_ROLES
    + INDEXER_ROLES + ("ffn_gate_inp",)
)


class Tensor(NamedTuple):
    """One stored tensor: its role (llama.cpp's GGUF names), layer (None outside the stack),
    element count, and for matrices the input and output widths (rows x cols)."""

    role: str
    layer: int | None
    elements: int
    d_in: int = 0
    d_out: int = 0


ReleaseQuant = Literal["bf16", "fp8", "mxfp4", "int4", "awq", "gptq"]


class Release(BaseModel):
    """One official weight release of a model: its format, where it is published, and the layout
    details that move its size (which tensors stay 16-bit, the FP8 scale granularity)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    quant: ReleaseQuant = Field(description="a name from engine.quant.QUANTS")
    repo: str = Field(description="Hugging Face repo id of the release")
    source: str = Field(description="where the format is stated (model card, config.json)")
    # FP8: quantization_config.weight_block_size (128 = one fp32 scale per 128 x 128 block);
    # 0 = one scale per output row (fbgemm_fp8, llm-compressor FP8_DYNAMIC).
    fp8_block: int = Field(0, ge=0)
    # Parts the release leaves in bf16 beyond embeddings, head, norms and router: "attention"
    # (every attention projection) and "edge_layers" (the first and last blocks): Meta's
    # Llama 3.1 405B FP8 quantizes only the FFNs of the inner 124 blocks.
    bf16_parts: tuple[Literal["attention", "edge_layers"], ...] = ()


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
    # MiniMax-M2 qk_norm_type "per_layer": one RMSNorm over all query heads (heads x head_dim)
    # and one over all key heads, instead of Qwen3's per-head head_dim norm.
    qk_norm_full: bool = False
    # gpt-oss attention sinks: one learned logit per query head per layer (self_attn.sinks).
    attention_sinks: bool = False
    qkv_bias: bool = False
    attn_output_bias: bool = False
    mlp_bias: bool = False
    attention: AttentionKind = "gqa"
    max_context: int = Field(gt=0)
    # Sliding-window attention: `sliding_window` tokens on `sliding_layers` of the layers
    # (Mistral 7B v0.1: all 32; Gemma 2 and gpt-oss: every other layer; Gemma 3: 5 of every 6).
    # Llama 4's chunked local attention is stored here too: a layer with attention_chunk_size C
    # attends only within its C-token chunk, so its cache never holds more than C tokens.
    sliding_window: int = 0
    sliding_layers: int = 0
    # Hybrid linear attention (MiniMax-M1 attn_type_list: 7 lightning layers, then 1 softmax):
    # layer i is softmax attention when (i + 1) % period == 0, lightning attention otherwise.
    # A lightning layer keeps no per-token KV, only a constant heads x head_dim x head_dim state
    # per sequence (memory.kv_cache). 0 = every layer is softmax attention.
    linear_attention_period: int = Field(0, ge=0)
    # Mixture of experts.
    experts: int = 0
    active_experts: int = 0
    shared_experts: int = 0
    moe_intermediate: int = 0
    shared_intermediate: int = 0
    dense_layers: int = Field(
        0, description="leading dense layers (DeepSeek first_k_dense_replace)"
    )
    # Llama 4 interleave_moe_layer_step: after dense_layers, layer i is MoE when
    # (i + 1) % moe_every == 0 (Maverick: 2, the odd layers; the others are dense MLPs).
    moe_every: int = Field(1, ge=1)
    # Router bias: DeepSeek-V3's e_score_correction_bias, gpt-oss's router Linear bias (E each).
    router_bias: bool = False
    shared_expert_gate: bool = False
    # Multi-head latent attention (DeepSeek-V2/V3).
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # DeepSeek-V3.2 lightning indexer (config index_n_heads, index_head_dim), in every layer.
    index_heads: int = 0
    index_head_dim: int = 0
    # Checkpoint-only tensors: stored in the published files and counted in the Hub's
    # safetensors total, but not weights the model computes with, so they stay out of the
    # tensor inventory (GGUF converters drop them) and are added by checkpoint_extras().
    # Llama 2 *-hf conversions store model.layers.N.self_attn.rotary_emb.inv_freq.
    rope_inv_freq_stored: bool = False
    # FP8 block-quantized checkpoints: quantization_config.weight_block_size (DeepSeek-V3: 128).
    fp8_block: int = Field(0, ge=0)
    # Multi-token prediction (DeepSeek-V3 / GLM-4.5 num_nextn_predict_layers): modules stored
    # after the stack, counted in mtp_params, not in params (see the module docstring).
    mtp_layers: int = Field(0, ge=0)
    # The MTP module stores its own copies of embed_tokens and shared_head.head (DeepSeek-V3,
    # GLM-4.5); GLM-4.6 does not.
    mtp_embeddings: bool = False
    # Vision tower and projector of an image-text model: loaded when serving, so counted in
    # params; not run for text tokens, so not in active_params. Computed from vision_config,
    # the derivation in vision_note.
    vision_params: int = Field(0, ge=0)
    vision_note: str = ""
    # Storage of the released weights, a name from engine.quant.QUANTS: "bf16", "fp8" (FP8 E4M3
    # with 128 x 128 block scales when fp8_block is set), "mxfp4" (gpt-oss: MoE experts only).
    native_quant: str = "bf16"
    native_source: str = Field("", description="where the release states its weight format")
    # Official releases in other formats (the FP8 repo beside the BF16 one, an INT4/AWQ repo),
    # each with its source; the native format is a release too (releases()).
    releases: tuple[Release, ...] = ()
    # Reasoning (thinking) models answer with long chains of thought: serving is sized for a
    # context that holds a prompt plus `typical_output` tokens of answer (the maker's
    # recommended maximum generation length, from `reasoning_source`).
    reasoning: bool = False
    typical_output: int = Field(0, ge=0)
    reasoning_source: str = ""
    published_params: int | None = None
    # Some FP8 repos' Hub totals leave out the weight_scale_inv tensors their files store
    # (MiniMax-M2: 228,689,764,864 = the weights; MiniMax-M2.5, the same shapes: 228,703,644,928
    # = weights + 13,880,064 scales). Then published_params is checkpoint_params less the scales.
    published_without_scales: bool = False
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

    def releases_all(self) -> tuple[Release, ...]:
        """Every official release, the native format first."""
        # fields of this validated spec, so not validated again: the first validation would build
        # Release's schema and load pydantic's plugins (importlib.metadata), ~50 ms of start-up
        native = Release.model_construct(
            quant=self.native_quant, repo=self.hf_repo or self.name,
            source=self.native_source or self.source, fp8_block=self.fp8_block)
        return (native, *(r for r in self.releases if r.quant != self.native_quant))

    def release(self, quant: str) -> Release | None:
        """The official release in `quant`, or None when there is none."""
        return next((r for r in self.releases_all() if r.quant == quant), None)

    def is_moe_layer(self, i: int) -> bool:
        return self.is_moe and i >= self.dense_layers and (i + 1) % self.moe_every == 0

    def is_linear_attention(self, i: int) -> bool:
        period = self.linear_attention_period
        return bool(period) and (i + 1) % period != 0

    @property
    def moe_layers(self) -> int:
        return _layer_counts(self)[0]

    @property
    def attention_layers(self) -> int:
        """Layers with softmax attention, the ones that keep a per-token KV cache."""
        return _layer_counts(self)[1]

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

    @property
    def mtp_params(self) -> int:
        return mtp_params(self)

    @property
    def checkpoint_params(self) -> int:
        return checkpoint_params(self)


@cache
def _layer_counts(spec: ModelSpec) -> tuple[int, int]:
    """(MoE layers, softmax-attention layers): counted once per spec, read on every plan."""
    return (sum(spec.is_moe_layer(i) for i in range(spec.layers)),
            sum(not spec.is_linear_attention(i) for i in range(spec.layers)))


def _norm(spec: ModelSpec, width: int) -> int:
    # RMSNorm stores a weight; LayerNorm a weight and a bias.
    return width * (2 if spec.norm == "layernorm" else 1)


def _linear(role: str, layer: int | None, d_in: int, d_out: int, bias: bool) -> list[Tensor]:
    out = [Tensor(role, layer, d_in * d_out, d_in, d_out)]
    if bias:
        out.append(Tensor(role + "_bias", layer, d_out))
    return out


def _mla(spec: ModelSpec, i: int) -> list[Tensor]:
    # DeepSeek-V2/V3 MLA: low-rank query and a compressed joint KV latent plus a shared
    # rope key (modeling_deepseek.py DeepseekV3Attention).
    h = spec.hidden
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
    if spec.index_heads:
        # DeepSeek-V3.2 lightning indexer (inference/model.py Indexer): wq_b from the q latent
        # to index_n_heads x index_head_dim, wk to one index_head_dim key, a LayerNorm on that
        # key (weight and bias) and weights_proj, one weight per index head.
        d = spec.index_head_dim
        out += _linear("indexer_q", i, spec.q_lora_rank, spec.index_heads * d, False)
        out += _linear("indexer_k", i, h, d, False)
        out.append(Tensor("indexer_k_norm", i, 2 * d))
        out += _linear("indexer_weights", i, h, spec.index_heads, False)
    return out


def _lightning(spec: ModelSpec, i: int) -> list[Tensor]:
    # MiniMax-M1 lightning attention (vLLM minimax_text_01.py MiniMaxText01LinearAttention):
    # qkv_proj h -> 3 x heads x head_dim, output_gate h -> heads x head_dim, out_proj back to
    # h, all without bias, and an RMSNorm over heads x head_dim. No KV heads: all 64 heads.
    h, inner = spec.hidden, spec.heads * spec.head_dim
    out = _linear("lin_attn_qkv", i, h, 3 * inner, False)
    out += _linear("lin_attn_gate", i, h, inner, False)
    out += _linear("lin_attn_output", i, inner, h, False)
    out.append(Tensor("lin_attn_norm", i, inner))
    return out


def _attention(spec: ModelSpec, i: int) -> list[Tensor]:
    if spec.attention == "mla":
        return _mla(spec, i)
    if spec.is_linear_attention(i):
        return _lightning(spec, i)
    # q, k, v and output projections; GQA shares each k/v head across heads/kv_heads queries.
    h = spec.hidden
    out = _linear("attn_q", i, h, spec.q_dim, spec.qkv_bias)
    out += _linear("attn_k", i, h, spec.kv_dim, spec.qkv_bias)
    out += _linear("attn_v", i, h, spec.kv_dim, spec.qkv_bias)
    out += _linear("attn_output", i, spec.q_dim, h, spec.attn_output_bias)
    if spec.qk_norm:  # Qwen3, Gemma 3: RMSNorm over head_dim on q and k
        out += [Tensor("attn_q_norm", i, spec.head_dim), Tensor("attn_k_norm", i, spec.head_dim)]
    if spec.qk_norm_full:  # MiniMax-M2: RMSNorm over all heads of q and of k
        out += [Tensor("attn_q_norm", i, spec.q_dim), Tensor("attn_k_norm", i, spec.kv_dim)]
    if spec.attention_sinks:  # gpt-oss: a learned sink logit per head joins the softmax
        out.append(Tensor("attn_sinks", i, spec.heads))
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
    if spec.router_bias:  # DeepSeek-V3 e_score_correction_bias; gpt-oss router bias
        out.append(Tensor("ffn_gate_inp_bias", i, e))
    mats = 3 if spec.mlp == "gated" else 2
    roles = EXPERT_ROLES if mats == 3 else EXPERT_ROLES[1:]
    for role in roles:
        d_in, d_out = (w, h) if role == "ffn_down_exps" else (h, w)
        out.append(Tensor(role, i, e * d_in * d_out, d_in, d_out))
        if spec.mlp_bias:  # gpt-oss: gate_up_proj_bias [E, 2w] and down_proj_bias [E, h]
            out.append(Tensor(role + "_bias", i, e * d_out))
    if spec.shared_experts:
        width = spec.shared_intermediate or spec.moe_intermediate * spec.shared_experts
        out += _mlp(spec, i, width, SHARED_EXPERT_ROLES)
        if spec.shared_expert_gate:  # Qwen2-MoE sigmoid gate on the shared expert
            out += _linear("ffn_gate_shexp_gate", i, h, 1, False)
    return out


def _block(spec: ModelSpec, i: int) -> list[Tensor]:
    h = spec.hidden
    out = [Tensor("attn_norm", i, _norm(spec, h)), Tensor("ffn_norm", i, _norm(spec, h))]
    # Gemma 2/3 add post-attention and post-MLP norms: 4 per layer.
    out += [Tensor("post_norm", i, _norm(spec, h))] * (spec.norms_per_layer - 2)
    out += _attention(spec, i)
    if spec.is_moe_layer(i):
        out += _experts(spec, i)
    else:
        out += _mlp(spec, i, spec.intermediate, MLP_ROLES)
    return out


@cache
def tensors(spec: ModelSpec) -> tuple[Tensor, ...]:
    """Every tensor serving loads (vision tower aside), in GGUF role names."""
    h, v = spec.hidden, spec.vocab
    out: list[Tensor] = [Tensor("token_embd", None, v * h, h, v)]
    for i in range(spec.layers):
        out += _block(spec, i)
    out.append(Tensor("output_norm", None, _norm(spec, h)))
    if not spec.tied_embeddings:
        out.append(Tensor("output", None, v * h, h, v))
    return tuple(out)


@cache
def mtp_tensors(spec: ModelSpec) -> tuple[Tensor, ...]:
    """The multi-token-prediction modules, numbered after the stack (DeepSeek-V3 stores its one
    module as model.layers.61): enorm and hnorm, eh_proj [2h -> h] joining the embedded next
    token with the last hidden state, one MoE decoder layer, shared_head.norm and, where the
    checkpoint stores them, copies of embed_tokens and shared_head.head (modeling_deepseek.py,
    DeepSeek-V3 report sec. 2.2; GLM-4.5 reuses the layout)."""
    h, v = spec.hidden, spec.vocab
    out: list[Tensor] = []
    for i in range(spec.layers, spec.layers + spec.mtp_layers):
        out += [Tensor("mtp_enorm", i, h), Tensor("mtp_hnorm", i, h)]
        out += _linear("mtp_eh_proj", i, 2 * h, h, False)
        out += _block(spec, i)
        out.append(Tensor("mtp_head_norm", i, h))
        if spec.mtp_embeddings:
            out += [Tensor("mtp_token_embd", i, v * h, h, v), Tensor("mtp_output", i, v * h, h, v)]
    return tuple(out)


def _rope_inv_freq(spec: ModelSpec) -> int:
    # Llama 2 *-hf conversions saved each layer's rotary_emb.inv_freq buffer, head_dim/2
    # floats; the Hub total counts them (Llama-2-7b-hf: 6,738,417,664 = 6,738,415,616 + 32 x 64).
    return spec.layers * (spec.head_dim // 2) if spec.rope_inv_freq_stored else 0


def is_fp8_block_quantized(t: Tensor) -> bool:
    """Whether a block-FP8 release (DeepSeek-V3, Kimi K2, MiniMax-M2) stores `t` in FP8 with a
    weight_scale_inv: every attention, MLP, expert and indexer matrix; the router, embeddings,
    head, norms, MTP eh_proj and V3.2's indexer weights_proj stay BF16 (the checkpoints'
    model.safetensors.index.json; quantization_config modules_to_not_convert)."""
    return t.role in LINEAR_ROLES and t.role != "ffn_gate_inp"


def fp8_block_scales(spec: ModelSpec, t: Tensor, block: int | None = None) -> int:
    """float32 weight_scale_inv elements of one FP8 tensor: ceil(out/b) x ceil(in/b) per matrix
    with weight_block_size [b, b] (DeepSeek-V3: 128); `block` defaults to the native one."""
    b = spec.fp8_block if block is None else block
    if not b or not is_fp8_block_quantized(t):
        return 0
    stacked = t.elements // (t.d_in * t.d_out)  # routed experts share one tensor
    return stacked * -(-t.d_in // b) * -(-t.d_out // b)


@cache
def checkpoint_extras(spec: ModelSpec) -> int:
    """Elements the published checkpoint stores besides weights (rotary buffers, FP8 block
    scales of the stack and of the MTP modules): counted in the Hub total, not in params.
    DeepSeek-V3's F32 bucket, 41,555,600, is these scales (41,540,496) plus the 59 x 256
    router biases (58 MoE layers and the MTP layer), which are weights."""
    scales = sum(fp8_block_scales(spec, t) for t in tensors(spec) + mtp_tensors(spec))
    return _rope_inv_freq(spec) + scales


@cache
def total_params(spec: ModelSpec) -> int:
    """What serving loads and answers report: the stack plus any vision tower (no MTP)."""
    return sum(t.elements for t in tensors(spec)) + spec.vision_params


@cache
def mtp_params(spec: ModelSpec) -> int:
    return sum(t.elements for t in mtp_tensors(spec))


@cache
def checkpoint_params(spec: ModelSpec) -> int:
    """The published checkpoint's element count, the Hub's safetensors total."""
    return total_params(spec) + mtp_params(spec) + checkpoint_extras(spec)


@cache
def active_params(spec: ModelSpec) -> int:
    """Parameters one text token touches: routed experts count top_k of n (shared always);
    the vision tower and MTP modules are not run."""
    total = 0
    for t in tensors(spec):
        if t.role.removesuffix("_bias") in EXPERT_ROLES:
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
