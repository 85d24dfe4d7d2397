"""The whole server, not just the cards: a plan's bill of materials.

The buying guides list what else a GPU server needs: host memory, an NVMe array of at least 2 TB,
RoCE or InfiniBand between machines ("otherwise the GPUs wait"), 8-12 kW and real cooling for an
8-card server, 4-card servers in a weak room. Each line here says the rule that sized it. The
reference points are NVIDIA's own 8-GPU servers (the DGX user guides):

  DGX A100: 2 x 64-core EPYC 7742 (128 cores), 1-2 TB RAM for 320-640 GB of GPU memory, 15-30 TB
            NVMe data cache, 8 x 200 Gb/s HDR InfiniBand (one per GPU), 6.5 kW, 6U
  DGX H100: 2 x 56-core Xeon 8480C (112 cores), 2 TB RAM for 640 GB of GPU memory, 30 TB NVMe,
            8 x 400 Gb/s NDR (one per GPU), 10.2 kW, 8U

Inter-server traffic is computed from the plan's sharding with the same accounting the speed
model uses (engine/speed.py: ring all-reduce of 16-bit gradients once per optimizer step, ZeRO-3's
gathers and reduce-scatter every micro-batch, pipeline activations at stage boundaries), and is
compared with what the NICs carry in the step it must hide in.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from engine import cost, memory, speed
from engine.architecture import ModelSpec
from engine.catalog import GpuSpec
from engine.i18n import N_, _, counted, money
from engine.prices import PriceBook
from engine.quant import weight_bytes
from engine.recommend import DEFAULT_EPOCH_TOKENS, tokens_text
from engine.request import Request
from engine.schema import Bom, BomLine, Plan, Traffic

DGX_A100 = "https://docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html"
DGX_H100 = "https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html"
GUIDES = "seed:000 §硬件配置; seed:003 §机房与网络"
# CPU cores per GPU. Training feeds each GPU from its own data-loader workers and runs the CPU
# side of offload (DeepSpeed CPUAdam uses every core it gets): NVIDIA's 8-GPU servers carry 14-16
# cores per GPU (112 and 128). Serving needs no data loaders, only the API server, tokenizers and
# the scheduler: half of that.
CORES_PER_GPU = {"training": 16, "serving": 8}
# Host memory: at least twice the server's GPU memory (the DGX servers carry 1.8-3.2x: 2 TB for
# 640 GB, 1-2 TB for 320-640 GB, 2 TB for DGX H200's 1,128 GB), plus what offload keeps there;
# checkpoints and weights pass through it on their way to and from the GPUs.
RAM_PER_GPU_MEMORY = 2.0
RAM_SIZES_GB = (64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
# Storage: the guides' NVMe array of at least 2 TB, mirrored (two drives at least), sized for the
# model as released, the checkpoints a run keeps, and the dataset.
MIN_NVME_TB = 2.0
DRIVE_SIZES_TB = (1.92, 3.84, 7.68, 15.36)
CHECKPOINTS_KEPT = 3  # the last three: one being written, one to resume from, one spare
TOKEN_BYTES = 4  # a token's id as uint32 (raw text is about the same, ~4 bytes per token)
# NICs between servers (engine/speed.py's inter-node bandwidths, at ~90% of the line rate): one
# 200 Gb/s (PCIe 4) or 400 Gb/s (PCIe 5) NIC per GPU beside NVLink boards, as in the DGX servers;
# PCIe GPU servers carry one or two 100 GbE ports for all their cards.
LINK_EFFICIENCY = 0.9
PCIE_SERVER_NIC_GBPS = 100
SWITCH_PORTS = 64  # a 1U 400G/200G InfiniBand or RoCE switch (NVIDIA QM9700: 64 x 400 Gb/s)
# Racks and cooling. An ordinary air-cooled room gives a rack about 6 kW (Uptime Institute's
# surveys put the average rack near 6 kW); high-density rows with in-row or rear-door cooling
# take 12-20 kW, and NVIDIA plans up to four DGX H100 (about 41 kW) in a liquid- or
# rear-door-cooled rack. The guides: 8 cards draw 8-12 kW and need precision air conditioning or
# liquid cooling; in a weak room prefer 4-card servers.
ROOM_RACK_KW = 6.0
DENSE_RACK_KW = 15.0
SUPERPOD_RACK_KW = 41.0
DGX_SUPERPOD = ("https://docs.nvidia.com/dgx-superpod/design-guides/"
                "dgx-superpod-data-center-design-h100/latest/planning.html")
UPTIME_SURVEY = "https://uptimeinstitute.com/resources/research-and-reports/uptime-institute-global-data-center-survey-results-2025"
RACK_UNITS = {("sxm", 8): 8, ("oam", 8): 8, ("pcie", 8): 4, ("pcie", 4): 2}
BTU_PER_KW = 3412

ITEM_LABELS = {
    "servers": N_("servers"), "gpus": N_("GPUs"), "cpu": N_("CPU cores"), "ram": N_("host RAM"),
    "nvme": N_("NVMe storage"), "nic": N_("NICs between servers"), "switch": N_("switch"),
    "power": N_("power"), "rack": N_("rack space"), "cooling": N_("cooling"),
}
TRAFFIC_LABELS = {
    "data-parallel": N_("data-parallel gradient all-reduce"),
    "fsdp": N_("ZeRO-3 / FSDP weight gathers and gradient reduce-scatter"),
    "pipeline": N_("pipeline activations between stages"),
    "context": N_("context-parallel K and V around the ring"),
    "expert": N_("expert all-to-all"),
    "serving-pipeline": N_("layer-split activations per decoded token"),
}


class Layout(NamedTuple):
    servers: int
    per: int  # GPUs per server


def layout(gpu: GpuSpec, gpus: int) -> Layout:
    servers, per = cost.server_layout(gpu, gpus)
    return Layout(servers, per)


def _line(item: str, per: float | None, total: float | None, unit: str, text: str, rule: str,
          share: float | None = None, amount: float | None = None) -> BomLine:
    return BomLine.build(item=item, label=_(ITEM_LABELS[item]), per_server=per, total=total,
                         unit=unit, text=text, rule=rule,
                         share=None if share is None else round(share, 3),
                         amount=None if amount is None else round(amount))


# -- traffic between servers ------------------------------------------------------------------


def step_tokens(req: Request, gpus: int) -> int:
    """Tokens per optimizer step, as engine/speed.py counts them."""
    return speed.global_batch_tokens(req.spec, gpus, req.tokens)


def nic_gbps(gpu: GpuSpec) -> int:
    """Line rate of one NIC between servers: the speed model's bus bandwidth at ~90%."""
    if not gpu.has_nvlink:
        return PCIE_SERVER_NIC_GBPS
    rate = speed.INTER_NODE_GBPS.get(gpu.pcie_gen, speed.INTER_NODE_GBPS[4])
    return int(round(rate * 8 / LINK_EFFICIENCY / 100) * 100)


