"""How the Ray engine's throughput and heartbeat lateness grow with node groups, client pools
and nodes on this machine, against its goals.

    PYTHONPATH=. python bench/ray_throughput.py [--duration 10] [--part scaling|lateness|best]
                                                [--repeat 12] [--tiny]

1. scaling: 2,000 closed-loop clients, each creating a sandbox, holding it 1 ms and killing it,
   back to back, over nodes reporting every 20 s with staggered phases. One row per layout:
   client pools 1/2/4 (one node group, 1,000 nodes), node groups 1/2/4 (two pools), nodes
   1,000/10,000/100,000 (two groups, two pools: what Ray picks on 2 CPUs from 5,001 nodes on).
   Per row: sustained create+kill pairs/s (completed kills in the steady window), the
   client-seen create latency, heartbeat lateness (actual minus planned report time), the CPU
   all processes spent per pair and how many of the machine's cores they got in the window
   (other jobs take the rest), and the peak memory. The knee of each axis is the last step
   that still raised pairs/s by 10% or more. The goal's verdict takes the best row.
2. lateness: 500 closed-loop clients holding sandboxes 1 s over 10,000 nodes reporting every
   5 s (2,000 reports/s) and 100,000 nodes reporting every 20 s (5,000 reports/s).
3. best (only when asked for): the scaling part's best layout (1,000 nodes, one node group, two
   client pools) `--repeat` times, and the goal judged on the median. On a shared machine one
   row can run at half or twice another's pace minutes apart; the median of many, interleaved
   with another build's (`PYTHONPATH=<tree>`, run from that tree), is what compares.

Memory is the largest total RSS of this process and every process under it (Ray's GCS, raylet
and actor workers), sampled every 0.2 s; CPU the same processes' user + system time. Time
scale 1: model time is wall time. A goal not reached is printed as such, with the figures.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import ray
from bench_args import bench_parser

from actors.engine import RaySeedRun, layout
from harness.config import Config, from_dict
from harness.engines.ray_setup import connect

PAIRS_GOAL = 40_000
"""Create+kill pairs/s on 2 cores."""
LATE_GOAL_MS = 50.0
"""Heartbeat lateness p99 at 100,000 nodes."""
KNEE_GAIN = 1.10
"""A step along an axis is worth it while it raises pairs/s by this factor."""
SCALING = {
    "client pools": [(1000, 1, pools) for pools in (1, 2, 4)],
    "node groups": [(1000, groups, 2) for groups in (1, 2, 4)],
    "nodes": [(nodes, 2, 2) for nodes in (1000, 10_000, 100_000)],
}
"""The scaling part's axes, each a list of rows: (nodes, node groups, client pools)."""
LATENESS = [(10_000, 5.0), (100_000, 20.0)]
"""The lateness part's rows: (nodes, seconds between a node's reports)."""
TINY = {
    "scaling": {axis: [(1000, 1, 1)] for axis in SCALING},
    "lateness": [(1000, 5.0)],
    "duration": 3.5,
    "repeat": 1,
}
"""--tiny: one row per part, just long enough for a steady window (`measure`)."""


ROLES = (
    ("ray::Replica", "replica"),
    ("ray::ClientPool", "client pools"),
    ("ray::NodeGroup", "node groups"),
)
"""Ray names an actor's process after its class: (title prefix, role in the breakdown)."""
OWN = "Ray's own"
"""The role of every other process under this one (GCS, raylet, agents, idle workers)."""


def role(cmdline: list[str], driver: bool) -> str:
    """Which part of the run a process is: an actor's kind, the driver, or Ray's own."""
    if driver:
        return "driver"
    title = " ".join(cmdline)
    return next((name for prefix, name in ROLES if title.startswith(prefix)), OWN)


class ProcessWatch:
    """Samples this process tree every `every_s`: the largest summed RSS since `reset`, and
    the CPU seconds of every process seen (the last value of each, since actors exit), with
    its role (`role`)."""

    def __init__(self, every_s: float = 0.2) -> None:
        self.peak = 0
        self.cpu: dict[int, float] = {}
        self.roles: dict[int, str] = {}
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every_s)

    def sample(self) -> float:
        """Samples now; returns the CPU seconds of every process seen so far."""
        import psutil  # shipped inside Ray: importable only once ray is imported

        me = psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                with p.oneshot():
                    total += p.memory_info().rss
                    times = p.cpu_times()
                    self.cpu[p.pid] = times.user + times.system
                    if self.roles.get(p.pid, OWN) == OWN:  # a worker becomes an actor later
                        self.roles[p.pid] = role(p.cmdline(), p is me)
            except psutil.NoSuchProcess:
                continue
        self.peak = max(self.peak, total)
        return sum(self.cpu.values())

    def reset(self) -> None:
        self.peak = 0

    def __enter__(self) -> ProcessWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Point:
    """One layout's figures."""

    nodes: int
    groups: int
    pools: int
    pairs_s: float
    create_ms: tuple[float, float]
    late_ms: tuple[float, float]
    cpu_us_per_pair: float
    cores: float
    peak_gib: float
    by_role: dict[str, float]
    """CPU microseconds per pair by role (`role`)."""

    def row(self) -> str:
        return (
            f"{self.nodes:>8,} {self.groups:>6} {self.pools:>5} | {self.pairs_s:>8,.0f} "
            f"{self.create_ms[0]:>7.1f} {self.create_ms[1]:>7.1f} | {self.late_ms[0]:>6.1f} "
            f"{self.late_ms[1]:>7.1f} | {self.cpu_us_per_pair:>6.0f} {self.cores:>5.2f} | "
            f"{self.peak_gib:>5.2f}"
        )


