"""The one way from a question to an Answer, used by the CLI, the bot, validation and benches.

`ask("13B full-finetune")` reads a command line; `size(request)` answers a Request: the model is
resolved (catalog, size template, or the Hub through the look-up passed in), plans are ranked,
and when nothing usable comes out the changes that would fit are tried.
"""

from __future__ import annotations

from datetime import date

from engine import memory, recommend
from engine.alternatives import alternatives
from engine.architecture import ModelSpec
from engine.explain import assumptions, warnings
from engine.i18n import _
from engine.parse import parse
from engine.plan import ranked_plans, usable
from engine.prices import PriceBook, price_book
from engine.request import Request
from engine.resolve import HubLookup, resolve_model
from engine.schema import Answer, ModelInfo


def ask(text: str, *, hub: HubLookup | None = None, book: PriceBook | None = None,
        today: date | None = None) -> Answer:
    """Answer one command line. Raises ParseError or UnknownModel with a one-line message."""
    return size(parse(text), hub=hub, book=book, today=today, query=text)


def size(req: Request, *, hub: HubLookup | None = None, book: PriceBook | None = None,
         today: date | None = None, query: str = "") -> Answer:
    """The full answer for one request: ranked plans, the recommendation and why, what would
    fit instead when nothing does, the seeds' advice and a trial run, and the assumptions."""
    spec, notes = resolve_model(req.model, hub=hub)
    return answer_for(spec, req, query=query, model_notes=notes, today=today, book=book)


def answer_for(spec: ModelSpec, req: Request, *, query: str = "",
               model_notes: tuple[str, ...] = (), today: date | None = None,
               book: PriceBook | None = None) -> Answer:
    """`size` for a model already resolved (validation and tests pass specs directly)."""
    today = today or date.today()
    book = book or price_book()
    plans, misses = ranked_plans(spec, req, today=today, book=book)
    top = plans[0] if plans else None
    fits = usable(top, req)
    text = ""
    if fits:
        text = recommend.recommendation(top, req, plans[1] if len(plans) > 1 else None)
    elif top is not None and top.memory.fits:
        text = _("Nothing fits the budget: ") + recommend.over_budget(plans, req, book)
    elif top is not None:
        m = top.memory
        text = _("Does not fit {n} x {card}: needs {need:.1f} GiB + {headroom:.0%} headroom per "
                 "GPU, the card has {capacity:.1f} GiB.").format(
            n=top.gpus, card=top.gpu_display, need=m.total / memory.GIB, headroom=req.headroom,
            capacity=m.capacity / memory.GIB) + _(" What would fit is listed below.")
    info = ModelInfo.build(name=spec.name, display=spec.display, params=spec.params,
                     active_params=spec.active_params, source=spec.source,
                     retrieved=spec.retrieved, template=spec.template)
    return Answer.build(query=query, pinned=bool(req.gpu and req.gpus), model=info, plans=plans,
                  recommendation=text,
                  alternatives=[] if fits else alternatives(spec, req, today=today, book=book),
                  advice=recommend.advice(spec, req, plans),
                  trial=recommend.trial(top, req) if fits else None,
                  assumptions=assumptions(spec, req, model_notes, book),
                  warnings=warnings(spec, req, plans) + misses)
