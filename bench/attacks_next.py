"""What the red team would try next against the bot (issue 26, the bot's remaining gaps), against
the real parts: a throwaway redis-server (append-only), the Slack Web API stand-in and the bot as
a real process (tests/harness.py), on loopback. Prints tried / held and the figures; exit 1 when
anything was lost, doubled, answered with a 5xx or a traceback, or another member's ack stalled
past STALL_MS.

    .venv/bin/python bench/attacks_next.py               # all, about 3 minutes on 2 cores
    .venv/bin/python bench/attacks_next.py --only=storm  # some, by name prefix

long_reply   a 4,000-character mixed-script message as a thread reply, a mention, a direct
             message and a /gpusize, while another member sends commands
storm        50 follow-ups in one thread within 2 s from 5 members, each a different change
forged       signed presses whose ids or values no button carries (and a stale version)
connect      /gpusize from a Slack Connect user (another organisation's team and user)
redis_bounce Redis restarted (SHUTDOWN, then started on its append-only file) while 20
             mentions and 20 thread replies are being answered
slack_away   slack.com unreachable (the Web API stand-in stopped): 10 /gpusize and 5 mentions,
             then a process started while Slack is away; Slack back after 10 s
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis as redis_py
from attacks_jobs import Rig, rig, settle, wait_until

from tests.harness import TEAM, Bot, SlackStub, serve_stub

ANSWERS = ("chat.postEphemeral", "chat.postMessage", "views.publish", "views.push",
           "response_url")
STALL_MS = 100.0  # another member's ack may not wait longer than this for someone's attack
ALONE: list[float] = []  # their acks just before the attack (ms)
ROOT = "1700000000.000001"  # the first message the stand-in posts
MIXED = ("预算15万 全参微调 Llama-3.1-70B 并发 50 users ٣٢ ألف سياق 𝟭𝟯B "
         "ｇｐｕｓ＝８ context=32k  Zalgo ẗ̸̢h̵̛ı̷s̶ 🙂🚀 ёлка ≥ 1e309 <!here> ")


def mixed_text(length: int = 4000) -> str:
    return (MIXED * (length // len(MIXED) + 1))[:length]


def probe_acks(bot: Bot, stop: threading.Event, user: str = "U0PROBE") -> list[float]:
    """Another member's `/gpusize help` acks (ms), one after another until `stop`."""
    times: list[float] = []
    while not stop.is_set():
        start = time.perf_counter()
        status, _body = bot.command("help", user=user, channel="C0PROBE")
        times.append((time.perf_counter() - start) * 1000 if status == 200 else float("inf"))
        time.sleep(0.05)
    return times


def during(bot: Bot, attack: Callable[[], Any]) -> tuple[Any, list[float]]:
    """Run `attack` while another member's acks are timed; (its result, their acks in ms).
    Their acks alone, just before, are kept in ALONE: on a shared machine the stall an attack
    causes is what it adds to them."""
    stop = threading.Event()
    timer = threading.Timer(2.0, stop.set)
    timer.start()
    ALONE[:] = probe_acks(bot, stop)
    stop = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        probe = pool.submit(probe_acks, bot, stop)
        time.sleep(0.2)
        try:
            result = attack()
        finally:
            time.sleep(0.2)
            stop.set()
        return result, probe.result()


def acks_text(acks: list[float]) -> str:
    if not acks:
        return "no acks"
    return (f"another member's acks p50/max {statistics.median(ALONE):.0f}/{max(ALONE):.0f} ms "
            f"alone, {statistics.median(acks):.0f}/{max(acks):.0f} ms during ({len(acks)})")


def tracebacks(r: Rig) -> int:
    return sum(p.read_text(errors="replace").count("Traceback")
               for p in r.tmp.glob("bot*.log"))


