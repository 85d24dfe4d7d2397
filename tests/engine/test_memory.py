"""Each memory component against values computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import memory
from engine.architecture import ModelSpec

BASE = {"source": "https://example.test/config.json", "retrieved": "2026-11-30", "display": "t"}
# Llama 3.1 8B's config.json fields
LLAMA8B = ModelSpec(name="l8", layers=32, hidden=4096, intermediate=14336, heads=32, kv_heads=8,
                    head_dim=128, vocab=128256, max_context=131072, **BASE)
LLAMA70B = ModelSpec(name="l70", layers=80, hidden=8192, intermediate=28672, heads=64, kv_heads=8,
                     head_dim=128, vocab=128256, max_context=131072, **BASE)
MISTRAL = ModelSpec(name="m7", layers=32, hidden=4096, intermediate=14336, heads=32, kv_heads=8,
                    head_dim=128, vocab=32000, max_context=32768, sliding_window=4096,
                    sliding_layers=32, **BASE)
DEEPSEEK_V3 = ModelSpec(
    name="dsv3", layers=61, hidden=7168, intermediate=18432, heads=128, kv_heads=128, head_dim=128,
    vocab=129280, max_context=163840, attention="mla", q_lora_rank=1536, kv_lora_rank=512,
    qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, experts=256, active_experts=8,
    shared_experts=1, moe_intermediate=2048, dense_layers=3, router_bias=True, **BASE)


def test_recipe_bytes_per_param() -> None:
    assert sum(memory.recipe_bytes("adamw", "bf16")) == 16  # 2 + 2 + (4 master + 4 m + 4 v)
    assert sum(memory.recipe_bytes("adamw", "fp32")) == 16  # 4 + 4 + 8, no master
    assert sum(memory.recipe_bytes("adamw-bf16", "bf16")) == 8
    assert sum(memory.recipe_bytes("adamw-8bit", "bf16")) == pytest.approx(6.004)
    assert sum(memory.recipe_bytes("sgd", "bf16")) == 12


def test_13b_model_states_match_transformer_math() -> None:
    # EleutherAI Transformer Math 101: 13B x 16 bytes = 208 GB
    params = 13_000_000_000
    w, g, o = memory.recipe_bytes("adamw", "bf16")
    kw = {"tp": 1, "dp": 1, "zero": 0}
    total = (memory.training_weights(params, w, offload_all=False, **kw)
             + memory.gradients(params, g, offload_all=False, **kw)
             + memory.optimizer_states(params, o, offloaded=False, **kw))
    assert total == 208e9


def test_zero_stages_shard_what_they_should() -> None:
    p = 8_000_000_000
    kw = {"tp": 1, "dp": 4}
    # ZeRO-1: optimizer only
    assert memory.optimizer_states(p, 12, zero=1, offloaded=False, **kw) == p * 12 / 4
    assert memory.gradients(p, 2, zero=1, offload_all=False, **kw) == p * 2
    # ZeRO-2: + gradients
    assert memory.gradients(p, 2, zero=2, offload_all=False, **kw) == p * 2 / 4
    assert memory.training_weights(p, 2, zero=2, offload_all=False, **kw) == p * 2
    # ZeRO-3: + weights; TP always splits
    assert memory.training_weights(p, 2, zero=3, offload_all=False, **kw) == p * 2 / 4
    assert memory.training_weights(p, 2, zero=0, offload_all=False, tp=2, dp=1) == p
    # offload moves states off the GPU
    assert memory.optimizer_states(p, 12, zero=0, offloaded=True, **kw) == 0


def test_zero3_gather_buffer_is_two_largest_blocks() -> None:
    # largest of one block (218,112,000) and the embedding (128256 x 4096 = 525,336,576)
    assert memory.zero3_gather_buffer(LLAMA8B, 2, tp=1, dp=4, zero=3, offload_all=False) == (
        2 * 525_336_576 * 2)
    assert memory.zero3_gather_buffer(LLAMA8B, 2, tp=1, dp=4, zero=2, offload_all=False) == 0


def test_kv_cache_gqa_70b() -> None:
    # 80 layers x 2 (k, v) x 8 kv heads x 128 x 2 bytes x 8192 tokens
    assert memory.kv_cache(LLAMA70B, context=8192, users=1, kv_bytes=2, tp=1) == 2_684_354_560


def test_kv_cache_multi_head_assumption_is_8x_too_high() -> None:
    mha = LLAMA70B.model_copy(update={"kv_heads": 64})
    gqa = memory.kv_cache(LLAMA70B, context=4096, users=4, kv_bytes=2, tp=1)
    assert memory.kv_cache(mha, context=4096, users=4, kv_bytes=2, tp=1) == 8 * gqa


def test_kv_cache_tp_splits_heads_with_at_least_one_per_rank() -> None:
    one = memory.kv_cache(LLAMA70B, context=4096, users=1, kv_bytes=2, tp=1)
    assert memory.kv_cache(LLAMA70B, context=4096, users=1, kv_bytes=2, tp=8) == one / 8
    # 16 ranks, 8 kv heads: each rank still holds a whole head
    assert memory.kv_cache(LLAMA70B, context=4096, users=1, kv_bytes=2, tp=16) == one / 8


def test_kv_cache_mla_stores_the_latent_once() -> None:
    # 61 layers x (512 + 64) x 2 bytes x 4096 tokens
    assert memory.kv_cache(DEEPSEEK_V3, context=4096, users=1, kv_bytes=2, tp=1) == 287_834_112


def test_kv_cache_sliding_window_caps_at_the_window() -> None:
    # 32 layers x 2 x 8 x 128 x 2 bytes x min(32768, 4096)
    assert memory.kv_cache(MISTRAL, context=32768, users=1, kv_bytes=2, tp=1) == 536_870_912


def test_kv_cache_hybrid_linear_attention_keeps_a_constant_state() -> None:
    # MiniMax-M1: 10 softmax layers x 2 x 8 kv heads x 128 x 2 bytes per token, plus 70
    # lightning layers x 64 heads x 128 x 128 float32 per sequence, whatever the context.
    m1 = ModelSpec(name="m1", layers=80, hidden=6144, intermediate=0, heads=64, kv_heads=8,
                   head_dim=128, vocab=200064, max_context=10240000, experts=32,
                   active_experts=2, moe_intermediate=9216, linear_attention_period=8, **BASE)
    state = 70 * 64 * 128 * 128 * 4
    assert state == 293_601_280
    for context in (1, 100_000):
        got = memory.kv_cache(m1, context=context, users=2, kv_bytes=2, tp=1)
        assert got == 2 * (10 * 2 * 8 * 128 * 2 * context + state)
    # TP splits the state's heads like the KV heads
    assert memory.kv_cache(m1, context=1, users=1, kv_bytes=2, tp=8) == 10 * 2 * 128 * 2 + (
        state / 8)


def test_lora_attention_targets_include_lightning_layers() -> None:
    m1 = ModelSpec(name="m1", layers=8, hidden=6144, intermediate=0, heads=64, kv_heads=8,
                   head_dim=128, vocab=200064, max_context=4096, experts=32, active_experts=2,
                   moe_intermediate=9216, linear_attention_period=8, **BASE)
    # 7 lightning layers: qkv 6144 -> 24576, gate 6144 -> 8192, out 8192 -> 6144;
    # 1 softmax layer: q 6144 -> 8192, k/v 6144 -> 1024, o 8192 -> 6144; r (d_in + d_out) each
    lightning = (6144 + 24576) + (6144 + 8192) + (8192 + 6144)
    softmax = (6144 + 8192) + 2 * (6144 + 1024) + (8192 + 6144)
    assert memory.lora_params(m1, 16, "attn") == 16 * (7 * lightning + softmax)


def test_kv_cache_chunked_layers_cap_like_a_window() -> None:
    # Llama 4: 36 chunked layers hold at most attention_chunk_size 8192 tokens, 12 global
    # layers the whole context: 2 x 8 x 128 x 2 bytes x (12 x 65536 + 36 x 8192)
    scout = ModelSpec(name="scout", layers=48, hidden=5120, intermediate=0, heads=40, kv_heads=8,
                      head_dim=128, vocab=202048, max_context=10485760, sliding_window=8192,
                      sliding_layers=36, experts=16, active_experts=1, shared_experts=1,
                      moe_intermediate=8192, **BASE)
    got = memory.kv_cache(scout, context=65536, users=1, kv_bytes=2, tp=1)
    assert got == 4096 * (12 * 65536 + 36 * 8192) == 4_429_185_024


def test_kv_cache_deepseek_v32_adds_the_indexer_keys() -> None:
    # per token and layer: MLA latent (512 + 64) x 2 bytes + FP8 index key 128 + fp32 scale 4
    v32 = DEEPSEEK_V3.model_copy(update={"index_heads": 64, "index_head_dim": 128})
    assert memory.kv_cache(v32, context=4096, users=1, kv_bytes=2, tp=1) == (
        61 * (576 * 2 + 132) * 4096)


def test_kv_cache_fp8_halves() -> None:
    assert memory.kv_cache(LLAMA8B, context=1000, users=3, kv_bytes=1, tp=1) * 2 == (
        memory.kv_cache(LLAMA8B, context=1000, users=3, kv_bytes=2, tp=1))


def test_activations_without_checkpointing_llama8b() -> None:
    # per token per block: 2 bytes x (4 x 4096 norm in/out) + 2 x (q 4096 + k,v 2 x 1024 +
    # attention out 4096 + 4 x 14336 MLP) = 32,768 + 135,168 = 167,936; x 2048 tokens x 32 blocks
    got = memory.activations(LLAMA8B, seq=2048, batch=1, tp=1, checkpointing="none",
                             adapters=False, targets="all", rank=16, compiled=True)
    assert got == 167_936 * 2048 * 32 == 11_005_853_696


def test_eager_norms_keep_fp32_copies() -> None:
    # eager RMSNorm: + 6 x 4096 bytes per norm, 2 norms per block: 49,152 more per token-block
    kw = {"seq": 2048, "batch": 1, "tp": 1, "checkpointing": "none", "adapters": False,
          "targets": "all", "rank": 16}
    eager = memory.activations(LLAMA8B, compiled=False, **kw)
    assert eager - memory.activations(LLAMA8B, compiled=True, **kw) == 49_152 * 2048 * 32


def test_selective_keeps_matmul_outputs_and_recomputes_one_block() -> None:
    # kept per token per block: 2 x (3 x 4096 + q,k,v 6144 + attention out 4096 + gate, up
    # 2 x 14336) = 102,400; backward recomputes one block's dropped rest (167,936 - 102,400)
    got = memory.activations(LLAMA8B, seq=2048, batch=1, tp=1, checkpointing="selective",
                             adapters=False, targets="all", rank=16, compiled=True)
    assert got == 2048 * (102_400 * 32 + 167_936 - 102_400)


def test_checkpointing_leaves_eager_norm_copies_to_the_block_being_recomputed() -> None:
    # selective and full recompute the norms in backward: the fp32 copies of one block
    # (49,152 bytes per token) are alive, where no checkpointing keeps all 32 blocks' worth
    kw = {"seq": 8192, "batch": 2, "tp": 1, "adapters": False, "targets": "all", "rank": 8}
    for mode in ("selective", "full"):
        eager = memory.activations(LLAMA8B, checkpointing=mode, compiled=False, **kw)
        fused = memory.activations(LLAMA8B, checkpointing=mode, compiled=True, **kw)
        assert eager - fused == 49_152 * 8192 * 2 == memory.eager_norm_copies(
            LLAMA8B, seq=8192, batch=2, tp=1, checkpointing=mode)
    assert memory.eager_norm_copies(LLAMA8B, seq=8192, batch=2, tp=1, checkpointing="none") == (
        49_152 * 8192 * 2 * 32)


def test_activations_full_checkpointing_keeps_block_inputs_plus_one_block() -> None:
    # 2048 x 2 x 4096 x 32 block inputs + one block recomputed (167,936 x 2048)
    got = memory.activations(LLAMA8B, seq=2048, batch=1, tp=1, checkpointing="full",
                             adapters=False, targets="all", rank=16, compiled=True)
    assert got == 2048 * 2 * 4096 * 32 + 167_936 * 2048


def test_selective_sits_between_none_and_full() -> None:
    kw = {"seq": 4096, "batch": 2, "tp": 1, "adapters": False, "targets": "all", "rank": 8}
    none, sel, full = (memory.activations(LLAMA8B, checkpointing=c, **kw)
                       for c in ("none", "selective", "full"))
    assert full < sel < none


def test_logits_term() -> None:
    # 2048 x 128,256 x 3 fp32 tensors at the loss's peak (forward: upcast logits, shifted copy,
    # log-softmax; backward: log-softmax, its gradient in and out)
    assert memory.logits(LLAMA8B, seq=2048, batch=1, tp=1) == 2048 * 128_256 * 12
    # chunked: bf16 logits + one of 8 chunks in fp32 at a time: 2 + 8/8
    assert memory.logits(LLAMA8B, seq=2048, batch=1, tp=1, loss="chunked") == 2048 * 128_256 * 3


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen3-30b-a3b", "gemma-2-9b"])
@pytest.mark.parametrize("tokens", [512, 4096, 65536])
def test_fused_loss_holds_a_chunk_about_the_size_of_the_hidden_states(model: str,
                                                                      tokens: int) -> None:
    """Fused linear cross-entropy (Liger, Unsloth) never holds all the logits: a chunk of
    tokens x H / V tokens' logits at a time, within a power of two of the hidden states."""
    from engine import catalog
    spec = catalog.models()[model]
    fused = memory.logits(spec, seq=tokens, batch=1, tp=1, loss="fused")
    chunked = memory.logits(spec, seq=tokens, batch=1, tp=1, loss="chunked")
    assert fused < chunked < memory.logits(spec, seq=tokens, batch=1, tp=1)
    chunk = memory.fused_loss_chunk(spec, tokens)
    assert chunk & (chunk - 1) == 0 or chunk == tokens  # a power of two, or all of them
    hidden_states = tokens * spec.hidden * 2
    assert chunk * spec.vocab * 2 <= 2 * hidden_states + 4 * spec.vocab
    # split over vocab-parallel TP ranks
    assert memory.logits(spec, seq=tokens, batch=1, tp=4, loss="fused") == pytest.approx(fused / 4)


