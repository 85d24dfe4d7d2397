"""Model shapes for a bare size (`13B`, `0.5B`, `8x7B`): a generic Llama shape.

A size says nothing about widths, so we borrow the shape of the released Llama-style model
nearest in size (Qwen2.5-0.5B below 1B, where no Llama exists) and set the layer count so the
total matches the size asked for. The answer says which template and how many layers.
"""

from __future__ import annotations

import math
import re

from engine import catalog
from engine.architecture import ModelSpec, tensors, total_params
from engine.i18n import _

# Released Llama-architecture models whose widths serve as templates, smallest first.
TEMPLATES = ("qwen2.5-0.5b", "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "llama-2-13b",
             "yi-1.5-34b", "llama-3.1-70b", "llama-3.1-405b")
# a bare size: 13B, 0.5b, 350M, 8x7B (experts x size); the grammar reads sizes with it too
SIZE_RE = re.compile(r"^(?:(\d+)x)?(\d+(?:\.\d+)?)([bm])$", re.IGNORECASE)


def parse_size(text: str) -> tuple[int | None, float] | None:
    """`13B` -> (None, 13e9); `8X7B` -> (8, 7e9); None when the text is not a size."""
    m = SIZE_RE.match(text)
    if not m:
        return None
    experts, number, unit = m.groups()
    scale = 1e9 if unit.lower() == "b" else 1e6
    return (int(experts) if experts else None, float(number) * scale)


def _nearest_template(params: float) -> ModelSpec:
    available = [catalog.models()[n] for n in TEMPLATES if n in catalog.models()]
    if not available:  # a catalog without the templates: fall back to any dense model
        available = [m for m in catalog.models().values() if not m.is_moe]
    # the published total equals the computed one (tests/engine/test_catalog_models.py), and
    # reading it spares building eight tensor inventories to choose one
    return min(available, key=lambda m: abs(math.log((m.published_params or total_params(m))
                                                     / params)))


def template_spec(text: str) -> tuple[ModelSpec, str]:
    """A ModelSpec for a bare size (marked template=True) and the note that explains it."""
    parsed = parse_size(text)
    if parsed is None:
        raise ValueError(f"not a size: {text}")
    experts, params = parsed
    base = _nearest_template(params)
    outside = total_params(base) - _layer_total(base)
    per_layer = _layer_total(base) / base.layers
    layers = max(1, round((params - outside) / per_layer))
    # a copy with changes, not validation: the base row was validated when the catalog loaded
    changes: dict[str, object] = {
        "name": text.upper(),
        "display": _("{size} (generic Llama shape)").format(size=text.upper()),
        "layers": layers,
        "template": True,
        "sliding_layers": min(base.sliding_layers, layers),
        "aliases": (), "published_params": None, "params_source": "", "hf_repo": None,
    }
    if experts:
        # Mixtral-style MoE: every layer's MLP becomes `experts` copies, 2 active per token
        # (Mixtral 8x7B = Mistral 7B's shapes with 8 experts, top-2).
        changes |= {"experts": experts, "active_experts": 2, "moe_intermediate": base.intermediate,
                    "intermediate": 0,
                    "display": _("{size} (generic Mixtral MoE shape)").format(size=text.upper())}
    spec = base.model_copy(update=changes)
    return spec, _note(spec, base)


def _note(spec: ModelSpec, base: ModelSpec) -> str:
    kind = (_("{experts} experts, top-{active}, ").format(experts=spec.experts,
                                                           active=spec.active_experts)
            if spec.is_moe else "")
    return _("{name} is a size, not a model: shapes from the family template {base} (hidden "
             "{hidden}, {heads} heads, {kv} KV heads, intermediate {inter}, vocab {vocab}) with "
             "{kind}{layers} layers = {params:.2f}B parameters. Name a catalog model for exact "
             "shapes.").format(name=spec.name, base=base.name, hidden=spec.hidden,
                               heads=spec.heads, kv=spec.kv_heads,
                               inter=spec.intermediate or spec.moe_intermediate, vocab=spec.vocab,
                               kind=kind, layers=spec.layers, params=total_params(spec) / 1e9)


def _layer_total(spec: ModelSpec) -> int:
    return sum(t.elements for t in tensors(spec) if t.layer is not None)
