"""Did a speed-up change any answer? `--json` for a set of varied questions, computed by the code
of two commits (default: main and the working tree) in the same minute, compared document by
document. Nothing is pinned: both sides are computed afresh, so the check holds whatever the
prices or catalogs say today.

Run: .venv/bin/python bench/answers_unchanged.py [BASE [NEW]]
  BASE, NEW: commits; BASE defaults to where this branch left main (`git merge-base HEAD main`:
  main itself once rebased), NEW to the working tree as it is.
Each commit is checked out with `git worktree add --detach` into a temporary folder and run with
this venv's Python (PYTHONPATH puts that tree first); exit status 1 when any answer differs.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Varied on purpose: every method, budgets (rented and bought), pinned cards that do and do not
# hold the model, serving with traffic, a box you own, the largest model a box runs, Chinese.
QUESTIONS = (
    "13B full-finetune",
    "13B full-finetune budget=150k",
    "13B full-finetune budget=20k",
    "70B full-finetune budget=2M",
    "llama-3.1-70b full-finetune budget=500k mode=buy",
    "llama-3.1-70b full-finetune budget=300k mode=rent",
    "llama-3.1-8b qlora",
    "llama-3.1-8b lora budget=5k",
    "llama-3.1-70b lora seq=4096",
    "llama-3.1-70b qlora gpu=4090 gpus=1",
    "llama-3.1-8b lora gpu=h100 gpus=1",
    "llama-2-7b full-finetune gpu=h100 gpus=1 optimizer=adamw-8bit",
    "llama-2-13b full-finetune gpu=4090 gpus=4 zero=3 optimizer=adamw-bf16",
    "llama-3.1-70b full-finetune gpu=a800 gpus=8",
    "llama-3.1-70b full-finetune gpu=4090",
    "mixtral-8x7b full-finetune",
    "qwen2.5-72b full-finetune tokens=1B days=7",
    "llama-3.1-405b pretrain",
    "7B pretrain tokens=100B budget=1M",
    "qwen2.5-72b inference context=8k users=20",
    "qwen2.5-72b inference users=100 context=32k budget=100k",
    "deepseek-v3 inference quant=q4_k_m",
    "deepseek-v3 inference gpu=4090 gpus=8 requests=100k",
    "deepseek-v3 inference gpu=h20 gpus=8",
    "llama-3.1-70b serve gpu=4090 gpus=2 quant=q4_k_m",
    "llama-3.1-70b serve gpu=h200 gpus=1",
    "llama-3.1-70b serve quant=q4_k_m",
    "llama-2-7b serve gpu=4090 gpus=1 context=4096",
    "qwen3-32b inference gpu=4090 gpus=8",
    "qwen3-32b inference gpu=4090 gpus=8 users=50",
    "llama-3.1-8b inference requests=1M",
    "llama-3.1-8b inference min_speed=50 users=10",
    "largest lora gpu=4090 gpus=8",
    "largest inference gpu=h100 gpus=8",
    "lora gpu=4090 gpus=8",
    "13B 全参微调 预算不超过15万",
    "70B 全参微调 两台8卡H800",
    "70B 推理 4bit 双卡4090",
    "qwen2.5-72b 推理 100并发 上下文32k",
    "llama-3.1-70b full-finetune gpu=a800 gpus=8 region=chengdu hours=730",
    "llama-3.1-70b inference budget=50k market=global",
    "gpt-oss-120b inference gpu=a100 gpus=2",
)

# One process per tree answers every question: {question: JSON document or "error: ..."}.
_RUNNER = r"""
import contextlib, io, json, sys
from gpusize import cli
out = {}
for q in json.loads(sys.argv[1]):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        try:
            rc = cli.main([*q.split(), "--json"])
        except SystemExit as e:
            rc = e.code
    out[q] = f"rc={rc}\n" + buf.getvalue()
import engine
print(json.dumps({"engine": engine.__file__, "answers": out}))
"""


def answers(tree: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    got = subprocess.run([sys.executable, "-c", _RUNNER, json.dumps(QUESTIONS)], cwd=tree,
                         env=env, capture_output=True, text=True, check=True)
    doc = json.loads(got.stdout)
    assert Path(doc["engine"]).is_relative_to(tree), f"{doc['engine']} is not under {tree}"
    print(f"{tree}: {len(doc['answers'])} answers ({time.perf_counter() - start:.1f} s wall)",
          file=sys.stderr)
    return doc["answers"]


def _checkout(rev: str, into: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(into), rev],
                   check=True)
    return into


def main(argv: list[str]) -> int:
    base_rev = argv[0] if argv else subprocess.run(
        ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True,
        check=True).stdout.strip()
    new_rev = argv[1] if len(argv) > 1 else None
    with tempfile.TemporaryDirectory(prefix="answers-") as tmp:
        trees = [_checkout(base_rev, Path(tmp) / "base")]
        trees.append(_checkout(new_rev, Path(tmp) / "new") if new_rev else ROOT)
        try:
            old, new = answers(trees[0]), answers(trees[1])
        finally:
            for tree in trees:
                if tree != ROOT:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                    str(tree)], check=False)
    differ = [q for q in QUESTIONS if old[q] != new[q]]
    for q in differ:
        print(f"--- {q}")
        sys.stdout.writelines(list(difflib.unified_diff(
            old[q].splitlines(keepends=True), new[q].splitlines(keepends=True), n=1))[:40])
    refused = sum(not v.startswith("rc=0") for v in new.values())  # a refusal is an answer too
    print(f"{len(QUESTIONS) - len(differ)} of {len(QUESTIONS)} answers identical ({base_rev} vs "
          f"{new_rev or 'the working tree'}; {refused} of them refusals, compared as text)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
