"""From a Request to ranked plans: per card, the smallest count and sharding that runs and meets
the service level (serving) or the deadline (training with tokens=); then ranked for the buyer.

Memory depends on the card only through its capacity (and whether it has NVLink, which decides
tensor parallelism), so components are computed once per (count, strategy) and compared against
every card: that is what keeps a full answer within a few milliseconds.

Verdicts are three: `fits` (the headroom stays free), `tight` (runs, with less free than the
headroom: what published runs on a full card show), `no` (the engine cannot hold it). Each engine
reserves memory as it really does (vLLM's gpu_memory_utilization; llama.cpp: static buffers, no
NCCL).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date
from functools import lru_cache, wraps
from operator import itemgetter
from typing import Any, NamedTuple, TypeVar

from engine import catalog, memory, speed
from engine.architecture import EXPERT_ROLES, ModelSpec, Release
from engine.catalog import GPUS_PER_SERVER, GpuSpec
from engine.cost import price_plan
from engine.formats import WeightPath, unsupported_weights, weight_path
from engine.frameworks import FRAMEWORKS, framework_for
from engine.i18n import N_, _, counted
from engine.market import STATUS_TEXT, access, market_word
from engine.market import Access as MarketAccess
from engine.prices import PriceBook
from engine.quant import fp8_block_size, get_quant, weight_bytes
from engine.recommend import best_option, rank_plans, tokens_text
from engine.request import Request
from engine.schema import Access, Memory, Plan, Service, Settings, Speed

# Training counts up to the largest runs published (Llama 3 on 16,384 H100) and beyond.
TRAIN_COUNTS = tuple(2**i for i in range(18))  # 1 .. 131,072
SERVE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
VERDICTS = ("fits", "tight", "no")


class Strategy(NamedTuple):
    tp: int
    dp: int
    pp: int
    zero: int | None
    offload: str
    replicas: int = 1  # serving: independent copies, each holding tp x dp_attn x pp GPUs
    # MoE: routed experts sharded whole over this many ranks (expert parallel) instead of each
    # expert split by tensor parallelism; 1 = no expert parallelism
    ep: int = 1
    # serving MoE: attention (and the other dense layers) data parallel over this many groups
    # of tp GPUs, each with its own users' KV cache (SGLang --enable-dp-attention, vLLM
    # --data-parallel-size with --enable-expert-parallel); the experts span all of them
    dp_attn: int = 1
    # training: context parallel ways, each holding 1/cp of every sequence's tokens (ring
    # attention passes K and V between them); the parameters are the same on all cp ranks, so
    # they share in the data-parallel sharding (Megatron's data-parallel-with-CP group)
    cp: int = 1

    @property
    def replica_gpus(self) -> int:
        """GPUs that hold one serving copy of the model."""
        return self.tp * self.dp_attn * self.pp

    def describe(self, gpus: int, serving: bool, nvlink: bool) -> str:
        if serving:
            parts = []
            if self.dp_attn > 1:
                parts.append(_("attention data parallel DP={dp}").format(dp=self.dp_attn)
                             + (_(" x TP={tp}").format(tp=self.tp) if self.tp > 1 else ""))
            elif self.tp > 1:
                parts.append(_("tensor parallel TP={tp}").format(tp=self.tp)
                             + ("" if nvlink else _(" over PCIe")))
            if self.ep > 1:
                parts.append(_("expert parallel EP={ep}").format(ep=self.ep))
            if self.pp > 1:
                parts.append(_("layer split over {n} GPUs").format(n=self.pp)
                             + ("" if nvlink else " (PCIe)"))
            if not parts:
                parts.append(_("single GPU"))
            if self.replicas > 1:
                parts.append(_("{n} replicas").format(n=self.replicas))
            return " + ".join(parts)
        parts = []
        if gpus == 1:
            parts.append(_("single GPU"))
        elif self.dp == 1:
            pass  # one data-parallel rank: nothing to shard over, the model parallelism says it
        elif self.zero == 3:
            parts.append(_("ZeRO-3 / FSDP full shard over {n}").format(n=self.dp))
        elif self.zero in (1, 2):
            parts.append(_("ZeRO-{stage} over {n}").format(stage=self.zero, n=self.dp))
        elif self.dp > 1:
            parts.append(f"DDP x{self.dp}")
        if self.tp > 1:
            parts.append(f"TP={self.tp}")
        if self.pp > 1:
            parts.append(f"PP={self.pp}")
        if self.cp > 1:
            parts.append(f"CP={self.cp}")
        if self.ep > 1:
            parts.append(f"EP={self.ep}")
        if self.offload != "none":
            parts.append(_("{what} offloaded to CPU").format(what=self.offload))
        return " + ".join(parts)


class Components(NamedTuple):
    weights: float
    gradients: float
    optimizer: float
    activations: float
    kv_cache: float
    host: float
    # the formula behind each number, written only for the plans an answer shows (most
    # strategies tried on the way are never shown)
    detail: Callable[[], tuple[tuple[str, str], ...]]
    reused: float = 0.0
    allocated: float = 0.0  # the sum less `reused`: set by _components()
    # blocks the caching allocator keeps reserved beyond the live tensors (not in `allocated`):
    # the logits-sized buffers of steps of varying length (memory.logit_blocks_kept)
    reserve: float = 0.0


def _gib(value: float) -> str:
    return f"{value / memory.GIB:.2f} GiB"


def _training(spec: ModelSpec, req: Request, s: Strategy) -> Components:
    wb, gb, ob = memory.recipe_bytes(req.optimizer_used, req.precision)
    mp = s.tp * s.pp  # model-parallel ways: tensor and pipeline parallelism split the states
    offload_all = s.offload == "all"
    zero = s.zero or 0
    params = spec.params
    shard = s.dp * s.cp  # ranks holding the same parameters: ZeRO shards over all of them
    seq = req.seq_len // s.cp  # tokens of each sequence one context-parallel rank holds
    if req.spec.adapters:
        base = weight_bytes(spec, req.weight_quant)
        base_per_param = base.total_bytes / params
        trainable = memory.lora_params(spec, req.rank, req.targets)
        # expert parallelism splits the frozen experts over the EP ranks as it does trained ones
        frozen = memory.training_weights(
            params if zero >= 3 else memory.expert_parallel_local(params, spec, s.ep),
            base_per_param, tp=mp, dp=shard, zero=zero, offload_all=offload_all)
        adapters = memory.training_weights(trainable, wb, tp=mp, dp=shard, zero=zero,
                                           offload_all=offload_all)
        weights = frozen + adapters
        gather = memory.zero3_gather_buffer(spec, base_per_param, tp=mp, dp=shard, zero=zero,
                                            offload_all=offload_all)
        w_text = lambda: _("frozen base {gb:.2f} GB ({note}) + {adapters:.1f}M adapter params "  # noqa: E731
                           "x {bytes:g} B").format(gb=base.total_bytes / 1e9,
                                                   note=weight_bytes(spec, req.weight_quant).note,
                                                   adapters=trainable / 1e6, bytes=wb)
    else:
        trainable = params
        # expert parallelism: states not sharded by ZeRO hold the dense part and 1/ep of the
        # experts; ZeRO shards the experts over the dp/ep ranks that hold each of them, so a
        # sharded state is params / dp either way
        weights = memory.training_weights(
            params if zero >= 3 else memory.expert_parallel_local(params, spec, s.ep), wb,
            tp=mp, dp=shard, zero=zero, offload_all=offload_all)
        gather = memory.zero3_gather_buffer(spec, wb, tp=mp, dp=shard, zero=zero,
                                            offload_all=offload_all)
        w_text = lambda: _("{params:.2f}B params x {bytes:g} B").format(  # noqa: E731
            params=params / 1e9, bytes=wb)
    if req.fused_step and not req.spec.adapters:
        # optimizer step fused into backward (torchtune optimizer_in_bwd): each gradient is
        # applied and freed as soon as it is produced; the largest tensor's is the most alive
        grads = memory.largest_tensor(spec) * gb / mp
        g_text = lambda: _("one tensor's gradient at a time ({elements:.0f}M x {bytes:g} B)"  # noqa: E731
                           ).format(elements=memory.largest_tensor(spec) / 1e6, bytes=gb)
    else:
        grads = memory.gradients(
            trainable if zero >= 2 or req.spec.adapters
            else memory.expert_parallel_local(trainable, spec, s.ep), gb,
            tp=mp, dp=shard, zero=zero, offload_all=offload_all)
        g_text = lambda: (_trainable_text(trainable, gb) + _mp_text(s)  # noqa: E731
                          + _shard_text(s, 2) + (_(" (on host)") if offload_all else ""))
    offloaded = s.offload in ("optimizer", "all")
    paged = req.optimizer_used == "paged-adamw-8bit"
    optim = memory.optimizer_states(
        trainable if zero >= 1 or req.spec.adapters
        else memory.expert_parallel_local(trainable, spec, s.ep), ob,
        tp=mp, dp=shard, zero=zero, offloaded=offloaded or paged)
    acts = memory.activations(spec, seq=seq, batch=req.batch, tp=s.tp,
                              checkpointing=req.checkpointing_mode, adapters=req.spec.adapters,
                              targets=req.targets, rank=req.rank, compiled=req.compile,
                              offloaded=s.offload == "activations")
    logit = memory.logits(spec, seq=seq, batch=req.batch, tp=s.tp, loss=req.loss,
                          compiled=req.compile)
    kept = memory.logit_blocks_kept(spec, seq=seq, batch=req.batch, tp=s.tp, loss=req.loss,
                                    varied_lengths=varied_lengths(req, s), compiled=req.compile)
    dequant = 0.0
    if req.spec.quantized_base:
        # bitsandbytes dequantizes each NF4 matrix to bf16 for its matmul (forward and
        # backward): one largest linear matrix is live at a time.
        dequant = memory.largest_linear(spec) * 2 / s.tp
    interleaved = not req.fused_step and (shard == 1 or zero >= 3)
    reused = memory.gradients_live_with_activations(grads, acts + logit, interleaved=interleaved)
    host = 0.0
    if offloaded or paged:
        host += sharded_host(trainable * ob, s)
    if offload_all:  # with adapters the frozen base waits on the host too (QLoRA + FSDP offload)
        frozen_host = weight_bytes(spec, req.weight_quant).total_bytes if req.spec.adapters else 0
        host += sharded_host(trainable * (wb + gb) + frozen_host, s)
    per_logit = logit * s.tp / (seq * req.batch * spec.vocab)

    def detail() -> tuple[tuple[str, str], ...]:
        return _training_detail(spec, req, s, w_text=w_text(), g_text=g_text(), gather=gather,
                                offload_all=offload_all, offloaded=offloaded, paged=paged,
                                trainable=trainable, ob=ob, acts=acts, logit=logit,
                                per_logit=per_logit, dequant=dequant, reused=reused)

    return _components(weights=weights + gather, gradients=grads, optimizer=optim,
                       activations=pipelined_peak(acts, logit, s.pp) + dequant, kv_cache=0.0,
                       host=host, detail=detail, reused=reused, reserve=kept)


def varied_lengths(req: Request, s: Strategy) -> bool:
    """Whether the training batches vary in length: Hugging Face trainers (LLaMA-Factory,
    ms-swift, TRL) pad each batch of SFT samples to its longest, cut at seq; Megatron,
    torchtitan and any pre-training run packed fixed-length sequences. packing= says which."""
    if req.packing is not None:
        return not req.packing
    if req.method == "pretrain":  # pre-training packs documents into full-length sequences
        return False
    return framework_for(req.framework, tp=s.tp, pp=s.pp, ep=s.ep, cp=s.cp).hf_modules


def pipelined_peak(acts: float, logit: float, pp: int) -> float:
    """Peak saved activations on one GPU. Under 1F1B the first stage holds `pp` micro-batches of
    its 1/pp of the layers (the whole stack's worth: `acts`), the last stage one micro-batch of
    its layers and the logits, which only it computes (Narayanan et al. 2021); the busiest GPU
    sets the peak. Without a pipeline one GPU holds both."""
    if pp <= 1:
        return acts + logit
    return max(acts, acts / pp + logit)


def _training_detail(spec: ModelSpec, req: Request, s: Strategy, *, w_text: str, g_text: str,
                     gather: float, offload_all: bool, offloaded: bool, paged: bool,
                     trainable: int, ob: float, acts: float, logit: float, per_logit: float,
                     dequant: float, reused: float) -> tuple[tuple[str, str], ...]:
    detail = (
        ("weights", f"{w_text}{_mp_text(s)}{_shard_text(s, 3)}"
         + (_(" + ZeRO-3 gather buffer {size}").format(size=_gib(gather)) if gather else "")
         + (_(" (on host: offload=all)") if offload_all else "")),
        ("gradients", g_text),
        ("optimizer", _("{trainable} ({optimizer})").format(
            trainable=_trainable_text(trainable, ob), optimizer=req.optimizer_used)
         + _mp_text(s) + _shard_text(s, 1) + (_(" (on host: offloaded)") if offloaded else "")
         + (_(" in CUDA unified memory, paged to host RAM under pressure (not counted on the "
              "GPU)") if paged else "")),
        ("activations", _("{size} saved by the blocks (seq {seq} x batch {batch}, "
                          "checkpointing={mode}{compiled}{offloaded})").format(
            size=_gib(acts), batch=req.batch, mode=req.checkpointing_mode,
            seq=req.seq_len if s.cp == 1 else _(
                "{seq} / context parallel {cp} = {tokens}").format(
                seq=req.seq_len, cp=s.cp, tokens=req.seq_len // s.cp),
            compiled=_compile_text(spec, req, s),
            offloaded=_(", offloaded to host") if s.offload == "activations" else "")
         + _(" (flash attention: no s x s scores; eager or ALiBi-biased attention adds "
             "heads x s x s per block)")
         + (_(" + {size} loss ({loss}: logits of {chunk} tokens at a time, never all {tokens})"
              ).format(size=_gib(logit), loss=_(LOSS_TEXT[req.loss]),
                       tokens=req.seq_len // s.cp * req.batch,
                       chunk=memory.fused_loss_chunk(spec, req.seq_len // s.cp * req.batch))
            if req.loss == "fused" else
            _(" + {size} logits (s x b x vocab {vocab} x {bytes:g} B, {loss})").format(
                size=_gib(logit), vocab=spec.vocab, bytes=per_logit,
                loss=_(LOSS_TEXT["full-compiled" if req.compile and req.loss == "full"
                                 else req.loss])))
         + (_(" + {size} NF4 dequantization buffer").format(size=_gib(dequant))
            if dequant else "")),
    )
    if reused:
        detail += (("reused", _("{size}: gradients are created as backward frees activations "
                                "(gradients set to None between steps, no persistent buckets), "
                                "so the peak holds max(activations, gradients), not both").format(
            size=_gib(reused))),)
    return detail


LOSS_TEXT = {"full": N_("full cross-entropy"), "chunked": N_("chunked cross-entropy"),
             "fused": N_("fused linear cross-entropy"),
             "full-compiled": N_("full cross-entropy under torch.compile: the bf16 logits and "
                                 "their gradient, no fp32 copies")}


def _compile_text(spec: ModelSpec, req: Request, s: Strategy) -> str:
    """The kernel assumption behind the norms' share of the activations, named with its size."""
    if req.compile:
        return _(", torch.compile: fused norms, no fp32 copies")
    eager = memory.eager_norm_copies(spec, seq=req.seq_len // s.cp, batch=req.batch, tp=s.tp,
                                     checkpointing=req.checkpointing_mode,
                                     offloaded=s.offload == "activations")
    if req.checkpointing_mode not in memory.KEEPS_EVERY_BLOCK:
        return _(", eager (no torch.compile): unfused norms keep fp32 copies, {size} in the "
                 "block being recomputed").format(size=_gib(eager))
    return _(", eager (no torch.compile): unfused norms keep fp32 copies, {size} over {blocks} "
             "blocks").format(size=_gib(eager), blocks=memory.layers_holding_norm_copies(
                 spec, req.checkpointing_mode, s.offload == "activations"))


def _trainable_text(trainable: int, per_param: float) -> str:
    return _("{trainable:.3f}B trainable x {bytes:g} B").format(trainable=trainable / 1e9,
                                                                bytes=per_param)


def _components(**values: Any) -> Components:
    c = Components(**values)
    return c._replace(allocated=c.weights + c.gradients + c.optimizer + c.activations
                      + c.kv_cache - c.reused)


def sharded_host(total: float, s: Strategy) -> float:
    return total / s.tp / s.pp / s.dp / s.cp


def _mp_text(s: Strategy) -> str:
    parts = ([f" / TP {s.tp}"] if s.tp > 1 else []) + ([f" / PP {s.pp}"] if s.pp > 1 else [])
    return "".join(parts)


def _shard_text(s: Strategy, stage: int) -> str:
    return (_(" / ZeRO-{stage} shard {n}").format(stage=s.zero, n=s.dp * s.cp)
            if (s.zero or 0) >= stage and s.dp * s.cp > 1 else "")


def users_per_replica(req: Request, s: Strategy) -> int:
    return -(-req.users // s.replicas)


def users_per_group(req: Request, s: Strategy) -> int:
    """Sequences one attention group holds: a replica's users over its attention DP groups."""
    return -(-users_per_replica(req, s) // s.dp_attn)


def _inference(spec: ModelSpec, req: Request, s: Strategy) -> Components:
    size = weight_bytes(spec, req.weight_quant)
    on_gpu = size.total_bytes
    gguf = req.serving_engine == "llama.cpp"
    if gguf:  # llama.cpp keeps the token embedding table in host memory (a lookup, no matmul)
        on_gpu -= size.by_role.get("token_embd", 0)
    # routed experts spread over every GPU of a pipeline stage (split by TP or whole by EP);
    # attention and the other dense layers over the TP group, copied per attention DP group
    experts = sum(size.by_role.get(r, 0) + size.by_role.get(r + "_bias", 0)
                  for r in EXPERT_ROLES)
    weights = ((on_gpu - experts) / s.tp + experts / (s.tp * s.dp_attn)) / s.pp
    kv_bytes = 1 if req.kv == "fp8" else 2
    users = users_per_group(req, s)
    kv = memory.kv_cache(spec, context=req.context, users=users, kv_bytes=kv_bytes,
                         tp=s.tp, pp=s.pp)
    engine = req.serving_engine
    acts = memory.inference_activations(spec, context=req.context, users=users, tp=s.tp,
                                        engine=engine)
    def detail() -> tuple[tuple[str, str], ...]:
        # read here, in the answer's language: the size is cached across languages
        note = weight_bytes(spec, req.weight_quant).note
        layout = (_("MLA latent") if spec.attention == "mla" else
                  _("{heads} KV heads x head_dim {dim}").format(heads=spec.kv_heads,
                                                                 dim=spec.head_dim))
        window = (_(", {layers} layers capped at the {window}-token window").format(
            layers=spec.sliding_layers, window=spec.sliding_window)
                  if spec.sliding_window and spec.sliding_layers else "")
        chunk = (_("up to {tokens} prompt tokens per pass").format(
            tokens=memory.PREFILL_CHUNK[engine]) if engine in memory.PREFILL_CHUNK
            else _("the whole prompt in one pass"))
        spread = (_(" / {gpus}").format(gpus=counted(s.tp * s.pp, "GPU")) if s.dp_attn == 1 else
                  _("; experts / {n} GPUs, the rest / {tp} (copied in each of {dp} attention "
                    "groups)").format(n=s.replica_gpus, tp=s.tp * s.pp, dp=s.dp_attn))
        return (
            ("weights", _("{gb:.2f} GB in {quant} ({bits:.2f} bits/weight; {note})").format(
                gb=size.total_bytes / 1e9, quant=req.weight_quant, bits=size.bits_per_weight,
                note=note)
             + (_(", token embeddings on the host as llama.cpp does") if gguf else "")
             + spread),
            ("kv_cache", _("{users} x {context} tokens, {kv} KV ({layout}{window}) "
                           "/ TP {tp} / layer split {pp}").format(
                users=counted(users, "sequence"), context=req.context, kv=req.kv,
                layout=layout, window=window, tp=s.tp, pp=s.pp)
             + (_("; each of {replicas} replicas serves {users} of the {total} users").format(
                 replicas=s.replicas, users=users_per_replica(req, s), total=req.users)
                if s.replicas > 1 else "")
             + (_("; each of {dp} attention groups keeps the KV cache of its own {users} "
                  "users").format(dp=s.dp_attn, users=users) if s.dp_attn > 1 else "")),
            ("activations", _("prefill workspace of {engine}: {chunk}, plus fp32 logits of the "
                              "sampled positions").format(engine=engine, chunk=chunk)),
        )

    return _components(weights=weights, gradients=0.0, optimizer=0.0, activations=acts,
                       kv_cache=kv, host=0.0, detail=detail)


def components(spec: ModelSpec, req: Request, s: Strategy) -> Components:
    return _inference(spec, req, s) if req.is_serving else _training(spec, req, s)


def _runtime(req: Request, s: Strategy, gpus: int) -> tuple[str | None, int]:
    """(engine, GPUs that work on one copy of the model): the serving replica, or the job."""
    if req.is_serving:
        return req.serving_engine, s.replica_gpus
    return None, gpus


def _need(c: Components, req: Request, s: Strategy, gpus: int) -> float:
    engine, group = _runtime(req, s, gpus)
    ctx, nccl, frag = memory.overhead(c.allocated, gpus=group, engine=engine)
    return c.allocated + ctx + nccl + frag


def verdict_of(need: float, capacity: int, req: Request, s: Strategy, gpus: int) -> str:
    """fits: the engine holds it and the headroom stays free; tight: it runs with less free;
    no: more than the engine lets the model use."""
    engine, _group = _runtime(req, s, gpus)
    if need > capacity * memory.usable_share(engine, req.gpu_util):
        return "no"
    # the seeds' rule: the need plus 20% (headroom=) within the card
    return "fits" if need * (1 + req.headroom) <= capacity else "tight"


def build_memory(c: Components, req: Request, s: Strategy, gpus: int, gpu: GpuSpec) -> Memory:
    engine, group = _runtime(req, s, gpus)
    ctx, nccl, frag = memory.overhead(c.allocated, gpus=group, engine=engine)
    total = c.allocated + ctx + nccl + frag
    verdict = verdict_of(total, gpu.memory_bytes, req, s, gpus)
    # the allocator's cache grows into what the card has free and is handed back when an
    # allocation would fail, so it shows in the reserved peak but never decides the fit
    reserve = min(c.reserve, max(0.0, gpu.memory_bytes - total))
    detail = dict(c.detail())
    # the parts, then their sum: the figure the overhead bar shows
    detail["overhead"] = (
        _("CUDA context {size}").format(size=_gib(ctx))
        + (_(" + NCCL buffers {size}").format(size=_gib(nccl)) if nccl else "")
        + (_(" + allocator fragmentation {share:.0%} ({size})").format(
            share=memory.FRAGMENTATION, size=_gib(frag)) if frag
           else _(" ({engine}: static buffers, no caching allocator)").format(engine=engine))
        + (_(" = {size}").format(size=_gib(ctx + nccl + frag)) if nccl or frag else ""))
    if c.reserve:
        detail["reserve"] = _(
            "{size} more reserved by the caching allocator, not in the total: over batches of "
            "varying length it keeps every logits-sized buffer of a Hugging Face step (28 B per "
            "logit, 12 alive at once), up to what the card has free, and hands them back when "
            "an allocation would fail (torch.cuda.max_memory_reserved and nvidia-smi show "
            "them; none with packing=true)").format(size=_gib(reserve))
    share = memory.usable_share(engine, req.gpu_util)
    if share < 1:
        detail["usable"] = _("{engine} takes gpu_memory_utilization {share:g} of the card"
                             "{asked}: {size} for weights, activations and the KV cache").format(
            engine=engine, share=share, asked=" (gpu_util=)" if req.gpu_util else "",
            size=_gib(gpu.memory_bytes * share))
    return Memory.build(
        weights=round(c.weights), gradients=round(c.gradients), optimizer=round(c.optimizer),
        activations=round(c.activations), kv_cache=round(c.kv_cache),
        overhead=round(ctx + nccl + frag), reserve=round(reserve), reused=round(c.reused),
        total=round(total), headroom=round(total * req.headroom),
        capacity=gpu.memory_bytes, usable=round(gpu.memory_bytes * share),
        fits=verdict == "fits", verdict=verdict, host_offload=round(c.host), detail=detail)


# -- strategies ------------------------------------------------------------------------------


def _tp_options(spec: ModelSpec, gpus: int) -> list[int]:
    # TP must divide the attention heads (and so stays inside one 8-GPU NVLink server).
    return [t for t in (1, 2, 4, 8) if t <= gpus and gpus % t == 0 and spec.heads % t == 0]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _serving_strategies(spec: ModelSpec, req: Request, gpus: int) -> list[Strategy]:
    """Tensor parallel inside a server (over NVLink or PCIe, vLLM only), layer split across
    servers or where TP is not possible, and replicas that share the users."""
    tps = [req.tp] if req.tp else (
        [t for t in _tp_options(spec, gpus)] if req.serving_engine == "vllm" else [1])
    out = []
    for tp in tps:
        if gpus % tp:
            continue
        per_tp = gpus // tp
        replicas = [req.replicas] if req.replicas else [r for r in _divisors(per_tp)
                                                         if r <= req.users]
        for r in replicas:
            if per_tp % r:
                continue
            pp = per_tp // r
            if pp > 1 and tp < min(GPUS_PER_SERVER, gpus) and req.serving_engine == "vllm" \
                    and not req.tp and tp * 2 in tps and pp * tp <= GPUS_PER_SERVER:
                continue  # inside a server vLLM splits by TP, not by layers
            out += _moe_variants(spec, req, Strategy(tp, 1, pp, None, "none", r))
    return list(dict.fromkeys(out))  # one each: pipelines of any depth share their no-PP form


def _experts_split_ok(spec: ModelSpec, req: Request, ways: int) -> bool:
    """Whether tensor parallelism can split each expert `ways` ways: block-FP8 checkpoints need
    every shard of the expert width to be whole blocks (vLLM's recipes: Qwen3-235B-A22B-FP8,
    moe_intermediate 1536 with 128-blocks, TP 'must divide 12'; the experts go EP instead)."""
    block = fp8_block_size(spec) if get_quant(req.weight_quant).family == "fp8" else 0
    if not block or not spec.is_moe:
        return True
    return spec.moe_intermediate % ways == 0 and (spec.moe_intermediate // ways) % block == 0


def _moe_variants(spec: ModelSpec, req: Request, s: Strategy) -> list[Strategy]:
    """For an MoE model served by vLLM/SGLang: the experts split by TP as the dense layers are,
    whole experts over the TP group (TP + EP), and attention data parallel with the experts over
    every GPU of the stage (DP attention + EP), with TP inside each attention group. A layer
    split over servers also gets its no-pipeline counterpart, attention data parallel with the
    experts over every GPU of the replica: how Kimi K2 and DeepSeek-V3 run on 2 x 8 H800/H20
    (Moonshot's deployment guide: vLLM DP16 + EP16; SGLang --enable-dp-attention --ep 16), where
    a 16-stage pipeline decodes one stage at a time."""
    if not spec.is_moe or req.serving_engine != "vllm" or (s.tp == 1 and s.pp == 1):
        return [s]
    out = [s] if s.tp == 1 or _experts_split_ok(spec, req, s.tp) else []
    if s.tp > 1:
        out.append(s._replace(ep=s.tp))
    if req.tp:
        return out
    # stage-wide (pp kept) and, across servers, replica-wide (no pipeline) expert groups
    groups = [(s.tp, s.pp)] if s.tp > 1 else []
    if s.pp > 1 and s.tp * s.pp > GPUS_PER_SERVER:
        groups.append((s.tp * s.pp, 1))
    for width, pp in groups:
        if width > spec.experts or spec.experts % width:
            continue  # every rank holds the same number of whole experts
        for attn_tp in (t for t in (1, 2, 4, 8) if t < width and width % t == 0
                        and spec.heads % t == 0):
            out.append(s._replace(tp=attn_tp, pp=pp, dp_attn=width // attn_tp, ep=width))
    return out


def strategies(spec: ModelSpec, req: Request, gpus: int, nvlink: bool) -> list[Strategy]:
    """Candidate shardings for `gpus` cards, lightest communication first; with ep= only those
    with that expert-parallel size where there are any (an MoE model's full training or serving
    on at least ep GPUs; a dense model or LoRA's frozen experts have none to pin)."""
    found = _all_strategies(spec, req, gpus, nvlink)
    if req.cp and req.cp > 1:  # cp= pins context parallelism where any layout takes it
        found = [s for s in found if s.cp == req.cp] or found
    if req.pp and not req.is_serving:  # pp= pins the pipeline stages where any layout takes them
        found = [s for s in found if s.pp == req.pp] or found
    pinned = [s for s in found if s.ep == req.ep] if req.ep and spec.is_moe else []
    return pinned or found


def _all_strategies(spec: ModelSpec, req: Request, gpus: int, nvlink: bool) -> list[Strategy]:
    if req.is_serving:
        return _serving_strategies(spec, req, gpus)
    offload = req.offload or "none"
    # Hugging Face model code (LLaMA-Factory, ms-swift, TRL, Unsloth) runs data parallel only
    parallel = req.framework is None or FRAMEWORKS[req.framework].model_parallel
    # Megatron's distributed optimizer shards optimizer states only (ZeRO-1): a model-parallel
    # layout with gradients or weights sharded too is FSDP2 with TP (torchtitan, NeMo AutoModel),
    # so zero=2/3 asked without a framework that runs both is DeepSpeed/FSDP over data parallel
    fsdp_tp = req.framework is not None and FRAMEWORKS[req.framework].sharding == "fsdp"
    if req.zero is not None and req.zero >= 2 and not fsdp_tp:
        parallel = False
    tps = [req.tp] if req.tp else ([t for t in _tp_options(spec, gpus)
                                    if (nvlink and parallel) or t == 1])
    out = []
    for tp in tps:
        if gpus % tp:
            continue
        dp = gpus // tp
        zeros = [req.zero] if req.zero is not None else (
            [0] if dp == 1 else [0, 1] if tp > 1 and not fsdp_tp else [0, 1, 2, 3])
        out += [Strategy(tp, dp, 1, z, offload) for z in zeros]
        if parallel:
            out += _expert_parallel_training(spec, req, Strategy(tp, dp, 1, None, offload))
    # Pipeline stages (Megatron-style 1F1B) across servers, TP inside each 8-GPU server, and a
    # distributed optimizer (ZeRO-1) over the data-parallel replicas: how 70B+ models pre-train.
    # pp= asks for stages at any size and with any tp= (Megatron's layouts as published)
    staged = gpus > GPUS_PER_SERVER or (req.pp or 1) > 1
    if (req.tp is None or (req.pp or 1) > 1) and staged and nvlink and parallel:
        widest = GPUS_PER_SERVER if spec.heads % GPUS_PER_SERVER == 0 else 1
        for pp in ((req.pp,) if req.pp and req.pp > 1 else (2, 4, 8, 16, 32)):
            # a pinned pipeline narrows TP to what the cards leave it
            tp = req.tp or (max(1, min(widest, gpus // pp)) if req.pp else widest)
            if gpus % (tp * pp) == 0 and pp <= spec.layers:
                zero = req.zero if req.zero is not None else 1
                out.append(Strategy(tp, gpus // (tp * pp), pp, zero, offload))
                # MoE pre-training splits the experts, not the attention: Megatron-Bridge's
                # recipes run TP 1 with EP 8-64 beside the pipeline (gpt-oss-120b, Qwen3, V3)
                attn_tp = req.tp or 1
                if spec.is_moe and gpus % (pp * attn_tp) == 0:
                    out += _expert_parallel_training(
                        spec, req, Strategy(attn_tp, gpus // (pp * attn_tp), pp, None, offload))
    return out + (_context_parallel(req, out) if parallel else [])


# Context parallelism is for long sequences: Megatron Core's parallelism guide gives it to
# "Long sequences (8K+ tokens)"
# (https://docs.nvidia.com/megatron-core/developer-guide/latest/user-guide/parallelism-guide.html,
# read 2026-12-03), and each rank keeps a chunk long enough to stay matmul-bound: Llama 3's
# 128K stage ran CP 16, 8K tokens a rank (arXiv:2407.21783 table 4). 4K a rank at the least.
CP_MIN_SEQ = 8192
CP_MIN_TOKENS_PER_RANK = 4096
CP_SIZES = (2, 4, 8, 16, 32)


def _context_parallel(req: Request, found: list[Strategy]) -> list[Strategy]:
    """Context-parallel forms of the dense, sharded layouts (Megatron's distributed optimizer,
    ZeRO-1, and FSDP/ZeRO-3 as torchtitan runs CP): the data-parallel ranks split into CP
    groups that share each sequence. Listed after the layouts without it, so a tie keeps those."""
    seq = req.seq_len
    if req.cp == 1 or (seq < CP_MIN_SEQ and req.cp is None):
        return []
    sizes = (req.cp,) if req.cp else CP_SIZES
    out = []
    for s in found:
        if s.ep > 1 or s.zero not in (1, 3) or s.offload != "none":
            continue
        out += [s._replace(dp=s.dp // cp, cp=cp) for cp in sizes
                if seq % cp == 0 and (req.cp or seq // cp >= CP_MIN_TOKENS_PER_RANK)
                and s.dp % cp == 0
                and s.dp // cp >= 1]
    return out


# Expert-parallel sizes tried for MoE training: inside one 8-GPU server (NVLink all-to-all) and
# across servers, as Megatron-Bridge's MoE recipes use (EP 8 for Qwen3-30B-A3B and gpt-oss-120b
# on H100, 16-64 for Qwen3-235B-A22B and DeepSeek-V3).
TRAIN_EP_SIZES = (2, 4, 8, 16, 32, 64)


def _expert_parallel_training(spec: ModelSpec, req: Request, s: Strategy) -> list[Strategy]:
    """Whole routed experts sharded over EP ranks of the data-parallel group, with Megatron's
    distributed optimizer (ZeRO-1) over the rest: no rank gathers experts it does not hold.
    LoRA too: the frozen experts are split the same way and the tokens routed to them (ms-swift's
    Megatron LoRA recipe for Qwen3-30B-A3B runs --expert_model_parallel_size 4 on 4 H20)."""
    if not spec.is_moe or s.dp < 2:
        return []
    # FSDP2 frameworks (NeMo AutoModel, torchtitan) shard everything over the data-parallel
    # ranks beside EP ("FSDP 8, EP 8" in NeMo AutoModel's tables). Under a pipeline they keep
    # each stage's weights gathered from forward to backward (reshard_after_forward=False, the
    # PP default of both) and sync gradients on the last micro-batch only: weights and
    # gradients whole, optimizer states sharded, traffic once a step, which is ZeRO-1's bill.
    # Megatron's distributed optimizer shards optimizer states only.
    framework = FRAMEWORKS.get(req.framework or "")
    fsdp2 = framework is not None and framework.sharding == "fsdp" and framework.model_parallel
    zero = req.zero if req.zero is not None else (3 if fsdp2 and s.pp == 1 else 1)
    if zero >= 3 and not fsdp2:
        return []
    # the largest group inside a server (all-to-all over NVLink) and the largest beyond it
    # (fewest experts a rank, the all-to-all over the network): the sizes between trade the
    # same two things less well
    sizes = [ep for ep in TRAIN_EP_SIZES
             if ep <= min(s.dp, spec.experts) and s.dp % ep == 0 and spec.experts % ep == 0]
    inside = [ep for ep in sizes if ep * s.tp <= GPUS_PER_SERVER]
    beyond = [ep for ep in sizes if ep * s.tp > GPUS_PER_SERVER]
    chosen = inside[-1:] + beyond[-1:]
    return [s._replace(ep=ep, zero=zero) for ep in chosen]


@lru_cache(maxsize=4096)
def _cached_components(spec: ModelSpec, req: Request, s: Strategy) -> Components:
    return components(spec, req, s)


# -- one answer's memo -------------------------------------------------------------------------
# An answer plans the same request, or the same card under a request that differs only in how it
# is paid for, many times: the alternatives search re-plans the request as asked, the purchases
# within a budget re-plan it with mode=buy and again per lighter recipe. Inside `one_answer()`
# each is worked out once. Scoped to one answer, so a catalog, price book or language that
# changes between answers is never served stale.
_MEMO: ContextVar[dict[tuple, Any] | None] = ContextVar("plan_memo", default=None)
# Fields only the price reads (price_plan, obtainable, usable): the sharding and count a card
# gets do not depend on them (tests/engine/test_plan_memo.py checks it).
PAID_ONLY = frozenset({"budget", "mode"})
_every_field = itemgetter(*Request.model_fields)  # by name: __dict__'s order is not relied on
_planned = itemgetter(*(name for name in Request.model_fields if name not in PAID_ONLY))


@contextmanager
def one_answer() -> Iterator[None]:
    """Share planning work within one answer (nested calls join the outer one)."""
    token = _MEMO.set({}) if _MEMO.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _MEMO.reset(token)


_KEPT_AS_VALUES = (int, float, str, bool, tuple, date, type(None))
F = TypeVar("F", bound=Callable[..., Any])


def _per_answer(*, paid: bool, copy: Callable[[Any], Any] = lambda got: got) -> Callable[[F], F]:
    """Memoize fn(spec, req, ...) inside `one_answer()`. paid=False: requests that differ only
    in PAID_ONLY share one result. Other arguments key by value, or by id when they are objects
    (pydantic's equality of a ModelSpec or a card is slow); the memo keeps those objects alive,
    so an id is not reused while it lives. `copy`: what each caller gets (fresh lists)."""

    def wrap(fn: F) -> F:
        @wraps(fn)
        def memoized(spec: ModelSpec, req: Request, *args: Any, **kwargs: Any) -> Any:
            memo = _MEMO.get()
            if memo is None:
                return fn(spec, req, *args, **kwargs)
            fields = req.__dict__
            key = (fn.__name__, id(spec), _every_field(fields) if paid else _planned(fields),
                   tuple(kwargs), *(a if isinstance(a, _KEPT_AS_VALUES) else id(a)
                                    for a in (*args, *kwargs.values())))
            if key not in memo:
                memo[key] = (fn(spec, req, *args, **kwargs), (spec, args, kwargs))
            return copy(memo[key][0])

        return memoized  # type: ignore[return-value]

    return wrap


def settings_for(req: Request, s: Strategy, fmt: Format | None = None) -> Settings:
    training = req.is_training
    serving = {} if training else {
        "prompt": req.prompt_tokens, "output": req.answer_tokens,
        "release": fmt.release.repo if fmt and fmt.release else None,
        "kernel": fmt.path.kernel if fmt else None,
        "compute": fmt.path.compute if fmt else None}
    return Settings.build(
        tp=s.tp, dp=s.dp, pp=s.pp, zero=s.zero if training else None, offload=s.offload,
        checkpointing=req.checkpointing_mode, precision=req.precision,
        optimizer=req.optimizer_used if training else None, quant=req.weight_quant,
        seq=req.seq_len if training else None, batch=req.batch if training else None,
        context=None if training else req.context, users=None if training else req.users,
        replicas=s.replicas, engine=req.serving_engine if req.is_serving else None,
        framework=framework_for(req.framework, tp=s.tp, pp=s.pp, ep=s.ep, cp=s.cp).name
        if training else None,
        ep=s.ep, dp_attention=s.dp_attn, cp=s.cp,
        fused_step=req.fused_step if training else False, loss=req.loss, **serving)


# -- speed and service -------------------------------------------------------------------------


def plan_speed(spec: ModelSpec, req: Request, gpu: GpuSpec, gpus: int, s: Strategy) -> Speed:
    if req.is_serving:
        users = users_per_replica(req, s)
        sp = speed.serve_speed(spec, gpu, quant=req.weight_quant, context=req.context,
                               users=users, kv_bytes=1 if req.kv == "fp8" else 2, tp=s.tp,
                               pp=s.pp, engine=req.serving_engine, ep=s.ep, dp_attn=s.dp_attn,
                               prompt=req.prompt_tokens, output=req.answer_tokens,
                               build=req.build)
        return Speed.build(decode_tokens_per_s=round(sp.decode_per_sequence, 1),
                           decode_tokens_per_s_aggregate=round(
                               sp.decode_aggregate * req.users / users, 1),
                           prefill_tokens_per_s=round(sp.prefill), detail=sp.detail)
    tr = _train(spec, req, gpu, gpus, s, tokens=req.tokens)
    hours = tr.gpu_hours / gpus if tr.gpu_hours is not None else None
    return Speed.build(train_tokens_per_s=round(tr.tokens_per_s, 1),
                       train_gpu_hours=None if tr.gpu_hours is None else round(tr.gpu_hours, 1),
                       train_hours=None if hours is None else round(hours, 2),
                       mfu=round(tr.mfu, 3), detail=tr.detail)


def _train(spec: ModelSpec, req: Request, gpu: GpuSpec, gpus: int, s: Strategy,
           tokens: int | None) -> speed.TrainSpeed:
    trainable = (memory.lora_params(spec, req.rank, req.targets)
                 if req.spec.adapters else spec.params)
    return speed.train_speed(spec, gpu, gpus=gpus, method=req.spec,
                             checkpointing=req.checkpointing_mode, seq=req.seq_len,
                             batch=req.batch, zero=s.zero or 0, tp=s.tp, tokens=tokens,
                             trainable=trainable, offload=s.offload, pp=s.pp, ep=s.ep,
                             precision=req.precision, cp=s.cp, framework=req.framework)


def service_of(req: Request, sp: Speed, held: int | None = None) -> Service:
    """What the plan gives against the service level (serving) or the deadline (tokens=);
    `held` is the users at req.context the KV cache holds with KV_SPARE to spare."""
    if req.is_serving:
        per = sp.decode_tokens_per_s or 0.0
        prompt = req.prompt_tokens
        ttft = (prompt / sp.prefill_tokens_per_s + speed.REQUEST_OVERHEAD_S.get(
            req.serving_engine, 0.0)) if sp.prefill_tokens_per_s else math.inf
        misses = []
        # a floor or ceiling nobody asked for is named as the default it is (min_speed=, ttft=)
        if per < req.decode_floor and req.min_speed is not None:
            misses.append(_("{per:.1f} tokens/s per user, under the {floor:g} asked").format(
                per=per, floor=req.decode_floor))
        elif per < req.decode_floor:
            misses.append(_("{per:.1f} tokens/s per user, under the {floor:g} of a reading pace "
                            "(min_speed= sets another)").format(per=per, floor=req.decode_floor))
        if ttft > req.ttft_ceiling and req.ttft is not None:
            misses.append(_("{ttft:.1f} s to the first token at {context} tokens, over the "
                            "{ceiling:g} s asked").format(ttft=ttft, context=prompt,
                                                          ceiling=req.ttft_ceiling))
        elif ttft > req.ttft_ceiling:
            misses.append(_("{ttft:.1f} s to the first token at {context} tokens, over the "
                            "{ceiling:g} s assumed for that prompt (ttft= sets another)").format(
                ttft=ttft, context=prompt, ceiling=req.ttft_ceiling))
        if held is not None and held < req.users:
            misses.append(_("the KV cache holds {held} at {context} tokens with {spare:.0%} "
                            "to spare, under the {users} asked").format(
                held=counted(held, "user"), context=req.context, spare=KV_SPARE - 1, users=req.users))
        return Service.build(meets=not misses, decode_floor=req.decode_floor,
                             decode_per_user=round(per, 1), ttft_ceiling_s=round(req.ttft_ceiling, 2),
                             ttft_s=round(ttft, 3) if math.isfinite(ttft) else None,
                             users_held=held, context=req.context, prompt=prompt,
                             misses=misses)
    if req.tokens is not None and sp.train_hours is not None:
        days = sp.train_hours / 24
        misses = [] if days <= req.deadline_days else [
            _("{days:,.1f} days for the {tokens} tokens, over the {deadline:g} days allowed")
            .format(days=days, tokens=tokens_text(req.tokens), deadline=req.deadline_days)]
        return Service.build(meets=not misses, deadline_days=req.deadline_days,
                             days=round(days, 2), misses=misses)
    return Service.build(meets=True)


# -- choosing a configuration per card -------------------------------------------------------------


class Candidate(NamedTuple):
    gpus: int
    strategy: Strategy
    verdict: str
    need: float  # bytes per GPU
    meets: bool
    reach: float  # how close to the service level or deadline: 1 = met, higher is better
    speed: float  # tokens/s per user (serving) or for the whole plan (training)


# A serving plan meets the service level only when its KV cache holds users x context with this
# much to spare: continuous batching admits a new request only when its blocks are free, and a
# pool filled to the last block stalls admissions and preempts running sequences.
KV_SPARE = 1.1


def users_held(spec: ModelSpec, req: Request, s: Strategy, gpus: int, gpu: GpuSpec) -> int:
    """Users at req.context the plan's KV cache holds with KV_SPARE to spare, all replicas
    together: the memory the engine lets the model use, less everything but the KV cache, over
    one user's KV bytes per GPU."""
    c = _cached_components(spec, req, s)
    engine, _group = _runtime(req, s, gpus)
    per_user = c.kv_cache / users_per_group(req, s)
    if per_user <= 0:
        return 10**9
    pool = gpu.memory_bytes * memory.usable_share(engine, req.gpu_util) - (
        _need(c, req, s, gpus) - c.kv_cache)
    return max(0, math.floor(pool / (KV_SPARE * per_user))) * s.dp_attn * s.replicas


# TensorRT-LLM gives the KV cache this share of the memory left free once the model is loaded
# (kv_cache_free_gpu_mem_fraction: 0.9 by default; its perf-overview runs 0.95 where that does
# not run out of memory), where vLLM reserves a share of the whole card (usable_share).
TRTLLM_KV_FREE_FRACTION = 0.9


def sequences_to_completion(spec: ModelSpec, req: Request, s: Strategy, gpus: int,
                            gpu: GpuSpec) -> int:
    """Sequences of req.context tokens TensorRT-LLM's KV cache holds, all replicas together:
    TRTLLM_KV_FREE_FRACTION of what the model leaves free, over one sequence's KV bytes (no
    blocks kept spare: a request admitted to completion never waits for one)."""
    c = _cached_components(spec, req, s)
    per_user = c.kv_cache / users_per_group(req, s)
    if per_user <= 0:
        return 10**9
    free = gpu.memory_bytes - (_need(c, req, s, gpus) - c.kv_cache)
    return max(0, math.floor(free * TRTLLM_KV_FREE_FRACTION / per_user)) * s.dp_attn * s.replicas


def vllm_sequences(spec: ModelSpec, req: Request, s: Strategy, gpus: int, gpu: GpuSpec) -> int:
    """Sequences vLLM keeps running, all replicas together: its KV pool is gpu_memory_utilization
    of the whole card less the weights, the activation peak its profile run measures
    (memory.vllm_profile_peak) and the NCCL buffers; it admits a request once its prompt's
    blocks are free and preempts the newest when decodes run out of blocks, so the pool holds
    sequences at their mean live length, prompt + half the answer (req.context is the whole
    sequence, prompt + answer), up to max_num_seqs."""
    c = _cached_components(spec, req, s)
    per_token = c.kv_cache / users_per_group(req, s) / req.context
    if per_token <= 0:
        return 10**9
    defaults = memory.vllm_batch_defaults(gpu.name, gpu.memory_bytes)
    nccl = memory.NCCL_BUFFERS if s.replica_gpus > 1 else 0.0
    pool = (gpu.memory_bytes * memory.usable_share("vllm", req.gpu_util) - c.weights
            - memory.vllm_profile_peak(spec, tp=s.tp, defaults=defaults) - nccl)
    live = req.prompt_tokens + req.answer_tokens // 2
    held = min(max(0, math.floor(pool / (per_token * live))), defaults.sequences)
    return held * s.dp_attn * s.replicas


# Sequences TensorRT-LLM runs at once at most: its max_batch_size default (2048).
MAX_RUNNING = 2048
# Benchmarks whose scheduler is TensorRT-LLM's (trtllm-bench, trtllm-serve); any other engine
# named is sized by vLLM's scheduler, the engine gpusize serves with.
TRTLLM = "trtllm"


class FullLoad(NamedTuple):
    users: int
    tokens_per_s: float  # output tokens/s of the whole plan


def full_load(spec: ModelSpec, req: Request, gpu: GpuSpec, gpus: int, s: Strategy,
              concurrency: int | None = None, scheduler: str = "vllm") -> FullLoad:
    """Output throughput under maximum load (requests queued without pause, as trtllm-bench's
    throughput benchmark and `vllm bench serve --request-rate inf` send them), by the
    benchmark's scheduler. TensorRT-LLM (scheduler="trtllm") admits a request only when the
    paged KV cache can hold it to completion (its default capacity policy, GUARANTEED_NO_EVICT:
    no request is ever paused), so the cards hold as many sequences as fit at P + O tokens in
    the memory the model leaves free (sequences_to_completion, up to MAX_RUNNING), and every
    step carries its share of the prompts replacing finished requests. vLLM holds what its
    own pool holds at the mean live length (vllm_sequences) and prefills each arriving prompt
    in whole chunks of its step budget (speed.full_load_step_s). Each live sequence has
    P + O/2 tokens on average over its life: what every step's attention reads.
    `concurrency` caps the sequences in flight where a benchmark states its client's (trtllm-
    bench --concurrency, vLLM bench --max-concurrency)."""
    answer = req.answer_tokens
    mean = max(1, req.prompt_tokens + answer // 2)
    whole = req.model_copy(update={"context": req.prompt_tokens + answer, "users": 1,
                                   "prompt": req.prompt_tokens, "output": answer})
    held = (sequences_to_completion(spec, whole, s, gpus, gpu) if scheduler == TRTLLM
            else vllm_sequences(spec, whole, s, gpus, gpu))
    users = max(1, min(held, concurrency or MAX_RUNNING))
    loaded = whole.model_copy(update={"users": users, "context": mean})
    per_replica = users_per_replica(loaded, s)
    kv_bytes = 1 if req.kv == "fp8" else 2
    if scheduler != TRTLLM:
        defaults = memory.vllm_batch_defaults(gpu.name, gpu.memory_bytes)
        step = speed.full_load_step_s(spec, gpu, quant=req.weight_quant, context=mean,
                                      users=per_replica, kv_bytes=kv_bytes, tp=s.tp,
                                      engine=req.serving_engine, ep=s.ep, dp_attn=s.dp_attn,
                                      prompt=req.prompt_tokens, output=answer,
                                      budget=defaults.tokens)
        return FullLoad(users, per_replica / step * s.replicas)
    sp = speed.serve_speed(spec, gpu, quant=req.weight_quant, context=mean, users=per_replica,
                           kv_bytes=kv_bytes, tp=s.tp, pp=s.pp,
                           engine=req.serving_engine, ep=s.ep, dp_attn=s.dp_attn,
                           prompt=req.prompt_tokens, output=answer, build=req.build,
                           scheduler=scheduler)
    return FullLoad(users, sp.decode_aggregate * s.replicas)


def best_full_load(spec: ModelSpec, req: Request, gpu: GpuSpec, gpus: int,
                   concurrency: int | None = None, scheduler: str = "vllm") -> FullLoad | None:
    """The sharding of `gpus` cards that serves the most output tokens/s under maximum load (a
    throughput benchmark tunes for it: DP attention and EP for MoE models, as TensorRT-LLM's
    DEP8), among those that hold the model; None when none does."""
    found = [full_load(spec, req, gpu, gpus, s, concurrency, scheduler)
             for s in strategies(spec, req, gpus, gpu.has_nvlink)
             if verdict_of(_need(_cached_components(spec, req, s), req, s, gpus),
                           gpu.memory_bytes, req, s, gpus) != "no"]
    return max(found, key=lambda f: f.tokens_per_s) if found else None


def _candidate(spec: ModelSpec, req: Request, gpu: GpuSpec, n: int, s: Strategy
               ) -> Candidate:
    need = _need(_cached_components(spec, req, s), req, s, n)
    verdict = verdict_of(need, gpu.memory_bytes, req, s, n)
    if verdict == "no":
        return Candidate(n, s, verdict, need, False, 0.0, 0.0)
    if req.is_serving:
        sp = speed.serve_speed(spec, gpu, quant=req.weight_quant, context=req.context,
                               users=users_per_replica(req, s),
                               kv_bytes=1 if req.kv == "fp8" else 2, tp=s.tp, pp=s.pp,
                               engine=req.serving_engine, ep=s.ep, dp_attn=s.dp_attn,
                               prompt=req.prompt_tokens, output=req.answer_tokens,
                               build=req.build)
        ttft = (req.prompt_tokens / sp.prefill + speed.REQUEST_OVERHEAD_S.get(
            req.serving_engine, 0.0)) if sp.prefill else math.inf
        held = users_held(spec, req, s, n, gpu)
        reach = min(sp.decode_per_sequence / req.decode_floor, req.ttft_ceiling / ttft,
                    held / req.users)
        return Candidate(n, s, verdict, need, reach >= 1, reach, sp.decode_per_sequence)
    tr = _train(spec, req, gpu, n, s, tokens=req.tokens)
    if req.tokens is None or tr.gpu_hours is None:
        return Candidate(n, s, verdict, need, True, 1.0, tr.tokens_per_s)
    days = tr.gpu_hours / n / 24
    reach = req.deadline_days / days if days else math.inf
    return Candidate(n, s, verdict, need, reach >= 1, reach, tr.tokens_per_s)


@_per_answer(paid=False)
def _best_at(spec: ModelSpec, req: Request, gpu: GpuSpec, n: int) -> Candidate | None:
    """The strategy to use on n cards: meets the service level, then fits, then the fastest
    (ties keep the lighter communication); when only tight ones meet it, the one that leaves
    the most free; when none meets it, the one that comes closest (as `choose` does across
    counts: a 16-stage pipeline that leaves a little more free but decodes at a fifth of the
    speed asked is not the plan to show); None when no sharding is valid."""
    found = [_candidate(spec, req, gpu, n, s) for s in strategies(spec, req, n, gpu.has_nvlink)]
    # context parallelism is for activations nothing else holds (a tight fit is a run:
    # torchtitan's 8K Llama 3.1 8B rows ran at 82 of 94 GiB without it)
    if any(c.verdict != "no" and c.strategy.cp == 1 for c in found):
        found = [c for c in found if c.strategy.cp == 1]
    if not found:
        return None
    return min(found, key=lambda c: (VERDICTS.index(c.verdict) == 2, not c.meets,
                                     VERDICTS.index(c.verdict),
                                     -c.speed if c.verdict == "fits"
                                     else -c.reach if c.verdict == "tight" and not c.meets
                                     else c.need))


@_per_answer(paid=False)
def _first_count_that_runs(spec: ModelSpec, req: Request, gpu: GpuSpec,
                           counts: tuple[int, ...]) -> int:
    """Galloping search for the smallest count whose best sharding runs: memory per GPU only
    falls as cards are added, and training counts run to 131,072."""

    def runs(i: int) -> bool:  # memory only: no speed needed to know that a count runs
        n = counts[i]
        return any(verdict_of(_need(_cached_components(spec, req, s), req, s, n),
                              gpu.memory_bytes, req, s, n) != "no"
                   for s in strategies(spec, req, n, gpu.has_nvlink))

    last, below, i = len(counts) - 1, -1, 0
    while not runs(i):
        if i == last:
            return 0  # nothing runs: scan them all for the closest miss
        below, i = i, min(2 * i + 1, last)
    lo, hi = below + 1, i
    while lo < hi:
        mid = (lo + hi) // 2
        if runs(mid):
            hi = mid
        else:
            lo = mid + 1
    return counts[lo]


@_per_answer(paid=False)
def choose(spec: ModelSpec, req: Request, gpu: GpuSpec,
           counts: tuple[int, ...]) -> Candidate | None:
    """The smallest count that fits and meets the service level or deadline; else the smallest
    that runs (tight) and meets it; else the one that comes closest; else the closest miss."""
    seen: list[Candidate] = []
    skip_below = _first_count_that_runs(spec, req, gpu, counts) if len(counts) > 8 else 0
    for n in counts:
        if n < skip_below:
            continue
        c = _best_at(spec, req, gpu, n)
        if c is None:
            continue
        seen.append(c)
        if c.verdict == "fits" and c.meets:
            break
        if c.verdict != "no" and not c.meets and req.is_training and c.reach > 0:
            # training time falls about as 1/n: jump close to the count the deadline needs
            skip_below = int(n / c.reach)
    if not seen:
        return None
    runs = [c for c in seen if c.verdict != "no"]
    # A plan that keeps the headroom beats one that runs only without it, even across servers:
    # the published guides size DeepSeek-V3/R1 in FP8 at 2 x 8 H20, not the 8 x H20 that loads
    # the weights with a few GiB to spare.
    for verdict in ("fits", "tight"):
        good = [c for c in runs if c.verdict == verdict and c.meets]
        if good:
            return min(good, key=lambda c: c.gpus)
    if runs:
        # reaches a tenth apart or less are one miss to a buyer: more cards for a few percent
        # of a target still missed (a first token in 8.4 s not 8.6 s, on 8 times the cards) is
        # not the closer plan
        return max(runs, key=lambda c: (round(c.reach, 1), -c.gpus))
    return min(seen, key=lambda c: c.need / gpu.memory_bytes)


# -- plans -----------------------------------------------------------------------------------

TOO_SMALL = "too small"  # a card no count tried can hold the request


def _access_doc(a: MarketAccess, market: str) -> Access:
    return Access.build(market=market, status=a.status, can_buy=a.can_buy, can_rent=a.can_rent,
                        note=a.note, source=a.source, as_of=a.as_of)


class Format(NamedTuple):
    """One way to hold a model's weights on a card: the format the GPUs hold, the official
    release it comes from (None: converted by the user), and how the card computes with it."""

    quant: str
    release: Release | None
    path: WeightPath


# Formats serving compares by default: the released 16-bit and 8-bit weights (and MXFP4 where
# that is the only release). Official 4-bit releases lose more quality; they are offered as
# alternatives ("with 4-bit AWQ weights") or asked for with quant=.
DEFAULT_SERVING_FORMATS = ("bf16", "fp8", "mxfp4")


def formats_for(spec: ModelSpec, req: Request, gpu: GpuSpec) -> list[Format]:
    """The weight formats to plan on `gpu`: quant= when given; else, serving with vLLM, every
    official release in DEFAULT_SERVING_FORMATS (BF16 beside the FP8 release, say), each as the
    card runs it (FP8 natively on Ada/Hopper, weight-only on Ampere, converted on Ascend)."""
    if req.quant is not None or not req.is_serving or req.serving_engine != "vllm":
        quants = [req.weight_quant]
    else:
        quants = [r.quant for r in spec.releases_all() if r.quant in DEFAULT_SERVING_FORMATS
                  and (gpu.half_dtype == "bf16" or get_quant(r.quant).family == "float")]
        # before Ampere (no bf16: V100, T4, P40) vLLM's FP8 and FP4 weight-only kernels (Marlin)
        # do not run: only the 16-bit release, loaded as fp16
        quants = quants or [req.weight_quant]
    out: list[Format] = []
    for q in quants:
        path = weight_path(gpu, q)
        if any(f.quant == path.quant for f in out):
            continue  # two releases the card holds alike (Ascend upcasts MXFP4 to the BF16 one)
        out.append(Format(path.quant, spec.release(q), path))
    return out


FORMAT_WORDS = {"bf16": "BF16", "fp16": "FP16", "fp32": "FP32", "fp8": "FP8", "mxfp4": "MXFP4",
                "int4": "INT4", "awq": "AWQ", "gptq": "GPTQ", "int8": "INT8", "nf4": "NF4"}
# how each kernel path reads after the format in a plan's strategy
KERNEL_SHORT = {
    "fp8-w8a8": N_("FP8 compute"),
    "w8a16-marlin": N_("run as W8A16, bf16 compute (no FP8 tensor cores)"),
    "int8-w8a8-ascend": N_("converted to W8A8 INT8 with msModelSlim (no FP8 on Ascend)"),
    "mxfp4-native": N_("FP4 compute"),
    "w4a16-mxfp4": N_("run as W4A16, bf16 compute (no FP4 tensor cores)"),
    "bf16-upcast": N_("upcast to bf16 (no MXFP4 kernels in CANN)"),
    "w4a16": N_("W4A16, bf16 compute"),
    "w4a16-fp16": N_("W4A16, fp16 compute (no bf16 on this card)"),
    "bnb-fp16": N_("bitsandbytes, fp16 compute (no bf16 on this card)"),
    "w4a8-ascend": N_("re-quantized to W4A8 with msModelSlim (no AWQ/GPTQ kernels in CANN)"),
    "bnb": N_("bitsandbytes, bf16 compute"),
    "as-fp16": N_("loaded as fp16 (no bf16 on this card)"),
    "as-fp32": N_("computed in fp32 (no bf16, fp16 at 1/64 rate on this card)"),
}


def format_text(fmt: Format) -> str:
    """'FP8 weights (Qwen/Qwen3-235B-A22B-FP8), FP8 compute': the format a plan serves, the
    release it comes from and how the card runs it."""
    rel = fmt.release
    word = FORMAT_WORDS.get(rel.quant if rel else fmt.quant, fmt.quant.upper())
    text = (_("{format} weights ({repo})").format(format=word, repo=rel.repo) if rel
            else _("{format} weights").format(format=word))
    how = KERNEL_SHORT.get(fmt.path.kernel)
    return text + (", " + _(how) if how else "")


def _plan(spec: ModelSpec, req: Request, gpu: GpuSpec, c: Candidate, today: date,
          book: PriceBook, fmt: Format | None = None) -> Plan:
    s, gpus = c.strategy, c.gpus
    comp = _cached_components(spec, req, s)
    mem = build_memory(comp, req, s, gpus, gpu)
    notes = []
    if gpus > GPUS_PER_SERVER:
        notes.append(_("{servers} servers of {per}: needs RoCE or InfiniBand between them")
                     .format(servers=-(-gpus // GPUS_PER_SERVER), per=GPUS_PER_SERVER))
    if mem.verdict == "tight":
        notes.append(_("tight: runs with {free:.0%} of the card free, under the {headroom:.0%} "
                       "headroom advised (set headroom= to accept less)")
                     .format(free=1 - mem.total / mem.capacity, headroom=req.headroom))
    if req.is_training and gpus > 1 and not gpu.has_nvlink:
        notes.append(_("{card} has no NVLink: gradient and shard traffic goes over PCIe")
                     .format(card=gpu.display))
    if gpu.serving_stack:
        notes.append(_("software: {stack}").format(stack=gpu.stack_text))
    market = req.market_choice.market
    got = access(gpu.name, market)
    if got.status in ("secondary", "rental"):
        notes.append(_("in the {market} market: {status}").format(
            market=market_word(market), status=_(STATUS_TEXT[got.status])))
    sp = plan_speed(spec, req, gpu, gpus, s)
    runs = mem.verdict != "no"
    strategy = s.describe(gpus, req.is_serving, gpu.has_nvlink)
    if req.is_serving:
        fmt = fmt or formats_for(spec, req, gpu)[0]
        strategy += "; " + format_text(fmt)
        held = users_held(spec, req, s, gpus, gpu) if runs else None
    else:
        held = None
    return Plan.build(gpu=gpu.name, gpu_display=gpu.display, gpus=gpus, method=req.method,
                      strategy=strategy,
                      settings=settings_for(req, s, fmt if req.is_serving else None),
                      memory=mem, speed=sp,
                      cost=price_plan(gpu, gpus, req, today, sp.train_hours, book, got,
                                      tokens_per_s=sp.train_tokens_per_s, params=spec.params)
                      if runs else None,
                      notes=notes, verdict=mem.verdict, access=_access_doc(got, market),
                      service=service_of(req, sp, held) if runs else Service.build(
                          meets=False, misses=[_("does not run: needs more memory per GPU")]))


def _training_counts(spec: ModelSpec, req: Request, gpu: GpuSpec, chosen: Candidate,
                     counts: tuple[int, ...]) -> list[Candidate]:
    """Other counts of one card worth weighing against the one `choose` found
    (engine.recommend.best_option decides): the smallest that runs, tight or not (one card
    rather than ZeRO-3 over PCIe), and for a job of known size the counts up to one server."""
    out: list[Candidate] = []
    first = _first_count_that_runs(spec, req, gpu, counts)
    if first and first < chosen.gpus:
        c = _best_at(spec, req, gpu, first)
        if c is not None and c.verdict != "no" and c.meets:
            out.append(c)
    if req.tokens is not None or req.spec.pretraining:
        for n in counts:
            if chosen.gpus < n <= GPUS_PER_SERVER:
                c = _best_at(spec, req, gpu, n)
                if c is not None and c.verdict != "no" and c.meets:
                    out.append(c)
    return out


def obtainable(card: str, req: Request, book: PriceBook) -> bool:
    """The asker can buy or rent the card in their market, the way mode= asks: by the
    availability data, or by a vendor quote the team recorded itself."""
    a = access(card, req.market_choice.market)
    buy = a.can_buy or book.team_quoted(card, "buy")
    rent = a.can_rent or book.team_quoted(card, "rent")
    return (buy and req.mode != "rent") or (rent and req.mode != "buy")


def in_card_precision(req: Request, gpu: GpuSpec) -> Request:
    """A card without bf16 (gpus.toml half_dtype; V100 and T4: fp16, P40: fp32): a training run
    is planned in the format the card computes in, never as bf16 (serving keeps its weights as
    stored and computes as formats.weight_path says); serving on Pascal, which vLLM does not
    run (compute capability 7.0), is llama.cpp's unless engine= says otherwise."""
    if gpu.half_dtype == "bf16":
        return req
    if req.is_training:
        return req if req.precision != "bf16" else req.model_copy(
            update={"precision": gpu.half_dtype})
    if gpu.half_dtype == "fp32" and req.engine is None:
        return req.model_copy(update={"engine": "llama.cpp"})
    return req


def cards_of_memory(cards: list[GpuSpec], memory_gb: float) -> list[GpuSpec]:
    """card_memory= (24G显存, 48GB cards): the cards of that marketed memory, or, where none has
    it, those of the nearest memory above it (below it, when none is above)."""
    sizes = sorted({g.memory_gb for g in cards})
    if not sizes:
        return cards
    above = [m for m in sizes if m >= memory_gb - 0.5]
    nearest = above[0] if above else sizes[-1]
    return [g for g in cards if g.memory_gb == nearest]


@_per_answer(paid=True, copy=lambda got: tuple(list(part) for part in got))
def ranked_plans(spec: ModelSpec, req: Request, *, today: date,
                 book: PriceBook) -> tuple[list[Plan], list[str], list[str]]:
    """Per card the configuration `choose` picks (or, pinned, the asked one), ranked best first
    (engine.recommend.rank_key); a line for each card left out; and the cards the market rules
    out (they are planned only when gpu= names one)."""
    if req.gpu:
        cards = [catalog.gpus()[req.gpu]]
        excluded: list[str] = []
    else:
        cards = [g for g in catalog.gpus().values() if obtainable(g.name, req, book)]
        excluded = [g.name for g in catalog.gpus().values()
                    if not obtainable(g.name, req, book)]
        if req.card_memory is not None:
            cards = cards_of_memory(cards, req.card_memory)
    default_counts = SERVE_COUNTS if req.is_serving else TRAIN_COUNTS
    counts = (req.gpus,) if req.gpus else default_counts
    plans: list[Plan] = []
    misses: list[str] = []
    too_small: list[str] = []  # cards that cannot hold it at any count tried: one line for all
    for gpu in cards:
        options: list[Plan] = []
        miss = ""
        on_card = in_card_precision(req, gpu)
        for fmt in formats_for(spec, on_card, gpu):
            r = on_card if fmt.quant == on_card.weight_quant else on_card.model_copy(
                update={"quant": fmt.quant})
            cannot = r.is_serving and unsupported_weights(gpu, r.weight_quant, r.serving_engine)
            if cannot:
                miss = miss or cannot
                continue
            c = choose(spec, r, gpu, counts)
            if c is None:
                miss = miss or _("{card}: no valid sharding for gpus={gpus}").format(
                    card=gpu.name, gpus=req.gpus)
                continue
            if c.verdict == "no" and not req.gpu:
                miss = miss or TOO_SMALL  # one line for all such cards, below
                continue
            options.append(_plan(spec, r, gpu, c, today, book, fmt))
            if c.verdict != "no" and c.meets and not req.gpus and req.is_training:
                options += [_plan(spec, r, gpu, more, today, book, fmt) for more in
                            _training_counts(spec, r, gpu, c, counts)]
            if c.verdict != "no" and c.meets and req.goal == "time" and not req.gpus:
                # more cards finish sooner: consider up to 8x the count (one server at least)
                for bigger in (n for n in counts
                               if c.gpus < n <= max(8 * c.gpus, GPUS_PER_SERVER)):
                    more = _best_at(spec, r, gpu, bigger)
                    if more is not None and more.verdict != "no":
                        options.append(_plan(spec, r, gpu, more, today, book, fmt))
        if not options:
            if miss == TOO_SMALL:
                too_small.append(gpu.display)
            else:
                misses.append(miss)
            continue
        plans.append(best_option(options, req, spec))
    plans = rank_plans(plans, req, spec)
    if too_small:
        misses.append(_("{n} cards cannot hold it even on {count:,} of them (too little memory "
                        "per card): {cards}").format(n=len(too_small), count=counts[-1],
                                                     cards=", ".join(too_small)))
    return plans, misses, excluded


def usable(plan: Plan | None, req: Request) -> bool:
    """A plan the answer can recommend: it runs, meets the service level or deadline, and is
    known to fit the budget when one is given."""
    if plan is None or plan.verdict == "no" or plan.service is None or not plan.service.meets:
        return False
    return req.budget is None or (plan.cost is not None and plan.cost.within_budget is True)
