"""Whole-process time of `gpusize 13B full-finetune`, against a bare `import pydantic.main`.

Goal (issue 11): at most 1.5x the bare import, run on the same machine in the same minute, so a
slower or busier machine moves both. Runs alternate between the two commands; wall time and the
CPU time the child used (user + sys, less disturbed by other load) are both reported.

Run: .venv/bin/python bench/bench_cli.py [RUNS]
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

# as a user's machine runs it: .pyc files written and used (some shells set this variable)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _one(cmd: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def run(repeats: int = 20) -> None:
    exe = shutil.which("gpusize", path=str(Path(sys.executable).parent)) or "gpusize"
    cli = [exe, "13B", "full-finetune"]
    bare = [sys.executable, "-c", "import pydantic.main"]
    for cmd in (cli, bare):
        subprocess.run(cmd, check=True, capture_output=True, env=ENV)  # .pyc, catalog cache
    times: dict[str, list[tuple[float, float]]] = {"cli": [], "bare": []}
    for _ in range(repeats):
        times["cli"].append(_one(cli))
        times["bare"].append(_one(bare))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in times.items()}
    print(f"gpusize {' '.join(cli[1:])}: wall {med['cli'][0]:.3f} s, cpu {med['cli'][1]:.3f} s "
          f"(median of {repeats})")
    print(f"python -c 'import pydantic.main': wall {med['bare'][0]:.3f} s, "
          f"cpu {med['bare'][1]:.3f} s")
    print(f"ratio: wall {med['cli'][0] / med['bare'][0]:.2f}x, cpu {med['cli'][1] / med['bare'][1]:.2f}x"
          " (goal <= 1.5x)")
    imported = subprocess.run([sys.executable, "-X", "importtime", "-c", "import gpusize.cli"],
                              capture_output=True, text=True).stderr
    heavy = [m for m in ("slack_bolt", "redis", "huggingface_hub", "jinja2", "matplotlib", "tomllib",
                         "http.client")
             if f" {m}" in imported]
    print("heavy modules on the CLI path:", ", ".join(heavy) or "none")


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
