"""MODEL text to a ModelSpec: the catalog, a family template for bare sizes, or the Hub.

The Hub is reached only through a look-up function passed in (engine.hub.lookup in the CLI
and bot), so the engine itself never touches the network.
"""

from __future__ import annotations

from collections.abc import Callable

from engine import catalog
from engine.architecture import ModelSpec
from engine.family import parse_size, template_spec


class UnknownModel(LookupError):
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
        return spec, (f"{text}: read from the Hugging Face Hub config.json ({spec.source}), "
                      "not a reviewed catalog entry",)
    near = ", ".join(catalog.closest_models(text.split("/")[-1], n=3)) or "none close"
    raise UnknownModel(f"unknown model {text}: not in the catalog (closest: {near}).")
