"""gpusize's sizing engine: pure functions over pydantic models.

`ask("13B full-finetune")` parses a command line and answers it; `size(request)` answers a
Request (engine.sizing). No Slack, Redis or network imports here; the Hub is reached only through
a look-up passed in (engine.hub.lookup).
"""

from __future__ import annotations

from engine.errors import UserError
from engine.parse import ParseError
from engine.resolve import UnknownModel
from engine.schema import Answer
from engine.sizing import ask, size

__all__ = ["Answer", "ParseError", "UnknownModel", "UserError", "ask", "size"]
