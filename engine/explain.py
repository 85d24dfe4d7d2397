"""The assumptions behind every number, and warnings where the request is risky.

Each line names the recipe or constant that produced a figure and how to change it, so two
answers that disagree can be traced to the assumption that differs.
"""

from __future__ import annotations

from engine import memory
from engine.architecture import ModelSpec
from engine.cost import CARD_SHARE, OPS_SHARE_PER_MONTH
from engine.frameworks import (
    DEFAULT_DATA_PARALLEL,
    DEFAULT_MODEL_PARALLEL,
    FRAMEWORK_NAMES,
    FRAMEWORKS,
    RECIPE_DEFAULTS_TEXT,
)
from engine.i18n import _, counted
from engine.market import market_word
from engine.prices import BUY_STALE_DAYS, STALE_DAYS, PriceBook, price_book
from engine.quant import weight_bytes
from engine.recommend import NEAR_COST
from engine.request import Request
from engine.schema import Plan


def framework() -> str:
    return _("framework semantics assumed: PyTorch 2.x with FSDP / DeepSpeed ZeRO sharding, "
             "flash or SDPA attention, PEFT/torchtune for LoRA, vLLM for serving")


def recipe_text(optimizer: str) -> str:
    """The optimizer recipe (memory.RECIPE_TEXT) in the current language."""
    return _(memory.RECIPE_TEXT[optimizer])


def _model_line(spec: ModelSpec) -> str:
    active = _(", {active:.2f}B active per token ({active_experts} of {experts} experts)").format(
        active=spec.active_params / 1e9, active_experts=spec.active_experts,
        experts=spec.experts) if spec.is_moe else ""
    mtp = _(" (plus a {mtp:.1f}B multi-token-prediction module the checkpoint stores, not "
            "loaded for serving)").format(mtp=spec.mtp_params / 1e9) if spec.mtp_params else ""
    return _("model {name}: {params:.2f}B parameters{active}{mtp}, {layers} layers, hidden "
             "{hidden}, {heads} heads / {kv_heads} KV heads, vocab {vocab} (config: {source}, "
             "read {retrieved})").format(name=spec.display, params=spec.params / 1e9,
                                         active=active, mtp=mtp, layers=spec.layers,
                                         hidden=spec.hidden, heads=spec.heads,
                                         kv_heads=spec.kv_heads, vocab=spec.vocab,
                                         source=spec.source, retrieved=spec.retrieved)


def _training_lines(spec: ModelSpec, req: Request) -> list[str]:
    lines = []
    if req.tokens is not None:
        lines.append(_("deadline: the {tokens:,} tokens within {days}{default}; the GPU "
                       "count is sized to it (set days=)").format(
            tokens=req.tokens, days=counted(req.deadline_days, "day"),
            default=_(" (default for {method})").format(method=_(req.spec.label))
            if req.days is None else ""))
    if req.spec.adapters:
        adapters = memory.lora_params(spec, req.rank, req.targets)
        where = _("attention (q,k,v,o)") if req.targets == "attn" else _("all linear layers")
        lines.append(_(
            "{method}: rank {rank} on {where} = {adapters:.1f}M trainable parameters ({share:.2%} "
            "of the model); frozen base stored as {quant}: {note} (set rank= and targets=attn|all)"
        ).format(method=_(req.spec.label), rank=req.rank, where=where, adapters=adapters / 1e6,
                 share=adapters / spec.params, quant=req.weight_quant,
                 note=weight_bytes(spec, req.weight_quant).note))
        lines.append(_("adapters trained with {recipe}").format(recipe=recipe_text(req.optimizer_used)))
    else:
        lines.append(_("optimizer: {recipe} (set optimizer=)").format(
            recipe=recipe_text(req.optimizer_used)))
    ckpt = {
        "full": _("full activation checkpointing: only each block's input is kept, one block is "
                  "recomputed at a time (~33% more compute); the default for fine-tuning"),
        "selective": _(memory.SELECTIVE_TEXT),
        "attention": _(memory.ATTENTION_TEXT),
        "none": _("no activation checkpointing: every block keeps its saved tensors"),
    }[req.checkpointing_mode]
    lines.append(_("{checkpointing} (set checkpointing=none|selective|full|attention)").format(
        checkpointing=ckpt))
    lines.append(_(
        "sequence {seq} tokens x micro-batch {batch} per GPU{defaults}; activations from the "
        "architecture's saved tensors per block (Korthikanti et al. 2022 method, flash attention "
        "so no s^2 term) plus logits in {precision} and their fp32 copy for the loss"
    ).format(seq=req.seq_len, batch=req.batch, precision=req.precision,
             defaults=_(" (defaults; set seq= and batch=)") if req.seq is None else ""))
    master = req.optimizer_used in ("adamw", "sgd") and req.precision != "fp32"
    lines.append(_("precision {precision}{master}").format(
        precision=req.precision, master=_(" with fp32 master weights") if master else ""))
    lines.append(_("sharding: without zero=/tp= each card count takes the fastest sharding that "
                   "fits (ties: the lightest) among DDP, ZeRO-1/2/3 (FSDP), tensor parallel on "
                   "NVLink cards and pipeline stages across servers; offload only when asked "
                   "(offload=optimizer|all|activations)"))
    lines.append(_framework_line(req))
    return lines