def test_interleaved_gradients_and_activations() -> None:
    assert memory.gradients_live_with_activations(6.0, 17.0, interleaved=True) == 6.0
    assert memory.gradients_live_with_activations(6.0, 2.0, interleaved=True) == 2.0
    assert memory.gradients_live_with_activations(6.0, 17.0, interleaved=False) == 0.0


def test_activation_offload_keeps_two_layers() -> None:
    kw = {"seq": 4096, "batch": 2, "tp": 1, "checkpointing": "full", "adapters": True,
          "targets": "all", "rank": 64, "compiled": True}
    on_gpu = memory.activations(LLAMA8B, offloaded=False, **kw)
    offloaded = memory.activations(LLAMA8B, offloaded=True, **kw)
    # 30 of 32 block inputs (4096 x 2 x 2 bytes x 4096 hidden each) move to the host
    assert on_gpu - offloaded == 30 * 4096 * 2 * 2 * 4096


def test_lora_params_llama8b_rank16_all_linear() -> None:
    # per block: q 16x(4096+4096) + k,v 2 x 16x(4096+1024) + o 16x(4096+4096) = 425,984;
    # gate, up, down 3 x 16x(4096+14336) = 884,736; x 32 blocks
    assert memory.lora_params(LLAMA8B, 16, "all") == (425_984 + 884_736) * 32 == 41_943_040
    assert memory.lora_params(LLAMA8B, 16, "attn") == 425_984 * 32