def report(name: str, tried: int, held: int, notes: str, *, failed: int = 0,
           acks: list[float] | None = None) -> dict[str, Any]:
    # a stall is what the attack adds to another member's slowest ack alone
    stalled = bool(acks) and max(acks or [0]) > STALL_MS + max(ALONE or [0])
    ok = held == tried and not failed and not stalled
    line = f"{'held' if ok else 'FAILED':<6} {name:<44} tried {tried:>3}  held {held:>3}  {notes}"
    if acks is not None:
        line += f"; {acks_text(acks)}"
    print(line, flush=True)
    return {"attack": name, "ok": ok}


def open_thread(bot: Bot, slack: SlackStub, r: Rig, text: str = "13B lora") -> str:
    bot.command(text)
    slack.wait_for("chat.postMessage")
    wait_until(lambda: bool(r.redis.command("HGETALL",
                                            f"gpusize:v1:conv:{TEAM}:C0CHAN:{ROOT}")))
    return ROOT


def answered_privately_or_in(slack: SlackStub, channel: str, thread: str) -> int:
    """Replies in `thread` plus private notes to anyone there (each a way of answering)."""
    posts = [c for c in slack.of("chat.postMessage")
             if c.body.get("channel") == channel and c.body.get("thread_ts") == thread]
    notes = [c for c in slack.of("chat.postEphemeral") if c.body.get("channel") == channel]
    return len(posts) + len(notes)


def long_reply() -> dict[str, Any]:
    """A 4,000-character message of mixed scripts on four doors at once."""
    with rig() as r:
        bot, slack = r.bot(), r.slack
        thread = open_thread(bot, slack, r)
        text = mixed_text()
        statuses: list[int] = []

        def attack() -> float:
            start = time.perf_counter()
            statuses.append(bot.event({"type": "message", "channel": "C0CHAN", "user": "U0EVE",
                                       "text": text, "ts": "1700000000.900001",
                                       "thread_ts": thread}, event_id="EvLong1")[0])
            statuses.append(bot.event({"type": "app_mention", "channel": "C0CHAN",
                                       "user": "U0EVE", "text": "<@UBOT0001> " + text,
                                       "ts": "1700000000.900002"}, event_id="EvLong2")[0])
            statuses.append(bot.event({"type": "message", "channel": "D0EVE",
                                       "channel_type": "im", "user": "U0EVE", "text": text,
                                       "ts": "1700000000.900003"}, event_id="EvLong3")[0])
            statuses.append(bot.command(text, user="U0EVE")[0])
            return (time.perf_counter() - start) * 1000

        took, acks = during(bot, attack)
        settle(slack, 2.0)
        # each door answers once: in the thread or privately (the slash command in its ack)
        doors = {"thread reply": answered_privately_or_in(slack, "C0CHAN", thread) - 0,
                 "mention": answered_privately_or_in(slack, "C0CHAN", "1700000000.900002"),
                 "direct message": answered_privately_or_in(slack, "D0EVE",
                                                            "1700000000.900003")}
        held = sum(1 for s in statuses if s == 200)
        notes = (f"4 acks 200 in {took:.0f} ms all told, answers per door {doors}, "
                 f"tracebacks {tracebacks(r)}")
        return report("4,000-char mixed-script message, 4 doors", 4, held, notes,
                      failed=tracebacks(r), acks=acks)


