"""The reference files themselves: every row cites a source, quotes it and says when it was read;
queries use the grammar; the report compares training throughput on one basis and says whether
each published setup fits."""

from __future__ import annotations

import datetime
import importlib.util
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine import ask
from engine.parse import parse
from tests.tiers import fast_first

ROOT = Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "validation"
KINDS = {"measurement", "rule_of_thumb", "upper_bound", "derived", "not_comparable"}


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location("report", VALIDATION / "report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["report"] = module
    spec.loader.exec_module(module)
    return module


def _rows(name: str, table: str) -> list[dict]:
    return tomllib.loads((VALIDATION / name).read_text(encoding="utf-8"))[table]


REFS = _rows("references.toml", "ref") + _rows("speed_references.toml", "ref")
SETUPS = _rows("setups.toml", "setup")


@pytest.mark.parametrize("row", REFS + SETUPS, ids=lambda r: r["id"])
def test_every_row_names_its_source_quote_and_date(row: dict) -> None:
    assert row["source"].startswith(("https://", "http://", "seed:"))
    assert row["quote"].strip()
    read = datetime.date.fromisoformat(row["retrieved"])
    assert datetime.date(2023, 1, 1) <= read <= datetime.date.today()
    if "needs" in row:
        assert row["needs"].strip(), "needs says what the engine lacks"


def test_ids_are_unique_across_files() -> None:
    ids = [r["id"] for r in REFS + SETUPS]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


@pytest.mark.parametrize("ref", REFS, ids=lambda r: r["id"])
def test_reference_fields(report, ref: dict) -> None:
    assert ref["metric"] in report.AIMS
    assert ref["unit"] in report.UNITS
    assert float(ref["value"]) > 0
    kind = ref.get("kind", "measurement")
    assert kind in KINDS
    if kind in ("derived", "not_comparable"):
        assert ref["why"].strip()
    # a throughput is per GPU or for the whole run; nothing else carries a basis
    if ref["metric"] == "train_tokens_per_s":
        assert ref["basis"] in report.BASES
    else:
        assert "basis" not in ref
    # fit: a constant was read from the row; check: held out (none was)
    assert report.row_set(ref) in report.SETS


def test_held_out_rows_are_reported_apart(report) -> None:
    fit = {"id": "a", "metric": "train_tokens_per_s", "unit": "tokens/s", "source": "x",
           "query": "7B pretrain"}
    check = dict(fit, id="b", set="check")
    rows = [report.Row(fit, 100.0, 110.0, 0.10, ""), report.Row(check, 100.0, 70.0, -0.30, "")]
    assert report._median_of(rows, "train_tokens_per_s", "fit") == "1, 10.0%"
    assert report._median_of(rows, "train_tokens_per_s", "check") == "1, 30.0%"
    summary = report.render(rows).split("## train_tokens_per_s")[0]
    assert "| 1, 10.0% | 1, 30.0% |" in summary
    with pytest.raises(ValueError):
        report.row_set(dict(fit, set="train"))


@pytest.mark.parametrize("setup", fast_first(SETUPS), ids=lambda s: s["id"])
def test_setups_pin_a_configuration_that_parses(report, setup: dict) -> None:
    assert setup["outcome"] in ("ran", "oom", "below_minimum")
    assert setup["measured"].strip()
    if setup.get("metric"):
        assert setup["metric"] in report.SPEED_FIELDS and setup["unit"] in report.UNITS
        assert float(setup["value"]) > 0
        assert setup["metric"] != "train_tokens_per_s" or setup["basis"] in report.BASES
    if "needs" in setup:
        return  # grammar or catalog not there yet: kept, and shown as an error in the report
    req = parse(setup["query"])
    assert req.gpu and req.gpus, "a setup names its card and count"
    row = report.evaluate_setup(setup)
    assert row.error is None, row.error
    assert row.verdict in ("fits", "tight", "no")


def _setup(query: str, outcome: str = "ran", **more: str) -> dict:
    return {"id": "x", "query": query, "outcome": outcome, "measured": "what happened",
            "source": "https://example.org", **more}


def _ref(query: str, metric: str, value: float, unit: str, **more: str) -> dict:
    return {"id": "x", "query": query, "metric": metric, "value": value, "unit": unit,
            "source": "https://example.org", **more}


def test_a_setup_gpusize_cannot_read_is_an_error_not_dropped(report) -> None:
    setup = _setup("llama-3.1-405b pretrain gpu=h100 gpus=500000 tokens=15T",
                   needs="gpus above 131072")
    row = report.evaluate_setup(setup)
    assert row.verdict is None and "131072" in row.error and "needs gpus above 131072" in row.error
    assert "| error |" in "\n".join(report.render_setups([row]))


def test_unpinned_setup_is_refused(report) -> None:
    row = report.evaluate_setup(_setup("llama-3.1-8b inference"))
    assert row.error and "gpu=" in row.error


def _plan(total: int, capacity: int, fits: bool, **verdict: str) -> SimpleNamespace:
    memory = SimpleNamespace(total=total, capacity=capacity, fits=fits, **verdict.get("memory", {}))
    return SimpleNamespace(memory=memory, **{k: v for k, v in verdict.items() if k != "memory"})


def test_verdict_falls_back_to_the_memory_fields(report) -> None:
    assert report.plan_verdict(_plan(70, 80, True)) == "fits"
    assert report.plan_verdict(_plan(79, 80, False)) == "tight"  # fits only without the headroom
    assert report.plan_verdict(_plan(81, 80, False)) == "no"


def test_verdict_prefers_the_engines_own(report) -> None:
    assert report.plan_verdict(_plan(70, 80, True, verdict="tight")) == "tight"
    assert report.plan_verdict(_plan(81, 80, False, memory={"verdict": "no"})) == "no"


def test_real_setups_agree_or_disagree_both_ways(report) -> None:
    query = "llama-2-70b inference gpu=a100-80gb gpus=1 quant=bf16"
    oom = report.evaluate_setup(_setup(query, "oom"))
    assert oom.verdict == "no" and report.setup_agrees(oom) is True
    ran = report.evaluate_setup(_setup(query, "ran"))
    assert report.setup_agrees(ran) is False
    assert "gpusize says `no` to these setups that ran" in "\n".join(report.render_setups([ran]))


def test_per_gpu_throughput_is_compared_for_the_whole_plan(report) -> None:
    query = "llama-3-8b full-finetune gpu=a100-80gb gpus=8 seq=8192 batch=1 zero=3"
    ref = _ref(query, "train_tokens_per_s", 100.0, "tokens/s", basis="per_gpu")
    per_gpu = report.evaluate(ref)
    whole = report.evaluate({**ref, "basis": "run"})
    assert per_gpu.measured == 800.0 and whole.measured == 100.0
    assert per_gpu.estimate == whole.estimate == ask(query).plans[0].speed.train_tokens_per_s
    assert report.evaluate({**ref, "basis": "total"}).estimate is None  # no silent guess


def test_time_to_first_token_is_read_from_the_answers_service(report) -> None:
    query = ("qwen3-8b inference gpu=h100-sxm gpus=1 quant=bf16 prompt=4096 output=256"
             " context=4352 users=8 engine=vllm")
    row = report.evaluate(_ref(query, "ttft_s", 0.5, "s"))
    assert row.measured == 0.5
    assert row.estimate == ask(query).plans[0].service.ttft_s and row.estimate > 0
    assert row.error == pytest.approx((row.estimate - 0.5) / 0.5)
    assert "ttft_s" in report.AIMS and report.UNITS["s"] == 1


def test_reference_that_cannot_be_evaluated_names_what_it_needs(report) -> None:
    row = report.evaluate(_ref("example/unreleased-65b pretrain gpu=a100-80gb gpus=2048 tokens=1T",
                               "train_gpu_hours", 1.0, "GPU-hours", needs="catalog model: X-65B"))
    assert row.estimate is None and row.compared.startswith("error:")
    assert "needs catalog model: X-65B" in row.compared


def test_summary_counts_rows_that_cannot_be_evaluated(report) -> None:
    ok = report.evaluate(next(r for r in REFS if r["metric"] == "train_gpu_hours"
                              and "needs" not in r and r.get("kind", "measurement") == "measurement"))
    bad = report.evaluate(_ref("zzzz-unknown-model-9 pretrain gpu=h100 gpus=8 tokens=1T",
                               "train_gpu_hours", 1.0, "GPU-hours"))
    text = report.render([ok, bad])
    line = next(x for x in text.splitlines() if x.startswith("| train_gpu_hours |"))
    assert line.endswith("| 1 |") and "| 15% |" in line


def test_rows_outside_their_aim_are_listed_with_their_reason(report) -> None:
    far = report.Row(_ref("q", "decode_tokens_per_s", 10.0, "tokens/s") | {"id": "gptfast-x"},
                     10.0, 15.0, 0.5, "")
    near = report.Row(_ref("q", "decode_tokens_per_s", 10.0, "tokens/s"), 10.0, 10.5, 0.05, "")
    derived = report.Row(_ref("q", "decode_tokens_per_s", 10.0, "tokens/s", kind="derived"),
                         10.0, 15.0, 0.5, "")
    assert report.outside_aim(far) and not report.outside_aim(near)
    assert not report.outside_aim(derived)  # only measurements count against an aim
    assert "gpt-fast" in report.reason(far)
    assert report.reason(near) == "no reason recorded"
    text = "\n".join(report.render_why([far, near], []))
    assert "gptfast-x (+50%)" in text and "1 of 2 rows outside 20%" in text
    load = report.Row(_ref("q", "max_throughput_tokens_per_s", 10.0, "tokens/s")
                      | {"id": "trtllm-maxtput-gpt-oss-x"}, 10.0, 15.0, 0.5, "")
    text = "\n".join(report.render_why([load], []))
    assert "max_throughput_tokens_per_s: 1 of 1 rows outside 20%" in text
    assert "MXFP4" in text  # the reason recorded for the gpt-oss rows


@pytest.mark.slow  # a sweep: seconds of CPU (the fast tier's budget is a minute in all)
def test_unpinned_gpu_hours_are_also_judged_at_the_deadline_count(report) -> None:
    ref = _ref("llama-2-7b pretrain gpu=a100-80gb tokens=2T seq=4096", "train_gpu_hours",
               184320.0, "GPU-hours")
    row = report.at_deadline(ref)
    assert row is not None and row.gpus > 8
    plan = ask(f"{ref['query']} gpus={row.gpus}").plans[0]
    assert plan.speed.train_gpu_hours / row.gpus <= report.DEADLINE_DAYS * 24
    half = ask(f"{ref['query']} gpus={row.gpus // 2}").plans[0]
    assert half.speed.train_gpu_hours / (row.gpus // 2) > report.DEADLINE_DAYS * 24
    assert report.at_deadline({**ref, "query": ref["query"] + " gpus=64"}) is None


def test_a_full_load_row_runs_under_the_scheduler_its_framework_names(report) -> None:
    assert report.benchmark_scheduler("TensorRT-LLM, PyTorch backend, FP8") == "trtllm"
    for framework in ("vLLM v0.11.0, `vllm serve Qwen/Qwen3-14B`", "vLLM-Ascend v0.9.1", ""):
        assert report.benchmark_scheduler(framework) == "vllm"
    query = "qwen3-32b inference gpu=h100-sxm gpus=1 quant=bf16 prompt=4000 output=200"
    trt, _how = report.full_load_per_gpu(query, "TensorRT-LLM")
    vllm, _how = report.full_load_per_gpu(query, "vLLM v0.11.0")
    assert vllm < trt
