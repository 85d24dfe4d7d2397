"""The bundled GPU catalog (engine/data/gpus.toml): rows load, names resolve, numbers are sane."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date

import pytest

from engine.catalog import GpuSpec, find_gpu, gpus, normalize

EXPECTED_NAMES = {
    "v100-16gb", "v100-32gb", "t4", "p40", "a2", "rtx-3060-12gb", "rtx-4060-ti-16gb",
    "rtx-4090",
    "rtx-3090",
    "rtx-a4000",
    "rtx-a5000",
    "rtx-a6000",
    "rtx-6000-ada",
    "rtx-pro-6000",
    "rtx-pro-6000d",
    "l40s",
    "l20",
    "a100-40gb",
    "a100-80gb",
    "a800",
    "h100-pcie",
    "h100-sxm",
    "h100-sxm-96gb-hbm2e",
    "h800",
    "h20",
    "h200",
    "b200",
    "mi300x",
    # added for issues 12 and 13
    "a100-pcie-80gb",
    "l40",
    "l4",
    "a10",
    "rtx-5090",
    "rtx-5090d",
    "rtx-5090d-v2",
    "rtx-4090d",
    "rtx-4090-48gb",
    "h100-nvl",
    "h200-nvl",
    "b300",
    "mi325x",
    "ascend-910b",
    "ascend-910c",
}

CHINA_MARKET = {"a800", "h800", "h20", "l20", "rtx-4090d", "rtx-5090d", "rtx-5090d-v2",
                "rtx-4090-48gb", "ascend-910b", "ascend-910c", "rtx-pro-6000d"}
# The cards engine/speed.py hard-coded as GDDR ("WORKSTATION") before memory_kind existed.
FORMER_WORKSTATION_SET = {"rtx-4090", "rtx-3090", "rtx-a4000", "rtx-a5000", "rtx-a6000",
                          "rtx-6000-ada", "l40s", "l20"}


def all_rows() -> list[GpuSpec]:
    return list(gpus().values())


def test_all_rows_load() -> None:
    assert set(gpus()) == EXPECTED_NAMES
    assert len(gpus()) == 43
    for name, spec in gpus().items():
        assert spec.name == name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4090", "rtx-4090"),
        ("rtx4090", "rtx-4090"),
        ("RTX 4090", "rtx-4090"),
        ("geforce-rtx-4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("3090", "rtx-3090"),
        ("A4000", "rtx-a4000"),
        ("rtx a5000", "rtx-a5000"),
        ("A6000", "rtx-a6000"),
        ("6000ada", "rtx-6000-ada"),
        ("RTX 6000 Ada Generation", "rtx-6000-ada"),
        ("L40S", "l40s"),
        ("l20", "l20"),
        ("A100", "a100-80gb"),
        ("a100-80gb", "a100-80gb"),
        ("A100-SXM4-80GB", "a100-80gb"),
        ("a100-40g", "a100-40gb"),
        ("a100-40", "a100-40gb"),
        ("a100-40gb", "a100-40gb"),
        ("a800", "a800"),
        ("H100", "h100-sxm"),
        ("h100-sxm", "h100-sxm"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("h100-pcie", "h100-pcie"),
        ("H100 PCIe", "h100-pcie"),
        ("h800", "h800"),
        ("H20", "h20"),
        ("h200", "h200"),
        ("B200", "b200"),
        ("mi300x", "mi300x"),
        ("AMD Instinct MI300X", "mi300x"),
        ("A100 PCIe", "a100-pcie-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("L40", "l40"),
        ("L4", "l4"),
        ("A10", "a10"),
        ("RTX 5090", "rtx-5090"),
        ("NVIDIA GeForce RTX 5090", "rtx-5090"),
        ("5090D", "rtx-5090d"),
        ("RTX 5090 D", "rtx-5090d"),
        ("5090D V2", "rtx-5090d-v2"),
        ("RTX 5090 D v2", "rtx-5090d-v2"),
        ("4090D", "rtx-4090d"),
        ("NVIDIA GeForce RTX 4090 D", "rtx-4090d"),
        ("4090 48G", "rtx-4090-48gb"),
        ("rtx-4090-48gb", "rtx-4090-48gb"),
        ("魔改4090", "rtx-4090-48gb"),
        ("H100 NVL", "h100-nvl"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("H200 NVL", "h200-nvl"),
        ("B300", "b300"),
        ("NVIDIA B300 SXM6 AC", "b300"),
        ("MI325X", "mi325x"),
        ("910B", "ascend-910b"),
        ("昇腾910B", "ascend-910b"),
        ("Ascend 910B", "ascend-910b"),
        ("910B3", "ascend-910b"),
        ("910C", "ascend-910c"),
        ("昇腾910C", "ascend-910c"),
    ],
)
def test_lookup_resolves(text: str, expected: str) -> None:
    spec = find_gpu(text)
    assert spec is not None, text
    assert spec.name == expected


@pytest.mark.parametrize("spec", all_rows(), ids=lambda s: s.name)
def test_every_listed_alias_resolves_to_its_row(spec: GpuSpec) -> None:
    for key in (spec.name, spec.display, *spec.aliases):
        found = find_gpu(key)
        assert found is not None, key
        assert found.name == spec.name, f"{key!r} resolves to {found.name}, not {spec.name}"


def test_no_key_is_shared_by_two_rows() -> None:
    owners: dict[str, set[str]] = defaultdict(set)
    for spec in all_rows():
        for key in (spec.name, spec.display, *spec.aliases):
            owners[normalize(key)].add(spec.name)
    shared = {key: rows for key, rows in owners.items() if len(rows) > 1}
    assert not shared, f"keys shared by more than one row: {shared}"


def test_unknown_card_is_not_found() -> None:
    assert find_gpu("rtx-9999") is None
    # Ambiguous with the Turing Quadro RTX 6000, so deliberately not an alias.
    assert find_gpu("rtx6000") is None
    # AWS's A10G is a different SKU from the A10.
    assert find_gpu("a10g") is None


@pytest.mark.parametrize("spec", all_rows(), ids=lambda s: s.name)
def test_dense_throughput_is_ordered(spec: GpuSpec) -> None:
    if spec.half_dtype != "fp32":  # Pascal runs fp16 at 1/64 of the fp32 it computes in
        assert spec.fp16_tflops == pytest.approx(spec.bf16_tflops)
    else:
        assert spec.fp16_tflops < spec.bf16_tflops / 32
    if spec.fp8_tflops is not None:
        assert spec.bf16_tflops <= spec.fp8_tflops
        # FP8 tensor rate is twice BF16 on every card listed here (dense to dense).
        assert spec.fp8_tflops == pytest.approx(2 * spec.bf16_tflops, rel=0.03)
    if spec.int8_tops is not None:
        assert spec.bf16_tflops <= spec.int8_tops


def test_fp8_only_where_the_card_has_fp8_tensor_cores() -> None:
    no_fp8 = {s.name for s in all_rows() if s.fp8_tflops is None}
    ampere = {"rtx-3090", "rtx-a4000", "rtx-a5000", "rtx-a6000", "a100-40gb", "a100-80gb", "a800",
              "a100-pcie-80gb", "a10"}
    ascend = {"ascend-910b", "ascend-910c"}  # FP8 arrives with the Ascend 950
    older = {"v100-16gb", "v100-32gb", "t4", "p40", "a2", "rtx-3060-12gb"}
    assert no_fp8 == ampere | ascend | older
    for name in no_fp8:
        assert gpus()[name].architecture in ("ampere", "davinci", "volta", "turing", "pascal")


@pytest.mark.parametrize("spec", all_rows(), ids=lambda s: s.name)
def test_reported_memory_matches_marketed_capacity(spec: GpuSpec) -> None:
    as_gb = spec.memory_bytes / (spec.memory_gb * 10**9)
    as_gib = spec.memory_bytes / (spec.memory_gb * 2**30)
    assert min(abs(as_gb - 1), abs(as_gib - 1)) < 0.03, (as_gb, as_gib)
    # The driver never reports more than the marketed capacity in GiB.
    assert as_gib <= 1.0
    # nvidia-smi totals are whole MiB.
    if spec.vendor == "nvidia":
        assert spec.memory_bytes % 2**20 == 0


@pytest.mark.parametrize("spec", all_rows(), ids=lambda s: s.name)
def test_every_row_is_sourced_and_dated(spec: GpuSpec) -> None:
    urls = [u.strip() for u in spec.source.split(" ; ")]
    assert urls
    for url in urls:
        assert re.match(r"https?://\S+", url), url
    # the catalog was sourced from 2026-11-30 on; a later row carries its own day
    assert date.fromisoformat(spec.retrieved) >= date(2026, 11, 30)
    assert spec.notes.strip()
    assert spec.display.strip()


@pytest.mark.parametrize("spec", all_rows(), ids=lambda s: s.name)
def test_form_factor_market_and_links_agree(spec: GpuSpec) -> None:
    assert spec.market == ("china" if spec.name in CHINA_MARKET else "global")
    if spec.market == "china":
        assert "export" in spec.notes.lower()
    if spec.form_factor == "pcie":
        assert spec.nvlink_gbps == 0
        assert not spec.has_nvlink
    else:
        assert spec.nvlink_gbps > 0
    assert spec.pcie_gen in ((3, 4, 5) if spec.architecture in ("volta", "turing", "pascal") else (4, 5))
    assert (spec.vendor == "amd") == (spec.architecture == "cdna3")
    assert (spec.vendor == "huawei") == (spec.architecture == "davinci")


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("h100-sxm", "bandwidth_gbps", 3350),
        ("h100-sxm", "bf16_tflops", 989.4),
        ("h100-sxm", "fp8_tflops", 1978.9),
        ("h100-sxm", "nvlink_gbps", 900),
        ("h100-sxm", "tdp_w", 700),
        ("h100-sxm", "memory_bytes", 81559 * 2**20),
        ("h100-pcie", "bandwidth_gbps", 2000),
        ("h100-pcie", "bf16_tflops", 756.5),
        ("h100-pcie", "nvlink_gbps", 0),
        ("h800", "nvlink_gbps", 400),
        ("h800", "bf16_tflops", 989.4),
        ("rtx-4090", "bandwidth_gbps", 1008),
        ("rtx-4090", "bf16_tflops", 165.2),
        ("rtx-4090", "memory_bytes", 24564 * 2**20),
        ("rtx-4090", "nvlink_gbps", 0),
        ("rtx-3090", "bandwidth_gbps", 936),
        ("rtx-3090", "bf16_tflops", 71),
        ("rtx-a6000", "bf16_tflops", 154.8),
        ("l40s", "bf16_tflops", 362.05),
        ("l40s", "nvlink_gbps", 0),
        ("l20", "bf16_tflops", 119.5),
        ("l20", "nvlink_gbps", 0),
        ("h20", "memory_gb", 96),
        ("h20", "bandwidth_gbps", 4000),
        ("h20", "bf16_tflops", 148),
        ("h20", "fp8_tflops", 296),
        ("h20", "nvlink_gbps", 900),
        ("h200", "memory_gb", 141),
        ("h200", "bandwidth_gbps", 4800),
        ("a100-40gb", "bandwidth_gbps", 1555),
        ("a100-80gb", "bandwidth_gbps", 2039),
        ("a100-80gb", "bf16_tflops", 312),
        ("a100-80gb", "nvlink_gbps", 600),
        ("a800", "nvlink_gbps", 400),
        ("b200", "bandwidth_gbps", 8000),
        ("b200", "bf16_tflops", 2250),
        ("b200", "nvlink_gbps", 1800),
        ("mi300x", "memory_gb", 192),
        ("mi300x", "bandwidth_gbps", 5300),
        ("mi300x", "bf16_tflops", 1307.4),
        ("a100-pcie-80gb", "bandwidth_gbps", 1935),
        ("a100-pcie-80gb", "tdp_w", 300),
        ("l40", "bf16_tflops", 181.05),
        ("l4", "bf16_tflops", 121),
        ("l4", "tdp_w", 72),
        ("a10", "bandwidth_gbps", 600),
        ("rtx-5090", "bf16_tflops", 209.5),
        ("rtx-5090", "bandwidth_gbps", 1792),
        ("rtx-5090", "memory_bytes", 32607 * 2**20),
        ("rtx-5090d-v2", "bandwidth_gbps", 1344),
        ("rtx-4090d", "bf16_tflops", 147.1),
        ("rtx-4090d", "tdp_w", 425),
        ("rtx-4090-48gb", "memory_bytes", 49140 * 2**20),
        ("h100-nvl", "memory_bytes", 95830 * 2**20),
        ("h100-nvl", "bf16_tflops", 835.5),
        ("h200-nvl", "tdp_w", 600),
        ("b300", "bf16_tflops", 2250),
        ("b300", "nvlink_gbps", 1800),
        ("mi325x", "bandwidth_gbps", 6000),
        ("ascend-910b", "memory_bytes", 65536 * 2**20),
        ("ascend-910b", "nvlink_gbps", 392),
        ("ascend-910c", "memory_bytes", 2 * 65536 * 2**20),
        ("ascend-910c", "bandwidth_gbps", 3200),
    ],
)
def test_known_values(name: str, field: str, value: float) -> None:
    assert getattr(gpus()[name], field) == pytest.approx(value)


def test_memory_ordering_within_families() -> None:
    g = gpus()
    assert g["a100-40gb"].memory_bytes < g["a100-80gb"].memory_bytes == g["a800"].memory_bytes
    assert g["h100-sxm"].memory_bytes < g["h20"].memory_bytes < g["h200"].memory_bytes
    assert g["h200"].memory_bytes < g["b200"].memory_bytes < g["mi300x"].memory_bytes
    assert g["rtx-4090"].bandwidth_gbps > g["rtx-3090"].bandwidth_gbps


@pytest.mark.parametrize("spec", all_rows(), ids=lambda s: s.name)
def test_memory_kind_is_set_and_physically_consistent(spec: GpuSpec) -> None:
    assert spec.memory_kind in ("gddr", "hbm")
    if spec.memory_kind == "gddr":
        # GDDR boards are PCIe cards; the fastest (GDDR7 on 512 bits) is 1.8 TB/s
        assert spec.form_factor == "pcie"
        assert spec.bandwidth_gbps <= 1800
    else:
        # the slowest HBM part listed (V100, HBM2) has 900 GB/s
        assert spec.bandwidth_gbps >= 900


def test_memory_kind_keeps_the_former_workstation_set() -> None:
    # speed.py's hard-coded GDDR set, which the field replaces, stays GDDR
    for name in FORMER_WORKSTATION_SET:
        assert gpus()[name].memory_kind == "gddr"
    gddr = {s.name for s in all_rows() if s.memory_kind == "gddr"}
    added = {"l40", "l4", "a10", "rtx-5090", "rtx-5090d", "rtx-5090d-v2", "rtx-4090d",
             "rtx-4090-48gb", "rtx-pro-6000", "rtx-pro-6000d", "t4", "p40", "a2", "rtx-3060-12gb",
             "rtx-4060-ti-16gb"}
    assert gddr == FORMER_WORKSTATION_SET | added


@pytest.mark.parametrize("spec", all_rows(), ids=lambda s: s.name)
def test_serving_stack_names_the_vendor_stack(spec: GpuSpec) -> None:
    if spec.vendor == "nvidia" and spec.half_dtype == "bf16":
        assert spec.serving_stack == ""  # CUDA implied
    elif spec.vendor == "nvidia":  # no bf16: the stack says what runs instead, never bf16
        assert spec.serving_stack.startswith("CUDA (") and "no bf16" in spec.serving_stack
        assert spec.half_dtype in spec.serving_stack and spec.fp8_tflops is None
    elif spec.vendor == "amd":
        assert spec.serving_stack.startswith("ROCm")
    else:
        assert spec.serving_stack.startswith("CANN")
        assert "MindIE" in spec.serving_stack and "vLLM-Ascend" in spec.serving_stack
        assert "no CUDA" in spec.serving_stack


@pytest.mark.parametrize("spec", all_rows(), ids=lambda s: s.name)
def test_throughput_per_watt_is_plausible(spec: GpuSpec) -> None:
    # dense BF16 per watt of TDP: the best listed (B300, L4) are near 2 TFLOPS/W
    # (fp32 on Pascal, no tensor cores: 0.05)
    assert (0.03 if spec.half_dtype == "fp32" else 0.1) < spec.bf16_tflops / spec.tdp_w < 3


def _tpp_geforce(name: str) -> float:
    # GeForce: the export rule counts the FP16-accumulate tensor rate, twice the FP32-accumulate
    # BF16 figure the catalog records, times 16 bits
    return gpus()[name].bf16_tflops * 2 * 16


def test_china_geforce_parts_sit_under_the_export_tpp_limit() -> None:
    for name in ("rtx-4090d", "rtx-5090d", "rtx-5090d-v2"):
        assert _tpp_geforce(name) < 4800, name
    for name in ("rtx-4090", "rtx-5090", "rtx-4090-48gb"):
        assert _tpp_geforce(name) > 4800, name
    assert _tpp_geforce("rtx-4090") == pytest.approx(5286, abs=2)  # the figure reports quote
    assert _tpp_geforce("rtx-5090d") == pytest.approx(4750, abs=2)
    # data-centre parts count the BF16 figure directly: the H20's published TPP is 2,368
    assert gpus()["h20"].bf16_tflops * 16 == pytest.approx(2368)


def test_china_variants_never_exceed_their_parent() -> None:
    g = gpus()
    for child, parent in (("rtx-4090d", "rtx-4090"), ("rtx-5090d", "rtx-5090"),
                          ("rtx-5090d-v2", "rtx-5090d"), ("a800", "a100-80gb"),
                          ("h800", "h100-sxm"), ("h20", "h100-sxm")):
        assert g[child].bf16_tflops <= g[parent].bf16_tflops, child
        assert g[child].nvlink_gbps <= g[parent].nvlink_gbps, child
        assert g[child].memory_kind == g[parent].memory_kind
    assert g["rtx-5090d-v2"].bandwidth_gbps < g["rtx-5090d"].bandwidth_gbps
    assert g["rtx-5090d-v2"].memory_bytes < g["rtx-5090d"].memory_bytes
    # the 48 GB board is a 4090 with twice the memory: same GPU, same bus
    assert g["rtx-4090-48gb"].bf16_tflops == g["rtx-4090"].bf16_tflops
    assert g["rtx-4090-48gb"].bandwidth_gbps == g["rtx-4090"].bandwidth_gbps
    assert 1.99 < g["rtx-4090-48gb"].memory_bytes / g["rtx-4090"].memory_bytes < 2.01
    assert "UNOFFICIAL" in g["rtx-4090-48gb"].notes and "unofficial" in g["rtx-4090-48gb"].display


def test_ascend_910c_is_two_910b_class_dies() -> None:
    b, c = gpus()["ascend-910b"], gpus()["ascend-910c"]
    assert c.memory_bytes == 2 * b.memory_bytes
    assert c.bandwidth_gbps == 2 * b.bandwidth_gbps
    assert 1.9 < c.bf16_tflops / b.bf16_tflops < 2.2
    assert "two NPU devices" in c.serving_stack


def test_nvl_and_pcie_parts_are_no_faster_than_their_sxm_chip() -> None:
    g = gpus()
    for pcie, sxm in (("h100-pcie", "h100-sxm"), ("h100-nvl", "h100-sxm"), ("h200-nvl", "h200"),
                      ("a100-pcie-80gb", "a100-80gb")):
        assert g[pcie].bf16_tflops <= g[sxm].bf16_tflops
        assert g[pcie].tdp_w <= g[sxm].tdp_w
        assert g[pcie].form_factor == "pcie" and g[sxm].form_factor == "sxm"
