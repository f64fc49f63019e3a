"""Cells per second of `harness sweep` with one Ray worker and with one per core.

    PYTHONPATH=. python bench/sweep_scaling.py [--seeds N] [--nodes N] [--repeats N] [--tiny]

The sweep is configs/sweep-heartbeat.toml (strategies x 7 heartbeat intervals) on a larger
cluster, so each task does real work (about 30 ms a seed at 50 nodes) next to Ray's per-task
cost. Each measurement starts from a fresh local Ray whose workers are already started and
have imported the harness, and writes into a fresh folder: it times the sweep, not Ray's
start-up. The machine's load average is printed, as other work skews the figures.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench_args import bench_parser

from harness.config.sweep_file import Sweep, load_sweep
from harness.engines.ray_setup import start_ray, stop_ray
from harness.results.sweep_folder import load_sweep_results
from harness.running.sweep_runner import run_seed, run_sweep

SWEEP = Path(__file__).resolve().parent.parent / "configs" / "sweep-heartbeat.toml"


def measure(sweep: Sweep, workers: int, repeats: int) -> list[tuple[float, float]]:
    """(seconds per full sweep, seconds the engine spent in its tasks), `repeats` times, on a
    local Ray with `workers` CPUs. Engine time growing with the workers means the cores were
    not free: the machine is shared."""
    start_ray(num_cpus=workers)
    import ray  # after start_ray, which decides how Ray binds before it is first imported

    try:
        warm = ray.remote(run_seed)
        tiny = sweep.cells[0].config.with_values({"run.duration_s": 1.0})
        ray.get([warm.remote(tiny, 0) for _ in range(4 * workers)])
        times = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as out:
                began = time.perf_counter()
                run_sweep(sweep, Path(out))
                elapsed = time.perf_counter() - began
                engine = load_sweep_results(out)[1]["engine_wall_s"].sum()
                times.append((elapsed, float(engine)))
        return times
    finally:
        stop_ray()


def main() -> None:
    parser = bench_parser(__doc__, "the smallest sweep, one worker only")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per cell (default 5)")
    parser.add_argument("--nodes", type=int, default=50, help="nodes per cell (default 50)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per worker count")
    args = parser.parse_args()
    if args.tiny:
        vars(args).update(seeds=1, nodes=5, repeats=1)
    rate = 2.0 * args.nodes  # the reference's 2 creates per node per second
    overrides = [f"cluster.nodes={args.nodes}", f"workload.rate_per_s={rate}"]
    if args.tiny:  # every cell still runs, each seed 2 model seconds instead of 25
        overrides.append("run.duration_s=2")
    sweep = load_sweep(SWEEP, overrides, args.seeds)
    cores = os.cpu_count() or 1
    cells = len(sweep.cells)
    print(
        f"sweep: {sweep.name}, {cells} cells x {args.seeds} seeds, {args.nodes} nodes; "
        f"{cores} cores; load average before: {os.getloadavg()[0]:.2f}"
    )
    rates = {}
    for workers in dict.fromkeys((1,) if args.tiny else (1, cores)):
        times = measure(sweep, workers, args.repeats)
        rates[workers] = cells / min(elapsed for elapsed, _ in times)
        runs = ", ".join(f"{elapsed:.2f} s (engine {engine:.2f} s)" for elapsed, engine in times)
        print(
            f"{workers} worker(s): {rates[workers]:.2f} cells/s, best of: {runs}; "
            f"load average now {os.getloadavg()[0]:.2f}"
        )
    if len(rates) > 1:
        print(f"speed-up with {cores} workers: {rates[cores] / rates[1]:.2f}x")


if __name__ == "__main__":
    main()
