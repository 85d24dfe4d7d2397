"""Per-card training speed (issue 23): what limits each card follows from its datasheet terms
(FLOPs per byte of bandwidth, rated clocks under its power cap, the links between its GPUs),
checked as relations between cards, never as numbers copied from the model."""

from __future__ import annotations

import itertools

import pytest

from engine import catalog, speed
from engine.methods import method
from engine.resolve import resolve_model

GPUS = catalog.gpus()


def _tokens_per_s(gpu: str, *, gpus: int = 1, seq: int = 4096, batch: int = 1, zero: int = 0,
                  model: str = "llama-2-7b", checkpointing: str = "full",
                  framework: str | None = None) -> float:
    spec = resolve_model(model)[0]
    return speed.train_speed(spec, GPUS[gpu], gpus=gpus, method=method("full-finetune"),
                             checkpointing=checkpointing, seq=seq, batch=batch, zero=zero, tp=1,
                             tokens=None, trainable=spec.params, framework=framework).tokens_per_s


def _share(name: str) -> float:
    gpu = GPUS[name]
    return speed.train_utilization(gpu, gpu.bf16_tflops)


def test_training_share_falls_as_compute_per_byte_rises() -> None:
    """Every card, ordered by FLOPs per byte of bandwidth at the clock it sustains: the share of
    that sustained rate never rises, and never reaches the matmuls' own share (the memory-bound
    work always costs something)."""
    def clock(g):  # type: ignore[no-untyped-def]
        return speed.sustained_clock_ratio(g)

    cards = sorted(GPUS.values(), key=lambda g: g.bf16_tflops * clock(g) / g.bandwidth_gbps)
    shares = [speed.train_utilization(g, g.bf16_tflops) / clock(g) for g in cards]
    assert all(a >= b for a, b in itertools.pairwise(shares))
    assert all(0 < s < speed.TRAIN_EFFICIENCY for s in shares)


def test_a_measured_matmul_rate_above_the_datacenter_share_trains_faster() -> None:
    """The RTX 4090 measures its whole datasheet peak in a bf16 matmul (clocks above the rated
    boost) where datacenter cards measure 80-86%: it trains that much faster than its datasheet
    says, less what its bandwidth then cannot feed; cards without a measurement keep the peak."""
    rtx = GPUS["rtx-4090"]
    ratio = speed.sustained_clock_ratio(rtx)
    assert ratio == pytest.approx(rtx.measured_matmul_tflops / rtx.bf16_tflops / 0.826)
    at_datasheet = 1 / (1 / speed.TRAIN_EFFICIENCY
                        + speed.FEED_BYTES_PER_FLOP * rtx.bf16_tflops * 1e3 / rtx.bandwidth_gbps)
    assert at_datasheet < _share("rtx-4090") < ratio * at_datasheet
    assert speed.sustained_clock_ratio(GPUS["a100-80gb"]) == 1.0


def test_h20_keeps_more_of_its_small_peak_than_an_a800() -> None:
    """The H20's 148 TFLOPS over 4.0 TB/s leave its tensor cores fed: a larger share of its peak
    than the A800 (312 over 2.0 TB/s) reaches, below the matmul ceiling; yet its absolute rate
    stays under the A800's, since its peak is under half."""
    assert _share("a800") < _share("h20") < speed.TRAIN_EFFICIENCY
    assert _tokens_per_s("h20") < _tokens_per_s("a800")
    spec = resolve_model("llama-2-7b")[0]
    detail = speed.train_speed(spec, GPUS["h20"], gpus=1, method=method("full-finetune"),
                               checkpointing="full", seq=4096, batch=1, zero=0, tp=1,
                               tokens=None, trainable=spec.params).detail
    assert "held at" not in detail


# (capped card, its uncapped sibling on the same die): rated at lower clocks under a lower
# power limit, or the same die cut down for export
SIBLINGS = [
    ("h100-pcie", "h100-sxm"),  # 350 W, 114 SMs vs 700 W, 132 SMs
    ("h100-nvl", "h100-sxm"),  # 400 W
    ("h200-nvl", "h200"),  # 600 W vs 700 W
    ("rtx-4090d", "rtx-4090"),  # 425 W, fewer SMs
    ("rtx-5090d", "rtx-5090"),
    ("rtx-5090d-v2", "rtx-5090d"),  # 24 GB at 1.3 TB/s
    ("rtx-pro-6000d", "rtx-pro-6000"),
]


@pytest.mark.parametrize(("capped", "full"), SIBLINGS)
def test_power_capped_card_never_trains_faster_than_its_sibling(capped: str, full: str) -> None:
    assert GPUS[capped].tdp_w <= GPUS[full].tdp_w
    for gpus, zero in ((1, 0), (8, 3)):
        assert _tokens_per_s(capped, gpus=gpus, zero=zero) <= _tokens_per_s(full, gpus=gpus,
                                                                              zero=zero)


def test_card_without_nvlink_pays_pcie_for_its_all_reduce() -> None:
    """A GeForce card has no NVLink and no peer-to-peer: data-parallel traffic crosses PCIe
    through the host, at a fraction of any NVLink card's bus bandwidth."""
    rtx, a800, a100 = GPUS["rtx-4090"], GPUS["a800"], GPUS["a100-80gb"]
    assert not rtx.has_nvlink
    assert speed._bus_gbps(rtx, 8) == speed.PCIE_BUS_GBPS[rtx.pcie_gen]
    assert speed._bus_gbps(rtx, 8) < speed._bus_gbps(a800, 8) < speed._bus_gbps(a100, 8)
    # the same ZeRO-3 run on 1 and on 8 cards: the 8-card one waits on PCIe per micro-batch
    one = _tokens_per_s("rtx-4090", model="llama-3.2-1b", seq=512)
    eight = _tokens_per_s("rtx-4090", gpus=8, zero=3, model="llama-3.2-1b", seq=512)
    assert eight < 8 * one * 0.9


def test_cut_nvlink_slows_only_the_traffic_it_carries() -> None:
    """H800 = H100 SXM with NVLink cut from 900 to 400 GB/s, A800 = A100 with 600 cut to 400:
    the same compute, so a compute-bound run is as fast, and one whose gathers outlast its
    compute is slower on the cut card. FSDP prefetches whole layers; DeepSpeed's gathers beyond
    its prefetch bucket wait on the link, so the cut card is slower there at any length."""
    for cut, full in (("h800", "h100-sxm"), ("a800", "a100-80gb")):
        assert GPUS[cut].bf16_tflops == GPUS[full].bf16_tflops
        assert GPUS[cut].nvlink_gbps < GPUS[full].nvlink_gbps
        long = dict(gpus=8, zero=3, seq=8192, framework="fsdp")
        assert _tokens_per_s(cut, **long) == pytest.approx(_tokens_per_s(full, **long), rel=0.01)
        short = dict(gpus=8, zero=3, seq=256, model="llama-2-70b", checkpointing="none",
                     framework="fsdp")
        assert _tokens_per_s(cut, **short) < _tokens_per_s(full, **short)
        deepspeed = dict(gpus=8, zero=3, seq=8192, framework="deepspeed")
        assert _tokens_per_s(cut, **deepspeed) < _tokens_per_s(full, **deepspeed)
