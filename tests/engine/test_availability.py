"""Per-market availability (engine/data/availability.toml): complete, valid, sourced, and in line
with the export-control facts the rows cite."""

from __future__ import annotations

import re
from datetime import date

import pytest

from engine.catalog import MARKETS, Availability, availability, gpus

ROWS = list(availability().values())


def test_every_card_has_a_row_for_each_market() -> None:
    keys = set(availability())
    for name in gpus():
        for market in MARKETS:
            assert (name, market) in keys, f"{name} has no {market} availability row"
    assert {card for card, _ in keys} <= set(gpus()), "availability row for an unknown card"
    assert len(ROWS) == 2 * len(gpus())


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.card}|{r.market}")
def test_row_is_valid_sourced_and_dated(row: Availability) -> None:
    assert row.status in ("new", "secondary", "rental", "grey", "unavailable")
    for url in row.source.split(" ; "):
        assert re.match(r"https?://\S+", url.strip()), url
    assert date(2022, 1, 1) <= row.as_of <= row.retrieved <= date.today()
    assert len(row.note.strip()) > 20


def _status(card: str, market: str) -> str:
    return availability()[(card, market)].status


def test_china_market_skus_are_not_sold_elsewhere() -> None:
    official_china_only = {"a800", "h800", "h20", "l20", "rtx-4090d", "rtx-5090d",
                           "rtx-5090d-v2"}
    for name in official_china_only:
        assert gpus()[name].market == "china"
        assert _status(name, "global") == "unavailable", name


def test_export_controlled_cards_are_not_new_in_china() -> None:
    # barred by the October 2022 / October 2023 rules, or licensed only to approved buyers
    barred = {"a100-40gb", "a100-80gb", "a100-pcie-80gb", "h100-pcie", "h100-sxm", "h100-nvl",
              "a800", "h800", "l40s", "l40", "l4", "rtx-4090", "rtx-6000-ada", "rtx-5090", "h200",
              "h200-nvl", "b200", "b300", "mi300x", "mi325x"}
    for name in barred:
        assert _status(name, "china") != "new", name
    # cards launched after the rule that barred them reach China only through smuggling
    for name in ("h100-sxm", "h100-pcie", "rtx-5090"):
        assert _status(name, "china") == "grey", name
    # Blackwell and AMD data-centre parts have no Chinese channel at all
    for name in ("b200", "b300", "mi300x", "mi325x"):
        assert _status(name, "china") == "unavailable", name


def test_compliant_and_domestic_parts() -> None:
    assert _status("rtx-5090d-v2", "china") == "new"
    assert _status("ascend-910b", "china") == "new"
    # US BIS GP10 guidance (2025-05-13) covers Ascend 910B/910C use anywhere
    for name in ("ascend-910b", "ascend-910c"):
        row = availability()[(name, "global")]
        assert row.status == "unavailable" and row.as_of == date(2025, 5, 13)
    # the modified 48 GB board has no official channel anywhere
    assert {_status("rtx-4090-48gb", m) for m in MARKETS} == {"secondary"}


def test_statuses_that_rest_on_rules_say_which() -> None:
    for row in ROWS:
        if row.market == "china" and row.status in ("secondary", "grey", "unavailable"):
            assert re.search(r"20(22|23|24|25|26)|rule|licen|export|discontinued|unofficial|"
                             r"conservative", row.note, re.I), row.card
