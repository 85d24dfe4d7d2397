"""The one way from a question to an Answer, used by the CLI, the bot, validation and benches.

`ask("13B full-finetune")` reads a command line; `size(request)` answers a Request: the model is
resolved (catalog, size template, or the Hub through the look-up passed in), plans are ranked,
and when nothing usable comes out the changes that would fit are tried.
"""

from __future__ import annotations

from datetime import date

from engine import catalog, recommend
from engine.alternatives import alternatives, budget_search, buy_within_budget
from engine.api_prices import compare
from engine.architecture import ModelSpec
from engine.bom import bill_of_materials
from engine.capacity import at_capacity, capacity, largest_fit
from engine.catalog import GPUS_PER_SERVER
from engine.explain import assumptions, warnings
from engine.i18n import _, counted
from engine.launch import launch_for
from engine.parse import build_request
from engine.plan import (
    DEFAULT_SERVING_FORMATS,
    FORMAT_WORDS,
    in_card_precision,
    one_answer,
    ranked_plans,
    usable,
)
from engine.prices import PriceBook, price_book
from engine.reader import check_model_asked, read
from engine.request import LARGEST_MODEL, Draft, Request
from engine.resolve import HubLookup, UnknownModel, resolve_model
from engine.schema import Alternative, Answer, MarketInfo, ModelFit, ModelInfo, Plan, Query
from engine.traffic import (
    REASONING_ANSWER,
    REASONING_ANSWER_SOURCE,
    request_lengths,
    with_traffic,
)


def ask(text: str, *, hub: HubLookup | None = None, book: PriceBook | None = None,
        today: date | None = None, every_plan: bool = False) -> Answer:
    """Answer one command line. Raises ParseError or UnknownModel with a one-line message.
    `every_plan`: every plan carries its bill of materials, API comparison and commands (the
    `--json` document); otherwise only the recommended one does, which is all any surface
    shows, and the rest would cost about half again the answer's time."""
    reading = read(text)
    check_model_asked(reading)
    query = Query.build(text=text, read=list(reading.read), skipped=list(reading.skipped),
                        question=reading.question, notes=list(reading.notes))
    return size(build_request(Draft(reading.values)), hub=hub, book=book, today=today,
                query=query, every_plan=every_plan)


def size(req: Request, *, hub: HubLookup | None = None, book: PriceBook | None = None,
         today: date | None = None, query: str | Query = "",
         every_plan: bool = False) -> Answer:
    """The full answer for one request: ranked plans, the recommendation and why, what would
    fit instead when nothing does, the seeds' advice and a trial run, and the assumptions."""
    if req.model == LARGEST_MODEL:
        today = today or date.today()
        book = book or price_book()
        fit, spec = largest_model(req, today, book)
        # the model is answered with the recipe that made it fit, so its plan is the one found
        return answer_for(spec, req.model_copy(update={"model": spec.name, **fit.recipe_update}),
                          query=query,
                          today=today, book=book, every_plan=every_plan, largest=fit)
    spec, notes = resolve_model(req.model, hub=hub)
    return answer_for(spec, req, query=query, model_notes=notes, today=today, book=book,
                      every_plan=every_plan)


def prepared(spec: ModelSpec, req: Request) -> Request:
    """The request the forward answer asks for this model: a reasoning model's serving context,
    the released format, the users requests= brings (what answer_for does before planning)."""
    return with_traffic(with_native_format(spec, with_model_defaults(spec, req)[0])[0])[0]


def largest_model(req: Request, today: date, book: PriceBook) -> tuple[ModelFit, ModelSpec]:
    """MODEL `largest`: the largest catalog model the method runs on the box gpu= gpus=; an
    UnknownModel saying why when no box is given or nothing runs on it."""
    if not (req.gpu and req.gpus):
        raise UnknownModel(_("MODEL largest asks what a box runs: give the cards, e.g. largest "
                             "lora gpu=4090 gpus=8."))
    fit, spec = largest_fit(req, today, book, prepared)
    if spec is None:
        card = catalog.gpus()[req.gpu].display
        if req.is_serving:
            raise UnknownModel(_("{gpus} x {card} serves none of the catalog's models to {users} "
                                 "at {floor:g} tokens/s each: {why}.").format(
                gpus=req.gpus, card=card, users=counted(req.users, "user"),
                floor=req.decode_floor, why=fit.limit))
        raise UnknownModel(_("{gpus} x {card} runs none of the catalog's models with {method}: "
                             "{why}.").format(gpus=req.gpus, card=card,
                                              method=recommend.method_name(req.method),
                                              why=fit.limit))
    return fit, spec


