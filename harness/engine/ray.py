"""The Ray engine: the same scenario as the virtual engine, played in real time by Ray actors.

Node groups, scheduler replicas and client pools (see `actors/`) run concurrently, so the races
are real rather than scheduled. The driver only sets up, polls and collects: request rows and
timeline samples stream back as Arrow batches while the run goes, onto local spool files, and
the runner writes the same Parquet files as for the virtual engine.
"""

from __future__ import annotations

import itertools
import math
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.client_pool import ClientPool
from actors.node_group import NodeGroup
from actors.scheduler import Replica
from harness.analysis import seed_summary
from harness.clock import WallClock
from harness.cluster import build_nodes
from harness.config import Config
from harness.engine import EngineError, Progress, Snapshot, stream
from harness.faults import COUNTS
from harness.ledgers import LEDGERS
from harness.node import Node
from harness.ray_setup import connect
from harness.results import NODES, REQUESTS, TIMELINE, SeedResult, Spool, table

POLL_S = 0.25
"""Wall seconds between two polls of the driver (streamed rows, live view)."""
START_LEAD_S = 0.3
"""Wall seconds between sending `start` to every actor and the run's t = 0."""
NODES_PER_GROUP = 5000
"""Nodes per node-group actor when `ray.node_groups` is 0."""
GROUP_RESTARTS = 3
"""How often Ray restarts a node-group actor whose process died (its nodes come back empty)."""


def _percentiles(values: np.ndarray, scale_ms: float) -> tuple[float, float]:
    if values.size == 0:
        return math.nan, math.nan
    p50, p99 = np.percentile(values, [50, 99]) * scale_ms
    return float(p50), float(p99)


def _round_robin_over_ray_nodes() -> Iterator[NodeAffinitySchedulingStrategy]:
    """Each actor on the next live Ray node in turn. Ray's SPREAD is best effort and, on a busy
    machine, can put every actor on the node that answers first; soft affinity still falls back
    to any node if the chosen one cannot take the actor."""
    alive = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    return (
        NodeAffinitySchedulingStrategy(node_id, soft=True) for node_id in itertools.cycle(alive)
    )


