"""A Chinese answer contains no English sentence (issue 15): every answer below, rendered in
Chinese through the terminal and in its JSON text fields, holds no run of three or more English
words. Names, units and terms kept in English are those docs/GLOSSARY.md lists under "Kept in
English"; model and card names come from the catalog; code, key=value words, URLs and file
paths are not prose."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

import engine
from engine import catalog, hub
from engine.catalog import STACK_REMARKS
from engine.i18n import _, language
from engine.i18n import catalog as messages
from engine.parse import ParseError, build_request, parse
from engine.request import Draft
from engine.resolve import UnknownModel, resolve_model
from engine.schema import Answer
from present.terminal import render

GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "GLOSSARY.md"

# the questions, in the words a Chinese team types: the list and the formats and
# strategies whose notes differ
ASKED = (
    "13B 全参微调",  # a size: the template, ZeRO shards, the gather buffer
    "llama-3.1-8b lora",
    "qwen2.5-7b qlora gpu=4090",  # NF4 base, dequantization buffer
    "qwen2.5-72b 推理 quant=q4_k_m",  # GGUF in llama.cpp
    "qwen3-30b-a3b 推理 quant=fp8 users=20",  # MoE, FP8 per channel
    "deepseek-r1 推理",  # MoE, block FP8 as released, MLA
    "7B 预训练 tokens=1T",
    "70B 预训练 tokens=2T",  # pipeline stages across servers
    "70B 全参微调 预算10万",  # over the budget
    "70B 全参微调 预算200万",  # rents, and lists what the budget buys
    "70B 推理 gpu=h100",  # a grey-market card: sized, not recommended, its note in Chinese
    "7B lora 预算100万",  # within it
    "70B 全参微调 gpu=4090 gpus=1",  # pinned, does not fit
    "70B 推理 gpu=4090 gpus=8 users=100",  # pinned, runs, misses the service level
    "7B 全参微调 tokens=1T days=1",  # misses the deadline
    "gpt-oss-120b 推理",  # MXFP4
    "qwen2.5-vl-7b 推理 quant=q4_k_m",  # vision tower outside the GGUF
    "8x7B 推理",  # MoE template
    "qwen2.5-32b 推理 quant=awq users=50",
    "qwen2.5-14b 推理 quant=int8 kv=fp8",
    "llama-3.1-8b 推理 engine=transformers",
    "qwen2.5-72b 推理 users=100 gpu_util=0.95",
    "llama-3.1-8b 全参微调 optimizer=paged-adamw-8bit",
    "70B 全参微调 gpu=h800 gpus=8 offload=all",
    "7B 全参微调 offload=activations compile=true fused_step=true loss=chunked",
    "13B lora gpu=910b gpus=2",  # no CUDA: the vendor's stack
    "7B 全参微调 market=global",
    "llama-3.1-8b 全参微调 seq=200k",  # longer than the model's context
    "7B 全参微调 budget=1M mode=buy hours=400 power_price=1.2",
    # issue 25: a box you own (training: largest per method, recipes; serving: users per
    # context, the API beside it as launched), the largest a box runs, traffic, several servers
    "llama-3.1-8b lora gpu=4090 gpus=8",
    "largest 推理 gpu=4090 gpus=2",
    "qwen3-32b 推理 gpu=4090 gpus=8 users=20",
    "qwen2.5-72b 推理 requests=10000 prompt=2000 output=500",
    "70B 全参微调 gpu=h800 gpus=16",
    # issue 22: the team's own cards, priced at what running them costs
    "我们有两张3090，能跑qwen2.5-14b吗",
    "我们手上有8张4090 qwen3-32b 推理 50人同时用",
    "mistral-7b 全参微调 gpu=a100-40gb gpus=4 owned=true",
)
# errors: the grammar's own, and pydantic's bounds, types and choices behind it
PARSE_ERRORS = ("7B lroa", "7B lora batch=5000", "7B lora gpu_util=0.1", "7B lora months=500",
                "7B 推理 min_speed=20000", "7B 全参微调 gpus=200000", "7B 推理 ttft=4000")
DRAFT_ERRORS = (
    {"precision": "int3"},  # literal_error
    {"gpus": "eight"},  # int_parsing
    {"hours": "abc"},  # float_parsing
    {"gpus": 2.5},  # int_from_float
    {"budget": {"amount": -5.0, "currency": None}},  # greater_than, nested
    {"headroom": 1.5},  # less_than_equal on a float
    {"replicas": 0},  # greater_than_equal
    {"compile": "maybe"},  # bool_parsing
    {"sharding": "ring"},  # extra_forbidden
)

# -- what counts as English ------------------------------------------------------------------------

NOT_PROSE = re.compile(
    r"https?://\S+"  # URLs
    r"|`[^`]*`"  # code
    r"|\S*=\S*"  # key=value, settings (gpu_memory_utilization=0.9), formulas (2+2+12 = 16)
    r"|\S+\.(?:toml|py|json|cpp|h)\b"  # files
    r"|\b\w+(?:[_.]\w+)+\b"  # identifiers and versions: llama.cpp, rent_card_hour, Qwen2.5
)
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]")
TOKEN = re.compile(r"[A-Za-z0-9'’-]+|\s+|.", re.S)


@cache
def kept_in_english() -> tuple[frozenset[str], tuple[str, ...]]:
    """(single words, names of several words) from the glossary's "Kept in English" list, the
    catalog's model and card names, and their families."""
    text = GLOSSARY.read_text(encoding="utf-8").split("## Kept in English", 1)[1]
    items: list[str] = []
    for line in text.splitlines():
        m = re.match(r"- [^:]+: (.+?)\.?$", line.strip())
        if m and "," in m.group(1):
            items += [i.strip() for i in m.group(1).split(",")]
    names = [*items]
    for spec in catalog.models().values():
        names += [spec.display, spec.family, *spec.aliases]
    for gpu in catalog.gpus().values():
        names += [gpu.display, gpu.name]
    words = frozenset(n.lower() for n in names if " " not in n)
    phrases = tuple(sorted({n for n in names if " " in n}, key=len, reverse=True))
    return words, phrases


