"""Virtual engine speed: simulated creates per wall-clock second at 10,000 nodes, and how much
faster than real time the reference benchmark (seed-herd, one seed) runs.

    python bench/virtual_engine.py [--requests 200000] [--nodes 10000] [--repeat 3]

Goals (issue 2): >= 200,000 simulated requests/s on one core; seed-herd >= 500x real time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import harness
from harness.config import from_dict, load
from harness.engine.virtual import VirtualEngine

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def large(nodes: int, requests: int, strategy: str):
    """Open-loop creates at 2,000/s with 30 s exponential lifetimes (so kills run too),
    staggered reports every 20 s, no timeline: the engine's own cost."""
    rate = 2000.0
    return from_dict(
        {
            "run": {"name": "bench", "duration_s": requests / rate, "sample_interval_s": 0},
            "cluster": {"nodes": nodes, "cpu_count": 192, "initial_cpu_allocated": [0, 4]},
            "heartbeat": {"interval_s": 20.0, "phase": "staggered"},
            "placement": {"strategy": strategy},
            "workload": {"rate_per_s": rate, "lifetime_s": 30.0, "lifetime_dist": "exponential"},
        }
    )


def best_of(repeat: int, fn):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    engine = VirtualEngine()

    print(
        f"{args.nodes} nodes, {args.requests} creates (+ kills), best of {args.repeat}, "
        f"{harness.PATH}"
    )
    for strategy in ("stale", "optimistic"):
        config = large(args.nodes, args.requests, strategy)
        wall, result = best_of(args.repeat, lambda c=config: engine.run_seed(c, seed=0))
        s = result.summary
        calls = s["requests"] + s["kills"]
        print(
            f"  {strategy:<11} {s['requests'] / wall:>10,.0f} creates/s  "
            f"{calls / wall:>10,.0f} calls/s (creates+kills)  wall {wall:.2f} s  "
            f"CV {s['cv']:.3f}"
        )

    herd = load(CONFIGS / "seed-herd.toml", ["run.seeds=1"])
    for strategy in ("stale", "optimistic"):
        config = herd.with_value("placement.strategy", strategy)
        wall, result = best_of(max(args.repeat, 5), lambda c=config: engine.run_seed(c, seed=0))
        speedup = result.summary["sim_duration_s"] / wall
        print(
            f"seed-herd {strategy:<11} one seed: {wall * 1000:.1f} ms wall for "
            f"{result.summary['sim_duration_s']:.0f} s simulated = {speedup:,.0f}x real time "
            f"(timeline on)"
        )


if __name__ == "__main__":
    main()