def storm(replies: int = 50, members: int = 5, seconds: float = 2.0) -> dict[str, Any]:
    """50 follow-ups in one thread in 2 s from 5 members, each a different budget: each answered
    once (a new card in the thread), none lost, none doubled; the thread's log has all 50."""
    with rig() as r:
        bot, slack = r.bot(THREAD_LIMIT_PER_HOUR="1000"), r.slack
        thread = open_thread(bot, slack, r)
        first = len(slack.of("chat.postMessage"))

        def send(n: int) -> int:
            time.sleep(n * seconds / replies)
            return bot.event({"type": "message", "channel": "C0CHAN",
                              "user": f"U0M{n % members}", "text": f"budget={100 + n}k",
                              "ts": f"1700000001.{n:06d}", "thread_ts": thread},
                             event_id=f"EvStorm{n}")[0]

        def attack() -> list[int]:
            with ThreadPoolExecutor(replies) as pool:
                return list(pool.map(send, range(replies)))

        statuses, acks = during(bot, attack)
        wait_until(lambda: len(slack.of("chat.postMessage")) - first >= replies, timeout=180)
        settle(slack, 3.0)
        cards = [c for c in slack.of("chat.postMessage")[first:]
                 if c.body.get("thread_ts") == thread]
        told = Counter(str(c.body.get("user")) for c in slack.of("chat.postEphemeral"))
        asked = Counter()
        for c in cards:  # which reply each card answers: its budget, as the card says it
            for n in range(replies):
                if f"{100 + n}k" in json.dumps(c.body, ensure_ascii=False):
                    asked[n] += 1
                    break
        log = r.redis.command("LRANGE", f"gpusize:v1:convlog:{TEAM}:C0CHAN:{thread}", 0, -1)
        held = sum(1 for n in range(replies) if asked[n] == 1)
        doubled = sum(1 for n in range(replies) if asked[n] > 1)
        notes = (f"acks 200: {statuses.count(200)}, cards {len(cards)}, doubled {doubled}, "
                 f"private notes {sum(told.values())}, log entries {sum('follow-up' in e for e in log)}, "
                 f"tracebacks {tracebacks(r)}")
        return report(f"{replies} follow-ups, one thread, {seconds:.0f} s, {members} members",
                      replies, held, notes, failed=doubled + tracebacks(r), acks=acks)


def forged() -> dict[str, Any]:
    """Signed presses no button of ours sends: every one acked (never 404/5xx) and answered,
    the thread unchanged."""
    with rig() as r:
        bot, slack = r.bot(), r.slack
        bot.command("llama-3.1-8b")  # the method question: its thread is at the method stage
        slack.wait_for("chat.postMessage")
        key = f"gpusize:v1:conv:{TEAM}:C0CHAN:{ROOT}"
        wait_until(lambda: bool(r.redis.command("HGETALL", key)))
        before = r.redis.command("HGETALL", key)
        presses = [("answer_method_bogus", "1|bogus"), ("answer_method_lora", "1|pretrain; drop"),
                   ("card_more", "1|no-such-detail"), ("whatif_method_qlora", "1|gpus=99999"),
                   ("whatif_gpus_8", "1|" + "x" * 1900), ("show_price_chart", "1|<!channel>"),
                   ("zz_never_a_button", "x"), ("run_it", "<!channel> 13B lora"),
                   ("home_run", "lang xx"), ("answer_budget", "1|-5")]
        statuses, answered = [], 0
        for n, (action_id, value) in enumerate(presses):
            calls = len(slack.calls)
            statuses.append(bot.action(action_id=action_id, value=value, message_ts=ROOT,
                                       user=f"U0F{n}", action_ts=f"1700000002.{n:06d}")[0])
            # answered: anything said to the presser, or posted, after the press
            answered += wait_until(lambda c=calls: any(
                call.method in ANSWERS for call in slack.calls[c:]), timeout=10)
            settle(slack, 0.5)
        held = answered
        after = r.redis.command("HGETALL", key)
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)
                   and k not in ("_log", "_version", "_updated")}
        notes = (f"statuses {sorted(Counter(statuses).items())}, answered {held}, thread fields "
                 f"changed {sorted(changed) or 'none'}, live mentions posted "
                 f"{sum('<!channel>' in json.dumps(c.body) for c in slack.calls)}, "
                 f"tracebacks {tracebacks(r)}")
        bad = sum(1 for s in statuses if s >= 400) + tracebacks(r) + len(changed)
        return report("forged press ids and values", len(presses), held, notes, failed=bad)