def _is_english(word: str) -> bool:
    if not WORD.fullmatch(word):
        return False
    if len(word) == 1:
        return word in "aA"  # other single letters are symbols: s x b, m and v
    # acronyms and names (GPU, NCCL, vLLM, PyTorch, DeepSeek) are not prose
    return not (word.isupper() or any(c.isupper() for c in word[1:]))


def english_runs(text: str, least: int = 3) -> list[str]:
    """Runs of `least` or more English words separated only by spaces (and by words kept in
    English, which count neither way)."""
    words, phrases = kept_in_english()
    for phrase in phrases:
        text = text.replace(phrase, " ")
    text = NOT_PROSE.sub(" ", text)
    runs, current = [], []
    for tok in TOKEN.findall(text):
        if tok.isspace():
            if "\n" in tok and current:  # a line break ends a sentence in the terminal
                runs.append(current)
                current = []
            continue
        if tok.lower() in words:
            continue  # kept in English: neither prose nor a break in it
        if _is_english(tok):
            current.append(tok)
        else:
            runs.append(current)
            current = []
    runs.append(current)
    return [" ".join(r) for r in runs if len(r) >= least]


# -- the answers ---------------------------------------------------------------------------------------


@cache
def _answer(text: str) -> tuple[Answer, str]:
    with language("zh"):
        ans = engine.ask(text)
        return ans, render(ans, bom=True)


