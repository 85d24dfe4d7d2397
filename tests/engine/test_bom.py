"""The whole server (engine/bom.py): each line follows its rule, and the traffic between servers
is what the plan's sharding moves."""

from __future__ import annotations

import pytest

import engine
from engine import bom, catalog, memory
from engine.cost import host_power_w
from engine.parse import parse
from engine.prices import price_book
from engine.resolve import resolve_model
from engine.schema import Bom, BomLine, Plan


def _plan(text: str) -> Plan:
    ans = engine.ask(text)
    assert ans.plans and ans.plans[0].bom is not None, text
    return ans.plans[0]


def _line(b: Bom, item: str) -> BomLine:
    return next(line for line in b.lines if line.item == item)


QUESTIONS = ("13B full-finetune", "llama-3.1-8b qlora gpu=4090", "qwen3-32b inference",
             "70B full-finetune gpu=h800 gpus=16", "llama-3.1-70b serve users=20",
             "7B full-finetune gpu=a100-80gb gpus=16 zero=0",
             "70B full-finetune gpu=h800 gpus=8 offload=all", "deepseek-v3 inference")


@pytest.mark.parametrize("text", QUESTIONS)
def test_every_line_has_its_rule(text: str) -> None:
    b = _plan(text).bom
    assert b is not None
    items = [line.item for line in b.lines]
    for needed in ("servers", "gpus", "cpu", "ram", "nvme", "nic", "power", "rack", "cooling"):
        assert needed in items, needed
    assert all(line.rule and line.text for line in b.lines)


@pytest.mark.parametrize("text", QUESTIONS)
def test_storage_is_a_mirrored_array_of_at_least_2_tb(text: str) -> None:
    b = _plan(text).bom
    assert b is not None
    nvme = _line(b, "nvme")
    assert nvme.per_server is not None and nvme.per_server >= bom.MIN_NVME_TB
    drives = int(nvme.text.split(" x ")[0])
    assert drives % 2 == 0  # mirrored


@pytest.mark.parametrize("text", QUESTIONS)
def test_host_ram_is_twice_the_gpu_memory_plus_offload(text: str) -> None:
    plan = _plan(text)
    b = plan.bom
    assert b is not None
    gpu = catalog.gpus()[plan.gpu]
    need = (bom.RAM_PER_GPU_MEMORY * gpu.memory_gb * b.gpus_per_server
            + plan.memory.host_offload * b.gpus_per_server / 1e9)
    ram = _line(b, "ram").per_server
    assert ram is not None and ram >= need
    assert ram in bom.RAM_SIZES_GB or ram % 1024 == 0


def test_offload_adds_host_ram() -> None:
    plain = _line(_plan("13B full-finetune gpu=h800 gpus=8").bom, "ram")  # type: ignore[arg-type]
    offload = _plan("70B full-finetune gpu=h800 gpus=8 offload=all")
    assert offload.memory.host_offload > 0
    assert _line(offload.bom, "ram").per_server > plain.per_server  # type: ignore[arg-type, operator]


@pytest.mark.parametrize("text", QUESTIONS)
def test_power_is_tdp_plus_host(text: str) -> None:
    plan = _plan(text)
    b = plan.bom
    assert b is not None
    gpu = catalog.gpus()[plan.gpu]
    book = price_book()
    per = (gpu.tdp_w * b.gpus_per_server + host_power_w(book, gpu, plan.gpus) / b.servers) / 1000
    power = _line(b, "power")
    assert power.per_server == pytest.approx(per, abs=0.01)
    assert power.total == pytest.approx(per * b.servers, abs=0.02)


def test_an_8_card_sxm_server_needs_real_cooling_and_a_4090_box_does_not() -> None:
    big = _plan("13B full-finetune gpu=h800 gpus=8").bom
    small = _plan("llama-3.1-8b qlora gpu=4090").bom
    assert big is not None and small is not None
    assert 8 <= _line(big, "power").per_server <= 12  # type: ignore[operator]  # the guides' 8-12 kW
    assert "4-card" in _line(big, "cooling").text
    assert "copes" in _line(small, "cooling").text


def test_one_server_needs_no_fabric() -> None:
    b = _plan("qwen3-32b inference gpu=h100-sxm gpus=2").bom
    assert b is not None and b.servers == 1
    assert b.traffic == [] and "switch" not in [line.item for line in b.lines]


