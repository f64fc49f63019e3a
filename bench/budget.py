"""Measures the per-unit costs `harness/running/cost_check.py` estimates with, in three parts.

    PYTHONPATH=. python bench/budget.py [--part seeds|driver|ray ...] [--tiny]

1. A seed, as a run's task runs it (`harness.running.seed_tasks.run_unit`: the engine, its rows
   written to a part folder as its logs flush, the passes that read them back for its summary,
   the invariant checks), per node, per extra replica's view, per request and timeline row a
   log holds before it flushes and per row beyond, what a long seed holds beyond its full log,
   what replaying a trace of tagged creates (as an import writes) holds beyond drawing the same
   arrivals, per live sandbox, per create of a burst, per report (delivered, and in flight) and
   per closed-loop client. Each scenario runs in a fresh
   process, which reports its peak RSS above its size before the seed and its CPU time; a
   unit's cost is the difference between two scenarios that differ in that unit only, divided
   by the units.
2. The driver: the harness's process before a run; runs long in requests (drawn, and a
   tagged trace replayed) and in timeline rows, stopped as they were to gather their seeds'
   parts, then gathered (`harness run --resume`: a row group at a time) and printed, each in a
   fresh process (peak above the process, CPU per row); and `harness report` of those and of a
   run long in nodes (its peak beyond the process, and its CPU per row).
3. Ray: a local Ray that ran two seeds as tasks, the proportional set size (PSS) of its own
   processes and of each worker.

Takes some minutes and ~1.5 GB. `--part` runs the parts named (all three without it), in the
order above. `--tiny` runs every part at a hundredth of its size, the seeds all in one
process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_args import bench_parser

from harness.engines.virtual import FLUSH_ROWS, SAMPLE_ROWS
from harness.results.atomic_files import ROW_GROUP_ROWS
from harness.testing_signals import SIGNAL_AT

SEED = """
import json, resource, sys, tempfile, time
from pathlib import Path
import pyarrow.parquet  # loaded by every seed: not part of the difference
from harness.config import from_dict
from harness.results.seed_rows import SeedRows
from harness.running.seed_tasks import run_unit

for raw in json.loads(sys.argv[1]):
    config = from_dict(raw)
    base = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
    cpu = time.process_time()
    with tempfile.TemporaryDirectory() as folder:
        rows = SeedRows(config.placement.strategy, 0, Path(folder) / "part", "bench")
        run_unit(config, 0, rows)
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"bytes": peak - base, "cpu": cpu}))
"""

RUN = """
import json, signal, sys
from pathlib import Path
from harness.config import from_dict
from harness.running.runner import run

# Python's own SIGINT handler even where this started with SIGINT ignored (a shell's `&`
# without job control): else the signal at the close (SIGNAL_AT) is lost, the run completes,
# and there is nothing left to gather.
signal.signal(signal.SIGINT, signal.default_int_handler)
config = from_dict(json.loads(sys.argv[1]))
try:
    run(config, [config.placement.strategy], Path(sys.argv[2]))
except KeyboardInterrupt:  # stopped as it was to gather its parts (SIGNAL_AT): they are kept
    pass
"""

PROCESS = """
import resource
import harness.cli, harness.running.runner, harness.results.run_writer, pandas, pyarrow.parquet
print(int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize())
"""

RAY = """
import json, os, sys, tempfile, time
from pathlib import Path
from harness.config import load
from harness.engines.ray_setup import connect, stop_ray
from harness.results.seed_rows import SeedRows
from harness.running.seed_tasks import run_unit
from real_traffic import pss_kib, tree

connect()
import ray

config = load(sys.argv[1]).with_values({"run.duration_s": 5.0})
task = ray.remote(num_cpus=1)(run_unit)
with tempfile.TemporaryDirectory() as folder:
    parts = [SeedRows("stale", seed, Path(folder) / str(seed), "bench") for seed in (0, 1)]
    ray.get([task.remote(config, seed, rows) for seed, rows in enumerate(parts)])
time.sleep(2)  # the workers idle, as they are while the driver gathers
found = {"workers": [], "others": 0}
for pid in tree(os.getpid())[1:]:  # a worker running or idle between tasks is a ray:: process
    command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    if command.startswith(("ray::IDLE", "ray::run_seed", "ray::_run_there")):
        found["workers"].append(pss_kib(pid) * 1024)
    else:
        found["others"] += pss_kib(pid) * 1024
