"""The bundled price catalog (engine/data/prices.toml), read with tomllib only.

Checks the shape of every row, that card names exist in gpus.toml, and that every price the seed
documents quote (DOMAIN.md, "Cards and prices") is present with a seed source.
"""

from __future__ import annotations

import re
import tomllib
from datetime import date
from itertools import pairwise
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "engine" / "data"
KINDS = {"buy_card", "buy_server", "rent_card_hour", "rent_server_month", "rent_cluster_hour"}
CARD_KINDS = {"buy_card", "rent_card_hour", "rent_cluster_hour"}
SERVER_KINDS = {"buy_server", "rent_server_month"}
CURRENCIES = {"CNY", "USD"}
SERVER_RE = re.compile(r"^server:(?P<count>[1-9][0-9]*)x(?P<card>[a-z0-9-]+)$")
SEED_000 = "seed:000_9d7613f0f307e69b"
SEED_003 = "seed:003_e67a0ddb601165d3"


def _load(name: str) -> dict:
    with (DATA / name).open("rb") as fh:
        return tomllib.load(fh)


PRICES = _load("prices.toml")
CARD_NAMES = {row["name"] for row in _load("gpus.toml")["gpu"]}
ROWS = PRICES["price"]


def _as_date(value: object) -> date:
    if isinstance(value, date):
        return value
    assert isinstance(value, str), f"not a date: {value!r}"
    return date.fromisoformat(value)


def _card_of(item: str) -> str:
    m = SERVER_RE.match(item)
    return m.group("card") if m else item


def _find(
    item: str, kind: str, low: float, high: float, currency: str = "CNY", seed: str | None = None
) -> list[dict]:
    return [
        r
        for r in ROWS
        if r["item"] == item
        and r["kind"] == kind
        and r["currency"] == currency
        and r["low"] == low
        and r["high"] == high
        and (seed is None or r["source"].startswith(seed))
    ]


def _row_id(row: dict) -> str:
    return f"{row['item']}|{row['kind']}|{row['low']}-{row['high']} {row['currency']}|{row['source'][:40]}"


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_price_row_shape(row: dict) -> None:
    for key in ("item", "kind", "gpus", "low", "high", "currency", "region", "source", "quoted", "note"):
        assert key in row, f"missing {key}"
    assert row["kind"] in KINDS
    if row["kind"] == "rent_cluster_hour":  # reserved clusters say who rents such capacity
        assert row["where"].strip() and row["min_gpus"] >= 8
    if "where" in row:  # in words the answer can translate (engine/cost.py WHERE_TEXT)
        from engine.cost import WHERE_TEXT

        assert row["where"] in WHERE_TEXT
    assert isinstance(row["low"], int | float) and isinstance(row["high"], int | float)
    assert 0 < row["low"] <= row["high"]
    assert row["currency"] in CURRENCIES
    assert isinstance(row["region"], str) and row["region"]
    assert isinstance(row["source"], str) and row["source"].strip()
    assert row["source"].startswith(("http://", "https://", "seed:"))
    assert isinstance(row["note"], str) and row["note"].strip()
    quoted = _as_date(row["quoted"])
    assert date(2020, 1, 1) <= quoted <= date.today()


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_items_exist_and_match_kind(row: dict) -> None:
    item = row["item"]
    m = SERVER_RE.match(item)
    if row["kind"] in SERVER_KINDS:
        assert m, f"{item} should be server:<count>x<card> for {row['kind']}"
        assert row["gpus"] == int(m.group("count"))
    else:
        assert m is None, f"{item} is a server but kind is {row['kind']}"
        assert row["gpus"] == 1
    assert _card_of(item) in CARD_NAMES, f"{item}: card not in gpus.toml"


def test_fx_present_and_dated() -> None:
    fx = PRICES["fx"]
    assert 5.0 < fx["cny_per_usd"] < 9.0
    assert _as_date(fx["date"]) <= date.today()
    assert fx["source"].startswith("http")


def test_seed_rows_cite_a_seed_section() -> None:
    seeds = [r for r in ROWS if r["source"].startswith("seed:")]
    assert seeds
    for r in seeds:
        assert r["source"].startswith((SEED_000, SEED_003))
        assert "§" in r["source"], "seed rows name the section they come from"
        assert r["currency"] == "CNY"
        assert r["region"] == "china"