def connect() -> dict[str, Any]:
    """/gpusize from a Slack Connect user: the payload's team, or only the user's, is another
    organisation's. Answered like anyone's; counted under their own team."""
    with rig() as r:
        bot, slack = r.bot(THREAD_LIMIT_PER_HOUR="2"), r.slack
        slack.home_teams["U0EXT"] = "T0OTHER"
        slack.admins.add("U0EXT")  # an admin over there
        statuses = [bot.command("13B lora", user="U0EXT", channel="C0SHARED")[0],
                    bot.command("7B qlora", user="U0EXT", channel="C0SHARED",
                                team="T0OTHER")[0]]
        lang = bot.command("lang zh workspace", user="U0EXT", channel="C0SHARED",
                           response_url=slack.response_url("lang"))
        settle(slack, 2.0)
        posted = [c for c in slack.of("chat.postMessage") if c.body.get("channel") == "C0SHARED"]
        workspace_lang = r.redis.command("HGET", f"gpusize:v1:lang:{TEAM}", "workspace")
        burst = [bot.command(f"{n}B lora", user="U0EXT", channel="C0SHARED")[1]
                 for n in (1, 2, 3)]
        limited = sum("more new threads" in b for b in burst)
        held = sum(1 for s in statuses if s == 200 and len(posted) == 2)
        held += int(lang[0] == 200 and workspace_lang != "zh")
        held += int(limited >= 2)
        notes = (f"2 questions answered in the shared channel: {len(posted) == 2}; their "
                 f"admin's workspace language change refused: {workspace_lang != 'zh'}; thread "
                 f"limit held for them: {limited} of 3 refused; tracebacks {tracebacks(r)}")
        return report("/gpusize from a Slack Connect user", 4, held, notes,
                      failed=tracebacks(r))


def redis_bounce(each: int = 20) -> dict[str, Any]:
    """Redis shut down and started again on its append-only file while mentions and thread
    replies are being answered (each held 1 s in its worker): each answered once."""
    with rig() as r:
        bot, slack = r.bot(GPUSIZE_TEST_ANSWER_DELAY_S="1", JOB_CLAIM_IDLE_S="2",
                           THREAD_LIMIT_PER_HOUR="1000"), r.slack
        thread = open_thread(bot, slack, r)
        for n in range(each):
            bot.event({"type": "app_mention", "channel": f"C0B{n:02d}", "user": f"U0B{n % 4}",
                       "text": f"<@UBOT0001> {n + 1}B lora", "ts": f"1700000003.{n:06d}"},
                      event_id=f"EvBounceM{n}")
            bot.event({"type": "message", "channel": "C0CHAN", "user": f"U0R{n % 4}",
                       "text": f"budget={200 + n}k", "ts": f"1700000004.{n:06d}",
                       "thread_ts": thread}, event_id=f"EvBounceR{n}")
        wait_until(lambda: len(slack.of("chat.postMessage")) >= 4, timeout=60)
        assert r.redis.process is not None
        with contextlib.suppress(redis_py.ConnectionError):  # it closes the connection
            r.redis.command("SHUTDOWN")  # writes the AOF, as a restart by an operator does
        r.redis.process.wait()
        r.redis.process = None
        time.sleep(1.0)
        r.redis.start(appendonly=True)

        def mentions() -> Counter[str]:
            return Counter(c.body["channel"] for c in slack.of("chat.postMessage")
                           if c.body.get("channel", "").startswith("C0B"))

        def replies() -> Counter[int]:
            found: Counter[int] = Counter()
            for c in slack.of("chat.postMessage"):
                if c.body.get("thread_ts") == thread and c.body.get("channel") == "C0CHAN":
                    text = json.dumps(c.body)
                    for n in range(each):
                        if f"{200 + n}k" in text:
                            found[n] += 1
                            break
            return found

        wait_until(lambda: len(mentions()) >= each and len(replies()) >= each, timeout=240)
        settle(slack, 3.0)
        m, rep = mentions(), replies()
        held = sum(1 for n in range(each) if m[f"C0B{n:02d}"] == 1)
        held += sum(1 for n in range(each) if rep[n] == 1)
        doubled = sum(1 for v in m.values() if v > 1) + sum(1 for v in rep.values() if v > 1)
        notes = (f"mentions answered {len(m)} of {each}, replies answered {len(rep)} of {each}, "
                 f"doubled {doubled}, tracebacks {tracebacks(r)}")
        return report("Redis restarted mid-answer (AOF)", 2 * each, held, notes,
                      failed=doubled)