def _framework_line(req: Request) -> str:
    """The training framework the speed and the launch command assume, asked for or not."""
    names = "|".join(FRAMEWORK_NAMES)
    if req.framework is not None:
        fw = FRAMEWORKS[req.framework]
        limit = "" if fw.model_parallel else _(
            "; Hugging Face model code runs data parallel only (no tensor, pipeline or expert "
            "parallelism)")
        line = _("training framework {label}{limit} (framework={name}; set framework={names})"
                 ).format(label=_(fw.label), limit=limit, name=fw.name, names=names)
        if fw.name in RECIPE_DEFAULTS_TEXT:
            line += "; " + _(RECIPE_DEFAULTS_TEXT[fw.name])
        return line
    return _("training framework not named: data-parallel plans are sized for {data} and "
             "tensor-, pipeline- or expert-parallel ones for {parallel} (set framework={names})"
             ).format(data=_(FRAMEWORKS[DEFAULT_DATA_PARALLEL].label),
                      parallel=_(FRAMEWORKS[DEFAULT_MODEL_PARALLEL].label), names=names)


def _inference_lines(spec: ModelSpec, req: Request) -> list[str]:
    size = weight_bytes(spec, req.weight_quant)
    engine = req.serving_engine
    lines = [
        _("service level: at least {floor:g} tokens/s per user{default} and the first token "
          "within {ttft:.1f} s at {context} tokens{ttft_default} (set min_speed=, ttft=); "
          "replicas share the users when one copy cannot keep that pace").format(
            floor=req.decode_floor,
            default=_(" (a reading pace)") if req.min_speed is None else "",
            ttft=req.ttft_ceiling, context=req.context,
            ttft_default=_(" (prefill at 800 tokens/s or better, at least 2 s)")
            if req.ttft is None else ""),
        _("memory reserved as {engine} does: {how}").format(engine=engine, how=_(
            "vLLM takes gpu_memory_utilization 0.9 of the card; NCCL buffers with TP or PP")
            if engine == "vllm" else _("static buffers, no NCCL between cards (layer split "
                                        "with copies), token embeddings on the host")
            if engine == "llama.cpp" else _("PyTorch's caching allocator; device_map moves "
                                           "activations between cards without NCCL")),
        _("weights in {quant}: {gb:.2f} GB, {bits:.2f} bits/weight ({note}) (set quant=)").format(
            quant=req.weight_quant, gb=size.total_bytes / 1e9, bits=size.bits_per_weight,
            note=size.note),
        _("KV cache for {users} at once x {context} tokens in {kv} (set users=, "
          "context=, kv=fp8); sized at the context you serve, not the model's maximum "
          "({max_context})").format(users=counted(req.users, "sequence"), context=req.context, kv=req.kv,
                                    max_context=spec.max_context) if not spec.template else
        _("KV cache for {users} at once x {context} tokens in {kv} (set users=, "
          "context=, kv=fp8); a size names no model, so no maximum context is assumed").format(
            users=counted(req.users, "sequence"), context=req.context, kv=req.kv),
        _("multi-GPU: tensor parallel inside a server (vLLM, over NVLink or PCIe at its "
          "all-reduce cost), layer split across servers or in llama.cpp, replicas for "
          "concurrency; one server preferred over several"),
    ]
    if spec.attention == "mla":
        lines.append(_("MLA: the KV cache stores the compressed latent (kv_lora_rank + rope dim) "
                       "per token per layer"))
    return lines


