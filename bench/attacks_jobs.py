"""The red team's attacks on acknowledged work (issue 16, items 2, 4, 9, 10), repeated against
the real parts: a throwaway redis-server (append-only, as deployed), the Slack Web API stand-in
and the bot as real processes (tests/harness.py), all on loopback. Prints tried / held / lost for
each attack, and what durability costs (Redis commands per answer, ack latency).

GPUSIZE_TEST_ANSWER_DELAY_S (test-only) holds each answer 1 s in its worker so that the stop or
the kill lands while answers are in flight, as they would with a slow engine or a busy pool.

Run: .venv/bin/python bench/attacks_jobs.py
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.harness import (
    SECRET,
    TOKEN,
    Bot,
    RedisServer,
    SlackStub,
    child_pids,
    free_port,
    http_status,
    process_alive,
    serve_stub,
)

ROOT_TS = "1700000000.000001"
IN_FLIGHT = {"GPUSIZE_TEST_ANSWER_DELAY_S": "1", "JOB_CLAIM_IDLE_S": "2"}


class Rig:
    """One attack's parts: Redis, the stand-in, and the bots it starts."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.redis = RedisServer(port=free_port(), directory=tmp)
        self.redis.start(appendonly=True)
        self.slack = SlackStub(port=free_port())
        self.server = serve_stub(self.slack)
        self.bots: list[Bot] = []

    def bot(self, **env: str) -> Bot:
        bot = Bot(env={"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET,
                       "REDIS_URL": self.redis.url, "SLACK_API_URL": self.slack.url, **env},
                  port=free_port(), log=self.tmp / f"bot{len(self.bots)}.log")
        self.bots.append(bot)
        return bot.start()

    def close(self) -> None:
        for bot in self.bots:
            bot.kill()
        self.server.shutdown()
        self.server.server_close()
        self.redis.stop()


@contextmanager
def rig() -> Iterator[Rig]:
    with tempfile.TemporaryDirectory() as tmp:
        r = Rig(Path(tmp))
        try:
            yield r
        finally:
            r.close()


def top_level(slack: SlackStub) -> Counter[str]:
    return Counter(c.body["channel"] for c in slack.of("chat.postMessage")
                   if not c.body.get("thread_ts"))