HEADER = (
    "   nodes groups pools |  pairs/s  create ms p50/p99 | late ms p50/p99 | "
    "CPU us/pair cores | peak GiB"
)


def closed_loop(nodes: int, clients: int, hold_s: float, report_s: float, duration: float):
    return {
        "run": {"duration_s": duration, "sample_interval_s": 0.0},
        "cluster": {"nodes": nodes, "cpu_count": 192, "initial_cpu_allocated": [0, 4]},
        "heartbeat": {"interval_s": report_s, "phase": "staggered"},
        "placement": {"strategy": "optimistic"},
        "workload": {"arrival": "closed", "clients": clients, "ramp_s": 1.0, "lifetime_s": hold_s},
    }


def sized(raw: dict, groups: int = 0, pools: int = 0) -> Config:
    """`raw` with the actors' numbers set (0: as `RayConfig.sizes` sizes them)."""
    return from_dict({**raw, "ray": {"node_groups": groups, "client_pools": pools}})


def scaling_row(nodes: int, groups: int, pools: int, duration: float) -> Config:
    """A row of the scaling part: 2,000 closed-loop clients holding a sandbox 1 ms, reports every
    20 s."""
    return sized(closed_loop(nodes, 2000, 0.001, 20.0, duration), groups, pools)


def measure(config: Config, watch: ProcessWatch) -> Point:
    """One seed, its steady window (after the ramp, before the end) and the CPU spent in it."""
    duration = config.run.duration_s
    lo, hi = 2.0, duration - 1.0
    run = RaySeedRun(config, seed=0)
    cpu: list[tuple[float, float, dict[int, float]]] = []

    def window() -> None:
        while run.epoch is None:
            time.sleep(0.01)
        for t in (lo, hi):
            time.sleep(max(0.0, run.epoch + t - time.time()))
            total = watch.sample()
            cpu.append((time.time(), total, dict(watch.cpu)))

    watch.reset()
    timer = threading.Thread(target=window, daemon=True)
    timer.start()
    result = run.run()
    timer.join()
    rows = result.requests.to_pandas()
    steady = rows[rows["done_at"].between(lo, hi)]
    pairs_s = float((steady["kind"] == "kill").sum()) / (hi - lo)
    creates = steady.loc[steady["kind"] == "create", "latency_ms"]
    (t0, c0, pids0), (t1, c1, pids1) = cpu
    cores = (c1 - c0) / (t1 - t0)
    by_role: dict[str, float] = {}
    for pid, seconds in pids1.items():
        name = watch.roles.get(pid, OWN)
        by_role[name] = by_role.get(name, 0.0) + seconds - pids0.get(pid, 0.0)
    s = result.summary
    shape = layout(config)
    return Point(
        config.cluster.nodes,
        len(shape.bounds) - 1,
        shape.pools,
        pairs_s,
        tuple(np.percentile(creates, [50, 99])) if len(creates) else (np.nan, np.nan),
        (s["heartbeat_late_p50_ms"], s["heartbeat_late_p99_ms"]),
        1e6 * cores / pairs_s if pairs_s else np.nan,
        cores,
        watch.peak / 2**30,
        {name: 1e6 * s / pairs_s / (hi - lo) for name, s in by_role.items()} if pairs_s else {},
    )


def knee(points: list[Point], axis: Callable[[Point], int], name: str) -> str:
    """The last step along `axis` that still raised pairs/s by KNEE_GAIN or more."""
    at = 0
    while at + 1 < len(points) and points[at + 1].pairs_s >= KNEE_GAIN * points[at].pairs_s:
        at += 1
    here = points[at]
    if at + 1 == len(points):
        return f"{name}: no knee up to {axis(here):,} (pairs/s still rising)"
    nxt = points[at + 1]
    change = nxt.pairs_s / here.pairs_s - 1
    return (
        f"{name}: knee at {axis(here):,} ({here.pairs_s:,.0f} pairs/s; {axis(nxt):,} gives "
        f"{change:+.0%}, lateness p99 {here.late_ms[1]:.1f} -> {nxt.late_ms[1]:.1f} ms)"
    )