def seeds_rule(spec: ModelSpec, req: Request) -> str | None:
    """The buying guides' rule of thumb next to this answer's recipe (DOMAIN.md), so a reader
    sees which assumption makes the two differ instead of two unexplained numbers."""
    billions = spec.params / 1e9
    if req.is_training and not req.spec.adapters:
        w, g, o = memory.recipe_bytes(req.optimizer_used, req.precision)
        return _("the buying guides' rule of thumb counts 8 bytes/param for a full fine-tune "
                 "(7B -> 56 GB, 13B -> 104 GB): {rule_gb:.0f} GB here, which holds for pure-bf16 "
                 "AdamW (optimizer=adamw-bf16); this answer's recipe counts {per_param:g} "
                 "bytes/param = {gb:.0f} GB of model states before activations").format(
            rule_gb=billions * 8, per_param=w + g + o, gb=billions * (w + g + o))
    if req.is_serving:
        return _("the buying guides' rule of thumb: weights x 1.2 = {gb:.0f} GB in 16 bit; this "
                 "answer sizes the KV cache for the context and users you give instead of a flat "
                 "20%, then keeps the 20% as headroom").format(gb=billions * 2 * 1.2)
    if req.spec.adapters:
        return _("the buying guides' rule of thumb: LoRA needs about a quarter of full "
                 "fine-tuning's memory; this answer counts the frozen base, the adapters and the "
                 "activations")
    return None


def assumptions(spec: ModelSpec, req: Request, model_notes: tuple[str, ...] = (),
                book: PriceBook | None = None) -> list[str]:
    lines = [_model_line(spec), *model_notes]
    lines += _training_lines(spec, req) if req.is_training else _inference_lines(spec, req)
    rule = seeds_rule(spec, req)
    if rule:
        lines.append(rule)
    lines.append(_(
        "runtime overhead: CUDA context {cuda:.1f} GiB, NCCL buffers {nccl:.0f} GiB per GPU when "
        "gpus > 1, allocator fragmentation {fragmentation:.0%} of allocated memory"
    ).format(cuda=memory.CUDA_CONTEXT / memory.GIB, nccl=memory.NCCL_BUFFERS / memory.GIB,
             fragmentation=memory.FRAGMENTATION))
    lines.append(_("headroom {headroom:.0%}: a plan fits when total x {factor:.2f} <= card memory "
                   "as the driver reports it (the buying guides' 20% margin; set headroom=)").format(
        headroom=req.headroom, factor=1 + req.headroom))
    lines += _cost_lines(req, book or price_book())
    lines.append(framework())
    return lines