# Every price in DOMAIN.md "Cards and prices", as (item, kind, low, high, seed or None for any seed).
DOMAIN_PRICES = [
    # per card (003)
    ("rtx-4090", "buy_card", 12000, 15000, SEED_003),
    ("l40s", "buy_card", 25000, 30000, SEED_003),
    ("a100-80gb", "buy_card", 80000, 100000, SEED_003),
    ("h100-sxm", "buy_card", 200000, 250000, SEED_003),
    # whole servers
    ("server:1xrtx-4090", "buy_server", 25000, 30000, SEED_000),
    ("server:1xrtx-4090", "buy_server", 20000, 40000, SEED_003),
    ("server:2xrtx-4090", "buy_server", 50000, 80000, SEED_000),
    ("server:1xrtx-6000-ada", "buy_server", 50000, 80000, SEED_000),
    ("server:1xa100-80gb", "buy_server", 100000, 150000, SEED_000),
    ("server:1xl40s", "buy_server", 100000, 150000, SEED_000),
    ("server:4xrtx-4090", "buy_server", 80000, 120000, SEED_000),
    ("server:4xl40s", "buy_server", 100000, 150000, SEED_003),
    ("server:4xl40s", "buy_server", 200000, 300000, SEED_000),
    ("server:8xa800", "buy_server", 800000, 1100000, SEED_000),
    ("server:8xa800", "buy_server", 1000000, 1500000, SEED_000),
    ("server:8xa100-80gb", "buy_server", 800000, 1200000, SEED_003),
    ("server:8xh800", "buy_server", 1800000, 2500000, SEED_000),
    ("server:8xh100-sxm", "buy_server", 1500000, 2000000, SEED_003),
    # rent
    ("server:1xrtx-4090", "rent_server_month", 2500, 4000, SEED_000),
    ("a100-80gb", "rent_cluster_hour", 30, 50, SEED_000),  # the guide's AI computing centres
    ("a100-80gb", "rent_card_hour", 30, 30, SEED_000),
    ("server:8xa800", "rent_server_month", 100000, 200000, SEED_000),
    ("server:1xa800", "rent_server_month", 20000, 20000, SEED_000),
]


@pytest.mark.parametrize(("item", "kind", "low", "high", "seed"), DOMAIN_PRICES)
def test_domain_seed_price_present(item: str, kind: str, low: int, high: int, seed: str) -> None:
    assert _find(item, kind, low, high, "CNY", seed), f"missing seed price {item} {kind} {low}-{high}"


def test_seed_spot_checks() -> None:
    def any_card(prefix: str, kind: str, low: int, high: int) -> bool:
        return any(
            r["item"].startswith(prefix)
            and r["kind"] == kind
            and r["currency"] == "CNY"
            and r["low"] == low
            and r["high"] == high
            and r["source"].startswith("seed:")
            for r in ROWS
        )

    assert any_card("rtx-4090", "buy_card", 12000, 15000)
    assert any_card("l40s", "buy_card", 25000, 30000)
    assert any_card("a100", "buy_card", 80000, 100000)
    assert any_card("h100", "buy_card", 200000, 250000)
    assert any_card("server:8xa800", "buy_server", 800000, 1100000)
    assert any_card("server:8xa800", "buy_server", 1000000, 1500000)
    assert any_card("server:1xrtx-4090", "rent_server_month", 2500, 4000)
    assert any_card("a100", "rent_cluster_hour", 30, 50)


def _ranges(item: str, kind: str) -> set[tuple[float, float]]:
    return {(r["low"], r["high"]) for r in ROWS if r["item"] == item and r["kind"] == kind}


def test_seeds_disagreeing_both_kept() -> None:
    assert {(100000, 150000), (200000, 300000)} <= _ranges("server:4xl40s", "buy_server")
    assert {(800000, 1100000), (1000000, 1500000), (1200000, 1800000)} <= _ranges(
        "server:8xa800", "buy_server"
    )
    assert {(25000, 30000), (20000, 40000), (40000, 50000)} <= _ranges("server:1xrtx-4090", "buy_server")


def test_public_usd_rent_coverage() -> None:
    usd_rent = [r for r in ROWS if r["kind"] == "rent_card_hour" and r["currency"] == "USD"]
    providers = {r["source"].split()[0].split("/")[2] for r in usd_rent}
    assert {"lambda.ai", "www.runpod.io", "www.coreweave.com", "aws.amazon.com"} <= providers
    cards = {r["item"] for r in usd_rent}
    assert {
        "h100-sxm",
        "h100-pcie",
        "a100-80gb",
        "a100-40gb",
        "l40s",
        "rtx-4090",
        "rtx-a6000",
        "h200",
        "b200",
        "mi300x",
    } <= cards
    for r in usd_rent:
        # on-demand per-GPU-hour rates sit in a plausible band
        assert 0.1 <= r["low"] <= r["high"] <= 20


def test_derived_instance_rates_say_so() -> None:
    instance_priced = ("aws.amazon.com", "coreweave.com", "dstack")
    for r in ROWS:
        if r["kind"] == "rent_card_hour" and any(s in r["source"] for s in instance_priced):
            assert "derived" in r["note"] and "/ 8" in r["note"]