def wait_until(check: Callable[[], bool], timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def settle(slack: SlackStub, seconds: float = 1.5) -> None:
    count, quiet = -1, time.monotonic()
    while time.monotonic() - quiet < seconds:
        if len(slack.calls) != count:
            count, quiet = len(slack.calls), time.monotonic()
        time.sleep(0.05)


def verdict(name: str, tried: int, answered: Counter[str], expected: list[str],
            extra: str = "") -> dict[str, Any]:
    held = sum(1 for c in expected if answered.get(c) == 1)
    lost = sum(1 for c in expected if not answered.get(c))
    doubled = sum(1 for c in expected if answered.get(c, 0) > 1)
    row = {"attack": name, "tried": tried, "held": held, "lost": lost, "doubled": doubled,
           "notes": extra}
    print(f"{name:<46} tried {tried:>3}  held {held:>3}  lost {lost:>2}  doubled {doubled:>2}"
          f"  {extra}", flush=True)
    return row


def drained_line(bot: Bot) -> str:
    text = bot.log.read_text() if bot.log else ""
    for line in text.splitlines():
        if "jobs drained" in line:
            return json.loads(json.loads(line)["msg"].split(": ", 1)[1].replace("\\", ""))
    return ""


def sigterm_20() -> dict[str, Any]:
    with rig() as r:
        first = r.bot(**IN_FLIGHT, SHUTDOWN_GRACE_S="5")
        channels = [f"C0TERM{n:02d}" for n in range(20)]
        for n, channel in enumerate(channels):
            first.command("13B lora", channel=channel, user=f"U0T{n:02d}")
        assert first.process is not None
        start = time.monotonic()
        first.process.send_signal(signal.SIGTERM)
        first.process.wait(timeout=60)
        stopped = time.monotonic() - start
        by_first = sum(top_level(r.slack).values())
        summary = drained_line(first)
        first.process = None
        r.bot(JOB_CLAIM_IDLE_S="2")  # the restarted process
        wait_until(lambda: len(top_level(r.slack)) == len(channels))
        done = time.monotonic() - start
        settle(r.slack)
        return verdict("SIGTERM with 20 in flight", 20, top_level(r.slack), channels,
                       f"stopped in {stopped:.1f} s (grace 5 s), {by_first} answered while "
                       f"draining {summary}, the rest by the restarted process; last answer "
                       f"{done:.1f} s after SIGTERM")


def kill_14() -> dict[str, Any]:
    with rig() as r:
        first = r.bot(**IN_FLIGHT)
        channels = [f"C0KILL{n:02d}" for n in range(14)]
        for n, channel in enumerate(channels):
            first.command("13B lora", channel=channel, user=f"U0K{n:02d}")
        # one answered and stored (past its memo write: see docs/RELIABILITY.md on the window)
        wait_until(lambda: bool(r.redis.command("KEYS", "gpusize:v1:conv:*:C0KILL*")))
        before = sum(top_level(r.slack).values())
        start = time.monotonic()
        first.kill()
        r.bot(JOB_CLAIM_IDLE_S="2")
        wait_until(lambda: len(top_level(r.slack)) == len(channels))
        done = time.monotonic() - start
        settle(r.slack)
        threads = len(r.redis.command("KEYS", "gpusize:v1:conv:*:C0KILL*"))
        return verdict("kill -9 with 14 in flight", 14, top_level(r.slack), channels,
                       f"{before} answered before the kill, the rest taken over "
                       f"{done:.1f} s after it; {threads}/14 threads stored")


def kill_in_the_window(trials: int = 5) -> dict[str, Any]:
    """The window left, aimed at: kill the bot as soon as Slack has received a post (the
    stand-in records a call before it replies), i.e. around the memo write."""
    doubled = 0
    for trial in range(trials):
        with rig() as r:
            first = r.bot(**IN_FLIGHT)
            channel = f"C0WIN{trial}"
            first.command("13B lora", channel=channel)
            r.slack.wait_for("chat.postMessage", timeout=30)
            first.kill()
            r.bot(JOB_CLAIM_IDLE_S="2")
            time.sleep(3)
            settle(r.slack)
            doubled += top_level(r.slack)[channel] > 1
    print(f"{'kill -9 aimed at the post/memo window':<46} tried {trials:>3}  "
          f"posted twice {doubled}", flush=True)
    return {"attack": "kill in the window", "tried": trials, "twice": doubled}


def retries_15() -> dict[str, Any]:
    with rig() as r:
        first = r.bot(**IN_FLIGHT)
        first.command("llama-3.1-8b inference")
        r.slack.wait_for("chat.postMessage", timeout=30)
        r.redis.wait_for_conversation(ROOT_TS, field="_answer_ts")
        events = [{"type": "message", "channel": "C0CHAN", "user": f"U0R{n:02d}",
                   "text": f"users={n + 2}", "ts": f"17000005{n:02d}.1", "thread_ts": ROOT_TS}
                  for n in range(15)]
        for n, event in enumerate(events):
            first.event(event, event_id=f"EvR{n}")
        first.kill()
        second = r.bot(JOB_CLAIM_IDLE_S="2")
        for n, event in enumerate(events):
            second.event(event, event_id=f"EvR{n}", headers={"X-Slack-Retry-Num": "1"})
        wait_until(lambda: len(r.slack.of("chat.postMessage")) >= 16)
        settle(r.slack)
        replies = [c.body["text"] for c in r.slack.of("chat.postMessage")[1:]]
        answered = Counter(f"users={n + 2}" for n in range(15)
                           for text in replies if f"concurrent users: {n + 2}" in text)
        return verdict("15 Slack retries after a crash", 15, answered,
                       [f"users={n + 2}" for n in range(15)],
                       f"{len(replies)} replies posted for 15 events (each sent twice)")


def killed_worker() -> dict[str, Any]:
    with rig() as r:
        bot = r.bot()
        assert bot.process is not None
        pids = [pid for pid in child_pids(bot.process.pid)
                if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        channels = [f"C0OOM{n}" for n in range(5)]
        for channel in channels:
            bot.command("13B lora", channel=channel)
        wait_until(lambda: len(top_level(r.slack)) == 5, timeout=60)
        ready = http_status(bot.url + "/readyz")
        with urllib.request.urlopen(bot.metrics_url, timeout=5) as resp:
            metrics = resp.read().decode()
        rebuilt = next((line.split()[1] for line in metrics.splitlines()
                        if line.startswith("gpusize_worker_pool_rebuilds_total ")), "?")
        return verdict("worker SIGKILLed, then 5 answers", 5, top_level(r.slack), channels,
                       f"/readyz {ready}, pool rebuilds {rebuilt}")


def orphans_after_kill() -> dict[str, Any]:
    with rig() as r:
        bot = r.bot()
        bot.command("13B lora")
        r.slack.wait_for("chat.postMessage", timeout=30)
        assert bot.process is not None
        helpers = child_pids(bot.process.pid)
        bot.kill()
        wait_until(lambda: not any(process_alive(pid) for pid in helpers), timeout=15)
        left = sum(1 for pid in helpers if process_alive(pid))
        print(f"{'bot SIGKILLed: its worker processes':<46} tried {len(helpers):>3}  "
              f"held {len(helpers) - left:>3}  left running {left}", flush=True)
        return {"attack": "orphans", "tried": len(helpers), "held": len(helpers) - left,
                "lost": left}


def chart_flood(limit: str) -> dict[str, Any]:
    with rig() as r:
        bot = r.bot(CHART_LIMIT_PER_MINUTE=limit)
        # the other user's answer alone, for comparison
        quiet = _answer_latency(bot, r.slack, "C0QUIET", "U0QUIET")
        bot.command("13B lora", user="U0FLOOD")
        root = _thread_of(r.redis, "C0CHAN")
        for n in range(30):
            bot.action(action_id="card_more", value=None, selected="1|charts",
                       element="overflow", message_ts=root, user="U0FLOOD",
                       action_ts=f"1700000900.{n:06d}")
        loaded = _answer_latency(bot, r.slack, "C0OTHER", "U0OTHER")
        uploads_before = next(i for i, c in enumerate(
            [c for c in r.slack.calls if c.method == "files.completeUploadExternal"
             or (c.method == "chat.postMessage" and c.body.get("channel") == "C0OTHER")])
            if c.method == "chat.postMessage")
        settle(r.slack)
        charts = len(r.slack.of("files.completeUploadExternal"))
        refused = len(r.slack.of("chat.postEphemeral"))
        line = (f"30 chart clicks (limit {limit}/min) vs another's answer: {quiet * 1000:.0f} ms "
                f"alone, {loaded * 1000:.0f} ms during the clicks, after {uploads_before} "
                f"chart uploads; {charts} charts posted, {refused} clicks refused privately")
        print(line, flush=True)
        return {"attack": f"chart flood, limit {limit}", "alone_ms": round(quiet * 1000),
                "loaded_ms": round(loaded * 1000), "uploads_before": uploads_before,
                "charts": charts, "refused": refused}


def _thread_of(redis: RedisServer, channel: str) -> str:
    """The ts of the thread the bot stored for `channel` (waits for it)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = redis.command("KEYS", f"gpusize:v1:conv:*:{channel}:*")
        if found and "_answer_ts" in redis.command("HGETALL", found[0]):
            return found[0].rsplit(":", 1)[1]
        time.sleep(0.02)
    raise RuntimeError(f"no thread stored for {channel}")


def _answer_latency(bot: Bot, slack: SlackStub, channel: str, user: str) -> float:
    start = time.monotonic()
    bot.command("7B inference", channel=channel, user=user)
    wait_until(lambda: channel in top_level(slack), timeout=120)
    return time.monotonic() - start


def cost() -> dict[str, Any]:
    """What recording costs: Redis commands per answer and the ack's latency, recorded
    (`13B lora`) against not recorded (`help`, acked without a job)."""
    with rig() as r:
        bot = r.bot()
        for n in range(3):  # warm
            bot.command("13B lora", channel=f"C0WARM{n}")
        wait_until(lambda: len(top_level(r.slack)) == 3)
        before = _commandstats(r.redis)
        acks: list[float] = []
        n_answers = 40
        for n in range(n_answers):
            start = time.perf_counter()
            bot.command("13B lora", channel=f"C0COST{n}", user=f"U0C{n % 5}")
            acks.append(time.perf_counter() - start)
        wait_until(lambda: len(top_level(r.slack)) == 3 + n_answers)
        settle(r.slack, 1.0)
        after = _commandstats(r.redis)
        helps: list[float] = []
        for _n in range(n_answers):
            start = time.perf_counter()
            bot.command("help")
            helps.append(time.perf_counter() - start)
        per = {k: (after.get(k, 0) - before.get(k, 0)) / n_answers
               for k in after if after.get(k, 0) - before.get(k, 0)}
        ours = ("evalsha", "eval", "xadd", "xreadgroup", "xack", "xdel", "xclaim", "xautoclaim",
                "multi", "exec", "hset", "expire", "del")
        total = sum(per.values())
        jobs_part = {k: round(v, 2) for k, v in sorted(per.items()) if k in ours}
        p = _percentiles
        print(f"cost: {total:.1f} Redis commands per answer in all; of the kinds jobs use "
              f"{jobs_part}", flush=True)
        print(f"cost: ack p50/p95 {p(acks, 50):.1f}/{p(acks, 95):.1f} ms recorded "
              f"(`13B lora`: parse + one EVALSHA) vs {p(helps, 50):.1f}/{p(helps, 95):.1f} ms "
              f"not recorded (`help`)", flush=True)
        return {"commands_per_answer": round(total, 1), "jobs_kinds": jobs_part,
                "ack_recorded_ms": [p(acks, 50), p(acks, 95)],
                "ack_help_ms": [p(helps, 50), p(helps, 95)]}


def _commandstats(redis: RedisServer) -> dict[str, int]:
    info = redis.command("INFO", "commandstats")
    stats = {}
    for name, value in info.items():
        if name.startswith("cmdstat_"):
            calls = value["calls"] if isinstance(value, dict) else int(
                str(value).split("calls=")[1].split(",")[0])
            stats[name.removeprefix("cmdstat_")] = int(calls)
    return stats


def _percentiles(values: list[float], q: int) -> float:
    ordered = sorted(values)
    if q == 50:
        return round(statistics.median(ordered) * 1000, 1)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))] * 1000, 1)


def main() -> int:
    print(f"attacks on acknowledged work, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs",
          flush=True)
    results = [sigterm_20(), kill_14(), kill_in_the_window(), retries_15(), killed_worker(),
               orphans_after_kill(), chart_flood("100"), chart_flood("6"), cost()]
    lost = sum(int(r.get("lost", 0)) + int(r.get("doubled", 0)) for r in results)
    print(f"lost or doubled in all: {lost}")
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