# A reasoning model's serving context when context= is not given: a prompt of this many tokens
# plus the model's typical output (its maker's recommended generation length).
REASONING_PROMPT = 4096


def with_model_defaults(spec: ModelSpec, req: Request) -> tuple[Request, tuple[str, ...]]:
    """Serving a reasoning model without context=: the context holds a prompt and the model's
    typical output (R1, Qwen3 in thinking mode: 32k), as long as the model allows."""
    given = req.model_fields_set
    if not (req.is_serving and spec.reasoning and spec.typical_output) or "context" in given:
        return req, ()
    output = req.output or spec.typical_output
    prompt = req.prompt or REASONING_PROMPT
    context = min(spec.max_context, prompt + output)
    output = min(output, context - min(prompt, context - 1))
    note = _("{model} is a reasoning model: its answers run to about {output:,} tokens ({source});"
             " serving is sized for {context:,}-token sequences ({prompt:,} of prompt, {answer:,} "
             "of answer; set context=, prompt=, output=)").format(
        model=spec.display, output=spec.typical_output,
        source=spec.reasoning_source.split(" (")[0],  # the URL; the quote stays in the catalog
        context=context, prompt=context - output, answer=output)
    update = {"context": context, "output": output}
    if req.requests is None or req.output is not None:
        return req.model_copy(update=update), (note,)
    # traffic: each sequence still holds the longest answer, but the requests in flight
    # (Little's law) and the month's tokens take the mean one
    mean = min(REASONING_ANSWER, output)
    update |= {"prompt": context - output, "output": mean}
    mean_note = _("requests= counts the mean answer with its thinking, {mean:,} tokens (DeepSeek-R1 "
                  "in production: {source}), not the {cap:,} each sequence is sized to hold "
                  "(set output=)").format(mean=mean, source=REASONING_ANSWER_SOURCE, cap=output)
    return req.model_copy(update=update), (note, mean_note)


def with_training_precision(spec: ModelSpec, req: Request) -> tuple[Request, tuple[str, ...]]:
    """Pre-training a model released natively in FP8 (DeepSeek-V3/R1: 'FP8 mixed precision
    training', the checkpoint as trained) follows its recipe: FP8 GEMMs where the card has FP8
    tensor cores (engine.speed.fp8_training), unless precision= says otherwise."""
    if not (req.spec.pretraining and spec.native_quant == "fp8") \
            or "precision" in req.model_fields_set:
        return req, ()
    note = _("{model} was trained with FP8 GEMMs ({source}): pre-training is sized with"
             " precision=fp8 (bf16 on cards without FP8 tensor cores)").format(
        model=spec.display, source=spec.native_source.split(" (")[0])
    return req.model_copy(update={"precision": "fp8"}), (note,)


def with_native_format(spec: ModelSpec, req: Request) -> tuple[Request, tuple[str, ...]]:
    """LoRA's frozen base uses the released weights' format (FP8 for DeepSeek-V3, MXFP4 for
    gpt-oss) unless quant= says otherwise. Serving compares the official releases per card
    (engine.plan.formats_for); the note says which ones."""
    native = spec.native_quant
    if req.quant is not None:
        return req, ()
    if req.is_serving:
        formats = [r for r in spec.releases_all() if r.quant in DEFAULT_SERVING_FORMATS]
        if len(formats) < 2 and native in ("bf16", "fp16"):
            return req, ()
        listed = _(", ").join(_("{format} ({repo})").format(
            format=FORMAT_WORDS.get(r.quant, r.quant), repo=r.repo) for r in formats)
        return req, (_("official releases compared on every card: {releases}; each plan names the "
                       "one it serves and how the card runs it (FP8 natively only with FP8 tensor "
                       "cores: Ada, Hopper, Blackwell, MI300; weight-only on Ampere, converted to "
                       "INT8 on Ascend); set quant= for one format").format(releases=listed),)
    if native in ("bf16", "fp16") or not req.spec.adapters or native not in req.spec.quants:
        return req, ()
    note = _("{model} is released in {quant} ({source}): sized in that format; set quant= for "
             "another").format(model=spec.display, quant=native, source=spec.native_source
                               or spec.source)
    return req.model_copy(update={"quant": native}), (note,)