def test_rtx4090_msrp() -> None:
    assert _find("rtx-4090", "buy_card", 1599, 1599, "USD")


def test_scenarios() -> None:
    by_name = {s["name"]: s for s in PRICES["scenario"]}
    own = by_name["8xa800-self-built"]
    assert (own["upfront_low"], own["upfront_high"], own["monthly_low"], own["monthly_high"]) == (
        1000000,
        1500000,
        30000,
        50000,
    )
    rent = by_name["8xa800-rent"]
    assert (rent["upfront_low"], rent["monthly_low"], rent["monthly_high"]) == (0, 100000, 200000)
    hybrid = by_name["4xa800-owned-plus-rented"]
    assert (hybrid["monthly_low"], hybrid["monthly_high"]) == (20000, 30000)
    for s in PRICES["scenario"]:
        assert s["source"].startswith("seed:") and s["currency"] == "CNY"
        _as_date(s["quoted"])


def test_power_rows() -> None:
    power = PRICES["power"]
    regions = {p["region"]: p for p in power}
    assert {"chengdu", "jiangsu", "china", "global"} <= set(regions)
    for p in power:
        assert 0 < p["low"] <= p["high"]
        assert p["currency"] in CURRENCIES
        assert p["unit"] == "kWh"
        assert p["source"].strip()
        _as_date(p["quoted"])

    def span(region: str) -> tuple[float, float, str]:
        return regions[region]["low"], regions[region]["high"], regions[region]["currency"]

    assert span("chengdu") == (0.8, 1.2, "CNY")
    assert span("jiangsu") == (0.6, 0.8, "CNY")
    assert regions["china"]["currency"] == "CNY"
    assert regions["global"]["currency"] == "USD"


def test_assumptions() -> None:
    a = PRICES["assumptions"]
    assert 1.0 < a["pue"]["value"] < 2.5
    assert a["depreciation_months"]["value"] == 36
    assert a["host_power_w"]["value"] > 0
    for key in ("pue", "host_power_w", "depreciation_months"):
        assert a[key]["source"].strip()
        _as_date(a[key]["quoted"])
    claims = {c["name"]: c for c in a["claim"]}
    share = claims["card_share_of_server_price"]
    assert (share["low"], share["high"]) == (0.6, 0.7)
    assert claims["buy_threshold_hours_per_month"]["low"] == 400
    assert claims["buy_threshold_hours_per_year"]["low"] == 3000
    assert (claims["8xa800_server_power_kw"]["low"], claims["8xa800_server_power_kw"]["high"]) == (8, 12)
    for c in a["claim"]:
        assert c["low"] <= c["high"]
        assert c["source"].startswith("seed:")
    ops = {o["name"]: o for o in a["operations"]}
    assert (ops["8xa800-self-built-running-cost"]["low"], ops["8xa800-self-built-running-cost"]["high"]) == (
        30000,
        50000,
    )


# -- sanity rules over the whole price catalog --------------------------------------------------
# Each rule holds for how GPUs are sold; a row that breaks one is mis-entered or an outlier and is
# fixed or moved to [[excluded]] with its reason.

FX = PRICES["fx"]["cny_per_usd"]
# (PCIe board, SXM part) of the same chip
PCIE_SXM = [("h100-pcie", "h100-sxm"), ("a100-pcie-80gb", "a100-80gb"), ("h200-nvl", "h200")]


def _cny(row: dict, field: str) -> float:
    return row[field] * (FX if row["currency"] == "USD" else 1.0)


def _market(row: dict) -> str:
    return "china" if row["region"] == "china" else "global"


def _provider(row: dict) -> str:
    return row["source"].split()[0].split("/")[2] if row["source"].startswith("http") else row["source"]


def _count(item: str) -> int:
    m = SERVER_RE.match(item)
    return int(m.group("count")) if m else 1


def _rows(kind: str, *, card: str | None = None, item: str | None = None,
          rows: list[dict] | None = None) -> list[dict]:
    return [r for r in (ROWS if rows is None else rows) if r["kind"] == kind
            and (card is None or _card_of(r["item"]) == card)
            and (item is None or r["item"] == item)]


def _pcie_above_sxm(rows: list[dict]) -> list[str]:
    """Buy quotes compare within a market; rent quotes within one provider (across providers a
    hyperscaler's PCIe card can cost more than a neocloud's SXM part)."""
    bad = []
    for pcie, sxm in PCIE_SXM:
        for kind, scope in (("buy_card", _market), ("rent_card_hour", _provider)):
            highs: dict[str, float] = {}
            for r in _rows(kind, item=sxm, rows=rows):
                highs[scope(r)] = max(highs.get(scope(r), 0.0), _cny(r, "high"))
            for r in _rows(kind, item=pcie, rows=rows):
                top = highs.get(scope(r))
                if top is not None and _cny(r, "low") > top:
                    bad.append(f"{pcie} {kind} {r['low']} {r['currency']} > {sxm} ({scope(r)})")
    return bad


