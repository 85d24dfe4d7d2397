"""Acknowledgement latency of `/gpusize` with 50 concurrent commands against one bot process.

Starts its own redis-server, Slack Web API stand-in and bot (as the tests do), all on loopback.
Goal (issue 4): p99 <= 150 ms. Run: .venv/bin/python bench/bench_ack.py [concurrency] [rounds]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.harness import (
    SECRET,
    TOKEN,
    Bot,
    RedisServer,
    SlackStub,
    free_port,
    serve_stub,
)

QUERIES = ["13B full-finetune budget=150k", "llama-3.1-8b qlora", "qwen2.5-72b serve users=20",
           "llama-3.1-70b lora", "7B", "help", "7B lroa"]


def main(concurrency: int = 50, rounds: int = 4, only_help: int = 0) -> None:
    queries = ["help"] if only_help else QUERIES
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisServer(port=free_port(), directory=Path(tmp))
        redis.start()
        stub = SlackStub(port=free_port())
        server = serve_stub(stub)
        bot = Bot(env={"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET,
                       "REDIS_URL": redis.url, "SLACK_API_URL": stub.url,
                       # many askers under one user id: the per-member thread cap is lifted
                       "THREAD_LIMIT_PER_HOUR": "10000"},
                  port=free_port(), log=Path(tmp) / "bot.log").start()
        try:
            bot.command("help")  # warm-up: imports, auth.test, first Redis connection
            latencies: list[float] = []

            def one(i: int) -> None:
                start = time.perf_counter()
                status, _ = bot.command(queries[i % len(queries)], channel=f"C{i:04d}")
                assert status == 200
                latencies.append((time.perf_counter() - start) * 1000)

            for _ in range(rounds):
                with ThreadPoolExecutor(concurrency) as pool:
                    list(pool.map(one, range(concurrency)))
            latencies.sort()
            p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
            print(f"/gpusize ack latency, {concurrency} concurrent x {rounds} rounds "
                  f"({len(latencies)} commands): p50 {statistics.median(latencies):.1f} ms, "
                  f"p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms (goal p99 <= 150 ms)")
            settle = time.perf_counter()
            posted = -1
            while posted != len(stub.of("chat.postMessage")):  # until the answers stop coming
                posted = len(stub.of("chat.postMessage"))
                time.sleep(0.5)
            print(f"answers posted after the acks: {posted}, the last "
                  f"{time.perf_counter() - settle - 0.5:.1f} s after the last ack")
        finally:
            bot.stop()
            server.shutdown()
            redis.stop()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
