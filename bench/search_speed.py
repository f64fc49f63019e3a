"""Trials per second of `harness search`: against the same trials in a plain loop in one
process (the search's own cost per trial), and on Ray with one worker and with one per core.

    PYTHONPATH=. python bench/search_speed.py [--trials N] [--seeds N] [--tiny]

A trial is seed-herd's size (10 nodes, 20 creates/s for 25 s) with `optimistic` on 5 seeds;
the space is replicas, K and the report interval. Each figure is the trial loop's own time
(search.json's `searched_s`, written by the search), not the shrink and confirmation after it,
nor Ray's start-up: each Ray measurement starts a fresh local Ray and warms its workers first.
The machine's load average is printed, as other work skews the figures.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench_args import bench_parser

from harness.config.search_file import Search, load_search
from harness.engines.ray_setup import start_ray, stop_ray
from harness.results.search_folder import SearchStore, load_search_results
from harness.running.pool import InProcess
from harness.running.search_runner import run_search, run_trial, search_loop

HERD = Path(__file__).resolve().parent.parent / "configs" / "seed-herd.toml"
SPACE = """
"placement.replicas" = { int = [1, 8] }
"placement.k" = { choices = [2, 3, 5] }
"heartbeat.interval_s" = { low = 1.0, high = 30.0, log = true }
"""


def bench_search(folder: Path, trials: int, seeds: int, duration_s: float) -> Search:
    path = folder / "bench.toml"
    path.write_text(
        f'[search]\nbase = "{HERD}"\nobjective = "maximize optimistic.cv_mean"\n'
        f"seeds = {seeds}\ntrials = {trials}\nconfirm_seeds = 1\nshrink_tolerance = 0.0\n"
        f'[set]\n"run.duration_s" = {duration_s}\n[space]\n{SPACE}'
    )
    return load_search(path)


def searched(search: Search, folder: Path, on_ray: bool) -> tuple[float, list[dict]]:
    """The trial loop's seconds (as the search recorded them) and the trials' values."""
    out = folder / f"out-{time.monotonic_ns()}"
    run_search(search, out, on_ray=on_ray)
    meta, trials = load_search_results(out)
    values = trials[list(search.space)].to_dict("records")
    return float(meta["searched_s"]), values


def plain(search: Search, values: list[dict]) -> tuple[float, float]:
    """The same trials in a loop in this process: no searcher, no files, no Ray. Its wall and
    CPU seconds."""
    began, cpu = time.perf_counter(), time.process_time()
    for v in values:
        run_trial(search.config(v), search.objective.strategies, search.seeds)
    return time.perf_counter() - began, time.process_time() - cpu


def search_cpu(search: Search, folder: Path) -> float:
    """CPU seconds of the search's trial loop in this process (no shrink, no confirmation):
    other work on a shared machine moves wall time far more than CPU time."""
    store = SearchStore(folder / f"cpu-{time.monotonic_ns()}", search)
    try:
        cpu = time.process_time()
        search_loop(store, InProcess(), None)
        return time.process_time() - cpu
    finally:
        store.close(True)


def on_ray(search: Search, folder: Path, workers: int) -> float:
    start_ray(num_cpus=workers)
    import ray  # after start_ray, which decides how Ray binds before it is first imported

    try:
        warm = ray.remote(run_trial)
        tiny = search.base.with_values({"run.duration_s": 1.0})
        ray.get([warm.remote(tiny, ["optimistic"], [0]) for _ in range(4 * workers)])
        return searched(search, folder, on_ray=True)[0]
    finally:
        stop_ray()


def main() -> None:
    parser = bench_parser(__doc__, "the smallest search")
    parser.add_argument("--trials", type=int, default=40, help="trials per search (default 40)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per trial (default 5)")
    parser.add_argument(
        "--repeats", type=int, default=2, help="plain loops and searches, interleaved"
    )
    args = parser.parse_args()
    trials, seeds, duration = (4, 1, 2.0) if args.tiny else (args.trials, args.seeds, 25.0)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.tiny:
        args.repeats = 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        search = bench_search(folder, trials, seeds, duration)
        # Interleaved, the fastest of each kept: the machine's pace drifts between minutes.
        loops, plains, cpus = [], [], []
        for _ in range(args.repeats):
            loop_s, values = searched(search, folder, on_ray=False)
            loops.append(loop_s)
            plains.append(plain(search, values))
            cpus.append(search_cpu(search, folder))
        plain_s, loop_s = min(p[0] for p in plains), min(loops)
        plain_cpu, loop_cpu = min(p[1] for p in plains), min(cpus)
        rows = [("plain loop, one process", plain_s), ("search, in this process", loop_s)]
        for workers in (1,) if args.tiny else (1, 2):
            rows.append((f"search on Ray, {workers} worker(s)", on_ray(search, folder, workers)))
    print(f"{trials} trials of {seeds} seeds each")
    print(f"{'':32} {'trials/s':>9} {'ms/trial':>9} {'vs plain':>9}")
    for name, seconds in rows:
        per = seconds / trials
        print(f"{name:32} {trials / seconds:9.2f} {1000 * per:9.1f} {plain_s / seconds:8.2f}x")
    overhead = (loop_s - plain_s) / trials
    cpu = (loop_cpu - plain_cpu) / trials
    print(
        f"CPU: plain loop {1000 * plain_cpu / trials:.1f} ms/trial, search loop "
        f"{1000 * loop_cpu / trials:.1f} ms/trial"
    )
    print(
        f"the search's own cost: {1000 * overhead:.1f} ms per trial of wall time, "
        f"{1000 * cpu:.1f} ms of CPU (in this process)"
    )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
