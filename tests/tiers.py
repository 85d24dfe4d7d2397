"""Helpers for the two test tiers (tests/conftest.py says what they are)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

FAST_SAMPLE = 12  # cases of a sweep the fast tier keeps: enough to catch a break, not its cost


def fast_first(cases: Iterable[Any], *, keep: int = FAST_SAMPLE) -> list[Any]:
    """A sweep's parameters with all but the first `keep` marked slow: the fast tier runs a
    sample, CI the whole sweep. A tuple case is spread over the test's arguments."""
    return [pytest.param(*(case if isinstance(case, tuple) else (case,)),
                         marks=[pytest.mark.slow] if n >= keep else [])
            for n, case in enumerate(cases)]