def training_traffic(spec: ModelSpec, req: Request, plan: Plan, lay: Layout) -> list[Traffic]:
    s = plan.settings
    tp, pp, dp, zero = s.tp, s.pp, s.dp, s.zero or 0
    seq, batch = s.seq or req.seq_len, s.batch or req.batch
    trainable = (memory.lora_params(spec, req.rank, req.targets) if req.spec.adapters
                 else spec.params)
    micro = seq * batch
    accumulation = max(1, round(step_tokens(req, plan.gpus) / (dp * micro)))
    rate = plan.speed.train_tokens_per_s
    step_s = dp * micro * accumulation / rate if rate else None
    out = []
    cross = (lay.servers - 1) / lay.servers  # share of a ring or gather that leaves the server
    cp = s.cp
    if dp * cp > 1 and lay.servers > 1:  # gradients reduce over the data and context ranks
        if zero >= 3:
            # all-gather in forward and backward, reduce-scatter of gradients: 3 x 2 bytes per
            # parameter each micro-batch; the frozen LoRA base is gathered too
            gathered = spec.params if req.spec.adapters else trainable
            per_gpu = (2 * 2 * gathered + 2 * trainable) / (tp * pp) * cross * accumulation
            kind = "fsdp"
        else:
            # ring all-reduce of 16-bit gradients: 2 x 2 bytes per parameter, once per step
            per_gpu = 2 * 2 * trainable / (tp * pp) * cross
            kind = "data-parallel"
        out.append(_traffic(kind, per_gpu, step_s, lay))
    if pp > 1 and lay.servers > 1:
        # each micro-batch's hidden states cross a stage boundary forward and its gradient back
        boundaries = min(pp - 1, lay.servers - 1)
        per_gpu = 2 * micro * spec.hidden * 2 / tp * accumulation * boundaries / pp
        out.append(_traffic("pipeline", per_gpu, step_s, lay))
    if cp > 1 and tp * cp > lay.per:  # a context-parallel ring that leaves the server
        passes = 3 if req.checkpointing_mode == "full" else 2
        per_gpu = speed.context_parallel_bytes(spec, tokens=micro, cp=cp, tp=tp, pp=pp,
                                               passes=passes) * accumulation
        out.append(_traffic("context", per_gpu, step_s, lay))
    ep = getattr(s, "ep", 1) or 1  # expert parallelism, when the planner shards experts
    if spec.is_moe and ep > 1 and lay.servers > 1:
        per_gpu = (4 * micro * spec.active_experts * spec.hidden * 2 * spec.moe_layers / pp
                   * cross * accumulation)
        out.append(_traffic("expert", per_gpu, step_s, lay))
    return out


