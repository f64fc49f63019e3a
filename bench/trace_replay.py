"""Trace replay: rows per second and peak memory reading a generated trace of a million rows
the way a client host replays it, and what replay costs the virtual engine.

    python bench/trace_replay.py [--rows 1000000] [--engine-rows 100000] [--repeat 3] [--tiny]

1. The trace (bench/make_trace.py) as CSV and as Parquet. Each is read in a fresh process, as
   a client host does (`harness.config.trace_file.rows`, every row checked, then
   `Templates.replay`: the
   shape and lifetime of each create), and, for scale, loaded whole by pyarrow and turned into
   the same rows. Peak RSS is the process's high-water mark less its size before reading.
2. The virtual engine on `--engine-rows` creates of configs/trace-replay.toml's templates on
   200 nodes of 192 vCPU (nothing fails): replayed from the trace against drawn by poisson
   arrivals at the same rate, best of `--repeat`.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_args import bench_parser

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.make_trace import write  # noqa: E402
from harness.config import load  # noqa: E402
from harness.config import trace_file as trace  # noqa: E402
from harness.engines.virtual import VirtualEngine  # noqa: E402
from harness.model.random_streams import Streams  # noqa: E402
from harness.model.workload.templates import Templates  # noqa: E402

REPLAY = ROOT / "configs" / "trace-replay.toml"
RATE = 50.0
"""Creates per second of the generated traces (bench/make_trace.py's default)."""


def _kib(field: str) -> int:
    """A field of /proc/self/status, in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def child(path: str, whole: bool) -> None:
    """Reads the trace at `path` once, prints `rows seconds peak_kib`."""
    config = load(REPLAY)
    templates, ids = Templates(config.workload), config.workload.template_ids()
    before = _kib("VmRSS")
    start = time.perf_counter()
    if whole:
        import pyarrow.csv as pcsv
        import pyarrow.parquet as pq

        table = pcsv.read_csv(path) if path.endswith(".csv") else pq.read_table(path)
        rows = list(zip(*(table[c].to_pylist() for c in table.column_names), strict=True))
        rows = [(*row, *[None] * (len(trace.ROW) - len(row))) for row in rows]
    else:
        rows = trace.rows(path, ids)
    sizes = Streams(0).sizes()
    n = sum(1 for _ in templates.replay(rows, math.inf, Streams(0).lifetimes(), sizes))
    seconds = time.perf_counter() - start
    print(n, seconds, _kib("VmHWM") - before)


def read(path: Path, whole: bool) -> tuple[int, float, float]:
    """(rows, rows per second, peak MB) of reading `path` in a fresh process."""
    argv = [sys.executable, __file__, "--child", str(path)] + (["--whole"] if whole else [])
    n, seconds, peak = subprocess.run(
        argv, capture_output=True, text=True, check=True
    ).stdout.split()
    return int(n), int(n) / float(seconds), int(peak) / 1024


def engine(rows: int, folder: Path, repeat: int) -> None:
    path = folder / f"engine-{rows}.parquet"
    write(path, rows, RATE, seed=1)
    duration = math.ceil(rows / RATE) + 10.0
    base = load(REPLAY).with_values(
        {
            "run.duration_s": duration,
            "run.sample_interval_s": 0,
            "workload.trace": str(path),
            "cluster.nodes": 200,  # room for every create: a full cluster retries, and that
            "cluster.cpu_count": 192,  # would be what is measured
        }
    )
    drawn = base.with_values({"workload.arrival": "poisson", "workload.rate_per_s": RATE})
    for name, config in (("replayed", base), ("poisson", drawn)):
        best = math.inf
        for _ in range(repeat):
            start = time.perf_counter()
            result = VirtualEngine().run_seed(config, seed=0)
            best = min(best, time.perf_counter() - start)
        creates, kills = result.summary["requests"], result.summary["kills"]
        print(
            f"  {name:<9} {creates:>8,} creates {kills:>8,} kills  "
            f"{(creates + kills) / best:>9,.0f} calls/s (creates+kills)  {best:.2f} s"
        )


def main() -> None:
    parser = bench_parser(__doc__, "the smallest run of every part")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--engine-rows", type=int, default=100_000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--whole", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=3, help="engine runs, the best taken")
    args = parser.parse_args()
    if args.tiny:
        vars(args).update(rows=1000, engine_rows=200, repeat=1)
    if args.child:
        child(args.child, args.whole)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(f"reading a trace of {args.rows:,} rows (fresh process each)")
        for suffix in (".csv", ".parquet"):
            path = folder / f"trace{suffix}"
            write(path, args.rows, RATE, seed=0)
            size = path.stat().st_size / 1e6
            for whole in (False, True):
                n, per_s, peak = read(path, whole)
                how = "loaded whole" if whole else "streamed"
                print(
                    f"  {suffix[1:]:<8} {size:6.1f} MB  {how:<13} {n:>9,} rows  "
                    f"{per_s:>10,.0f} rows/s  peak RSS +{peak:,.0f} MB"
                )
        print(f"virtual engine, {args.engine_rows:,} creates at {RATE:g}/s, best of {args.repeat}")
        engine(args.engine_rows, folder, args.repeat)


if __name__ == "__main__":
    main()
