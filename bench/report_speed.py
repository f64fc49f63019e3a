"""The time the HTML report adds to `harness run`, on seed-burst and seed-herd.

    PYTHONPATH=. python bench/report_speed.py [--repeat N] [--tiny]

Each config runs (virtual engine) N times with its report and N times with `--no-report`,
alternately, each in a child process; the medians of their wall time and of their CPU time
(the child's user + system time, from wait4: less moved by a busy machine than the wall
clock) are printed, and the report's share as the difference. Then the report of the last
run is written N times more, each in a fresh child that times its own CPU: importing the
report's modules (matplotlib), writing the report, and of that the figures (`plots._png`:
layout, drawing, PNG). To compare two builds, run it from a folder outside both
(`python -m harness` puts the working folder first on the path).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_args import bench_parser

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ("seed-burst.toml", "seed-herd.toml")


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of `harness argv` in a child process."""
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "harness", *argv], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"harness {' '.join(argv)} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


SPLIT = """
import sys, time
import pandas, pyarrow
began = time.process_time()
from harness.presentation import html_report, plots
imported = time.process_time()
png, spent = plots._png, [0.0]
def timed(fig):
    at = time.process_time()
    data = png(fig)
    spent[0] += time.process_time() - at
    return data
plots._png = timed
html_report.write_report(sys.argv[1])
done = time.process_time()
print(imported - began, done - imported, spent[0])
"""
"""A child's own CPU seconds: importing the report's modules, writing it, and its figures."""


def split(folder: Path) -> tuple[float, float, float]:
    done = subprocess.run(
        [sys.executable, "-c", SPLIT, str(folder)], capture_output=True, text=True, check=True
    )
    imported, written, figures = map(float, done.stdout.split())
    return imported, written, figures


def main() -> None:
    parser = bench_parser(__doc__, "seed-burst, one seed, once")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    extra = ["--seeds", "1"] if args.tiny else []
    repeat = 1 if args.tiny else args.repeat
    with tempfile.TemporaryDirectory() as tmp:
        for name in CONFIGS[:1] if args.tiny else CONFIGS:  # tiny: each part once
            config = str(ROOT / "configs" / name)
            runs: dict[str, list[tuple[float, float]]] = {"report": [], "no report": []}
            for _ in range(repeat):
                for kind, flag in (("report", []), ("no report", ["--no-report"])):
                    out = ["--out", str(Path(tmp) / "run"), "--overwrite", "--quiet"]
                    runs[kind].append(timed(["run", config, *extra, *out, *flag]))
            wall, cpu = (
                {k: statistics.median(v[i] for v in runs[k]) for k in runs} for i in (0, 1)
            )
            print(
                f"{name}: with report {wall['report']:.2f} s wall, {cpu['report']:.2f} s CPU; "
                f"--no-report {wall['no report']:.2f} s, {cpu['no report']:.2f} s; "
                f"the report {wall['report'] - wall['no report']:.2f} s wall, "
                f"{cpu['report'] - cpu['no report']:.2f} s CPU (medians of {repeat})"
            )
            parts = [split(Path(tmp) / "run") for _ in range(repeat)]
            imported, written, figures = (statistics.median(p[i] for p in parts) for i in range(3))
            print(
                f"{name}: the report's own CPU: import {imported:.2f} s, writing {written:.2f} "
                f"s, of which the figures {figures:.2f} s (medians of {repeat})"
            )


if __name__ == "__main__":
    main()
