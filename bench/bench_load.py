"""Scale test: two bot processes sharing one Redis, as two replicas would in Kubernetes.

Starts a throwaway redis-server (append-only, as deployed), the Slack Web API stand-in and TWO
bots (the classes in tests/harness.py, as bench/bench_ack.py does), all on loopback. The
load alternates between the bots, request by request:

1. one `/gpusize MODEL inference` per conversation, each in its own channel;
2. signed `message` events replying in each conversation's thread (thread_ts = the ts the
   stand-in returned for the conversation's first chat.postMessage, a unique event_id each),
   every reply setting a different field ("what about 12 users?", "budget 180k", "gpu=h20"), so
   the final state of every conversation is known in advance. By default a conversation's replies
   are sent back to back, so several replies to one thread are in flight at once on both bots.

Then it checks in Redis that every conversation holds exactly the fields its turns imply, that
`_version` is 1 + 2 x replies (the command's store.update, then per reply one update merging the
fields and one recording the answer's ts: bot/dialog.py), that the log has one entry per update,
and that every reply was answered exactly once. It reports throughput, ack latency, errors, Redis
round-trips and commands per request (MONITOR, recorded by redis-cli in its own process), CPU time
per request of the bot processes and their answer workers (/proc), and Redis memory per
conversation.

Run: .venv/bin/python bench/bench_load.py [--conversations 200] [--requests 2000]
     [--concurrency 50] [--bots 2] [--workers 1] [--order thread|spread]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis as redis_py

from tests.harness import (
    SECRET,
    TEAM,
    TOKEN,
    Bot,
    RedisServer,
    SlackStub,
    child_pids,
    free_port,
    serve_http,
    stub_handler,
)

MODELS = ["7B", "13B", "llama-3.1-8b", "qwen2.5-14b", "llama-3.1-70b"]
GPUS = ["rtx-4090", "a100-80gb", "h100-sxm", "l40s", "h20", "h800", "a800", "h200"]
REGIONS = ["chengdu", "jiangsu", "china", "global"]


def _fields(c: int) -> list[tuple[str, str, Any]]:
    """Conversation c's replies: (field, what a person types, the JSON value the bot stores).
    Any subset of them, merged in any order, is a valid request (checked before the run)."""
    users = 1 + c % 50
    context = [2, 4, 8, 16, 32][c % 5]
    gpus = [1, 2, 4, 8][c % 4]
    budget = 50 + c % 900
    return [
        ("users", f"what about {users} users?", users),
        ("context", f"{context}k context", context * 1024),
        ("gpu", f"gpu={GPUS[c % 8]}", GPUS[c % 8]),
        ("gpus", f"try {gpus} gpus", gpus),
        ("kv", f"kv={['fp16', 'fp8'][c % 2]}", ["fp16", "fp8"][c % 2]),
        ("budget", f"budget {budget}k", {"amount": float(budget * 1000), "currency": None}),
        ("hours", f"hours={100 + c % 600}", float(100 + c % 600)),
        ("months", f"months={12 + c % 49}", 12 + c % 49),
        ("region", f"region={REGIONS[c % 4]}", REGIONS[c % 4]),
        ("headroom", f"headroom={[0.1, 0.15, 0.25][c % 3]}", [0.1, 0.15, 0.25][c % 3]),
    ]


MAX_REPLIES = len(_fields(0))


@dataclass
class Conversation:
    index: int
    channel: str
    model: str
    replies: list[tuple[str, str, Any]]
    root: str | None = None

    @property
    def expected(self) -> dict[str, Any]:
        return {"model": self.model, "method": "inference",
                **{name: value for name, _, value in self.replies}}


@dataclass
class Result:
    kind: str
    latency_ms: float
    status: int
    body: str = ""
    error: str = ""


# -- the Slack stand-in, remembering the ts it returned for each channel's first message -----------


@dataclass
class Posted:
    lock: threading.Lock = field(default_factory=threading.Lock)
    by_channel: dict[str, list[str]] = field(default_factory=dict)

    def add(self, channel: str, ts: str) -> None:
        with self.lock:
            self.by_channel.setdefault(channel, []).append(ts)

    def root(self, channel: str) -> str | None:
        with self.lock:
            posted = self.by_channel.get(channel)
            return posted[0] if posted else None


def recording_handler(stub: SlackStub, posted: Posted) -> type:
    base = stub_handler(stub)

    class Tee:
        def __init__(self, real: Any) -> None:
            self.real, self.data = real, bytearray()

        def write(self, data: bytes) -> int:
            self.data += data
            return self.real.write(data)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    class Handler(base):  # type: ignore[misc, valid-type]
        def do_POST(self) -> None:
            self.wfile = Tee(self.wfile)
            super().do_POST()
            if self.path.endswith("/chat.postMessage"):
                reply = json.loads(bytes(self.wfile.data).split(b"\r\n\r\n", 1)[1])
                if reply.get("ok"):
                    posted.add(reply["channel"], reply["ts"])

    return Handler


# -- measuring ------------------------------------------------------------------------------------


TICKS = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += child_pids(p)
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of these processes and all their descendants (workers included)."""
    total = 0.0
    for pid in {p for root in pids for p in process_tree(root)}:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    return total


