"""Cost of reading one sentence (engine/reader.py), over the reader's corpus and the issue's list.

Goal (issue 20): at most 5 ms a sentence, tables compiled (a process reads its first sentence
once, which compiles the phrase tables; that one is reported apart). Also reports the worst of
1,000-character adversarial inputs and the red team's inputs of issue 26 item 1 (linear, never
seconds).

Run: .venv/bin/python bench/bench_reader.py [REPEATS]
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
import tomllib
from pathlib import Path

from engine.keys import ParseError
from engine.reader import MAX_INPUT_CHARS, read

ROOT = Path(__file__).resolve().parents[1]
ISSUE = ["我们想用8张4090跑qwen3-32b推理，50人同时用，够吗", "预算200万买服务器做70B全参微调",
         "公司要部署满血deepseek，预算300万，买什么卡", "单卡4090能不能微调qwen3-8b",
         "deepseek-v3.1 推理 两台8卡H20 并发32 上下文32k", "72B推理，上下文32k，首token 2秒内",
         "can 8 4090s serve qwen3-32b to 50 users?",
         "how many H100s to pretrain a 7B model on 1T tokens in 3 weeks",
         "qlora llama-3.1-70b on a single A100 80GB, does it fit?"]
ADVERSARIAL = ["? ", "，", "的", "1", "4090", "并发 ", "满血", "qwen ", "budget ", "首token"]


def _cost(text: str) -> float:
    start = time.perf_counter()
    with contextlib.suppress(ParseError):
        read(text)
    return time.perf_counter() - start


def run(repeats: int = 5) -> None:
    first = _cost(ISSUE[0])
    corpus = tomllib.loads((ROOT / "tests/data/reader_corpus.toml").read_text(encoding="utf-8"))
    sentences = [row["text"] for row in corpus["phrase"]] + ISSUE
    costs = sorted(min(_cost(s) for _ in range(repeats)) * 1000 for s in sentences)
    print(f"first sentence (compiles the phrase tables): {first * 1000:.1f} ms")
    print(f"{len(sentences)} sentences: median {statistics.median(costs):.2f} ms, "
          f"p95 {costs[int(len(costs) * 0.95)]:.2f} ms, max {costs[-1]:.2f} ms (goal <= 5 ms)")
    for text in ISSUE[:3]:
        print(f"  {min(_cost(text) for _ in range(repeats)) * 1000:5.2f} ms  {text}")
    worst = max((min(_cost((piece * MAX_INPUT_CHARS)[:MAX_INPUT_CHARS]) for _ in range(2)), piece)
                for piece in ADVERSARIAL)
    print(f"worst {MAX_INPUT_CHARS}-character repeated input: {worst[0] * 1000:.1f} ms "
          f"({worst[1]!r} repeated)")
    print(f"40 kB paste (cut to {MAX_INPUT_CHARS} first): {_cost('的' * 40_000) * 1000:.1f} ms")
    # issue 26 item 1, as the red team ran it (before: the bot froze for the times given)
    attacks = {"256-character /gpusize with 并发 and blanks (was 3.7 s)": ("13B lora " + "并发 " * 90)[:256],
               "456 characters of the same (was 34 s)": ("13B lora " + "并发   " * 120)[:456],
               "one 40 kB word (was 10-14 s)": "a" * 40_000,
               "40 kB paste of a question (was 10-14 s)": ("qwen3-32b 推理 并发50 " * 3000)[:40_000]}
    for name, text in attacks.items():
        print(f"{name}: {min(_cost(text) for _ in range(repeats)) * 1000:.1f} ms")


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
