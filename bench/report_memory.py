"""Peak memory of `harness report` on a large sweep folder.

    PYTHONPATH=. python bench/report_memory.py [--rate N] [--duration S] [--seeds N] [--keep DIR]
        [--tiny]

The sweep is configs/seed-herd.toml over two strategies at a high arrival rate, its cells
run here on the virtual engine (the sweep runner's own task body, without Ray) and written by
the sweep's own store, so the folder is what `harness sweep` writes. Then `harness report`
runs in a child process, and its peak resident memory (its ru_maxrss, from wait4) is printed
beside the folder's size and its rows. To compare two builds, run it from a folder outside
both (`python -m harness` puts the working folder first on the path).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.dataset as ds
from bench_args import bench_parser

from harness.config.sweep_file import load_sweep
from harness.results.sweep_folder import SweepStore
from harness.running.sweep_runner import run_seed

ROOT = Path(__file__).resolve().parent.parent


def make_sweep(folder: Path, rate: float, duration: float, seeds: int) -> Path:
    """A sweep folder of 2 cells (stale, optimistic) x `seeds` at `rate` creates per second."""
    spec = folder / "sweep.toml"
    spec.write_text(
        f'[sweep]\nbase = "{ROOT / "configs" / "seed-herd.toml"}"\nseeds = {seeds}\n'
        f'[set]\n"run.duration_s" = {duration}\n"workload.rate_per_s" = {rate}\n'
        '"cluster.nodes" = 300\n"workload.arrival" = "poisson"\n'
        '[grid]\n"placement.strategy" = ["stale", "optimistic"]\n'
    )
    sweep = load_sweep(spec)
    out = folder / "sweep"
    store = SweepStore(out, sweep)
    try:
        for cell in sweep.cells:
            began = time.monotonic()
            results = [run_seed(cell.config, seed)[0] for seed in sweep.seeds]
            store.add_cell(cell, results, time.monotonic() - began)
    finally:
        store.close()
    return out


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def report_peak_mb(folder: Path) -> float:
    """Peak resident memory of `harness report folder`, in MiB (Linux reports KiB), from
    that child's own resource usage (wait4)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "report", str(folder)], stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"harness report exited {proc.returncode}")
    return usage.ru_maxrss / 1024


def main() -> None:
    parser = bench_parser(__doc__, "a sweep of seconds")
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="make (or reuse) the sweep folder here")
    args = parser.parse_args()
    if args.tiny:
        args.rate, args.duration, args.seeds = 50.0, 2.0, 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep / "sweep" if args.keep else None
        if folder is None or not folder.is_dir():
            began = time.monotonic()
            folder = make_sweep(args.keep or Path(tmp), args.rate, args.duration, args.seeds)
            print(f"sweep made in {time.monotonic() - began:.0f} s")
        rows = ds.dataset(folder / "requests", format="parquet", partitioning="hive").count_rows()
        print(f"folder {size_mb(folder):.1f} MiB, {rows:,} request rows")
        print(f"harness report: peak {report_peak_mb(folder):.0f} MiB resident")


if __name__ == "__main__":
    main()