def test_lora_on_attention_only_saves_fewer_activations() -> None:
    kw = {"seq": 2048, "batch": 1, "tp": 1, "checkpointing": "none", "rank": 16}
    attn = memory.activations(LLAMA8B, adapters=True, targets="attn", **kw)
    full = memory.activations(LLAMA8B, adapters=True, targets="all", **kw)
    assert attn < full


def test_overhead_counts_nccl_only_with_several_gpus() -> None:
    ctx, nccl, frag = memory.overhead(10 * memory.GIB, gpus=1)
    assert (ctx, nccl, frag) == (0.5 * memory.GIB, 0, 0.5 * memory.GIB)
    assert memory.overhead(10 * memory.GIB, gpus=2)[1] == 2 * memory.GIB


@settings(max_examples=60, deadline=None)
@given(seq=st.integers(1, 65536), batch=st.integers(1, 64),
       ckpt=st.sampled_from(["none", "selective", "full"]),
       adapters=st.booleans())
def test_activations_grow_with_seq_and_batch(seq: int, batch: int, ckpt: str,
                                             adapters: bool) -> None:
    kw = {"tp": 1, "checkpointing": ckpt, "adapters": adapters, "targets": "all", "rank": 8}
    base = memory.activations(LLAMA8B, seq=seq, batch=batch, **kw)
    assert memory.activations(LLAMA8B, seq=seq + 1, batch=batch, **kw) > base
    assert memory.activations(LLAMA8B, seq=seq, batch=batch + 1, **kw) > base
    assert memory.activations(LLAMA8B, seq=seq, batch=batch, **{**kw, "tp": 2}) < base


