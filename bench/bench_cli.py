"""Whole-process time of `gpusize 13B full-finetune` (goal: <= 0.3 s median).

Run: .venv/bin/python bench/bench_cli.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def run(repeats: int = 20) -> None:
    exe = shutil.which("gpusize", path=str(Path(sys.executable).parent)) or "gpusize"
    cmd = [exe, "13B", "full-finetune"]
    subprocess.run(cmd, check=True, capture_output=True)  # warm the file cache and .pyc files
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=os.environ.copy())
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"{' '.join(cmd[1:])}: median {statistics.median(times):.3f} s, "
          f"min {times[0]:.3f} s, max {times[-1]:.3f} s over {repeats} runs (goal <= 0.3 s)")
    imported = subprocess.run([sys.executable, "-X", "importtime", "-c", "import gpusize.cli, engine"],
                              capture_output=True, text=True).stderr
    heavy = [m for m in ("slack_bolt", "redis", "huggingface_hub", "jinja2") if f" {m}" in imported]
    print("heavy modules on the CLI path:", ", ".join(heavy) or "none")


if __name__ == "__main__":
    run()