def scaling(
    duration: float, watch: ProcessWatch, layouts: dict[str, list[tuple[int, int, int]]]
) -> list[Point]:
    print(
        "\nscaling: 2,000 closed-loop clients holding a sandbox 1 ms, reports every 20 s "
        f"(staggered), {duration:g} s per row"
    )
    print(HEADER)
    done: dict[tuple[int, int, int], Point] = {}

    def point(nodes: int, groups: int, pools: int) -> Point:
        config = scaling_row(nodes, groups, pools, duration)
        shape = layout(config)
        key = (nodes, len(shape.bounds) - 1, shape.pools)
        if key not in done:
            done[key] = measure(config, watch)
            print(done[key].row(), flush=True)
        return done[key]

    by_axis = {axis: [point(*row) for row in rows] for axis, rows in layouts.items()}
    print(knee(by_axis["client pools"], lambda p: p.pools, "client pools"))
    print(knee(by_axis["node groups"], lambda p: p.groups, "node groups"))
    print(knee(by_axis["nodes"], lambda p: p.nodes, "nodes"))
    best = max(done.values(), key=lambda p: p.pairs_s)
    verdict = "reached" if best.pairs_s >= PAIRS_GOAL else "NOT reached"
    print(
        f"goal >= {PAIRS_GOAL:,} create+kill pairs/s on 2 cores: {verdict}: best "
        f"{best.pairs_s:,.0f} ({best.nodes:,} nodes, {best.groups} groups, {best.pools} pools, "
        f"{best.cpu_us_per_pair:.0f} us of CPU per pair over all processes)"
    )
    parts = sorted(best.by_role.items(), key=lambda item: -item[1])
    print("  its CPU us/pair by process: " + ", ".join(f"{n} {us:.1f}" for n, us in parts))
    return list(done.values())


def best_row(duration: float, repeat: int, watch: ProcessWatch) -> None:
    print(
        f"\nbest row: 1,000 nodes, 1 node group, 2 client pools, 2,000 closed-loop clients, "
        f"{repeat} runs of {duration:g} s"
    )
    print(HEADER)
    points = []
    for _ in range(repeat):
        points.append(measure(scaling_row(1000, 1, 2, duration), watch))
        print(points[-1].row(), flush=True)
    pairs = [p.pairs_s for p in points]
    median = float(np.median(pairs))
    verdict = "reached" if median >= PAIRS_GOAL else "NOT reached"
    print(
        f"goal >= {PAIRS_GOAL:,} create+kill pairs/s on 2 cores, by the median: {verdict}: "
        f"{median:,.0f} ({min(pairs):,.0f}-{max(pairs):,.0f}; "
        f"{sum(x >= PAIRS_GOAL for x in pairs)} of {repeat} runs at or above), "
        f"{np.median([p.cpu_us_per_pair for p in points]):.0f} us of CPU per pair (median)"
    )
    roles = {role for p in points for role in p.by_role}
    medians = {role: float(np.median([p.by_role.get(role, 0.0) for p in points])) for role in roles}
    parts = sorted(medians.items(), key=lambda item: -item[1])
    print("  CPU us/pair by process, medians: " + ", ".join(f"{n} {us:.1f}" for n, us in parts))


def lateness(duration: float, watch: ProcessWatch, layouts: list[tuple[int, float]]) -> None:
    print(
        f"\nlateness: 500 closed-loop clients holding sandboxes 1 s, staggered reports, "
        f"{duration:g} s per row"
    )
    print(HEADER)
    rows = []
    for nodes, report_s in layouts:
        config = sized(closed_loop(nodes, 500, 1.0, report_s, duration))
        rows.append(measure(config, watch))
        print(f"{rows[-1].row()}   ({nodes / report_s:,.0f} reports/s)", flush=True)
    big = rows[-1]
    verdict = "reached" if big.late_ms[1] < LATE_GOAL_MS else "NOT reached"
    print(
        f"goal {big.nodes:,} nodes with heartbeat lateness p99 < {LATE_GOAL_MS:g} ms: {verdict}: "
        f"p99 {big.late_ms[1]:.1f} ms, total memory {big.peak_gib:.2f} GiB (peak RSS of every "
        "process, Ray's included)"
    )


def main() -> None:
    parser = bench_parser(__doc__, "one short row per part")
    parser.add_argument("--duration", type=float, default=10.0, help="model seconds per row")
    parser.add_argument(
        "--part",
        choices=("scaling", "lateness", "best"),
        help="run only this part (best: only when named)",
    )
    parser.add_argument("--repeat", type=int, default=12, help="runs of the best row (--part best)")
    args = parser.parse_args()
    tiny = args.tiny
    if tiny:
        args.duration, args.repeat = TINY["duration"], TINY["repeat"]
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, not {args.repeat}")
    connect()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Ray {ray.__version__}, {int(ray.cluster_resources()['CPU'])} CPUs, load {load}")
    with ProcessWatch() as watch:
        if args.part in (None, "scaling"):
            scaling(args.duration, watch, TINY["scaling"] if tiny else SCALING)
        if args.part in (None, "lateness"):
            lateness(args.duration, watch, TINY["lateness"] if tiny else LATENESS)
        if args.part == "best":
            best_row(args.duration, args.repeat, watch)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average at the end {load}")


if __name__ == "__main__":
    main()
