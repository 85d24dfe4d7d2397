"""In-process speed of one full answer (every card x every count), caches cold.

Goal (issue 2): median <= 5 ms. Run: .venv/bin/python bench/bench_answer.py
"""

from __future__ import annotations

import statistics
import time

import engine
from engine import plan

QUERIES = (
    "13B full-finetune budget=150k",
    "llama-3.1-8b qlora",
    "llama-3.1-70b lora seq=4096",
    "qwen2.5-72b inference context=8k users=20",
    "mixtral-8x7b full-finetune",
    "deepseek-v3 inference quant=q4_k_m",
    "llama-3.1-405b pretrain",
)


def run(repeats: int = 60) -> None:
    for text in QUERIES:
        engine.ask(text)  # first call loads the catalogs
    print(f"{'query':<45} {'median ms':>10} {'p90 ms':>8}  (cold component cache, {repeats} runs)")
    medians = []
    for text in QUERIES:
        times = []
        for _ in range(repeats):
            plan._cached_components.cache_clear()
            start = time.perf_counter()
            engine.ask(text)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        medians.append(statistics.median(times))
        print(f"{text:<45} {medians[-1]:>10.2f} {times[int(len(times) * 0.9)]:>8.2f}")
    print(f"median over queries: {statistics.median(medians):.2f} ms (goal <= 5 ms)")


if __name__ == "__main__":
    run()
