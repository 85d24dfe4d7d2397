"""gpusize's sizing engine: pure functions over pydantic models.

`answer("13B full-finetune")` parses, resolves the model and plans. No Slack, Redis or network
imports here; the Hub is reached only through a look-up passed in (engine.hub.lookup).
"""

from __future__ import annotations

from engine.answer import Answer
from engine.parse import ParseError, parse
from engine.plan import estimate
from engine.resolve import HubLookup, UnknownModel, resolve_model

__all__ = ["Answer", "ParseError", "UnknownModel", "answer"]


def answer(text: str, *, hub: HubLookup | None = None) -> Answer:
    """Answer one query line. Raises ParseError or UnknownModel with a one-line message."""
    req = parse(text)
    spec, notes = resolve_model(req.model, hub=hub)
    return estimate(spec, req, query=text, model_notes=notes)