def _family(item: str) -> str:
    """A PCIe board is priced with the SXM part of its chip: same silicon, same market."""
    return {pcie: sxm for pcie, sxm in PCIE_SXM}.get(item, item)


def _outliers(rows: list[dict]) -> list[str]:
    """Within one (chip, kind, region), no quote's midpoint is more than twice the median of the
    others, nor below a third of it (a community-cloud rate may be half a hyperscaler's; a
    USD figure entered as CNY, or the reverse, is off by 7x)."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((_family(r["item"]), r["kind"], r["region"]), []).append(r)
    bad = []
    for key, group in groups.items():
        for r in group:
            others = sorted((_cny(o, "low") + _cny(o, "high")) / 2 for o in group if o is not r)
            if not others:
                continue
            median = others[len(others) // 2] if len(others) % 2 else (
                others[len(others) // 2 - 1] + others[len(others) // 2]) / 2
            mid = (_cny(r, "low") + _cny(r, "high")) / 2
            if not median / 3 <= mid <= median * 2:
                bad.append(f"{key}: {mid:,.2f} CNY against a median of {median:,.2f}")
    return bad


def test_pcie_never_costs_more_than_the_sxm_part_of_the_same_chip() -> None:
    assert not _pcie_above_sxm(ROWS)


def test_no_single_source_outlier() -> None:
    assert not _outliers(ROWS)


def test_the_rules_catch_the_excluded_h100_pcie_china_row() -> None:
    # the row moved out of [[price]] breaks both rules: the rules can fail
    excluded = {r["item"]: r for r in PRICES["excluded"]}
    h100 = excluded["h100-pcie"]
    assert _pcie_above_sxm([*ROWS, h100])
    assert _outliers([*ROWS, h100])


def test_excluded_rows_say_why() -> None:
    for r in PRICES["excluded"]:
        assert r["source"].startswith("http") and len(r["reason"]) > 80
        _as_date(r["quoted"])
        # an excluded quote is not also in [[price]]
        assert not _find(r["item"], r["kind"], r["low"], r["high"], r["currency"])


def _per_gpu(rows: list[dict], field: str) -> dict[int, float]:
    """Server size -> the lowest (field='low') or highest (field='high') price per GPU."""
    pick = min if field == "low" else max
    out: dict[int, float] = {}
    for r in rows:
        n = r["gpus"]
        value = _cny(r, field) / n
        out[n] = pick(out.get(n, value), value)
    return out


@pytest.mark.parametrize("kind", ["buy_server", "rent_server_month"])
def test_price_per_gpu_never_rises_with_server_size(kind: str) -> None:
    # a bigger server spreads its chassis, CPUs and network over more GPUs: per GPU it may not
    # cost more than a smaller one (ranges compared generously: bigger's low vs smaller's high)
    for card in CARD_NAMES:
        for market in ("china", "global"):
            rows = [r for r in _rows(kind, card=card) if _market(r) == market]
            low, high = _per_gpu(rows, "low"), _per_gpu(rows, "high")
            sizes = sorted(low)
            for small, big in pairwise(sizes):
                assert low[big] <= high[small], (card, market, small, big)


def test_a_server_never_costs_less_per_gpu_than_its_bare_card() -> None:
    for r in _rows("buy_server"):
        card = _card_of(r["item"])
        cards = [c for c in _rows("buy_card", item=card) if _market(c) == _market(r)]
        if cards:
            cheapest = min(_cny(c, "low") for c in cards)
            assert _cny(r, "high") / r["gpus"] >= cheapest, r["item"]


def test_china_rows_cover_the_cards_chinese_teams_use() -> None:
    china = [r for r in ROWS if r["region"] == "china"]
    bought = {_card_of(r["item"]) for r in china if r["kind"] in ("buy_card", "buy_server")}
    rented = {_card_of(r["item"]) for r in china if r["kind"] in ("rent_card_hour", "rent_server_month")}
    assert {"h20", "h800", "a800", "rtx-4090", "rtx-4090d", "rtx-4090-48gb", "rtx-5090d",
            "rtx-5090d-v2", "ascend-910b"} <= bought
    assert {"h20", "a800", "rtx-4090", "rtx-4090d", "rtx-5090"} <= rented
    for r in china:
        assert r["currency"] == "CNY" or r["item"] == "h20"  # Reuters quoted the H20 in USD too