def rss_mib(pids: list[int]) -> dict[int, float]:
    out = {}
    for root in pids:
        total = 0
        for pid in process_tree(root):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            total += next((int(line.split()[1]) for line in status.splitlines()
                           if line.startswith("VmRSS:")), 0)
        out[root] = total / 1024
    return out


def redis_info(client: redis_py.Redis) -> dict[str, Any]:
    info = client.info("all")
    commands = {k[len("cmdstat_"):]: v["calls"] for k, v in info.items() if k.startswith("cmdstat_")}
    return {"used_memory": info["used_memory"] - info["mem_clients_normal"],
            "clients": info["connected_clients"], "keys": client.dbsize(), "commands": commands,
            "cpu": info["used_cpu_user"] + info["used_cpu_sys"],
            "aof": info.get("aof_current_size", 0)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


@dataclass
class Traffic:
    sent: int = 0  # commands the bots sent (round-trips; a pipeline would count each command)
    inside: int = 0  # commands run inside Lua scripts
    names: Counter = field(default_factory=Counter)


def monitor_traffic(path: Path, start: float, end: float, exclude: set[str]) -> Traffic:
    """What the bots asked of Redis in [start, end], from MONITOR lines such as
    `1700000000.123456 [0 127.0.0.1:5555] "HGET" "key" "field"` (`[0 lua]` inside scripts);
    the bench's own connection is left out."""
    traffic = Traffic()
    for line in path.read_text(errors="replace").splitlines():
        stamp, _, rest = line.partition(" ")
        try:
            at = float(stamp)
        except ValueError:
            continue
        if not start <= at <= end:
            continue
        client = rest[rest.find("[") + 1:rest.find("]")].split(" ", 1)[-1]
        if client in exclude:
            continue
        name = rest[rest.find("]") + 1:].strip().split(" ", 1)[0].strip('"').lower()
        if client == "lua":
            traffic.inside += 1
            traffic.names[f"({name})"] += 1
        else:
            traffic.sent += 1
            traffic.names[name] += 1
    return traffic


def scrape_failures(bots: list[Bot]) -> Counter:
    """The bots' own failure counters from GET /metrics (Prometheus text), summed."""
    import urllib.request

    found: Counter = Counter()
    for bot in bots:
        try:
            with urllib.request.urlopen(bot.metrics_url, timeout=5) as r:
                text = r.read().decode()
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.rpartition(" ")
            if "errors_total" in name and not line.startswith("#") and float(value) > 0:
                found[name] += float(value)
    return found


# -- the run ---------------------------------------------------------------------------------------


def check_requests_valid(conversations: list[Conversation]) -> None:
    """The bot validates each reply merged with the state it read (any subset of the others):
    make sure every combination is a request the engine takes, so none is refused."""
    from itertools import combinations

    from engine.parse import build_request, read_reply
    from engine.request import Draft

    for conv in conversations[:10] + conversations[-10:]:
        for name, text, value in conv.replies:
            parsed = read_reply(text)
            got = parsed.options.get(name) if parsed else None
            assert got == value, f"{text!r} parses to {got!r}, the bench expects {value!r}"
        for r in range(len(conv.replies) + 1):
            for subset in combinations(conv.replies, r):
                build_request(Draft({"model": conv.model, "method": "inference",
                                     **{name: value for name, _, value in subset}}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--requests", type=int, default=2000, help="slash commands + thread replies")
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--bots", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1, help="GPUSIZE_WORKERS per bot")
    ap.add_argument("--order", choices=["thread", "spread"], default="thread",
                    help="thread: a conversation's replies back to back (concurrent edits of one "
                         "thread); spread: one reply per conversation in turn")
    ap.add_argument("--rate", type=float, default=0,
                    help="requests per second (0: as fast as the in-flight limit allows)")
    ap.add_argument("--settle", type=float, default=180, help="seconds to wait for answers")
    ap.add_argument("--logs", type=Path, help="copy the bot logs and the MONITOR log here")
    args = ap.parse_args(argv)

    n_conv = args.conversations
    n_replies = args.requests - n_conv
    if n_replies < 0 or n_replies > n_conv * MAX_REPLIES:
        ap.error(f"--requests must be between {n_conv} and {n_conv * (MAX_REPLIES + 1)}")
    if shutil.which("redis-cli") is None:
        ap.error("redis-cli is needed (it comes with redis-server)")
    conversations = []
    for c in range(n_conv):
        count = n_replies // n_conv + (1 if c < n_replies % n_conv else 0)
        conversations.append(Conversation(c, f"CLOAD{c:05d}", MODELS[c % len(MODELS)],
                                          _fields(c)[:count]))
    check_requests_valid(conversations)

    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        redis = RedisServer(port=free_port(), directory=tmpdir)
        redis.start(appendonly=True)
        client = redis_py.Redis.from_url(redis.url, decode_responses=True,
                                         client_name="bench_load")
        stub = SlackStub(port=free_port())
        posted = Posted()
        server = serve_http(recording_handler(stub, posted), port=stub.port)
        env = {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET, "REDIS_URL": redis.url,
               "SLACK_API_URL": stub.url, "GPUSIZE_WORKERS": str(args.workers),
               "DIGEST_SCHEDULER": "false",  # as deployed: the CronJob triggers digests
               # a crowd simulated by 7 user ids: the per-member thread cap is for one person
               "THREAD_LIMIT_PER_HOUR": "10000"}
        bots: list[Bot] = []
        monitor = None
        try:
            for i in range(args.bots):
                bots.append(Bot(env=env, port=free_port(), log=tmpdir / f"bot{i}.log").start())
            # warm-up: imports, auth.test, Redis connections, the price book seeded on first use
            for i, bot in enumerate(bots):
                assert bot.command("help")[0] == 200
                assert bot.command("7B inference", channel=f"CWARM{i}") == (200, "")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not all(
                    (root := posted.root(f"CWARM{i}"))
                    and client.exists(f"gpusize:v1:conv:{TEAM}:CWARM{i}:{root}")
                    for i in range(len(bots))):
                time.sleep(0.05)
            pids = [b.process.pid for b in bots if b.process]
            monitor_log = tmpdir / "monitor.log"
            monitor = subprocess.Popen(["redis-cli", "-p", str(redis.port), "monitor"],
                                       stdout=open(monitor_log, "wb"),  # noqa: SIM115
                                       stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            client.config_resetstat()
            sequence = iter(range(10**9))
            lock = threading.Lock()

            def next_bot() -> Bot:
                with lock:
                    return bots[next(sequence) % len(bots)]

            def timed(kind: str, call: Any) -> Result:
                start = time.perf_counter()
                try:
                    status, body = call()
                    return Result(kind, (time.perf_counter() - start) * 1000, status, body)
                except Exception as err:  # a failed request is a figure, not a crash
                    return Result(kind, (time.perf_counter() - start) * 1000, 0, error=repr(err))

            def send(jobs: list[tuple[str, Any]]) -> tuple[list[Result], float]:
                start = time.perf_counter()

                def paced(i: int, job: tuple[str, Any]) -> Result:
                    if args.rate:  # open loop: request i leaves at start + i / rate
                        time.sleep(max(0.0, start + i / args.rate - time.perf_counter()))
                    return timed(*job)

                with ThreadPoolExecutor(args.concurrency) as pool:
                    results = list(pool.map(paced, range(len(jobs)), jobs))
                return results, time.perf_counter() - start

            # -- phase 1: the slash commands -------------------------------------------------
            before = {"info": redis_info(client), "cpu": cpu_seconds(pids), "at": time.time(),
                      "own": sum(os.times()[:2])}

            def command(conv: Conversation) -> tuple[str, Any]:
                bot = next_bot()
                return "command", lambda: bot.command(f"{conv.model} inference",
                                                      channel=conv.channel, user=f"U{conv.index % 7}")

            start1 = time.perf_counter()
            results1, send1 = send([command(c) for c in conversations])
            deadline = time.monotonic() + args.settle
            waiting = list(conversations)
            while waiting and time.monotonic() < deadline:
                for conv in waiting:
                    conv.root = posted.root(conv.channel)
                pipe = client.pipeline(transaction=False)
                for conv in waiting:
                    pipe.hget(f"gpusize:v1:conv:{TEAM}:{conv.channel}:{conv.root}", "_stage")
                stored = pipe.execute()
                waiting = [c for c, s in zip(waiting, stored, strict=True) if not (c.root and s)]
                if waiting:
                    time.sleep(0.1)
            done1 = time.perf_counter() - start1
            mid = {"info": redis_info(client), "cpu": cpu_seconds(pids), "at": time.time()}
            if waiting:
                print(f"{len(waiting)} conversations were never stored; stopping", file=sys.stderr)
                return 1

            # -- phase 2: replies in the threads ---------------------------------------------
            jobs_by_conv = []
            event_no = iter(range(1, 10**9))
            for conv in conversations:
                jobs = []
                for _name, text, _value in conv.replies:
                    n = next(event_no)
                    event = {"type": "message", "channel": conv.channel, "channel_type": "channel",
                             "user": f"U{(conv.index + n) % 7}", "text": text,
                             "ts": f"1700009999.{n:06d}", "event_ts": f"1700009999.{n:06d}",
                             "thread_ts": conv.root}

                    target = next_bot()

                    def reply(event: dict[str, Any] = event, n: int = n,
                              bot: Bot = target) -> tuple[int, str]:
                        return bot.event(event, event_id=f"EvLOAD{n:08d}")

                    jobs.append(("reply", reply))
                jobs_by_conv.append(jobs)
            if args.order == "thread":
                jobs2 = [job for jobs in jobs_by_conv for job in jobs]
            else:
                jobs2 = [jobs[j] for j in range(MAX_REPLIES) for jobs in jobs_by_conv
                         if j < len(jobs)]
            start2 = time.perf_counter()
            results2, send2 = send(jobs2)
            # one update per turn: making an answer the live one is bookkeeping (no version)
            want = {c.index: 1 + len(c.replies) for c in conversations}
            deadline = time.monotonic() + args.settle
            progress, last_change = -1, time.perf_counter()
            while time.monotonic() < deadline:
                pipe = client.pipeline(transaction=False)
                for conv in conversations:
                    pipe.hget(f"gpusize:v1:conv:{TEAM}:{conv.channel}:{conv.root}", "_version")
                versions = [int(v or 0) for v in pipe.execute()]
                if sum(versions) != progress:
                    progress, last_change = sum(versions), time.perf_counter()
                if all(v >= want[c.index] for c, v in zip(conversations, versions, strict=True)):
                    break
                if time.perf_counter() - last_change > 10:  # nothing moves: some were dropped
                    break
                time.sleep(0.1)
            done2 = last_change - start2
            time.sleep(1.0)  # anything late (a doubled update) lands before the checks
            after = {"info": redis_info(client), "cpu": cpu_seconds(pids), "at": time.time(),
                     "own": sum(os.times()[:2])}
            rss = rss_mib(pids)
            failures = scrape_failures(bots)
            bench_addrs = {c["addr"] for c in client.client_list() if c["name"] == "bench_load"}
            monitor.terminate()  # its output buffer would count in used_memory
            monitor.wait(timeout=10)
            monitor = None
            time.sleep(0.2)
            memory = client.info()
            used_after = memory["used_memory"] - memory["mem_clients_normal"]
            clients = (memory["connected_clients"], memory["mem_clients_normal"])
            # bytes per key kind (MEMORY USAGE, exact), for the conversations of this run only
            channels = {c.channel for c in conversations}
            names = [k for k in client.scan_iter("gpusize:v1:*", count=1000)]
            pipe = client.pipeline(transaction=False)
            for name in names:
                pipe.memory_usage(name, samples=0)
            by_kind: Counter = Counter()
            for name, size in zip(names, pipe.execute(), strict=True):
                parts = name.split(":")
                if parts[2] in ("conv", "convlog") and parts[4] not in channels:
                    continue  # the warm-up conversations
                by_kind[parts[2]] += size or 0

            # -- checks --------------------------------------------------------------------
            wrong: list[str] = []
            silent: list[str] = []
            notices_in = Counter(c.body.get("channel") for c in stub.of("chat.postEphemeral"))
            for conv in conversations:
                key = f"{TEAM}:{conv.channel}:{conv.root}"
                raw = client.hgetall(f"gpusize:v1:conv:{key}")
                inputs = {k: json.loads(v) for k, v in raw.items() if not k.startswith("_")}
                log = [json.loads(e) for e in client.lrange(f"gpusize:v1:convlog:{key}", 0, -1)]
                answers = posted.by_channel.get(conv.channel, [])[1:]
                problems = []
                if inputs != conv.expected:
                    problems.append(f"inputs {inputs} != {conv.expected}")
                if raw.get("_stage") != "done":
                    problems.append(f"_stage {raw.get('_stage')}")
                if int(raw.get("_version", 0)) != want[conv.index]:
                    problems.append(f"_version {raw.get('_version')} != {want[conv.index]}")
                if len(log) != want[conv.index]:
                    problems.append(f"{len(log)} log entries != {want[conv.index]}")
                logged = {name for entry in log for name in entry["set"]}
                if logged != set(conv.expected):
                    problems.append(f"log set {sorted(logged)}")
                if len(answers) != len(conv.replies):
                    problems.append(f"{len(answers)} answers in the thread != {len(conv.replies)}")
                # the live answer: the newest card (a reply that leaves the recommendation as
                # it was is answered in one line, and the card before stays live)
                if conv.replies and raw.get("_answer_ts") not in (conv.root, *answers):
                    problems.append(f"_answer_ts {raw.get('_answer_ts')} is not an answer")
                if problems:
                    # a reply the bot refused with a notice accounts for at most one missing field
                    # set, one missing answer and two missing updates; anything else is silent
                    told = notices_in.get(conv.channel, 0)
                    missing = len(set(conv.expected) - set(inputs))
                    short = want[conv.index] - int(raw.get("_version", 0))
                    explained = (all(inputs.get(k, v) == v for k, v in conv.expected.items())
                                 and 0 <= short <= 2 * told and missing <= told
                                 and 0 <= len(conv.replies) - len(answers) <= told)
                    if not explained:
                        silent.append(conv.channel)
                    wrong.append(f"{conv.channel} ({told} notices"
                                 f"{'' if explained else ', NOT explained by them'}): "
                                 + "; ".join(problems))
        finally:
            if monitor:
                monitor.terminate()
                monitor.wait(timeout=10)
            for bot in bots:
                bot.stop()
            server.shutdown()
            redis.stop()
        log_errors = sum(("ERROR" in line or "Traceback" in line)
                         for i in range(len(bots))
                         for line in (tmpdir / f"bot{i}.log").read_text(errors="replace").splitlines())
        if args.logs:
            args.logs.mkdir(parents=True, exist_ok=True)
            for path in tmpdir.glob("*.log"):
                shutil.copy(path, args.logs / path.name)
        t1 = monitor_traffic(monitor_log, before["at"], mid["at"], bench_addrs)
        t2 = monitor_traffic(monitor_log, mid["at"], after["at"], bench_addrs)

    # -- report ------------------------------------------------------------------------------
    results = results1 + results2
    failed = [r for r in results if r.status != 200]
    refused = [r for r in results1 if r.status == 200 and r.body]  # an ack with a message: error
    ephemeral = len(stub.of("chat.postEphemeral")) + len(stub.of("response_url"))

    def lat(rs: list[Result]) -> str:
        ms = [r.latency_ms for r in rs]
        return (f"p50 {statistics.median(ms):.1f} ms, p99 {percentile(ms, 0.99):.1f} ms, "
                f"max {max(ms):.1f} ms")

    def delta(key: str, a: dict[str, Any], b: dict[str, Any]) -> Any:
        return b["info"][key] - a["info"][key]

    total_send = send1 + send2
    print(f"bench_load: {args.bots} bots x {args.workers} answer worker(s), one Redis, "
          f"{f'{args.rate:g} req/s offered, ' if args.rate else ''}"
          f"{os.cpu_count()} CPUs; {n_conv} conversations, {len(results)} requests "
          f"({len(results1)} /gpusize + {len(results2)} thread replies, order={args.order}), "
          f"{args.concurrency} in flight")
    print(f"  throughput (acks): {len(results) / total_send:.0f} req/s overall; "
          f"/gpusize {len(results1) / send1:.0f}/s, replies {len(results2) / send2:.0f}/s; "
          f"all {n_conv} commands answered and stored {done1:.1f} s after the first; the "
          f"replies' last update {done2:.1f} s after the first reply "
          f"({len(results2) / done2:.0f} replies/s processed)")
    print(f"  ack latency: all {lat(results)}")
    print(f"               /gpusize {lat(results1)}; replies {lat(results2)}")
    print(f"  errors: {len(failed)} failed requests, {len(refused)} refused commands, "
          f"{ephemeral} error notices to users, {log_errors} error lines in the bot logs; "
          f"state: {len(conversations) - len(wrong)}/{len(conversations)} conversations exactly "
          f"as their turns imply (fields, _version = 1 + 2 x replies, log, one answer per reply)"
          f"{f'; {len(silent)} of the others NOT explained by error notices' if wrong else ''}")
    for line in wrong[:10]:
        print(f"    WRONG {line}")
    for name, value in failures.most_common():
        print(f"    the bots count {name} = {value:.0f}")
    notices = Counter(str(c.body.get("text", ""))[:160] for c in stub.of("chat.postEphemeral"))
    for text, count in notices.most_common(5):
        print(f"    NOTICE x{count}: {text}")
    for r in failed[:5]:
        print(f"    FAILED {r.kind} status {r.status} {r.error or r.body[:200]}")
    n2 = max(1, len(results2))
    print(f"  Redis per /gpusize: {t1.sent / n_conv:.1f} round-trips, "
          f"+{t1.inside / n_conv:.1f} commands inside Lua "
          f"({', '.join(f'{k} {v / n_conv:.1f}' for k, v in t1.names.most_common(8))})")
    print(f"  Redis per reply: {t2.sent / n2:.1f} round-trips, +{t2.inside / n2:.1f} commands "
          f"inside Lua ({', '.join(f'{k} {v / n2:.1f}' for k, v in t2.names.most_common(8))})")
    print(f"  CPU (bots + workers): {1000 * (mid['cpu'] - before['cpu']) / n_conv:.1f} ms per "
          f"/gpusize, {1000 * (after['cpu'] - mid['cpu']) / max(1, len(results2)):.1f} ms per "
          f"reply; Redis {1000 * delta('cpu', before, after) / len(results):.2f} ms per request; "
          f"this load generator + Slack stand-in "
          f"{1000 * (after['own'] - before['own']) / len(results):.1f} ms per request")
    kept = (by_kind["conv"] + by_kind["convlog"]) / n_conv
    dedupe = (by_kind["event"] + by_kind["msg"]) / n_conv
    shared = ", ".join(f"{k} {v / 1024:.1f} KiB" for k, v in by_kind.most_common()
                       if k not in ("conv", "convlog", "event", "msg"))
    print(f"  Redis memory per conversation ({n_replies / n_conv:.0f} replies; MEMORY USAGE): "
          f"{kept / 1024:.2f} KiB kept for the TTL (conv {by_kind['conv'] / n_conv:.0f} B + log "
          f"{by_kind['convlog'] / n_conv:.0f} B) and {dedupe / 1024:.2f} KiB of dedupe keys "
          f"that expire in 1 h; shared, not per conversation: {shared}. used_memory less client buffers "
          f"+{(used_after - before['info']['used_memory']) / n_conv / 1024:.1f} KiB per "
          f"conversation, keys +{delta('keys', before, after)}, "
          f"AOF +{delta('aof', before, after) / n_conv / 1024:.1f} KiB per conversation; "
          f"{clients[0]} client connections ({clients[1] / 1024:.0f} KiB of buffers)")
    print(f"  bot RSS at the end (with workers): "
          f"{', '.join(f'{v:.0f} MiB' for v in rss.values())}")
    return 1 if failed or refused or wrong or ephemeral or log_errors else 0


if __name__ == "__main__":
    sys.exit(main())