def serving_traffic(spec: ModelSpec, req: Request, plan: Plan, lay: Layout) -> list[Traffic]:
    s = plan.settings
    if lay.servers <= 1 or plan.gpus // max(1, s.replicas) <= lay.per:
        return []  # each copy of the model inside one server: nothing crosses between them
    per_user = plan.speed.decode_tokens_per_s or 0.0
    step_s = 1 / per_user if per_user else None
    users = -(-req.users // max(1, s.replicas))
    out = []
    if s.pp > 1:
        boundaries = min(s.pp - 1, lay.servers - 1)
        per_gpu = users * spec.hidden * 2 * boundaries / (s.pp * s.tp)
        out.append(_traffic("serving-pipeline", per_gpu, step_s, lay))
    ep = getattr(s, "ep", 1) or 1
    if spec.is_moe and ep > 1:
        cross = (lay.servers - 1) / lay.servers
        per_gpu = 2 * users * spec.active_experts * spec.hidden * 2 * spec.moe_layers * cross / ep
        out.append(_traffic("expert", per_gpu, step_s, lay))
    return out


def _traffic(kind: str, per_gpu: float, step_s: float | None, lay: Layout) -> Traffic:
    # bytes each GPU sends; every GPU has its rail (or its share of the server's ports)
    gbps = per_gpu * lay.per * 8 / step_s / 1e9 if step_s else None
    text = _("{what}: {gb:,.2f} GB per GPU per step").format(
        what=_(TRAFFIC_LABELS[kind]), gb=per_gpu / 1e9)
    if step_s:
        text += _(" in a {step:,.2f} s step: {gbps:,.0f} Gb/s per server to keep pace").format(
            step=step_s, gbps=gbps)
    return Traffic.build(kind=kind, bytes_per_step=round(per_gpu), seconds_per_step=(
        None if step_s is None else round(step_s, 4)), gbps_per_server=(
        None if gbps is None else round(gbps, 1)), text=text)


# -- the lines ---------------------------------------------------------------------------------


def _cpu(req: Request, gpu: GpuSpec, lay: Layout) -> BomLine:
    kind = "serving" if req.is_serving else "training"
    per = max(16, CORES_PER_GPU[kind] * lay.per)
    rule = _("{cores} cores per GPU for {kind} (NVIDIA's 8-GPU servers: 112-128 cores, 14-16 per "
             "GPU, for data loading and CPU offload; serving needs no data loaders); at least 16 "
             "(a 2-socket server) ({a100}; {h100})").format(
        cores=CORES_PER_GPU[kind], kind=_("serving") if req.is_serving else _("training"),
        a100=DGX_A100, h100=DGX_H100)
    return _line("cpu", per, per * lay.servers, _("cores"),
                 _("{per} cores per server ({count} x {cores})").format(
                     per=per, count=counted(lay.per, "GPU"), cores=CORES_PER_GPU[kind]), rule)


def _ram(plan: Plan, gpu: GpuSpec, lay: Layout) -> BomLine:
    gpu_gb = gpu.memory_gb * lay.per
    offload_gb = plan.memory.host_offload * lay.per / 1e9
    need = RAM_PER_GPU_MEMORY * gpu_gb + offload_gb
    size = next((g for g in RAM_SIZES_GB if g >= need), math.ceil(need / 1024) * 1024)
    text = _("{size:,} GB per server: {factor:g} x {gpu:,.0f} GB of GPU memory").format(
        size=size, factor=RAM_PER_GPU_MEMORY, gpu=gpu_gb)
    if offload_gb:
        text += _(" + {offload:,.0f} GB offloaded optimizer states and weights").format(
            offload=offload_gb)
    rule = _("at least twice the server's GPU memory (NVIDIA's DGX servers carry 1.8-3.2x), plus "
             "what offload= keeps in host memory; rounded up to a standard DIMM fill ({h100})"
             ).format(h100=DGX_H100)
    return _line("ram", size, size * lay.servers, "GB", text, rule)


def _nvme(spec: ModelSpec, req: Request, plan: Plan, lay: Layout) -> BomLine:
    release = weight_bytes(spec, spec.native_quant).total_bytes  # the checkpoint as released
    parts = [_("model {gb:,.0f} GB").format(gb=release / 1e9)]
    need = release
    if req.is_training:
        wb, _gb, ob = memory.recipe_bytes(req.optimizer, req.precision)
        trainable = (memory.lora_params(spec, req.rank, req.targets) if req.spec.adapters
                     else spec.params)
        state = trainable * (wb + ob) + (spec.params * 2 if req.spec.adapters else 0)
        # sharded checkpoints: each server writes its share of every kept checkpoint
        share = CHECKPOINTS_KEPT * state / (lay.servers if (plan.settings.zero or 0) >= 1
                                            or plan.settings.pp > 1 else 1)
        tokens = req.tokens or DEFAULT_EPOCH_TOKENS
        data = tokens * TOKEN_BYTES / lay.servers  # each server reads its data-parallel share
        need += share + data
        parts.append(_("{kept} checkpoints {gb:,.0f} GB ({state:,.0f} GB each: weights and "
                       "optimizer states{merged})").format(
            kept=CHECKPOINTS_KEPT, gb=share / 1e9, state=state / 1e9,
            merged=_(" + a merged model") if req.spec.adapters else ""))
        parts.append(_("dataset {gb:,.1f} GB ({tokens} tokens x {bytes} B{share})").format(
            gb=data / 1e9, tokens=tokens_text(tokens), bytes=TOKEN_BYTES,
            share=_(" / {n} servers").format(n=lay.servers) if lay.servers > 1 else ""))
    else:
        served = plan.memory.weights * plan.settings.tp * plan.settings.pp
        need += served  # the served format beside the release (quantized, or the next version)
        parts.append(_("served weights {gb:,.0f} GB").format(gb=served / 1e9))
    need_tb = max(MIN_NVME_TB, need / 1e12 * 1.25)  # a quarter free: SSDs slow down when full
    drive = next((d for d in DRIVE_SIZES_TB if d >= need_tb), DRIVE_SIZES_TB[-1])
    drives = 2 * max(1, math.ceil(need_tb / drive))  # mirrored (RAID 1 / RAID 10)
    if req.is_training and lay.servers > 1:
        whole = (req.tokens or DEFAULT_EPOCH_TOKENS) * TOKEN_BYTES
        parts.append(_("the whole dataset ({size}) and the checkpoints on shared storage "
                       "(a parallel file system or object store, not in a server's price)")
                     .format(size=f"{whole / 1e12:,.1f} TB" if whole >= 1e12
                             else f"{whole / 1e9:,.1f} GB"))
    text = _("{drives} x {drive:g} TB NVMe mirrored ({usable:g} TB usable) per server: "
             "{parts}, a quarter kept free").format(
        drives=drives, drive=drive, usable=drive * drives / 2, parts=", ".join(parts))
    rule = _("the guides: an NVMe SSD array of at least 2 TB ({guides}); NVIDIA's servers carry "
             "15-30 TB of NVMe cache; {kept} checkpoints kept").format(
        guides=GUIDES, kept=CHECKPOINTS_KEPT)
    return _line("nvme", drive * drives / 2, drive * drives / 2 * lay.servers, "TB", text, rule)


def _network(gpu: GpuSpec, lay: Layout, traffic: list[Traffic]) -> list[BomLine]:
    rate = nic_gbps(gpu)
    if lay.servers <= 1:
        return [_line("nic", 1, 1, _("ports"),
                      _("one server: a 25 GbE port for data and management is enough; no "
                        "fabric between GPUs leaves the box"),
                      _("the guides ask for RoCE or InfiniBand only between machines ({guides})")
                      .format(guides=GUIDES))]
    nics = lay.per if gpu.has_nvlink else 2
    fabric = (_("InfiniBand or RoCE, one NIC per GPU (rail-optimized, as in NVIDIA's servers)")
              if gpu.has_nvlink else _("RoCE (100 GbE): PCIe GPU servers carry one or two ports for "
                                       "all their cards"))
    per_server = nics * rate if gpu.has_nvlink else rate  # the second port is for redundancy
    need = max((t.gbps_per_server or 0.0 for t in traffic), default=0.0)
    text = _("{nics} x {rate} Gb/s per server, {fabric}").format(nics=nics, rate=rate, fabric=fabric)
    if need:
        verdict = (_("; the traffic below needs {need:,.0f} Gb/s per server: the GPUs wait on "
                     "the network (the speed estimate counts it)").format(need=need)
                   if need > per_server * LINK_EFFICIENCY
                   else _("; the traffic below needs {need:,.0f} Gb/s per server and hides under "
                          "compute").format(need=need))
        text += verdict
    rule = _("the guides: RoCE or InfiniBand between machines, otherwise the GPUs wait "
             "({guides}); DGX A100/H100: 8 x 200/400 Gb/s ({h100})").format(
        guides=GUIDES, h100=DGX_H100)
    ports = nics * lay.servers
    # leaves with half their ports down to NICs and half up; spines take every leaf's uplinks
    leaves = math.ceil(ports / (SWITCH_PORTS // 2))
    switches = 1 if ports <= SWITCH_PORTS else leaves + math.ceil(leaves / 2)
    switch_text = (_("one {ports}-port {rate} Gb/s switch for {used} ports").format(
        ports=SWITCH_PORTS, rate=rate, used=ports) if switches == 1 else
                   _("{switches} switches of {ports} ports in two tiers (leaves with half their "
                     "ports down, spines above) for {used} ports").format(
                       switches=switches, ports=SWITCH_PORTS, used=ports))
    switch_rule = _("a non-blocking fabric: every NIC port on a switch port; past {ports} ports, "
                    "a leaf-spine tree; switches and cables are not in a server's price").format(
        ports=SWITCH_PORTS)
    return [_line("nic", nics, ports, _("ports"), text, rule),
            _line("switch", None, switches, _("switches"), switch_text, switch_rule)]


def _power(book: PriceBook, gpu: GpuSpec, plan: Plan, lay: Layout) -> tuple[BomLine, float]:
    host_w = cost.host_power_w(book, gpu, plan.gpus) / lay.servers
    server_kw = (gpu.tdp_w * lay.per + host_w) / 1000
    total = server_kw * lay.servers
    facility = total * book.pue.value
    text = _("{kw:.1f} kW per server ({per} x {tdp} W + {host:,.0f} W host), {total:.1f} kW for "
             "{servers}; {facility:.1f} kW at the wall with cooling (PUE {pue:g})").format(
        kw=server_kw, per=lay.per, tdp=gpu.tdp_w, host=host_w, total=total,
        servers=_servers(lay.servers), facility=facility, pue=book.pue.value)
    rule = _("GPU TDP plus the host's draw ({source}); the guides: 8 cards draw 8-12 kW "
             "({guides})").format(source=book.host_power_w.source, guides=GUIDES)
    return _line("power", round(server_kw, 2), round(total, 2), "kW", text, rule), server_kw


def _rack(gpu: GpuSpec, lay: Layout, server_kw: float) -> list[BomLine]:
    units = RACK_UNITS.get((gpu.form_factor, lay.per), 2 if lay.per <= 4 else 4)
    room = int(ROOM_RACK_KW // server_kw)
    dense = int(DENSE_RACK_KW // server_kw)
    if room >= 1:
        where = _("an ordinary air-cooled rack of about {room:g} kW holds {n}").format(
            room=ROOM_RACK_KW, n=room)
        racks = math.ceil(lay.servers / room)
    elif dense >= 1:
        where = _("more than an ordinary rack's {room:g} kW: a high-density rack of {dense:g} kW "
                  "holds {n}").format(room=ROOM_RACK_KW, dense=DENSE_RACK_KW, n=dense)
        racks = math.ceil(lay.servers / dense)
    else:
        where = _("more than a high-density rack's {dense:g} kW: liquid or rear-door cooling "
                  "(NVIDIA plans up to {pod:g} kW a rack)").format(
            dense=DENSE_RACK_KW, pod=SUPERPOD_RACK_KW)
        racks = lay.servers
    text = _("{units}U per server; {where}: {racks}").format(
        units=units, where=where, racks=counted(racks, "rack"))
    rule = _("rack power: ordinary rooms about {room:g} kW a rack ({uptime}); dense rows "
             "{dense:g} kW; NVIDIA's rack plans ({pod})").format(
        room=ROOM_RACK_KW, uptime=UPTIME_SURVEY, dense=DENSE_RACK_KW, pod=DGX_SUPERPOD)
    heat = server_kw * lay.servers
    if server_kw > ROOM_RACK_KW:
        cool = _("remove {kw:.1f} kW ({btu:,.0f} BTU/h) of heat: precision air conditioning or "
                 "liquid cooling; in a weak room, prefer 4-card servers").format(
            kw=heat, btu=heat * BTU_PER_KW)
    else:
        cool = _("remove {kw:.1f} kW ({btu:,.0f} BTU/h) of heat: an ordinary air-cooled room "
                 "copes").format(kw=heat, btu=heat * BTU_PER_KW)
    cool_rule = _("the guides: 8-card servers need precision air conditioning or liquid cooling; "
                  "without it big clusters fail more often, and a weak room should take 4-card "
                  "servers ({guides})").format(guides=GUIDES)
    return [_line("rack", units, units * lay.servers, "U", text, rule),
            _line("cooling", round(server_kw, 2), round(heat, 2), "kW", cool, cool_rule)]


def _prices(book: PriceBook, gpu: GpuSpec, plan: Plan, req: Request
            ) -> tuple[float | None, float | None, str]:
    """(capex, cards' share of it, how the share is known)."""
    c = plan.cost
    if c is None or c.buy.capex is None:
        return None, None, ""
    capex = c.buy.capex
    currency, market = c.currency, req.market_choice.market
    lay = layout(gpu, plan.gpus)
    server = cost.quote(book, f"server:{lay.per}x{gpu.name}", "buy_server", currency, market)
    card = cost.quote(book, gpu.name, "buy_card", currency, market)
    if server is None and card is not None:
        return capex, cost.CARD_SHARE, _("cards / {share:.0%}: the cards' share of a server's "
                                         "price (seed 003)").format(share=cost.CARD_SHARE)
    if server is not None and card is not None:
        cards = book.convert(card.mid, card.currency, currency) * plan.gpus
        return capex, min(1.0, cards / capex), _("card price x {n} over the server price").format(
            n=plan.gpus)
    return capex, None, ""


def bill_of_materials(spec: ModelSpec, req: Request, plan: Plan, gpu: GpuSpec,
                      book: PriceBook) -> Bom | None:
    """Every line of a plan that runs, with its rule; None for a plan that does not run."""
    if plan.verdict == "no":
        return None
    lay = layout(gpu, plan.gpus)
    capex, card_share, how = _prices(book, gpu, plan, req)
    lines = [
        _line("servers", 1, lay.servers, _("servers"),
              _("{servers} of {per} x {card}").format(servers=_servers(lay.servers), per=lay.per,
                                                      card=gpu.display),
              _("8 GPUs per server at most (an HGX board or an 8-slot PCIe chassis); fewer fit in "
                "one"),
              share=1.0 if capex else None, amount=capex),
        _line("gpus", lay.per, plan.gpus, _("cards"),
              _("{count} x {card} ({memory:g} GB each)").format(
                  count=plan.gpus, card=gpu.display, memory=gpu.memory_gb),
              how or _("the catalog has no purchase price for {card} in this market").format(
                  card=gpu.display),
              share=card_share, amount=capex * card_share if capex and card_share else None),
        _cpu(req, gpu, lay), _ram(plan, gpu, lay), _nvme(spec, req, plan, lay),
    ]
    traffic = (training_traffic(spec, req, plan, lay) if req.is_training
               else serving_traffic(spec, req, plan, lay))
    lines += _network(gpu, lay, traffic)
    power, server_kw = _power(book, gpu, plan, lay)
    lines.append(power)
    lines += _rack(gpu, lay, server_kw)
    notes = []
    if capex and card_share is not None:
        notes.append(_("the rest of the server (CPUs, RAM, NVMe, NICs, chassis, power supplies) is "
                       "{share:.0%} of its price ({amount}); switches, cables and the room are "
                       "extra").format(share=1 - card_share, amount=money(
                           capex * (1 - card_share), plan.cost.currency if plan.cost else "")))
    if not req.is_serving and lay.servers > 1 and not gpu.has_nvlink:
        notes.append(_("{card} servers across a network: the guides warn that PCIe cards scale "
                       "poorly; budget for RoCE and expect communication-bound steps").format(
            card=gpu.display))
    return Bom.build(servers=lay.servers, gpus_per_server=lay.per, lines=lines, traffic=traffic,
                     currency=plan.cost.currency if plan.cost else None, notes=notes)


def _servers(n: int) -> str:
    return _("1 server") if n == 1 else _("{n} servers").format(n=n)