class RaySeedRun:
    """One (strategy, seed) on Ray: actors up, run, results in, actors down.

    After `run()`, `sandbox_ids[node]` holds the IDs each node runs at the end (ground truth for
    checks) and `ray_nodes` the Ray node of every actor.
    """

    def __init__(self, config: Config, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.sandbox_ids: list[list[int]] = []
        self.ray_nodes: list[str] = []
        self.restarts: list[tuple[int, float]] = []
        """(group, model time) of every node group Ray restarted and the driver rejoined."""

    def _actors(self, nodes: list[Node]) -> None:
        config, seed = self.config, self.seed
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        n_groups = config.ray.node_groups or min(cpus, math.ceil(len(nodes) / NODES_PER_GROUP))
        n_groups = min(n_groups, len(nodes))
        n_pools = config.ray.client_pools or cpus
        hb = config.heartbeat
        if hb.phase == "aligned":
            first_beats = [hb.interval_s] * len(nodes)
        else:
            rng = stream(seed, "heartbeat")
            first_beats = [rng.uniform(0.0, hb.interval_s) for _ in nodes]
        ledger = LEDGERS[config.placement.strategy]
        place = _round_robin_over_ray_nodes()
        restart = {"max_restarts": GROUP_RESTARTS, "max_task_retries": 0}
        self.bounds = bounds = [len(nodes) * g // n_groups for g in range(n_groups + 1)]
        self.groups = [
            NodeGroup.options(scheduling_strategy=next(place), **restart).remote(
                nodes[lo:hi],
                config,
                seed,
                first_beats[lo:hi],
                ledger.wants_sandbox_ids,
                ledger.wants_response_report,
            )
            for lo, hi in itertools.pairwise(bounds)
        ]
        group_of = [g for g in range(n_groups) for _ in range(bounds[g + 1] - bounds[g])]
        cpu_counts = [n.cpu_count for n in nodes]
        self.replicas = [
            Replica.options(scheduling_strategy=next(place)).remote(r, config, seed, cpu_counts)
            for r in range(config.placement.replicas)
        ]
        self.pools = [
            ClientPool.options(scheduling_strategy=next(place)).remote(p, n_pools, config, seed)
            for p in range(n_pools)
        ]
        self.ray_nodes = ray.get(
            [g.connect.remote(self.replicas) for g in self.groups]
            + [r.connect.remote(self.groups, group_of, self.pools) for r in self.replicas]
            + [p.connect.remote(self.replicas) for p in self.pools]
        )
        ray.get([g.initial_sync.remote() for g in self.groups])
        # A pool's first drain loads pyarrow's kernels (~0.4 s here): not on the run's clock.
        ray.get([p.drain.remote() for p in self.pools])

    def _all(self) -> list[Any]:
        return [*self.groups, *self.replicas, *self.pools]

    def _kill_actors(self) -> None:
        for actor in self._all():
            ray.kill(actor)

    def _sample(self, t: float, timeline: Spool | None) -> list[int]:
        """True state of every node (and, for the timeline, every replica's view of it)."""
        truth = ray.get([g.sample.remote() for g in self.groups])
        cpu = [c for part, _ in truth for c in part]
        counts = [c for _, part in truth for c in part]
        if timeline is not None:
            n = len(cpu)
            views = ray.get([r.sample.remote() for r in self.replicas])
            for replica, (believed, in_progress, in_progress_cpu, killing) in enumerate(views):
                columns = {
                    "t": [t] * n,
                    "node_id": list(range(n)),
                    "replica": [replica] * n,
                    "cpu_allocated": cpu,
                    "sandboxes": counts,
                    "view_cpu_allocated": believed,
                    "in_progress": in_progress,
                    "in_progress_cpu": in_progress_cpu,
                    "kill_in_progress_cpu": killing,
                    "cpu_error": [b - c for b, c in zip(believed, cpu, strict=True)],
                }
                timeline.write(table(TIMELINE, self.config.placement.strategy, self.seed, columns))
        return counts

    def _check_groups(self, epoch: float, now: float) -> bool:
        """Checks every node group; True while Ray is still restarting one. A restarted group
        (its nodes crashed with its process and came back empty) is connected and started
        again. A group Ray gave up on raises ActorDiedError, which ends the run."""
        restarting = False
        for g, ref in enumerate([group.check.remote() for group in self.groups]):
            try:
                rejoin = ray.get(ref)
            except ray.exceptions.ActorUnavailableError:
                restarting = True
                continue
            if rejoin:
                group = self.groups[g]
                ray.get(group.connect.remote(self.replicas))
                ray.get(group.start.remote(epoch))
                self.restarts.append((g, now))
        return restarting

    def _lost_with_groups(self, requests: pa.Table) -> list[tuple[int, int]]:
        """Sandboxes lost with the process of a restarted node group: acknowledged on one of
        its nodes before the restart, not killed, and not there at the end. (The process that
        knew them is gone, so they are inferred from the acknowledgements.) (node, ID) each."""
        if not self.restarts:
            return []
        kind = requests.column("kind").to_numpy(zero_copy_only=False)
        outcome = requests.column("outcome").to_numpy(zero_copy_only=False)
        ids = requests.column("sandbox_id").to_numpy()
        node = requests.column("node_id").to_numpy()
        done = requests.column("done_at").to_numpy()
        killed = set(ids[(kind == "kill") & (outcome == "killed")].tolist())
        placed = (kind == "create") & (outcome == "placed")
        lost = []
        for g, t in self.restarts:
            lo, hi = self.bounds[g], self.bounds[g + 1]
            there = {i for ids_on_node in self.sandbox_ids[lo:hi] for i in ids_on_node}
            on_group = placed & (node >= lo) & (node < hi) & (done <= t)
            pairs = zip(node[on_group].tolist(), ids[on_group].tolist(), strict=True)
            lost += [(n, i) for n, i in pairs if i not in killed and i not in there]
        return lost

    def _drain(self, requests: Spool) -> int:
        done = 0
        for batches, pool_done in ray.get([p.drain.remote() for p in self.pools]):
            for batch in batches:
                requests.write(batch)
            done += pool_done
        return done

    def _play(self, requests: Spool, timeline: Spool, progress: Progress | None) -> None:
        """From t = 0 until every client is done and the scenario's duration has passed."""
        config = self.config
        duration = config.run.duration_s
        interval = config.run.sample_interval_s
        epoch = time.time() + START_LEAD_S
        clock = WallClock(epoch, config.run.time_scale)
        ray.get([a.start.remote(epoch) for a in (*self.groups, *self.replicas)])
        running = [p.run.remote(epoch) for p in self.pools]
        next_sample = 0.0 if interval > 0 else math.inf
        while True:
            now = clock.now()
            ready, running = ray.wait(running, num_returns=len(running), timeout=0)
            # A failure stops the run; a node group that died is rejoined once Ray restarted it.
            ray.get(ready + [a.check.remote() for a in (*self.replicas, *self.pools)])
            restarting = self._check_groups(epoch, now)
            while next_sample <= min(now, duration):
                if not restarting:  # the nodes of a group being restarted cannot be sampled
                    self._sample(next_sample, timeline)
                next_sample += interval
            requests_done = self._drain(requests)
            if progress is not None and not restarting:
                counts = self._sample(now, None)
                progress(min(now, duration), Snapshot(time.time() - epoch, requests_done, counts))
            if not running and now >= duration and next_sample > duration:
                return
            time.sleep(min(POLL_S, max(0.0, (next_sample - clock.now()) * clock.scale)))

    def _summary(
        self, nodes: pa.Table, requests: pa.Table, timeline: pa.Table, wall: float
    ) -> dict[str, Any]:
        """The summary fields every Ray seed has, finished or not."""
        config = self.config
        done_at = requests.column("done_at").to_numpy()
        return {
            "engine": RayEngine.name,
            "strategy": config.placement.strategy,
            "seed": self.seed,
            "nodes": config.cluster.nodes,
            "k": config.placement.k,
            "replicas": config.placement.replicas,
            **seed_summary(nodes, requests, timeline),
            "sim_duration_s": max(config.run.duration_s, done_at.max(initial=0.0)),
            "engine_wall_s": time.perf_counter() - wall,
            "time_scale": config.run.time_scale,
            "ray_nodes": len(set(self.ray_nodes)),
        }

    def _partial(self, requests: pa.Table, timeline: pa.Table) -> SeedResult:
        """What the driver holds of a seed that did not finish: the requests and samples that
        had arrived; the nodes' end state is unknown (their actors are gone or going)."""
        config = self.config
        summary = {
            "engine": RayEngine.name,
            "strategy": config.placement.strategy,
            "seed": self.seed,
        }
        return SeedResult(summary, NODES.empty_table(), requests, timeline)

    def run(self, progress: Progress | None = None) -> SeedResult:
        config = self.config
        wall = time.perf_counter()
        nodes = build_nodes(config, stream(self.seed, "cluster"))
        self.groups, self.replicas, self.pools = [], [], []
        with tempfile.TemporaryDirectory(prefix="harness-ray-") as spool_dir:
            requests_spool = Spool(Path(spool_dir) / "requests.arrow", REQUESTS)
            timeline_spool = Spool(Path(spool_dir) / "timeline.arrow", TIMELINE)
            try:
                self._actors(nodes)
                try:
                    self._play(requests_spool, timeline_spool, progress)
                except (KeyboardInterrupt, ray.exceptions.RayActorError) as e:
                    partial = self._partial(requests_spool.table(), timeline_spool.table())
                    if isinstance(e, KeyboardInterrupt):
                        e.partial = partial
                        raise
                    error = EngineError(f"the run stopped: an actor died ({type(e).__name__})")
                    error.partial = partial
                    raise error from e
                ray.get([g.drain_sync.remote() for g in self.groups])
                drained = [
                    views[0] for views in ray.get([r.sample.remote() for r in self.replicas])
                ]
                finals = ray.get([g.final.remote() for g in self.groups])
                rpc = np.concatenate(
                    [np.asarray(a) for a in ray.get([r.rpc_times.remote() for r in self.replicas])]
                )
            finally:
                self._kill_actors()
            # Mapped files stay readable after the folder is removed (the pages are held).
            requests = requests_spool.table()
            timeline = timeline_spool.table()
        columns: dict[str, list] = {}
        for part in finals:
            for name, values in part["columns"].items():
                columns.setdefault(name, []).extend(values)
        self.sandbox_ids = [ids for part in finals for ids in part["sandbox_ids"]]
        faults = Counter(dict.fromkeys(COUNTS, 0))
        for part in finals:
            faults.update(part["faults"])
        lateness = np.concatenate([np.asarray(part["lateness"]) for part in finals])
        lost = [i for part in finals for i in part["lost_ids"]]
        for n, i in self._lost_with_groups(requests):
            columns["lost"][n] += 1
            lost.append(i)
        nodes_table = table(NODES, config.placement.strategy, self.seed, columns)
        rpc_p50, rpc_p99 = _percentiles(rpc, 1000.0 / config.run.time_scale)
        late_p50, late_p99 = _percentiles(lateness, 1000.0)
        summary = {
            **self._summary(nodes_table, requests, timeline, wall),
            "create_rpc_p50_ms": rpc_p50,
            "create_rpc_p99_ms": rpc_p99,
            "heartbeat_late_p50_ms": late_p50,
            "heartbeat_late_p99_ms": late_p99,
            **faults,
        }
        return SeedResult(
            summary,
            nodes_table,
            requests,
            timeline,
            sandbox_ids=self.sandbox_ids,
            lost_ids=lost,
            drained_views=drained,
        )


class RayEngine:
    name = "ray"

    def prepare(self, config: Config) -> None:
        """Join or start Ray before any results folder exists, so a bad address costs nothing."""
        connect(config.ray.address)

    def run_seed(self, config: Config, seed: int, progress: Progress | None = None) -> SeedResult:
        connect(config.ray.address)
        return RaySeedRun(config, seed).run(progress)