def request_of(req: Request, plan: Plan) -> Request:
    """The request a plan answers: each card serves the format its plan chose, and a plan the
    budget search changed (a lighter optimizer, LoRA, a shorter recipe) trains as it says."""
    s = plan.settings
    if req.is_serving:
        return req if req.quant is not None else req.model_copy(update={"quant": s.quant})
    update = {"method": plan.method, "checkpointing": s.checkpointing, "offload": s.offload}
    if s.optimizer is not None:
        update["optimizer"] = s.optimizer
    if s.batch is not None:
        update["batch"] = s.batch
    if s.seq is not None:
        update["seq"] = s.seq
    changed = {k: v for k, v in update.items() if getattr(req, k) != v}
    return req.model_copy(update=changed) if changed else req


def complete_plan(spec: ModelSpec, req: Request, plan: Plan, today: date,
                  book: PriceBook) -> Plan:
    """A ranked plan with what beyond the cards it takes (issue 25): the whole server, the hosted
    APIs for the same traffic (serving), and the commands that run it."""
    if plan.verdict == "no":  # nothing to build or launch; the APIs alone for given traffic
        api = compare(plan, spec, request_of(req, plan), book, today)
        return plan.model_copy(update={"api": api}) if api is not None else plan
    gpu = catalog.gpus()[plan.gpu]
    req = request_of(req, plan)
    return plan.model_copy(update={
        "bom": bill_of_materials(spec, req, plan, gpu, book),
        "api": compare(plan, spec, req, book, today),
        "launch": launch_for(spec, req, plan, gpu)})


def _alternatives(spec: ModelSpec, req: Request, top: Plan | None, good: bool, today: date,
                  book: PriceBook) -> list[Alternative]:
    """What would fit when nothing usable came out; when serving across servers, the changes
    that would serve from fewer cards (FP8 or 4-bit weights, say), with what they give up."""
    if not good or (top is not None and top.access is not None
                    and not (top.access.can_buy or top.access.can_rent)):
        return alternatives(spec, req, today=today, book=book)
    if req.gpu and top is not None and top.verdict == "tight":
        # the asked cards run it only tight: what others ran on them, and lighter recipes
        return alternatives(spec, req, today=today, book=book)
    if req.is_serving and top is not None and top.gpus > GPUS_PER_SERVER:
        return [a for a in alternatives(spec, req, today=today, book=book)
                if a.plan.gpus < top.gpus]
    return []


def host_memory_text(plan: Plan, host_gb: float) -> str:
    """512G内存 said: what the plan keeps in host RAM per server (offload=) against it, or that
    it keeps nothing there."""
    per_gpu = plan.memory.host_offload if plan.memory is not None else 0
    if not per_gpu:
        return _("The {gb:g} GB of host RAM said is not used: this plan offloads nothing to "
                 "the CPU.").format(gb=host_gb)
    need = per_gpu * min(plan.gpus, GPUS_PER_SERVER) / 1e9
    if need <= host_gb:
        return _("Offload keeps {need:,.0f} GB in host RAM per server, within the {gb:g} GB "
                 "said.").format(need=need, gb=host_gb)
    return _("Offload needs {need:,.0f} GB of host RAM per server, more than the {gb:g} GB "
             "said.").format(need=need, gb=host_gb)