@settings(max_examples=60, deadline=None)
@given(context=st.integers(1, 200_000), users=st.integers(1, 256))
def test_kv_grows_with_context_and_users(context: int, users: int) -> None:
    kw = {"kv_bytes": 2, "tp": 1}
    base = memory.kv_cache(LLAMA70B, context=context, users=users, **kw)
    assert memory.kv_cache(LLAMA70B, context=context + 1, users=users, **kw) > base
    assert memory.kv_cache(LLAMA70B, context=context, users=users + 1, **kw) > base


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen3-30b-a3b"])
def test_attention_recompute_sizes_as_none(model: str) -> None:
    """Megatron's core_attn recompute keeps every block's tensors under flash attention: the
    memory of no checkpointing (eager norm copies included), never less."""
    from engine import catalog
    spec = catalog.models()[model]
    common = dict(seq=4096, batch=1, tp=2, adapters=False, targets="all", rank=0)
    assert memory.activations(spec, checkpointing="attention", **common) == \
        memory.activations(spec, checkpointing="none", **common)
    assert memory.activations(spec, checkpointing="selective", **common) < \
        memory.activations(spec, checkpointing="attention", **common)



def test_varied_lengths_keep_every_logits_sized_buffer_of_a_hugging_face_step() -> None:
    # forward: bf16 head output 2, fp32 upcast 4, shifted copy 4, log-softmax 4; backward:
    # nll_loss gradient 4, log-softmax gradient 4, the slice's zero-filled gradient 4, its bf16
    # cast 2. 12 of them are alive at once; over batches of varying length all 28 stay reserved.
    assert memory.HF_VARIED_LENGTH_BYTES_PER_LOGIT == 28
    kept = memory.logit_blocks_kept(LLAMA8B, seq=4096, batch=1, tp=1, loss="full",
                                    varied_lengths=True)
    alive = memory.logits(LLAMA8B, seq=4096, batch=1, tp=1)
    assert kept + alive == 4096 * 128_256 * 28
    assert memory.logit_blocks_kept(LLAMA8B, seq=4096, batch=1, tp=2, loss="full",
                                    varied_lengths=True) == kept / 2
    # one shape every step: the blocks are reused; chunked and fused losses never hold
    # whole-vocabulary buffers
    assert memory.logit_blocks_kept(LLAMA8B, seq=4096, batch=1, tp=1, loss="full",
                                    varied_lengths=False) == 0
    for loss in ("chunked", "fused"):
        assert memory.logit_blocks_kept(LLAMA8B, seq=4096, batch=1, tp=1, loss=loss,
                                        varied_lengths=True) == 0



