"""Throughput, heartbeat lateness and memory of the Ray engine on this machine.

    PYTHONPATH=. python bench/ray_throughput.py [--duration 20] [--part throughput|lateness]

1. 2,000 closed-loop clients over 1,000 nodes, each creating a sandbox, holding it 1 ms and
   killing it, back to back: sustained create+kill pairs per second (completed kills in the
   steady window) and the scheduler latency clients see, p50/p99.
2. 10,000 nodes reporting every 5 s with staggered phases under a light open-loop load:
   heartbeat lateness (actual minus planned report time) p50/p99.
Peak memory is the largest total RSS of this process and every process under it (Ray's GCS,
raylet and actor workers), sampled every 0.2 s. Time scale 1: model time is wall time.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
import ray

from harness.config import Config, from_dict
from harness.engine.ray import RaySeedRun, connect


class PeakMemory:
    """Largest summed RSS of this process tree seen while running."""

    def __init__(self, every_s: float = 0.2) -> None:
        self.peak = 0
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        import psutil  # shipped inside Ray: importable only once ray is imported

        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.NoSuchProcess:
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(self.every_s)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def throughput_config(duration: float) -> Config:
    return from_dict(
        {
            "run": {"duration_s": duration, "sample_interval_s": 0.0},
            "cluster": {"nodes": 1000, "cpu_count": 192, "initial_cpu_allocated": [0, 4]},
            "heartbeat": {"interval_s": 20.0, "phase": "staggered"},
            "placement": {"strategy": "optimistic"},
            "workload": {"arrival": "closed", "clients": 2000, "ramp_s": 1.0, "lifetime_s": 0.001},
        }
    )


def lateness_config(duration: float) -> Config:
    return from_dict(
        {
            "run": {"duration_s": duration, "sample_interval_s": 0.0},
            "cluster": {"nodes": 10_000, "cpu_count": 192},
            "heartbeat": {"interval_s": 5.0, "phase": "staggered"},
            "placement": {"strategy": "optimistic"},
            "workload": {"arrival": "poisson", "rate_per_s": 500.0, "lifetime_s": 2.0},
        }
    )


def throughput(duration: float) -> None:
    config = throughput_config(duration)
    start = time.perf_counter()
    result = RaySeedRun(config, seed=0).run()
    wall = time.perf_counter() - start
    rows = result.requests.to_pandas()
    lo, hi = 2.0, duration - 1.0  # steady window: after the ramp, before the end
    kills = rows[(rows["kind"] == "kill") & rows["done_at"].between(lo, hi)]
    creates = rows[(rows["kind"] == "create") & rows["done_at"].between(lo, hi)]
    c50, c99 = np.percentile(creates["latency_ms"], [50, 99])
    k50, k99 = np.percentile(kills["latency_ms"], [50, 99])
    s = result.summary
    print(f"throughput: 2,000 closed-loop clients, 1,000 nodes, {duration:g} s ({wall:.1f} s wall)")
    print(f"  create+kill pairs/s  {len(kills) / (hi - lo):10.0f}   (window {lo:g}-{hi:g} s)")
    print(f"  create latency ms    p50 {c50:8.1f}   p99 {c99:8.1f}   (client-seen, from intent)")
    print(f"  kill latency ms      p50 {k50:8.1f}   p99 {k99:8.1f}")
    print(
        f"  create RPC ms        p50 {s['create_rpc_p50_ms']:8.1f}   "
        f"p99 {s['create_rpc_p99_ms']:8.1f}   (configured 1 ms)"
    )
    print(f"  failed creates       {s['failed']}")


def lateness(duration: float) -> None:
    config = lateness_config(duration)
    result = RaySeedRun(config, seed=0).run()
    s = result.summary
    print(f"lateness: 10,000 nodes, staggered 5 s reports, 500 creates/s, {duration:g} s")
    print(
        f"  heartbeat lateness ms  p50 {s['heartbeat_late_p50_ms']:6.2f}   "
        f"p99 {s['heartbeat_late_p99_ms']:6.2f}"
    )
    print(f"  create latency ms      p50 {s['p50_place_ms']:6.1f}   p99 {s['p99_place_ms']:6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0, help="model seconds per part")
    parser.add_argument("--part", choices=("throughput", "lateness"), help="run only this part")
    args = parser.parse_args()
    connect()
    print(f"Ray {ray.__version__}, {int(ray.cluster_resources()['CPU'])} CPUs")
    with PeakMemory() as memory:
        if args.part in (None, "throughput"):
            throughput(args.duration)
        if args.part in (None, "lateness"):
            lateness(args.duration)
    print(f"peak memory (all processes) {memory.peak / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