@pytest.mark.parametrize(("card", "rate"), [("h100-sxm", 400), ("a100-80gb", 200),
                                            ("rtx-4090", 100)])
def test_nic_rate_follows_the_card(card: str, rate: int) -> None:
    assert bom.nic_gbps(catalog.gpus()[card]) == rate


def test_data_parallel_traffic_is_a_ring_all_reduce_of_16_bit_gradients() -> None:
    plan = _plan("7B full-finetune gpu=a100-80gb gpus=16 zero=0")
    b = plan.bom
    assert b is not None and b.servers == 2
    spec = resolve_model("7B")[0]
    t = next(t for t in b.traffic if t.kind == "data-parallel")
    s = plan.settings
    expected = 2 * 2 * spec.params / (s.tp * s.pp) * (b.servers - 1) / b.servers
    assert t.bytes_per_step == pytest.approx(expected, rel=1e-6)
    assert t.gbps_per_server is not None and t.seconds_per_step is not None
    assert t.gbps_per_server == pytest.approx(
        t.bytes_per_step * b.gpus_per_server * 8 / t.seconds_per_step / 1e9, rel=1e-3)
    assert any(line.item == "switch" for line in b.lines)


def test_zero3_traffic_gathers_every_micro_batch() -> None:
    plan = _plan("7B full-finetune gpu=a100-80gb gpus=16 zero=3 tp=1")
    b = plan.bom
    assert b is not None
    t = next(t for t in b.traffic if t.kind == "fsdp")
    s = plan.settings
    spec = resolve_model("7B")[0]
    micro = s.seq * s.batch  # type: ignore[operator]
    steps = max(1, round(bom.step_tokens(parse("7B full-finetune"), plan.gpus)
                         / (s.dp * micro)))
    expected = 6 * spec.params * (b.servers - 1) / b.servers * steps
    assert t.bytes_per_step == pytest.approx(expected, rel=1e-6)


def test_pipeline_traffic_across_servers() -> None:
    b = _plan("70B full-finetune gpu=h800 gpus=16").bom
    assert b is not None
    assert any(t.kind == "pipeline" for t in b.traffic)


def test_card_share_of_the_price() -> None:
    plan = _plan("qwen3-32b inference gpu=4090 gpus=8")
    b, c = plan.bom, plan.cost
    assert b is not None and c is not None and c.buy.capex
    cards = _line(b, "gpus")
    assert cards.share == pytest.approx(0.65)
    assert cards.amount == pytest.approx(c.buy.capex * 0.65, rel=1e-3)
    assert _line(b, "servers").amount == pytest.approx(c.buy.capex, rel=1e-6)


def test_a_plan_that_does_not_run_has_none() -> None:
    ans = engine.ask("70B full-finetune gpu=4090 gpus=1")
    assert ans.plans[0].verdict == "no" and ans.plans[0].bom is None


def test_checkpoints_are_sized_from_the_recipe() -> None:
    plan = _plan("llama-3.1-8b full-finetune gpu=h100-sxm gpus=8")
    wb, _gb, ob = memory.recipe_bytes("adamw", "bf16")
    spec = catalog.models()["llama-3.1-8b"]
    state_gb = spec.params * (wb + ob) / 1e9
    assert f"{state_gb:,.0f} GB each" in _line(plan.bom, "nvme").text  # type: ignore[arg-type]


def test_every_plan_when_asked_the_recommended_one_always() -> None:
    full = engine.ask("qwen3-32b inference", every_plan=True)
    running = [p for p in full.plans if p.verdict != "no"]
    assert len(running) > 1 and all(p.bom and p.launch and p.api for p in running)
    quick = engine.ask("qwen3-32b inference")
    assert quick.plans[0].bom is not None and quick.plans[0].launch
    assert all(p.bom is None for p in quick.plans[1:])
    assert quick.plans[0].bom == full.plans[0].bom


LARGER = ("llama-3.1-405b pretrain gpu=h100-sxm gpus=128", "qwen2.5-7b full-finetune gpu=4090 gpus=16",
          "qwen3-32b inference gpu=l20 gpus=4", "llama-3.1-70b full-finetune gpu=h100-sxm gpus=80")