def _reserve(question: str) -> tuple[int, int]:
    """(allocator cache beyond the total, total) of the first plan's memory."""
    from engine import ask
    m = ask(question).plans[0].memory
    assert m.total + m.reserve <= m.capacity  # the cache grows only into what the card has free
    return m.reserve, m.total


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_hugging_face_sft_batches_vary_unless_packed(method: str) -> None:
    """Hugging Face trainers (the default data-parallel framework) pad SFT samples of varying
    length per batch: the allocator keeps 16 bytes per logit beyond the live peak, which
    packed, fixed-length batches reuse. The cache is handed back under pressure, so the total
    and the verdict do not include it."""
    from engine import catalog
    spec = catalog.models()["qwen2.5-7b"]
    base = f"qwen2.5-7b {method} gpu=h200 gpus=1 seq=8192 batch=1 checkpointing=full"
    (reserve, total), (none, packed_total) = _reserve(base), _reserve(base + " packing=true")
    assert reserve == pytest.approx(8192 * spec.vocab * 16, rel=1e-6) and none == 0
    assert total == packed_total
    assert _reserve(base + " packing=false") == _reserve(base + " framework=ms-swift") == \
        (reserve, total)
    full = _reserve(base.replace(method, "full-finetune"))[0]
    assert 0 < full <= reserve  # the same buffers, capped by what the states leave free