def json_texts(ans: Answer) -> Iterator[tuple[str, str]]:
    """(field, text) for each user-facing string of the JSON document."""
    yield "recommendation", ans.recommendation
    for field in ("assumptions", "advice", "warnings"):
        for line in getattr(ans, field):
            yield field, line
    if ans.market:
        yield "market.reason", ans.market.reason
    if ans.trial:
        yield "trial.note", ans.trial.note
    for alt in ans.alternatives:
        yield "alternatives.change", alt.change
    for i, plan in enumerate(ans.plans[:6]):
        yield f"plans[{i}].strategy", plan.strategy
        for name, detail in plan.memory.detail.items():
            yield f"plans[{i}].memory.detail.{name}", detail
        yield f"plans[{i}].speed.detail", plan.speed.detail or ""
        for note in plan.notes:
            yield f"plans[{i}].notes", note
        if plan.service:
            for miss in plan.service.misses:
                yield f"plans[{i}].service.misses", miss
        if plan.cost:
            for field in ("notes", "price_sources", "stale"):
                for line in getattr(plan.cost, field):
                    yield f"plans[{i}].cost.{field}", line
        if plan.api:
            yield f"plans[{i}].api.verdict", plan.api.verdict
            for note in plan.api.notes:
                yield f"plans[{i}].api.notes", note
        if plan.bom:
            for line in plan.bom.lines:
                yield f"plans[{i}].bom.lines", line.text
                yield f"plans[{i}].bom.rule", line.rule
        for launch in plan.launch:
            for note in launch.notes:
                yield f"plans[{i}].launch.notes", note
    if ans.traffic:
        yield "traffic.text", ans.traffic.text
        for line in ans.traffic.assumed:
            yield "traffic.assumed", line
    if ans.capacity:
        yield "capacity.text", ans.capacity.text
        yield "capacity.fastest_limit", ans.capacity.fastest_limit
        for row in ans.capacity.rows:
            yield "capacity.rows.limit_text", row.limit_text
        for fit in ans.capacity.largest:
            yield "capacity.largest.limit", fit.limit


# a command or a config file's line in the terminal (present/detail.py marks them): code
CODE_LINE = re.compile(r"^\s*(?:\$ |│ )")


def prose_lines(shown: str) -> list[str]:
    return [line for line in shown.splitlines() if not CODE_LINE.match(line)]


def _hits_of_answers() -> Iterator[tuple[str, str, str]]:
    for text in ASKED:
        ans, shown = _answer(text)
        for line in prose_lines(shown):
            for run in english_runs(line):
                yield text, "terminal", run
        for field, line in json_texts(ans):
            for run in english_runs(line):
                yield text, field, run


def _error_text(call: object) -> str:
    with language("zh"):
        try:
            call()  # type: ignore[operator]
        except (ParseError, UnknownModel) as err:
            return str(err)
    raise AssertionError("no error raised")


def _hits_of_errors() -> Iterator[tuple[str, str, str]]:
    for text in PARSE_ERRORS:
        message = _error_text(lambda text=text: parse(text))
        for run in english_runs(message):
            yield text, "error", run
    for options in DRAFT_ERRORS:
        draft = Draft({"model": "7B", "method": "lora", **options})
        message = _error_text(lambda draft=draft: build_request(draft))
        for run in english_runs(message):
            yield str(options), "error", run
    for model in ("acme/unknown-model", "llama-9"):
        message = _error_text(lambda model=model: resolve_model(model))
        for run in english_runs(message):
            yield model, "error", run


# -- the tests -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "runs"), [
    ("放得下：每卡 54.7 GiB", []),
    ("1.27 GiB saved by the blocks (seq 2048 x batch 1)", ["saved by the blocks"]),
    ("租用 4 x A800 SXM4 80GB (ZeRO-3 / FSDP 全分片，4 卡)", []),
    ("可用 checkpointing=none|selective|full 设置；https://huggingface.co/a/b/c", []),
    ("13B (Llama-like template) — full-finetune", []),
    ("a plan fits when total", ["a plan fits when total"]),
    ("按 s x b x 词表 32000", []),
    ("框架：PyTorch 2.x，FSDP / DeepSpeed ZeRO 分片，vLLM 推理", []),
    ("LoRA 用 PEFT/torchtune，fp32 m and v", []),
    ("Qwen3 30B A3B Instruct 2507 推理", []),  # a catalog name is not prose
    ("llama.cpp keeps the token embeddings", ["keeps the embeddings"]),  # kept words skipped
])
def test_english_runs(text: str, runs: list[str]) -> None:
    assert english_runs(text) == runs


