"""Measures the per-unit costs `harness/running/cost_check.py` estimates with: memory and CPU time
per node, per extra replica's view, per request row, per live sandbox, per timeline row, per report
(delivered, and in flight) and per closed-loop client.

    PYTHONPATH=. python bench/budget.py

Each scenario runs one seed of `harness.running.runner.run` (engine, checks, Parquet files) in a
fresh process, which reports its peak RSS above its size before the run, and the CPU time of the
run; a unit's cost is the difference between two scenarios that differ in that unit only, divided by
the units. Takes some minutes and ~1.5 GB."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
import pyarrow.parquet  # loaded by every run: not part of the difference
from harness.config import from_dict
from harness.running.runner import run

config = from_dict(json.loads(sys.argv[1]))
base = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
cpu = time.process_time()
with tempfile.TemporaryDirectory() as folder:
    run(config, [config.placement.strategy], Path(folder) / "run")
cpu = time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"bytes": peak - base, "cpu": cpu}))
"""


def measure(raw: dict[str, Any]) -> dict[str, float]:
    """Peak bytes above the start and CPU seconds of one seed of `raw`, in a fresh process."""
    run = {"seeds": 1, "sample_interval_s": 0, "duration_s": 1.0, **raw.get("run", {})}
    raw = {"workload": {"rate_per_s": 1.0}, **raw, "run": run}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(raw)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def per_unit(name: str, base: dict[str, Any], more: dict[str, Any], units: float) -> None:
    a, b = measure(base), measure(more)
    size = (b["bytes"] - a["bytes"]) / units
    cpu = (b["cpu"] - a["cpu"]) / units * 1e6
    print(f"{name:44s} {size:8.0f} B {cpu:8.2f} us", flush=True)


def main() -> None:
    print(f"{'unit':44s} {'memory':>10s} {'CPU':>11s}")
    nodes, open_loop = {"cluster": {"nodes": 2000}}, {"strategy": "optimistic"}
    per_unit("node", {}, {"cluster": {"nodes": 200_000}}, 200_000)
    per_unit(
        "view of an extra replica, per node",
        {"cluster": {"nodes": 20_000}},
        {"cluster": {"nodes": 20_000}, "placement": {"replicas": 21}},
        20 * 20_000,
    )
    per_unit(
        "request row (2e5 creates and kills)",
        {},
        {
            "run": {"duration_s": 50.0},
            "cluster": {"nodes": 100},
            "placement": open_loop,
            "workload": {"rate_per_s": 2000.0, "lifetime_s": 1.0},
        },
        200_000,
    )
    short, kept = ({"rate_per_s": 100_000.0, "lifetime_s": life} for life in (0.001, 1000.0))
    per_unit(
        "live sandbox with its pending kill, less a row",
        {"run": {"duration_s": 2.0}, **nodes, "placement": open_loop, "workload": short},
        {"run": {"duration_s": 2.0}, **nodes, "placement": open_loop, "workload": kept},
        200_000,
    )
    per_unit(
        "timeline row",
        {},
        {"run": {"duration_s": 10.0, "sample_interval_s": 0.01}, "cluster": {"nodes": 1000}},
        1000 * 1001,
    )
    per_unit(
        "report delivered",
        {},
        {"run": {"duration_s": 2.0}, "cluster": {"nodes": 1000}, "heartbeat": {"interval_s": 1e-3}},
        1000 * 2000,
    )
    beats = {"run": {"duration_s": 10.0}, "cluster": {"nodes": 100_000}}
    per_unit(
        "report in flight",
        {**beats, "heartbeat": {"interval_s": 1.0}},
        {**beats, "heartbeat": {"interval_s": 1.0, "delay_ms": 5000.0}},
        100_000 * 5,
    )
    per_unit(
        "closed-loop client, with a create row",
        {"cluster": {"nodes": 1000}},
        {
            "cluster": {"nodes": 1000},
            "workload": {"arrival": "closed", "clients": 100_000, "lifetime_s": 100.0},
        },
        100_000,
    )


if __name__ == "__main__":
    main()
