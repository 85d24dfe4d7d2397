"""From a Request to ranked plans: enumerate card x count x sharding, keep what fits.

Memory depends on the card only through its capacity (and whether it has NVLink, which decides
tensor parallelism), so components are computed once per (count, strategy) and compared against
every card: that is what keeps a full answer within a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from functools import lru_cache
from typing import Any, NamedTuple

from engine import catalog, memory, speed
from engine.architecture import ModelSpec
from engine.catalog import GpuSpec
from engine.cost import price_plan
from engine.i18n import _
from engine.prices import PriceBook
from engine.quant import weight_bytes
from engine.recommend import score
from engine.request import Request
from engine.schema import Memory, Plan, Settings, Speed

TRAIN_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
SERVE_COUNTS = (1, 2, 4, 8, 16, 32)
GPUS_PER_SERVER = 8


class Strategy(NamedTuple):
    tp: int
    dp: int
    pp: int
    zero: int | None
    offload: str

    def describe(self, gpus: int, serving: bool, nvlink: bool) -> str:
        if serving:
            if gpus == 1:
                return _("single GPU")
            parts = []
            if self.tp > 1:
                parts.append(_("tensor parallel TP={tp}").format(tp=self.tp)
                             + ("" if nvlink else _(" over PCIe")))
            if self.pp > 1:
                parts.append(_("layer split over {n} GPUs").format(n=self.pp)
                             + ("" if nvlink else " (PCIe)"))
            return " + ".join(parts)
        parts = []
        if gpus == 1:
            parts.append(_("single GPU"))
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


def _gib(value: float) -> str:
    return f"{value / memory.GIB:.2f} GiB"


def _training(spec: ModelSpec, req: Request, s: Strategy) -> Components:
    wb, gb, ob = memory.recipe_bytes(req.optimizer, req.precision)
    mp = s.tp * s.pp  # model-parallel ways: tensor and pipeline parallelism split the states
    offload_all = s.offload == "all"
    zero = s.zero or 0
    params = spec.params
    if req.spec.adapters:
        base = weight_bytes(spec, req.weight_quant)
        base_per_param = base.total_bytes / params
        trainable = memory.lora_params(spec, req.rank, req.targets)
        frozen = memory.training_weights(params, base_per_param, tp=mp, dp=s.dp, zero=zero,
                                         offload_all=offload_all)
        adapters = memory.training_weights(trainable, wb, tp=mp, dp=s.dp, zero=zero,
                                           offload_all=offload_all)
        weights = frozen + adapters
        gather = memory.zero3_gather_buffer(spec, base_per_param, tp=mp, dp=s.dp, zero=zero,
                                            offload_all=offload_all)
        w_text = lambda: (f"frozen base {base.total_bytes / 1e9:.2f} GB ({base.note}) + "  # noqa: E731
                          f"{trainable / 1e6:.1f}M adapter params x {wb:g} B")
    else:
        trainable = params
        weights = memory.training_weights(params, wb, tp=mp, dp=s.dp, zero=zero,
                                          offload_all=offload_all)
        gather = memory.zero3_gather_buffer(spec, wb, tp=mp, dp=s.dp, zero=zero,
                                            offload_all=offload_all)
        w_text = lambda: f"{params / 1e9:.2f}B params x {wb:g} B"  # noqa: E731
    if req.fused_step and not req.spec.adapters:
        # optimizer step fused into backward (torchtune optimizer_in_bwd): each gradient is
        # applied and freed as soon as it is produced; the largest tensor's is the most alive
        grads = memory.largest_tensor(spec) * gb / mp
        g_text = lambda: (f"one tensor's gradient at a time "  # noqa: E731
                          f"({memory.largest_tensor(spec) / 1e6:.0f}M x {gb:g} B)")
    else:
        grads = memory.gradients(trainable, gb, tp=mp, dp=s.dp, zero=zero,
                                 offload_all=offload_all)
        g_text = lambda: (f"{trainable / 1e9:.3f}B trainable x {gb:g} B{_mp_text(s)}"  # noqa: E731
                          f"{_shard_text(s, 2)}" + (" (on host)" if offload_all else ""))
    offloaded = s.offload in ("optimizer", "all")
    paged = req.optimizer == "paged-adamw-8bit"
    optim = memory.optimizer_states(trainable, ob, tp=mp, dp=s.dp, zero=zero,
                                    offloaded=offloaded or paged)
    acts = memory.activations(spec, seq=req.seq_len, batch=req.batch, tp=s.tp,
                              checkpointing=req.checkpointing_mode, adapters=req.spec.adapters,
                              targets=req.targets, rank=req.rank, compiled=req.compile,
                              offloaded=s.offload == "activations")
    logit = memory.logits(spec, seq=req.seq_len, batch=req.batch, tp=s.tp, loss=req.loss)
    dequant = 0.0
    if req.spec.quantized_base:
        # bitsandbytes dequantizes each NF4 matrix to bf16 for its matmul (forward and
        # backward): one largest linear matrix is live at a time.
        dequant = memory.largest_linear(spec) * 2 / s.tp
    interleaved = not req.fused_step and (s.dp == 1 or zero >= 3)
    reused = memory.gradients_live_with_activations(grads, acts + logit, interleaved=interleaved)
    host = 0.0
    if offloaded or paged:
        host += sharded_host(trainable * ob, s)
    if offload_all:
        host += sharded_host(trainable * (wb + gb), s)
    per_logit = logit * s.tp / (req.seq_len * req.batch * spec.vocab)

    def detail() -> tuple[tuple[str, str], ...]:
        return _training_detail(spec, req, s, w_text=w_text(), g_text=g_text(), gather=gather,
                                offload_all=offload_all, offloaded=offloaded, paged=paged,
                                trainable=trainable, ob=ob, acts=acts, logit=logit,
                                per_logit=per_logit, dequant=dequant, reused=reused)

    return _components(weights=weights + gather, gradients=grads, optimizer=optim,
                       activations=acts + logit + dequant, kv_cache=0.0, host=host,
                       detail=detail, reused=reused)


def _training_detail(spec: ModelSpec, req: Request, s: Strategy, *, w_text: str, g_text: str,
                     gather: float, offload_all: bool, offloaded: bool, paged: bool,
                     trainable: int, ob: float, acts: float, logit: float, per_logit: float,
                     dequant: float, reused: float) -> tuple[tuple[str, str], ...]:
    detail = (
        ("weights", f"{w_text}{_mp_text(s)}{_shard_text(s, 3)}"
         + (f" + ZeRO-3 gather buffer {_gib(gather)}" if gather else "")
         + (" (on host: offload=all)" if offload_all else "")),
        ("gradients", g_text),
        ("optimizer", f"{trainable / 1e9:.3f}B trainable x {ob:g} B ({req.optimizer}){_mp_text(s)}"
         f"{_shard_text(s, 1)}" + (" (on host: offloaded)" if offloaded else "")
         + (" in CUDA unified memory, paged to host RAM under pressure (not counted on the GPU)"
            if paged else "")),
        ("activations", f"{_gib(acts)} saved by the blocks (seq {req.seq_len} x batch {req.batch}, "
         f"checkpointing={req.checkpointing_mode}{', compiled' if req.compile else ''}"
         f"{', offloaded to host' if s.offload == 'activations' else ''}) + {_gib(logit)} logits "
         f"(s x b x vocab {spec.vocab} x {per_logit:g} B, {req.loss} cross-entropy)"
         + (f" + {_gib(dequant)} NF4 dequantization buffer" if dequant else "")),
    )
    if reused:
        detail += (("reused", f"{_gib(reused)}: gradients are created as backward frees "
                    "activations (gradients set to None between steps, no persistent buckets), "
                    "so the peak holds max(activations, gradients), not both"),)
    return detail


def _components(**values: Any) -> Components:
    c = Components(**values)
    return c._replace(allocated=c.weights + c.gradients + c.optimizer + c.activations
                      + c.kv_cache - c.reused)


def sharded_host(total: float, s: Strategy) -> float:
    return total / s.tp / s.pp / s.dp


def _mp_text(s: Strategy) -> str:
    parts = ([f" / TP {s.tp}"] if s.tp > 1 else []) + ([f" / PP {s.pp}"] if s.pp > 1 else [])
    return "".join(parts)


def _shard_text(s: Strategy, stage: int) -> str:
    return f" / ZeRO-{s.zero} shard {s.dp}" if (s.zero or 0) >= stage and s.dp > 1 else ""


def _inference(spec: ModelSpec, req: Request, s: Strategy) -> Components:
    shards = s.tp * s.pp
    size = weight_bytes(spec, req.weight_quant)
    on_gpu = size.total_bytes
    gguf = req.serving_engine == "llama.cpp"
    if gguf:  # llama.cpp keeps the token embedding table in host memory (a lookup, no matmul)
        on_gpu -= size.by_role.get("token_embd", 0)
    weights = on_gpu / shards
    kv_bytes = 1 if req.kv == "fp8" else 2
    kv = memory.kv_cache(spec, context=req.context, users=req.users, kv_bytes=kv_bytes,
                         tp=s.tp, pp=s.pp)
    engine = req.serving_engine
    acts = memory.inference_activations(spec, context=req.context, users=req.users, tp=s.tp,
                                        engine=engine)
    detail = lambda: (  # noqa: E731
        ("weights", f"{size.total_bytes / 1e9:.2f} GB in {req.weight_quant} "
         f"({size.bits_per_weight:.2f} bits/weight; {size.note})"
         + (", token embeddings on the host as llama.cpp does" if gguf else "")
         + f" / {shards} GPU(s)"),
        ("kv_cache", f"{req.users} sequence(s) x {req.context} tokens, {req.kv} KV ("
         + ("MLA latent" if spec.attention == "mla" else f"{spec.kv_heads} KV heads x head_dim "
            f"{spec.head_dim}") + (f", {spec.sliding_layers} layers capped at the "
                                   f"{spec.sliding_window}-token window" if spec.sliding_window
                                   and spec.sliding_layers else "")
         + f") / TP {s.tp} / layer split {s.pp}"),
        ("activations", f"prefill workspace of {engine}: "
         + (f"up to {memory.PREFILL_CHUNK[engine]} prompt tokens per pass"
            if engine in memory.PREFILL_CHUNK else "the whole prompt in one pass")
         + ", plus fp32 logits of the sampled positions"),
    )
    return _components(weights=weights, gradients=0.0, optimizer=0.0, activations=acts,
                       kv_cache=kv, host=0.0, detail=detail)


def components(spec: ModelSpec, req: Request, s: Strategy) -> Components:
    return _inference(spec, req, s) if req.is_serving else _training(spec, req, s)


def _total(c: Components, gpus: int) -> float:
    ctx, nccl, frag = memory.overhead(c.allocated, gpus=gpus)
    return c.allocated + ctx + nccl + frag


def build_memory(c: Components, gpus: int, gpu: GpuSpec, headroom: float) -> Memory:
    ctx, nccl, frag = memory.overhead(c.allocated, gpus=gpus)
    total = c.allocated + ctx + nccl + frag
    detail = dict(c.detail())
    detail["overhead"] = (f"CUDA context {_gib(ctx)}" + (f" + NCCL buffers {_gib(nccl)}" if nccl else "")
                          + f" + allocator fragmentation {memory.FRAGMENTATION:.0%} = {_gib(frag)}")
    return Memory.build(
        weights=round(c.weights), gradients=round(c.gradients), optimizer=round(c.optimizer),
        activations=round(c.activations), kv_cache=round(c.kv_cache),
        overhead=round(ctx + nccl + frag), reused=round(c.reused),
        total=round(total), headroom=round(total * headroom),
        capacity=gpu.memory_bytes, fits=total * (1 + headroom) <= gpu.memory_bytes,
        host_offload=round(c.host), detail=detail)


# -- strategies ------------------------------------------------------------------------------


def _tp_options(spec: ModelSpec, gpus: int) -> list[int]:
    # TP must divide the attention heads (and so stays inside one 8-GPU NVLink server).
    return [t for t in (1, 2, 4, 8) if t <= gpus and gpus % t == 0 and spec.heads % t == 0]


def strategies(spec: ModelSpec, req: Request, gpus: int, nvlink: bool) -> list[Strategy]:
    """Candidate shardings for `gpus` cards, lightest communication first."""
    offload = req.offload or "none"
    if req.is_serving:
        if req.tp:
            if gpus % req.tp:
                return []
            return [Strategy(req.tp, 1, gpus // req.tp, None, "none")]
        if gpus == 1:
            return [Strategy(1, 1, 1, None, "none")]
        tp = min(gpus, GPUS_PER_SERVER) if nvlink and spec.heads % min(gpus, 8) == 0 else 1
        return [Strategy(tp, 1, gpus // tp, None, "none")]
    tps = [req.tp] if req.tp else ([t for t in _tp_options(spec, gpus) if nvlink or t == 1])
    out = []
    for tp in tps:
        if gpus % tp:
            continue
        dp = gpus // tp
        zeros = [req.zero] if req.zero is not None else ([0] if dp == 1 else [0, 1, 2, 3])
        out += [Strategy(tp, dp, 1, z, offload) for z in zeros]
    # Pipeline stages (Megatron-style 1F1B) across servers, TP inside each 8-GPU server, and a
    # distributed optimizer (ZeRO-1) over the data-parallel replicas: how 70B+ models pre-train.
    if req.tp is None and gpus > GPUS_PER_SERVER and nvlink:
        tp = GPUS_PER_SERVER if spec.heads % GPUS_PER_SERVER == 0 else 1
        for pp in (2, 4, 8, 16, 32):
            if gpus % (tp * pp) == 0 and pp <= spec.layers:
                zero = req.zero if req.zero is not None else 1
                out.append(Strategy(tp, gpus // (tp * pp), pp, zero, offload))
    return out


@lru_cache(maxsize=4096)
def _cached_components(spec: ModelSpec, req: Request, s: Strategy) -> Components:
    return components(spec, req, s)


def settings_for(req: Request, s: Strategy) -> Settings:
    training = req.is_training
    return Settings.build(
        tp=s.tp, dp=s.dp, pp=s.pp, zero=s.zero if training else None, offload=s.offload,
        checkpointing=req.checkpointing_mode, precision=req.precision,
        optimizer=req.optimizer if training else None, quant=req.weight_quant,
        seq=req.seq_len if training else None, batch=req.batch if training else None,
        context=None if training else req.context, users=None if training else req.users)


def _plan(spec: ModelSpec, req: Request, gpu: GpuSpec, gpus: int, s: Strategy,
          today: date, book: PriceBook) -> Plan:
    c = _cached_components(spec, req, s)
    mem = build_memory(c, gpus, gpu, req.headroom)
    notes = []
    if gpus > GPUS_PER_SERVER:
        notes.append(_("{servers} servers of {per}: needs RoCE or InfiniBand between them")
                     .format(servers=gpus // GPUS_PER_SERVER, per=GPUS_PER_SERVER))
    if not mem.fits and mem.total <= mem.capacity:
        free = 1 - mem.total / mem.capacity
        notes.append(_("tight: runs with {free:.0%} of the card free, under the {headroom:.0%} "
                       "headroom this answer keeps (set headroom= to accept less)")
                     .format(free=free, headroom=req.headroom))
    if req.is_training and gpus > 1 and not gpu.has_nvlink:
        notes.append(_("{card} has no NVLink: gradient and shard traffic goes over PCIe")
                     .format(card=gpu.display))
    plan_speed_ = plan_speed(spec, req, gpu, gpus, s)
    return Plan.build(gpu=gpu.name, gpu_display=gpu.display, gpus=gpus, method=req.method,
                strategy=s.describe(gpus, req.is_serving, gpu.has_nvlink),
                settings=settings_for(req, s), memory=mem, speed=plan_speed_,
                cost=price_plan(gpu, gpus, req, today, plan_speed_.train_hours, book), notes=notes)


def plan_speed(spec: ModelSpec, req: Request, gpu: GpuSpec, gpus: int, s: Strategy) -> Speed:
    if req.is_serving:
        sp = speed.serve_speed(spec, gpu, quant=req.weight_quant, context=req.context,
                               users=req.users, kv_bytes=1 if req.kv == "fp8" else 2, tp=s.tp,
                               pp=s.pp, engine=req.serving_engine)
        return Speed.build(decode_tokens_per_s=round(sp.decode_per_sequence, 1),
                     decode_tokens_per_s_aggregate=round(sp.decode_aggregate, 1),
                     prefill_tokens_per_s=round(sp.prefill), detail=sp.detail)
    trainable = (memory.lora_params(spec, req.rank, req.targets)
                 if req.spec.adapters else spec.params)
    tr = speed.train_speed(spec, gpu, gpus=gpus, method=req.spec,
                           checkpointing=req.checkpointing_mode, seq=req.seq_len, batch=req.batch,
                           zero=s.zero or 0, tp=s.tp, tokens=req.tokens, trainable=trainable,
                           offload=s.offload, pp=s.pp)
    hours = tr.gpu_hours / gpus if tr.gpu_hours is not None else None
    return Speed.build(train_tokens_per_s=round(tr.tokens_per_s, 1),
                 train_gpu_hours=None if tr.gpu_hours is None else round(tr.gpu_hours, 1),
                 train_hours=None if hours is None else round(hours, 2), mfu=round(tr.mfu, 3),
                 detail=tr.detail)


def fit_at(spec: ModelSpec, req: Request, gpu: GpuSpec, n: int) -> tuple[Strategy | None, tuple]:
    """The strategy to use on n cards (the fastest that fits; ties keep the lighter one), or
    None and the closest miss as (need, strategy)."""
    fitting = []
    closest: tuple = ()
    for s in strategies(spec, req, n, gpu.has_nvlink):
        need = _total(_cached_components(spec, req, s), n) * (1 + req.headroom)
        if need <= gpu.memory_bytes:
            fitting.append(s)
        elif not closest or need < closest[0]:
            closest = (need, s)
    if not fitting:
        return None, closest
    if len(fitting) == 1 or not req.is_training:
        return fitting[0], closest
    return max(fitting, key=lambda s: _train_rate(spec, req, gpu, n, s)), closest


def best_for_card(spec: ModelSpec, req: Request, gpu: GpuSpec,
                  counts: tuple[int, ...]) -> tuple[int, Strategy, bool] | None:
    """Smallest count that fits (with its strategy); else the closest miss."""
    closest: tuple[float, int, Strategy] | None = None
    for n in counts:
        s, miss = fit_at(spec, req, gpu, n)
        if s is not None:
            return n, s, True
        if miss and (closest is None or miss[0] < closest[0]):
            closest = (miss[0], n, miss[1])
    return (closest[1], closest[2], False) if closest else None


def _train_rate(spec: ModelSpec, req: Request, gpu: GpuSpec, gpus: int, s: Strategy) -> float:
    trainable = (memory.lora_params(spec, req.rank, req.targets)
                 if req.spec.adapters else spec.params)
    return speed.train_speed(spec, gpu, gpus=gpus, method=req.spec,
                             checkpointing=req.checkpointing_mode, seq=req.seq_len,
                             batch=req.batch, zero=s.zero or 0, tp=s.tp, tokens=None,
                             trainable=trainable, offload=s.offload, pp=s.pp).tokens_per_s


# -- plans -----------------------------------------------------------------------------------


def ranked_plans(spec: ModelSpec, req: Request, *, today: date,
                 book: PriceBook) -> tuple[list[Plan], list[str]]:
    """Per card, the smallest count that fits (or, pinned, the asked configuration), ranked best
    first; and a line for each card left out."""
    cards = [catalog.gpus()[req.gpu]] if req.gpu else list(catalog.gpus().values())
    default_counts = SERVE_COUNTS if req.is_serving else TRAIN_COUNTS
    counts = (req.gpus,) if req.gpus else default_counts
    plans: list[Plan] = []
    misses: list[str] = []
    for gpu in cards:
        found = best_for_card(spec, req, gpu, counts)
        if found is None:
            misses.append(_("{card}: no valid sharding for gpus={gpus}").format(
                card=gpu.name, gpus=req.gpus))
            continue
        n, s, fits = found
        if not fits and not req.gpu:
            misses.append(_("{card}: does not fit in {count} cards").format(
                card=gpu.display, count=counts[-1]))
            continue
        options = [_plan(spec, req, gpu, n, s, today, book)]
        if fits and req.goal == "time" and not req.gpus:
            # more cards finish sooner: consider up to 8x the smallest count (one server at least)
            for bigger in (c for c in counts if n < c <= max(8 * n, GPUS_PER_SERVER)):
                more, _miss = fit_at(spec, req, gpu, bigger)
                if more is not None:
                    options.append(_plan(spec, req, gpu, bigger, more, today, book))
        plans.append(min(options, key=lambda p: score(p, req)))
    plans.sort(key=lambda p: (score(p, req), p.gpus * p.memory.capacity))
    return plans, misses


def usable(plan: Plan | None, req: Request) -> bool:
    """A plan the answer can recommend: it fits, and fits the budget when one is given."""
    return plan is not None and score(plan, req)[0] != float("inf")
