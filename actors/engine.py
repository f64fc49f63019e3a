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

import pyarrow as pa
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.host import ClientPool, NodeGroup, Replica
from actors.spool import Spool
from harness import scenario, sketch
from harness.clock import WallClock
from harness.config import Config
from harness.engine import EngineError, Progress, Snapshot
from harness.load import LoadMeter
from harness.ray_setup import connect
from harness.recording import TimelineLog, next_sample
from harness.schemas import NODES, REQUESTS, TIMELINE, table
from harness.seed_result import SeedResult, seed_result

POLL_S = 0.25
"""Wall seconds between two polls of the driver (streamed rows, live view)."""
START_LEAD_S = 0.3
"""Wall seconds between sending `start` to every actor and the run's t = 0."""
NODES_PER_GROUP = 5000
"""Nodes per node-group actor when `ray.node_groups` is 0."""
GROUP_RESTARTS = 3
"""How often Ray restarts a node-group actor whose process died (its nodes come back empty)."""


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
        self.groups: list[Any] = []
        self.replicas: list[Any] = []
        self.pools: list[Any] = []
        self.restarts: list[tuple[int, float]] = []
        """(group, model time) of every node group Ray restarted and the driver rejoined."""

    def _actors(self) -> None:
        config, seed = self.config, self.seed
        n = config.cluster.nodes
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        n_groups = config.ray.node_groups or min(cpus, math.ceil(n / NODES_PER_GROUP))
        n_groups = min(n_groups, n)
        n_pools = config.ray.client_pools or cpus
        place = _round_robin_over_ray_nodes()
        restart = {"max_restarts": GROUP_RESTARTS, "max_task_retries": 0}
        self.bounds = bounds = [n * g // n_groups for g in range(n_groups + 1)]
        self.groups = [
            NodeGroup.options(scheduling_strategy=next(place), **restart).remote(
                config, seed, lo, hi
            )
            for lo, hi in itertools.pairwise(bounds)
        ]
        self.group_of = [g for g in range(n_groups) for _ in range(bounds[g + 1] - bounds[g])]
        cpu_counts = [node.cpu_count for node in scenario.nodes(config, seed)]
        self.replicas = [
            Replica.options(scheduling_strategy=next(place)).remote(config, seed, r, cpu_counts)
            for r in range(config.placement.replicas)
        ]
        self.pools = [
            ClientPool.options(scheduling_strategy=next(place)).remote(config, seed, p, n_pools)
            for p in range(n_pools)
        ]
        self.ray_nodes = ray.get([a.connect.remote(*self._wiring()) for a in self._all()])
        ray.get([g.sync.remote() for g in self.groups])
        # A pool's first rows() loads pyarrow's kernels (~0.4 s here): not on the run's clock.
        ray.get([p.rows.remote() for p in self.pools])

    def _wiring(self) -> tuple[list, list[int], list, list]:
        return self.groups, self.group_of, self.replicas, self.pools

    def _all(self) -> list[Any]:
        return [*self.groups, *self.replicas, *self.pools]

    def _kill_actors(self) -> None:
        for actor in self._all():
            ray.kill(actor)

    def _truth(self) -> tuple[list[float], list[int]]:
        """True allocated vCPUs and sandbox counts, node by node, from every node group."""
        parts = ray.get([g.truth.remote() for g in self.groups])
        return [c for cpu, _ in parts for c in cpu], [c for _, counts in parts for c in counts]

    def _sample(self, t: float, timeline: Spool) -> None:
        truth = self._truth()
        log = TimelineLog()
        log.sample(t, truth, ray.get([r.view.remote() for r in self.replicas]))
        timeline.write(table(TIMELINE, self.config.placement.strategy, self.seed, log.take()))

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
                ray.get(group.connect.remote(*self._wiring()))
                ray.get(group.start.remote(epoch))
                self.restarts.append((g, now))
        return restarting

    def _rows(self, requests: Spool, meter: LoadMeter) -> bool:
        """Request rows that arrived, into the spool and the live view's meter; True once
        every pool is done."""
        finished = True
        for batches, pool_done in ray.get([p.rows.remote() for p in self.pools]):
            for batch in batches:
                requests.write(batch)
                meter.add(batch)
            finished = finished and pool_done
        return finished

    def _play(self, requests: Spool, timeline: Spool, progress: Progress | None) -> None:
        """From t = 0 until every client is done and the scenario's duration has passed."""
        config = self.config
        duration = config.run.duration_s
        interval = config.run.sample_interval_s
        epoch = time.time() + START_LEAD_S
        clock = WallClock(epoch, config.run.time_scale)
        ray.get([a.start.remote(epoch) for a in self._all()])
        sample = 0.0 if interval > 0 else None
        meter = LoadMeter()
        while True:
            now = clock.now()
            ray.get([a.check.remote() for a in (*self.replicas, *self.pools)])
            # A failure stops the run; a node group that died is rejoined once Ray restarted it.
            restarting = self._check_groups(epoch, now)
            while sample is not None and sample <= min(now, duration):
                if not restarting:  # the nodes of a group being restarted cannot be sampled
                    self._sample(sample, timeline)
                sample = next_sample(sample, interval, duration)
            finished = self._rows(requests, meter)
            if progress is not None and not restarting:
                counts = self._truth()[1]
                snapshot = Snapshot(time.time() - epoch, counts, meter.load(now))
                progress(min(now, duration), snapshot)
            if finished and now >= duration and sample is None:
                return
            wait = POLL_S if sample is None else (sample - clock.now()) * clock.scale
            time.sleep(min(POLL_S, max(0.0, wait)))

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
        with tempfile.TemporaryDirectory(prefix="harness-ray-") as spool_dir:
            requests_spool = Spool(Path(spool_dir) / "requests.arrow", REQUESTS)
            timeline_spool = Spool(Path(spool_dir) / "timeline.arrow", TIMELINE)
            try:
                self._actors()
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
                ray.get([g.drain.remote() for g in self.groups])
                drained = [view[0] for view in ray.get([r.view.remote() for r in self.replicas])]
                finals = ray.get([g.final.remote() for g in self.groups])
                rpc = sketch.merged(ray.get([r.rpc_times.remote() for r in self.replicas]))
            finally:
                self._kill_actors()
            # Mapped files stay readable after the folder is removed (the pages are held).
            requests = requests_spool.table()
            timeline = timeline_spool.table()
        columns: dict[str, list] = {}
        faults: Counter[str] = Counter()
        for part in finals:
            for name, values in part["columns"].items():
                columns.setdefault(name, []).extend(values)
            faults.update(part["faults"])
        self.sandbox_ids = [ids for part in finals for ids in part["sandbox_ids"]]
        lateness = sketch.merged(part["lateness"] for part in finals)
        rpc_p50, rpc_p99 = sketch.quantiles(rpc, (0.5, 0.99))
        late_p50, late_p99 = sketch.quantiles(lateness, (0.5, 0.99))
        return seed_result(
            RayEngine.name,
            config,
            self.seed,
            columns,
            requests,
            timeline,
            engine_wall_s=time.perf_counter() - wall,
            faults=faults,
            extra={
                "time_scale": config.run.time_scale,
                "ray_nodes": len(set(self.ray_nodes)),
                "create_rpc_p50_ms": rpc_p50,
                "create_rpc_p99_ms": rpc_p99,
                "heartbeat_late_p50_ms": late_p50,
                "heartbeat_late_p99_ms": late_p99,
                "create_rpc_sketch": sketch.to_bytes(rpc),
                "heartbeat_late_sketch": sketch.to_bytes(lateness),
            },
            sandbox_ids=self.sandbox_ids,
            lost_ids=[i for part in finals for i in part["lost_ids"]],
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
