"""Issues 16 and 26's red-team attacks, one command: runs the five attack benches in turn
(each starts its own redis-server, Slack stand-in and bot processes on loopback) and prints their
figures, then one line per bench with its outcome.

    .venv/bin/python bench/bench_attacks.py            # about 18 minutes on a 2-core machine

bench/attacks_jobs.py    acknowledged work: SIGTERM / kill -9 with answers in flight, Slack
                         retries after a crash, killed workers, orphans, a chart flood
bench/attacks_edge.py    the edge and the Hub: 50 MB bodies, unsigned and malformed requests,
                         log amplification, half-open sockets, a slow Hub, look-up floods
bench/attacks_prices.py  prices, digests, authorization: a removed digest channel, future and
                         absurd prices, spoof text, member vs admin, 20,000 quotes
bench/attacks_platform.py  issue 26's security and limits: Slack Connect admins, feed URL
                         secrets, HF_TOKEN redirects, a trickling Hub, thread floods, import
                         caps, history retention, a 100 MB import, /metrics floods
bench/attacks_next.py    what the red team would try next: a 4,000-char mixed-script message on
                         four doors, 50 follow-ups in 2 s, forged presses, a Slack Connect
                         /gpusize, Redis restarted mid-answer

docs/RELIABILITY.md quotes their figures.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCHES = ("attacks_jobs.py", "attacks_edge.py", "attacks_prices.py", "attacks_platform.py",
           "attacks_next.py")


def main() -> int:
    if {"-h", "--help"} & set(sys.argv[1:]):  # the docstring is the help; nothing runs
        print(__doc__)
        return 0
    here = Path(__file__).resolve().parent
    outcomes = []
    for name in BENCHES:
        print(f"\n===== {name} =====", flush=True)
        start = time.monotonic()
        code = subprocess.call([sys.executable, str(here / name)], cwd=here.parent)
        outcomes.append((name, code, time.monotonic() - start))
    print("\n===== summary =====")
    for name, code, seconds in outcomes:
        print(f"{name:<20} {'held' if code == 0 else f'FAILED (exit {code})':<18} {seconds:5.0f} s")
    return max(code for _name, code, _s in outcomes)


if __name__ == "__main__":
    raise SystemExit(main())