@pytest.mark.parametrize("text", QUESTIONS + LARGER)
def test_servers_hold_at_most_8_cards(text: str) -> None:
    plan = _plan(text)
    b = plan.bom
    assert b is not None
    assert 1 <= b.gpus_per_server <= 8
    assert b.servers == -(-plan.gpus // 8) and b.servers * b.gpus_per_server >= plan.gpus
    if plan.gpus <= 8:
        assert b.servers == 1 and b.gpus_per_server == plan.gpus  # fewer fit in one


@pytest.mark.parametrize("text", QUESTIONS + LARGER)
def test_cpu_cores_follow_the_work(text: str) -> None:
    """16 cores a GPU for training (data loaders, CPU offload), 8 for serving, at least 16."""
    plan = _plan(text)
    b = plan.bom
    assert b is not None
    serving = parse(text).is_serving
    per = max(16, (8 if serving else 16) * b.gpus_per_server)
    cpu = _line(b, "cpu")
    assert cpu.per_server == per and cpu.total == per * b.servers


@pytest.mark.parametrize("text", QUESTIONS + LARGER)
def test_racks_and_cooling_follow_the_server_s_power(text: str) -> None:
    """Servers share an ordinary ~6 kW rack while they fit in it, a dense 15 kW one after, a
    rack each (liquid or rear-door cooling) beyond; above 6 kW a server needs real cooling."""
    plan = _plan(text)
    b = plan.bom
    assert b is not None
    kw = _line(b, "power").per_server
    assert kw is not None
    if kw <= bom.ROOM_RACK_KW:
        racks = -(-b.servers // int(bom.ROOM_RACK_KW // kw))
    elif kw <= bom.DENSE_RACK_KW:
        racks = -(-b.servers // int(bom.DENSE_RACK_KW // kw))
    else:
        racks = b.servers
    rack = _line(b, "rack")
    assert rack.text.endswith(" " + (f"{racks} rack" if racks == 1 else f"{racks} racks"))
    assert rack.total == rack.per_server * b.servers  # type: ignore[operator]
    cooling = _line(b, "cooling").text
    assert ("precision" in cooling) == (kw > bom.ROOM_RACK_KW), (kw, cooling)


@pytest.mark.parametrize("text", [q for q in QUESTIONS + LARGER
                                  if any(f"gpus={n}" in q for n in (16, 80, 128))])
def test_nics_and_switches_scale_with_the_servers(text: str) -> None:
    """One NIC per GPU beside NVLink boards, a pair of ports for PCIe boxes; one 64-port
    switch up to 64 ports, then a two-tier leaf-spine tree (leaves with half their ports down)."""
    plan = _plan(text)
    b = plan.bom
    assert b is not None and b.servers > 1
    gpu = catalog.gpus()[plan.gpu]
    nics = b.gpus_per_server if gpu.has_nvlink else 2
    nic = _line(b, "nic")
    assert nic.per_server == nics and nic.total == nics * b.servers
    ports = nics * b.servers
    switches = _line(b, "switch").total
    assert switches is not None
    if ports <= bom.SWITCH_PORTS:
        assert switches == 1
        return
    half = bom.SWITCH_PORTS // 2
    leaves = -(-ports // half)  # every NIC port on a leaf's down half
    spines = int(switches) - leaves
    assert spines * bom.SWITCH_PORTS >= leaves * half  # every leaf uplink on a spine port
    assert (spines - 1) * bom.SWITCH_PORTS < leaves * half  # and no spine more


@pytest.mark.parametrize(("text", "whole"), [
    ("7B full-finetune gpu=a100-80gb gpus=16 zero=0 tokens=1B", "4.0 GB"),
    ("70B pretrain tokens=2T gpu=h800 gpus=64", "8.0 TB")])
def test_the_dataset_is_tokens_times_4_bytes_shared_by_the_servers(text: str, whole: str) -> None:
    b = _plan(text).bom
    assert b is not None and b.servers > 1
    nvme = _line(b, "nvme").text
    tokens = parse(text).tokens or 0
    share = tokens * bom.TOKEN_BYTES / b.servers / 1e9
    assert f"dataset {share:,.1f} GB" in nvme
    assert f"the whole dataset ({whole})" in nvme