print(json.dumps({"driver": pss_kib(os.getpid()) * 1024, **found}))
stop_ray()
"""

ROOT = Path(__file__).resolve().parent.parent


def child(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    """What `code` prints, run in a fresh process with `args` (and `env` besides), the
    harness and the other scripts of bench/ importable."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(map(str, (ROOT, ROOT / "bench"))),
        **(env or {}),
    }
    argv = [sys.executable, "-c", code, *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout


def measure(raws: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Peak bytes above the start and CPU seconds of one seed of each of `raws`, one after the
    other in one fresh process."""
    seeds = []
    for raw in raws:
        run = {"seeds": 1, "sample_interval_s": 0, "duration_s": 1.0, **raw.get("run", {})}
        seeds.append({"workload": {"rate_per_s": 1.0}, **raw, "run": run})
    out = child(SEED, json.dumps(seeds))
    return [json.loads(line) for line in out.splitlines()]


def line(name: str, size: float, cpu_s: float | None = None) -> None:
    cpu = "" if cpu_s is None else f"{cpu_s * 1e6:8.2f} us"
    print(f"{name:52s} {size:10.0f} B {cpu}", flush=True)


def cost(name: str, a: dict[str, float], b: dict[str, float], units: float) -> float:
    """The cost of one unit: scenario `b` less scenario `a`, divided by the units between them
    (no CPU for a unit of memory only); its bytes returned."""
    size = (b["bytes"] - a["bytes"]) / units
    line(name, size, None if units == 1 else (b["cpu"] - a["cpu"]) / units)
    return size


TRACE = """
import sys
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

path, rows = sys.argv[1], int(sys.argv[2])
times = np.sort(np.random.default_rng(0).uniform(0.0, 50.0, rows))
tags = [f"j_{1_446_403 + i // 40}/J24_20_23/ins_{134_260_461 + i}" for i in range(rows)]
columns = {"time_s": times, "vcpu": np.full(rows, 0.5), "lifetime_s": np.full(rows, 1.0)}
pq.write_table(pa.table({**columns, "tag": tags}), path)
"""


def tagged_trace(path: Path, rows: int) -> Path:
    """A trace of `rows` creates over 50 s, each living 1 s and tagged as an import's are,
    written by a child process (so that this one stays small)."""
    child(TRACE, str(path), str(rows))
    return path


def replay(trace: Path | None, rows: int) -> dict[str, Any]:
    """The trace's creates replayed on 100 nodes; or, `trace` None, as many drawn."""
    workload: dict[str, Any] = {"vcpu": 0.5, "lifetime_s": 1.0}
    if trace is None:
        workload |= {"arrival": "poisson", "rate_per_s": rows / 50.0}
    else:
        workload |= {"arrival": "trace", "trace": str(trace)}
    return {
        "run": {"duration_s": 50.0},
        "cluster": {"nodes": 100},
        "placement": {"strategy": "optimistic"},
        "workload": workload,
    }


def seeds(tiny: bool, trace: Path) -> None:
    """Part 1: the units of a seed."""
    x = 0.01 if tiny else 1.0
    """Every count of nodes, rows, reports and clients is scaled by `x`."""

    def n(count: float) -> int:
        return max(1, round(count * x))

    units: list[tuple[str, dict[str, Any], dict[str, Any], float]] = []

    def unit(name: str, base: dict[str, Any], more: dict[str, Any], count: float) -> None:
        """A unit's two scenarios, measured below."""
        units.append((name, base, more, count))

    def churn(rows: float, nodes: int = 100) -> dict[str, Any]:
        """About `rows` request rows over 50 s: creates living 1 s, and their kills."""
        return {
            "run": {"duration_s": 50.0},
            "cluster": {"nodes": nodes},
            "placement": {"strategy": "optimistic"},
            "workload": {"rate_per_s": rows / 100.0, "lifetime_s": 1.0},
        }

    nodes, open_loop = {"cluster": {"nodes": n(2000)}}, {"strategy": "optimistic"}
    held = n(0.9 * FLUSH_ROWS)  # rows a log holds, short of a flush
    unit("node", {}, {"cluster": {"nodes": n(200_000)}}, n(200_000))
    unit(
        "view of an extra replica, per node",
        {"cluster": {"nodes": n(20_000)}},
        {"cluster": {"nodes": n(20_000)}, "placement": {"replicas": 21}},
        20 * n(20_000),
    )
    unit("request row held before a flush", churn(100), churn(held), held)
    unit("request row beyond a flush", churn(n(2e5)), churn(n(2e6)), n(2e6) - n(2e5))
    unit("a long seed beyond its full log (2e6 rows)", {}, churn(n(2e6)), 1)
    unit("a trace replayed, beyond drawing its arrivals", replay(None, n(1e6)), replay(trace, 0), 1)
    short, kept = ({"rate_per_s": n(100_000), "lifetime_s": life} for life in (0.001, 1000.0))
    unit(
        "live sandbox with its pending kill, less a row",
        {"run": {"duration_s": 2.0}, **nodes, "placement": open_loop, "workload": short},
        {"run": {"duration_s": 2.0}, **nodes, "placement": open_loop, "workload": kept},
        n(200_000),
    )
    spread = {"arrival": "constant", "rate_per_s": n(100_000), "lifetime_s": 1000.0}
    burst = {"arrival": "burst", "burst": n(200_000), "lifetime_s": 1000.0}
    unit(
        "create of a burst, in flight at once",
        {"run": {"duration_s": 2.0}, **nodes, "placement": open_loop, "workload": spread},
        {"run": {"duration_s": 2.0}, **nodes, "placement": open_loop, "workload": burst},
        n(200_000),
    )
    samples = max(2, round(0.9 * SAMPLE_ROWS / n(1000)))
    unit(
        "timeline row held before a flush",
        {"cluster": {"nodes": n(1000)}},
        {
            "run": {"duration_s": 10.0, "sample_interval_s": 10.0 / (samples - 1)},
            "cluster": {"nodes": n(1000)},
        },
        n(1000) * samples,
    )
    unit(
        "timeline row beyond a flush",
        {"run": {"duration_s": 10.0, "sample_interval_s": 0.1}, "cluster": {"nodes": n(1000)}},
        {"run": {"duration_s": 10.0, "sample_interval_s": 0.01}, "cluster": {"nodes": n(1000)}},
        n(1000) * 900,
    )
    unit(
        "report delivered",
        {},
        {
            "run": {"duration_s": 2.0},
            "cluster": {"nodes": n(1000)},
            "heartbeat": {"interval_s": 1e-3, "quiet_nodes": "off"},
        },
        n(1000) * 2000,
    )
    beats = {"run": {"duration_s": 10.0}, "cluster": {"nodes": n(100_000)}}
    every = {"interval_s": 1.0, "quiet_nodes": "off"}  # each node reports on every beat
    unit(
        "report in flight",
        {**beats, "heartbeat": every},
        {**beats, "heartbeat": {**every, "delay_ms": 5000.0}},
        n(100_000) * 5,
    )
    unit(
        "closed-loop client, with a create row",
        {"cluster": {"nodes": n(1000)}},
        {
            "cluster": {"nodes": n(1000)},
            "workload": {"arrival": "closed", "clients": n(100_000), "lifetime_s": 100.0},
        },
        n(100_000),
    )
    print(f"{'1. a seed: unit':52s} {'memory':>12s} {'CPU':>11s}")
    if tiny:
        figures = iter(measure([raw for _, a, b, _ in units for raw in (a, b)]))
    per_row = 0.0
    for name, base, more, count in units:
        a, b = (next(figures), next(figures)) if tiny else (measure([base])[0], measure([more])[0])
        if name.startswith("a long seed"):  # what it holds beyond a full log of held rows
            b = {**b, "bytes": b["bytes"] - FLUSH_ROWS * per_row}
        size = cost(name, a, b, count)
        if name == "request row held before a flush":
            per_row = size


def driver(tiny: bool, folder: Path, trace: Path) -> None:
    """Part 2: the harness's process, the gather and the report. Each run is made in a child
    process, stopped as it was to gather its seeds' parts, so that they are kept; `harness run
    --resume` then gathers them (its seeds all done) and prints the run, and `harness report`
    draws it, each in a fresh process (a child's peak counts its parent's size when it was
    forked: the parent stays small)."""
    x = 0.01 if tiny else 1.0
    print(f"\n{'2. the driver':52s} {'memory':>12s} {'CPU':>11s}")
    process = float(child(PROCESS))
    line("the harness's process before a run", process)
    base = {"cluster": {"nodes": 100}, "placement": {"strategy": "optimistic"}}
    runs = {
        "small": {**base, "run": {"duration_s": 10.0, "sample_interval_s": 1.0, "seeds": 1}},
        "requests": {
            **base,
            "run": {"duration_s": 50.0, "sample_interval_s": 0, "seeds": 4},
            "workload": {"rate_per_s": 10_000.0 * x, "lifetime_s": 1.0},
        },
        "timeline": {
            **base,
            "cluster": {"nodes": round(1000 * x) or 1},
            "run": {"duration_s": 10.0, "sample_interval_s": 0.01, "seeds": 2},
        },
        "nodes": {
            **base,
            "cluster": {"nodes": round(100_000 * x) or 1},
            "run": {"duration_s": 2.0, "sample_interval_s": 0, "seeds": 2},
        },
        "tagged": {
            **replay(trace, 0),
            "run": {"duration_s": 50.0, "sample_interval_s": 0, "seeds": 2},
        },
    }
    made = {}
    for name, raw in runs.items():
        made[name] = folder / name
        child(RUN, json.dumps(raw), str(made[name]), env={SIGNAL_AT: "close=INT"})
    gathered = {
        name: usage(["run", "--resume", str(path), "--no-report", "--quiet"])
        for name, path in made.items()
    }
    small = gathered["small"]
    per_row = {}
    for name, table in (("requests", "requests"), ("timeline", "timeline"), ("tagged", "requests")):
        rows = rows_of(made[name], table)
        got = gathered[name]
        per_row[name] = (got["bytes"] - process) / min(rows, ROW_GROUP_ROWS)
        if name == "tagged":
            line("tagged request row of the row group, beyond", per_row[name] - per_row["requests"])
            continue
        line(
            f"{table} row of the row group gathered",
            per_row[name],
            (got["cpu"] - small["cpu"]) / rows,
        )
    report = {name: usage(["report", str(path)]) for name, path in made.items() if name != "tagged"}
    small = report["small"]
    line("the report beyond the process, a small run", small["bytes"] - process, small["cpu"])
    for name, what in (("requests", "request"), ("timeline", "timeline"), ("nodes", "nodes")):
        rows = rows_of(made[name], name)
        got = report[name]
        line(
            f"the report, per {what} row",
            (got["bytes"] - small["bytes"]) / rows,
            (got["cpu"] - small["cpu"]) / rows,
        )


def rows_of(run: Path, table: str) -> int:
    import pyarrow.parquet as pq

    return pq.read_metadata(run / f"{table}.parquet").num_rows


def usage(argv: list[str]) -> dict[str, float]:
    """Peak RSS and CPU of `harness argv` in a child process (from wait4)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "harness", *argv]
    with tempfile.TemporaryFile("w+") as err:  # a file, not a pipe: nothing waits on a reader
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, got = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"harness {' '.join(argv)} failed:\n{err.read()[-3000:]}")
    return {"bytes": got.ru_maxrss * 1024, "cpu": got.ru_utime + got.ru_stime}


def ray() -> None:
    """Part 3: Ray's own processes and its workers."""
    config = str(ROOT / "configs" / "seed-herd.toml")
    found = json.loads(child(RAY, config))
    print(f"\n{'3. Ray, after two seeds as tasks':52s} {'PSS':>12s}")
    line("the driver", found["driver"])
    for pss in found["workers"]:
        line("a worker that ran a seed", pss)
    line("Ray's own processes", found["others"])


PARTS = ("seeds", "driver", "ray")


def main() -> None:
    parser = bench_parser(__doc__, "the smallest run of every part")
    parser.add_argument(
        "--part", action="append", choices=PARTS, help="a part to run (repeat it for more)"
    )
    args = parser.parse_args()
    tiny, parts = args.tiny, set(args.part or PARTS)
    with tempfile.TemporaryDirectory() as folder:
        if parts & {"seeds", "driver"}:
            trace = tagged_trace(Path(folder) / "tagged.parquet", 10_000 if tiny else 1_000_000)
        if "seeds" in parts:
            seeds(tiny, trace)
        if "driver" in parts:
            driver(tiny, Path(folder), trace)
    if "ray" in parts:
        ray()


if __name__ == "__main__":
    main()