def _cost_lines(req: Request, book: PriceBook) -> list[str]:
    if req.is_serving and req.hours is None:
        use = _("around the clock (730 h/month)")
    else:
        use = _("{hours:g} h/month{default}").format(
            hours=req.hours_per_month,
            default=_(" (default: the buying guides note most teams use under 30% of their cards)")
            if req.hours is None else "")
    ranking = (_("cheapest first among the plans that run and meet the service level or "
                 "deadline (serving: over the horizon; training: per token trained); costs "
                 "within {near:.0%} of each other are a tie, taken by fewer servers, then fewer "
                 "cards, then less time").format(near=NEAR_COST)
               if req.goal == "cost" else _("fastest first (goal=time)"))
    choice = req.market_choice
    converted = []
    if req.budget is not None and req.budget.currency not in (None, req.answer_currency):
        converted.append(_("budget {amount:,.0f} {source} = {target:,.0f} {currency} at {rate:g} "
                           "CNY/USD ({date}): the budget converts, the market stays {market} "
                           "(set market= to change it)").format(
            amount=req.budget.amount, source=req.budget.currency,
            target=book.convert(req.budget.amount, req.budget.currency, req.answer_currency),
            currency=req.answer_currency, rate=book.fx.cny_per_usd, date=book.fx.date,
            market=market_word(choice.market)))
    return [
        *converted,
        _("cost in {currency} at {use} over {months} (set hours=, months=, currency=); "
          "USD prices converted at {rate:g} CNY/USD ({date}, {source})").format(
            currency=req.answer_currency, use=use, months=counted(req.months, "month"),
            rate=book.fx.cny_per_usd, date=book.fx.date, source=book.fx.source),
        _("buy: the catalog's server price, else cards / {card_share:.0%} (cards are 60-70% of a "
          "server, per a buying guide); power = (TDP x GPUs + host) x PUE {pue:g} x price/kWh for "
          "region={region}; operations {ops:.1%} of capex a month (a buying guide's 8x A800 running "
          "cost less its power); rent by the plan's size, from the {market} market: per-card "
          "listings up to one server, reserved clusters or dedicated server-months beyond "
          "(docs/PRICES.md)").format(
            card_share=CARD_SHARE, pue=book.pue.value, region=req.region or "default",
            ops=OPS_SHARE_PER_MONTH, market=market_word(choice.market)),
        _("rents older than {days} days and purchase prices older than {buy_days} days are "
          "marked STALE; ranking: {ranking}{budget}").format(
            days=STALE_DAYS, buy_days=BUY_STALE_DAYS, ranking=ranking,
            budget=_(", within budget= (to buy: the price up front; to rent: the run, with "
                     "tokens= or else one assumed epoch of a fine-tune or 20 tokens per "
                     "parameter of pre-training; serving: {months} months)").format(
                months=req.months) if req.budget else ""),
        _("market {market} ({reason}; set market=china|global): only cards that can be bought "
          "(new or second-hand) or rented there are planned, per engine/data/availability.toml; "
          "cards reaching it only through grey channels are left out").format(
            market=market_word(choice.market), reason=_(choice.reason).format(market=req.market,
                                                                  region=req.region)),
    ]


def warnings(spec: ModelSpec, req: Request, plans: list[Plan]) -> list[str]:
    out = []
    # a bare size (32B) borrows a released model's shapes, not its context limit
    if req.is_serving and req.context > spec.max_context and not spec.template:
        out.append(_("context {context} exceeds {model}'s maximum context {max_context}").format(
            context=req.context, model=spec.display, max_context=spec.max_context))
    if req.is_training and req.seq_len > spec.max_context and not spec.template:
        out.append(_("seq {seq} exceeds {model}'s maximum context {max_context}").format(
            seq=req.seq_len, model=spec.display, max_context=spec.max_context))
    if req.optimizer_used == "paged-adamw-8bit":
        out.append(_("paged optimizer states live in CUDA unified memory: PyTorch's memory "
                     "statistics do not count them, and steps slow down when they page to host"))
    if plans and all(p.verdict == "no" for p in plans):
        # "as asked": the alternatives, when any, are plans that do run
        out.append(_("nothing fits as asked: each plan's memory breakdown shows its largest "
                     "component"))
    elif plans and not any(p.memory.fits for p in plans):
        out.append(_("every plan runs tight: none keeps the {headroom:.0%} headroom free (the "
                     "first runs with {free:.0%} free)").format(
            headroom=req.headroom, free=max(0.0, 1 - plans[0].memory.total
                                             / plans[0].memory.capacity)))
    if req.tokens is None and req.spec.pretraining:
        out.append(_("tokens= not given: training time and GPU-hours need the token count"))
    return out
