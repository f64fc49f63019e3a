"""Measures the per-unit costs `harness/running/cost_check.py` estimates with: memory and CPU time
per node, per extra replica's view, per request row, per live sandbox, per timeline row, per report
(delivered, and in flight) and per closed-loop client.

    PYTHONPATH=. python bench/budget.py [--tiny]

Each scenario runs one seed of `harness.running.runner.run` (engine, checks, Parquet files) in a
fresh process, which reports its peak RSS above its size before the run, and the CPU time of the
run; a unit's cost is the difference between two scenarios that differ in that unit only, divided by
the units. Takes some minutes and ~1.5 GB. `--tiny` runs every scenario at a hundredth of its
size, all in one process."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from bench_args import bench_parser

CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
import pyarrow.parquet  # loaded by every run: not part of the difference
from harness.config import from_dict
from harness.running.runner import run

for raw in json.loads(sys.argv[1]):
    config = from_dict(raw)
    base = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
    cpu = time.process_time()
    with tempfile.TemporaryDirectory() as folder:
        run(config, [config.placement.strategy], Path(folder) / "run")
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"bytes": peak - base, "cpu": cpu}))
"""


def measure(raws: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Peak bytes above the start and CPU seconds of one seed of each of `raws`, one after the
    other in one fresh process."""
    runs = []
    for raw in raws:
        run = {"seeds": 1, "sample_interval_s": 0, "duration_s": 1.0, **raw.get("run", {})}
        runs.append({"workload": {"rate_per_s": 1.0}, **raw, "run": run})
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(runs)], capture_output=True, text=True, check=True
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


def cost(name: str, a: dict[str, float], b: dict[str, float], units: float) -> None:
    """The cost of one unit: scenario `b` less scenario `a`, divided by the units between them."""
    size = (b["bytes"] - a["bytes"]) / units
    cpu = (b["cpu"] - a["cpu"]) / units * 1e6
    print(f"{name:44s} {size:8.0f} B {cpu:8.2f} us", flush=True)


def main() -> None:
    parser = bench_parser(__doc__, "the smallest run of every part")
    tiny = parser.parse_args().tiny
    x = 0.01 if tiny else 1.0
    """Every count of nodes, rows, reports and clients is scaled by `x`."""

    def n(count: float) -> int:
        return max(1, round(count * x))

    units: list[tuple[str, dict[str, Any], dict[str, Any], float]] = []

    def unit(name: str, base: dict[str, Any], more: dict[str, Any], count: float) -> None:
        """A unit's two scenarios, measured below."""
        units.append((name, base, more, count))

    nodes, open_loop = {"cluster": {"nodes": n(2000)}}, {"strategy": "optimistic"}
    unit("node", {}, {"cluster": {"nodes": n(200_000)}}, n(200_000))
    unit(
        "view of an extra replica, per node",
        {"cluster": {"nodes": n(20_000)}},
        {"cluster": {"nodes": n(20_000)}, "placement": {"replicas": 21}},
        20 * n(20_000),
    )
    unit(
        "request row (2e5 creates and kills)",
        {},
        {
            "run": {"duration_s": 50.0},
            "cluster": {"nodes": 100},
            "placement": open_loop,
            "workload": {"rate_per_s": 2000.0 * x, "lifetime_s": 1.0},
        },
        n(200_000),
    )
    short, kept = ({"rate_per_s": n(100_000), "lifetime_s": life} for life in (0.001, 1000.0))
    unit(
        "live sandbox with its pending kill, less a row",
        {"run": {"duration_s": 2.0}, **nodes, "placement": open_loop, "workload": short},
        {"run": {"duration_s": 2.0}, **nodes, "placement": open_loop, "workload": kept},
        n(200_000),
    )
    unit(
        "timeline row",
        {},
        {"run": {"duration_s": 10.0, "sample_interval_s": 0.01}, "cluster": {"nodes": n(1000)}},
        n(1000) * 1001,
    )
    unit(
        "report delivered",
        {},
        {
            "run": {"duration_s": 2.0},
            "cluster": {"nodes": n(1000)},
            "heartbeat": {"interval_s": 1e-3},
        },
        n(1000) * 2000,
    )
    beats = {"run": {"duration_s": 10.0}, "cluster": {"nodes": n(100_000)}}
    unit(
        "report in flight",
        {**beats, "heartbeat": {"interval_s": 1.0}},
        {**beats, "heartbeat": {"interval_s": 1.0, "delay_ms": 5000.0}},
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
    print(f"{'unit':44s} {'memory':>10s} {'CPU':>11s}")
    if tiny:
        figures = iter(measure([raw for _, a, b, _ in units for raw in (a, b)]))
    for name, base, more, count in units:
        a, b = (next(figures), next(figures)) if tiny else (measure([base])[0], measure([more])[0])
        cost(name, a, b, count)


if __name__ == "__main__":
    main()
