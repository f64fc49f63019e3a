"""Throughput, heartbeat lateness and memory of the Ray engine on this machine.

    PYTHONPATH=. python bench/ray_throughput.py [--duration 20] [--part throughput|lateness]

1. 2,000 closed-loop clients over 1,000 nodes, each creating a sandbox, holding it 1 ms and
   killing it, back to back: sustained create+kill pairs per second (completed kills in the
   steady window) and the scheduler latency clients see, p50/p99.
2. 10,000 nodes reporting every 5 s with staggered phases (2,000 reports/s) while 500
   closed-loop clients hold sandboxes 1 s: heartbeat lateness (actual minus planned report
   time) p50/p99.
Peak memory is the largest total RSS of this process and every process under it (Ray's GCS,
raylet and actor workers), sampled every 0.2 s. Time scale 1: model time is wall time.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
import ray

from actors.engine import RaySeedRun
from harness.config import Config, from_dict
from harness.ray_setup import connect
from harness.seed_result import SeedResult


class ProcessWatch:
    """Samples this process tree: the largest summed RSS, and each process's CPU seconds (the
    last seen, since actors exit at the end of a run) to show where the time goes."""

    def __init__(self, every_s: float = 0.2) -> None:
        self.peak = 0
        self.cpu: dict[int, tuple[str, float]] = {}
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
                    with p.oneshot():
                        total += p.memory_info().rss
                        times = p.cpu_times()
                        self.cpu[p.pid] = (p.name(), times.user + times.system)
                except psutil.NoSuchProcess:
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(self.every_s)

    def cpu_by_name(self) -> dict[str, float]:
        """CPU seconds so far, summed by process name (Ray names actor workers ray::Class)."""
        by_name: dict[str, float] = {}
        for name, seconds in self.cpu.values():
            by_name[name] = by_name.get(name, 0.0) + seconds
        return by_name

    def __enter__(self) -> ProcessWatch:
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
            "workload": {"arrival": "closed", "clients": 500, "ramp_s": 1.0, "lifetime_s": 1.0},
        }
    )


def run_watched(config: Config, watch: ProcessWatch) -> tuple[SeedResult, float, str]:
    """One seed; its wall time and the CPU seconds each kind of process spent on it."""
    before = watch.cpu_by_name()
    start = time.perf_counter()
    result = RaySeedRun(config, seed=0).run()
    wall = time.perf_counter() - start
    time.sleep(2 * watch.every_s)
    spent = {name: t - before.get(name, 0.0) for name, t in watch.cpu_by_name().items()}
    lines = [f"  CPU seconds by process over the {wall:.1f} s (set-up included):"]
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:6]:
        lines.append(f"    {name:<24} {seconds:6.1f}")
    return result, wall, "\n".join(lines)


def throughput(duration: float, watch: ProcessWatch) -> None:
    result, wall, cpu = run_watched(throughput_config(duration), watch)
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
    print(cpu)


def lateness(duration: float, watch: ProcessWatch) -> None:
    result, _, cpu = run_watched(lateness_config(duration), watch)
    s = result.summary
    print(f"lateness: 10,000 nodes, staggered 5 s reports, 500 clients, {duration:g} s")
    print(
        f"  heartbeat lateness ms  p50 {s['heartbeat_late_p50_ms']:6.2f}   "
        f"p99 {s['heartbeat_late_p99_ms']:6.2f}"
    )
    print(f"  create latency ms      p50 {s['p50_place_ms']:6.1f}   p99 {s['p99_place_ms']:6.1f}")
    print(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0, help="model seconds per part")
    parser.add_argument("--part", choices=("throughput", "lateness"), help="run only this part")
    args = parser.parse_args()
    connect()
    print(f"Ray {ray.__version__}, {int(ray.cluster_resources()['CPU'])} CPUs")
    with ProcessWatch() as watch:
        if args.part in (None, "throughput"):
            throughput(args.duration, watch)
        if args.part in (None, "lateness"):
            lateness(args.duration, watch)
    print(f"peak memory (all processes) {watch.peak / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