def slack_away(commands: int = 10, mentions: int = 5, away_s: float = 10.0) -> dict[str, Any]:
    """slack.com unreachable: each signed request acknowledged within Slack's 3 s (Bolt's
    authorization asked auth.test on the request's path: a 500 after ~2.4 s), each answered
    once when Slack is back (its job deferred, not lost); a process that never reached Slack
    says so in the ack."""
    with rig() as r:
        bot, slack = r.bot(), r.slack
        learned = wait_until(lambda: bool(r.redis.command("KEYS", "gpusize:v1:identity:*")), 30)
        r.server.shutdown()
        r.server.server_close()
        down_at = time.monotonic()
        acks: list[tuple[float, int]] = []
        for n in range(commands):
            start = time.perf_counter()
            status, _body = bot.command(f"{n + 7}B lora", user=f"U0AWAY{n}", channel=f"C0AW{n:02d}")
            acks.append(((time.perf_counter() - start) * 1000, status))
        for n in range(mentions):
            start = time.perf_counter()
            status, _body = bot.event({"type": "app_mention", "channel": f"C0AM{n:02d}",
                                       "user": f"U0AM{n}", "text": f"<@UBOT0001> {n + 7}B qlora",
                                       "ts": f"1700000070.{n:06d}"}, event_id=f"EvAway{n}")
            acks.append(((time.perf_counter() - start) * 1000, status))
        # a process started while Slack is away, with nothing learned before it
        r.redis.command("DEL", *r.redis.command("KEYS", "gpusize:v1:identity:*"))
        start = time.perf_counter()
        fresh = r.bot()
        started_s = time.perf_counter() - start
        status, body = fresh.command("13B lora", user="U0FRESH", channel="C0FRESH")
        told = status == 200 and "reach Slack" in body
        time.sleep(max(0.0, away_s - (time.monotonic() - down_at)))
        r.server = serve_stub(slack)  # Slack back, on the same address
        back_at = time.monotonic()
        channels = [f"C0AW{n:02d}" for n in range(commands)] + [
            f"C0AM{n:02d}" for n in range(mentions)]

        def answered() -> Counter[str]:
            return Counter(c.body.get("channel", "") for c in slack.of("chat.postMessage"))

        wait_until(lambda: all(answered()[c] for c in channels), timeout=120)
        last_s = time.monotonic() - back_at
        settle(slack, 3.0)
        got = answered()
        held = sum(1 for c in channels if got[c] == 1) + int(told)
        doubled = sum(1 for c in channels if got[c] > 1)
        slow = sum(1 for ms, status in acks if status != 200 or ms >= 3000)
        ms = [t for t, _status in acks]
        notes = (f"ids learned first: {learned}; {len(acks)} acks while away: statuses "
                 f"{sorted(Counter(s for _t, s in acks).items())}, p50/max "
                 f"{statistics.median(ms):.0f}/{max(ms):.0f} ms; answered once {held - told} of "
                 f"{len(channels)}, the last {last_s:.1f} s after Slack came back; doubled "
                 f"{doubled}; a process started while away: up in {started_s:.1f} s, said so in "
                 f"the ack: {told}; tracebacks {tracebacks(r)}")
        return report("Slack's Web API unreachable", len(channels) + 1, held, notes,
                      failed=doubled + slow)


ATTACKS: dict[str, Callable[[], dict[str, Any]]] = {
    "long_reply": long_reply, "storm": storm, "forged": forged, "connect": connect,
    "redis_bounce": redis_bounce, "slack_away": slack_away}


def main(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    only = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")), [])
    print(f"the red team's next tries, {time.strftime('%Y-%m-%d')}", flush=True)
    results = [attack() for name, attack in ATTACKS.items()
               if not only or any(name.startswith(prefix) for prefix in only)]
    failed = [r["attack"] for r in results if not r["ok"]]
    print(f"failed: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