def test_the_cache_fills_at_most_the_free_card() -> None:
    from engine import ask
    for seq in (2048, 4096, 8192):  # Yi-34B LoRA on one A100 80GB: the cache meets the card
        m = ask(f"yi-1.5-34b lora gpu=a100-80gb gpus=1 seq={seq} rank=8 targets=attn "
                "checkpointing=full").plans[0].memory
        free = max(0, m.capacity - m.total)
        assert m.reserve == pytest.approx(min(seq * 64_000 * 16, free), abs=1)
    assert m.reserve == 0  # at 8k the need alone is over the card


def test_pretraining_and_megatron_run_fixed_length_sequences() -> None:
    for question in ("llama-3.1-8b pretrain gpu=h200 gpus=8 seq=8192 zero=3",
                     "llama-3.1-8b lora gpu=h200 gpus=8 seq=8192 framework=megatron"):
        assert _reserve(question)[0] == 0
        assert _reserve(question + " packing=false")[0] > 0


def test_a_compiled_loss_keeps_the_bf16_logits_and_their_gradient_only() -> None:
    eager = memory.logits(LLAMA8B, seq=8192, batch=2, tp=1)
    compiled = memory.logits(LLAMA8B, seq=8192, batch=2, tp=1, compiled=True)
    assert compiled == 8192 * 2 * 128_256 * (2 + 2) and compiled == eager / 3
    # both of its buffers are alive at once: nothing more for the allocator to keep
    assert memory.logit_blocks_kept(LLAMA8B, seq=8192, batch=2, tp=1, loss="full",
                                    varied_lengths=True, compiled=True) == 0
    # chunked and fused losses are sized as they are, compiled or not
    for loss in ("chunked", "fused"):
        assert memory.logits(LLAMA8B, seq=8192, batch=2, tp=1, loss=loss, compiled=True) == \
            memory.logits(LLAMA8B, seq=8192, batch=2, tp=1, loss=loss)