def test_the_glossary_lists_what_stays_in_english() -> None:
    words, phrases = kept_in_english()
    assert {"pytorch", "vllm", "gib", "tokens", "lora", "epoch"} <= words
    assert "hugging face" not in words and "Hugging Face" in phrases


def test_chinese_answers_hold_no_english_sentence() -> None:
    hits = list(_hits_of_answers())
    assert hits == [], f"{len(hits)} English run(s): {hits[:40]}"


def test_chinese_errors_hold_no_english_sentence(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    hits = list(_hits_of_errors())
    monkeypatch.setenv("GPUSIZE_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # not installed
    message = _error_text(lambda: hub.lookup("acme/unknown-model"))
    hits += [("hub, no huggingface_hub", "error", r) for r in english_runs(message)]
    offline = types.ModuleType("huggingface_hub")

    def unreachable(*_args: object, **_kwargs: object) -> None:
        raise OSError("network unreachable")

    offline.get_hf_file_metadata = unreachable  # type: ignore[attr-defined]
    offline.hf_hub_download = unreachable  # type: ignore[attr-defined]
    offline.hf_hub_url = lambda *a, **k: "https://hub.invalid/config.json"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "huggingface_hub", offline)
    message = _error_text(lambda: hub.lookup("acme/unknown-model"))
    hits += [("hub, offline", "error", r) for r in english_runs(message)]
    assert hits == [], f"{len(hits)} English run(s): {hits}"


# internal ids a reader should never meet in a Chinese answer (outside key=value and code):
# price kinds, catalog item ids, method and market keys
INTERNAL = re.compile(r"rent_card_hour|buy_card|buy_server|rent_server_month|server:|"
                      r"\b(?:full-finetune|inference|pretrain|lora|qlora|china|global)\b")


def test_chinese_answers_show_no_internal_ids() -> None:
    found = []
    for text in ASKED:
        ans, shown = _answer(text)
        for field, line in [("terminal", s) for s in prose_lines(shown)] + list(json_texts(ans)):
            clean = re.sub(r"\S*=\S*|https?://\S+|`[^`]*`", " ", line)
            found += [(text, field, m.group(0)) for m in INTERNAL.finditer(clean)]
    assert found == []


def test_every_serving_stack_remark_is_marked() -> None:
    """gpus.toml's serving_stack remarks reach answers (notes, speed); each is a marked string
    with a translation, so a new card's remark cannot slip into a Chinese answer in English."""
    for gpu in catalog.gpus().values():
        m = re.fullmatch(r"(.*?) \((.*)\)", gpu.serving_stack)
        if not gpu.serving_stack:
            continue
        assert m and m.group(2) in STACK_REMARKS, gpu.name
        assert messages("zh").get(m.group(2)), gpu.name
        with language("zh"):
            assert gpu.stack_text == f"{m.group(1)}（{_(m.group(2))}）"
        assert gpu.stack_text == gpu.serving_stack  # English: the catalog's words


@pytest.mark.parametrize(("text", "english", "chinese"), [
    ("13B full-finetune", ("13B (generic Llama shape) (", "B params) — Full fine-tune"),
     ("13B（通用 Llama 结构）（", "B 参数）— 全参微调")),
    ("8x7B inference", ("8X7B (generic Mixtral MoE shape) (", "B active) — Serve (inference)"),
     ("8X7B（通用 Mixtral MoE 结构）（", "B）— 推理部署")),
    ("llama-3.1-8b qlora", ("Llama 3.1 8B (", "B params) — QLoRA"),
     ("Llama 3.1 8B（", "B 参数）— QLoRA")),
])
def test_the_header_names_the_model_and_the_method_in_words(
        text: str, english: tuple[str, str], chinese: tuple[str, str]) -> None:
    """A bare size reads as a generic shape (issue 14), the method by its title."""
    for lang, (head, tail) in (("en", english), ("zh", chinese)):
        with language(lang):
            first = render(engine.ask(text)).splitlines()[0]
        assert first.startswith(head) and first.endswith(tail), first