@one_answer()  # the searches below share the plans they compute
def answer_for(spec: ModelSpec, req: Request, *, query: str | Query = "",
               model_notes: tuple[str, ...] = (), today: date | None = None,
               book: PriceBook | None = None, every_plan: bool = False,
               largest: ModelFit | None = None) -> Answer:
    """`size` for a model already resolved (validation and tests pass specs directly);
    `largest`: the model is the largest the box runs (MODEL largest), and why no larger one."""
    today = today or date.today()
    book = book or price_book()
    original = req
    req, defaults = with_model_defaults(spec, req)
    req, native = with_native_format(spec, req)
    req, fp8 = with_training_precision(spec, req)
    if req.gpu:  # a card without bf16 named (V100, T4, P40): the whole answer in its own format
        req = in_card_precision(req, catalog.gpus()[req.gpu])
    native = defaults + native + fp8
    req, traffic = with_traffic(req)
    plans, misses, excluded = ranked_plans(spec, req, today=today, book=book)
    top = plans[0] if plans else None
    asked = req
    if req.budget is not None and not usable(top, req) and not (req.gpu and req.gpus):
        # before "over budget": the plans the budget does pay for (a tight fit, a lighter
        # optimizer, fewer cards with a longer run), each saying what it changes
        within = budget_search(spec, req, today=today, book=book,
                               keep_context="context" in original.model_fields_set)
        if within:
            plans = recommend.rank_plans(within + plans, req, spec)
            top = plans[0]
    plans = [complete_plan(spec, req, p, today, book) if i == 0 or every_plan else p
             for i, p in enumerate(plans)]
    top = plans[0] if plans else None
    if req.is_serving and req.quant is None and top is not None:
        # what the answer's text describes: the format the recommended plan serves
        req = req.model_copy(update={"quant": top.settings.quant})
    good = usable(top, req)
    alts = _alternatives(spec, asked, top, good, today, book)
    if good:
        text = recommend.recommendation(top, req, plans[1] if len(plans) > 1 else None)
    elif req.gpu and req.gpus and top is not None and top.verdict != "no":
        text = recommend.pinned_text(top, req)  # the configuration asked about runs: say how
    else:
        same = next((a for a in alts if req.gpu and a.plan.gpu == req.gpu), None)
        text = recommend.no_plan_text(plans, req, same_card=same, misses=misses)
    over = _("Over budget: ")
    if (top is not None and top.verdict != "no" and top.cost is not None
            and top.cost.within_budget is False and not text.startswith(over)):
        text = over + text  # whatever else it misses, a plan over the budget says so first
    if req.gpu and top is not None and top.access is not None and not (
            top.access.can_buy or top.access.can_rent):
        # a card the market gets only through grey channels (or not at all): said first
        lead = recommend.unobtainable_text(top, req)
        text = lead + recommend.sentence_gap(lead) + text
    if req.host_memory is not None and top is not None and top.verdict != "no":
        text += recommend.sentence_gap(text) + host_memory_text(top, req.host_memory)
    box = capacity(spec, asked, today, book, prepared, original, largest)
    full = at_capacity(spec, asked, box, today, book, "users" in original.model_fields_set)
    if full is not None and plans:  # a box you own: its worth against an API at what it carries
        full_req, full_plan = full
        full_req = request_of(full_req, full_plan)
        # the launched box serves the traffic's requests, else typical ones (those requests=
        # would assume), not its whole context split in two
        prompt, answer = request_lengths(asked)
        typical = full_req.model_copy(update={"prompt": prompt, "output": answer})
        api = compare(full_plan, spec, typical, book, today, asked)
        if api is not None:
            api.notes.insert(0, _("compared at the box's capacity as launched below ({users} at "
                                  "once, up to {context:,} tokens each), for requests of "
                                  "{prompt:,} tokens in and {answer:,} out").format(
                users=counted(full_req.users, "user"), context=full_req.context,
                prompt=prompt, answer=answer))
            gpu = catalog.gpus()[full_plan.gpu]
            plans[0] = plans[0].model_copy(update={
                "api": api, "launch": launch_for(spec, full_req, full_plan, gpu)})
    choice = req.market_choice
    market = MarketInfo.build(market=choice.market, reason=_(choice.reason).format(
        market=req.market, region=req.region), excluded=excluded)
    info = ModelInfo.build(name=spec.name, display=spec.display, params=spec.params,
                           active_params=spec.active_params, source=spec.source,
                           retrieved=spec.retrieved, template=spec.template,
                           mtp_params=spec.mtp_params, native_quant=spec.native_quant)
    if isinstance(query, str):
        query = Query.build(text=query)
    return Answer.build(query=query, pinned=bool(req.gpu and req.gpus), owned=req.owned,
                        model=info,
                        method=req.method, market=market, plans=plans, recommendation=text,
                        alternatives=alts,
                        to_buy=buy_within_budget(spec, asked, top, today=today, book=book,
                                                 keep_context="context" in original.model_fields_set)
                        if good else [],
                        advice=recommend.advice(spec, req, plans),
                        trial=recommend.trial(top, req) if good else None,
                        assumptions=assumptions(spec, req, model_notes + native, book),
                        warnings=warnings(spec, req, plans) + misses, traffic=traffic,
                        capacity=box)
