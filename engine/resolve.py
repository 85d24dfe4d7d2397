"""MODEL text to a ModelSpec: the catalog, a family template for bare sizes, or the Hub.

The Hub is reached only through a look-up function passed in (engine.hub.lookup in the CLI
and bot), so the engine itself never touches the network.
"""

from __future__ import annotations

from collections.abc import Callable

from engine import catalog
from engine.architecture import ModelSpec
from engine.errors import UserError
from engine.family import parse_size, template_spec
from engine.i18n import _


class UnknownModel(UserError, LookupError):
    """The model is not in the catalog and could not be fetched; the message says why."""


HubLookup = Callable[[str], ModelSpec]


def resolve_model(text: str, *, hub: HubLookup | None = None) -> tuple[ModelSpec, tuple[str, ...]]:
    """The spec and any notes the answer must carry about where it came from."""
    spec = catalog.find_model(text)
    if spec is not None:
        return spec, ()
    if parse_size(text) is not None:
        spec, note = template_spec(text)
        return spec, (note,)
    if "/" in text and hub is not None:
        spec = hub(text)
        return spec, (_("{model}: read from the Hugging Face Hub config.json ({source}), not a "
                        "reviewed catalog entry").format(model=text, source=spec.source),)
    raise UnknownModel(_("unknown model {model}: not in the catalog (closest: {closest}).").format(
        model=text, closest=closest_text(text)))


def closest_text(text: str) -> str:
    """The catalog models nearest to a name, for an error message."""
    return ", ".join(catalog.closest_models(text.split("/")[-1], n=3)) or _("none close")
