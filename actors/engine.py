"""The Ray engine: the same scenario as the virtual engine, played in real time by Ray actors.

Node groups, scheduler replicas and client pools (see `actors/`) run concurrently, so the races
are real rather than scheduled. The driver only sets up, polls and collects: request rows and
timeline samples stream back as Arrow batches while the run goes, straight into the seed's rows
(`harness.results.seed_rows`: its part's Parquet files), as for the virtual engine. The actors
are built once per run (an `ActorSet`, some seconds: a process each) and reset for every seed.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import time
import weakref
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.host import ClientPool, NodeGroup, Replica, Restarted
from actors.wall_clock import WallClock
from harness import interrupts, testing_signals
from harness.config import Config
from harness.engines import Engine, EngineError, Progress, Snapshot
from harness.engines.live_load import LoadMeter
from harness.engines.ray_setup import connect, plugin_sources
from harness.external import SchedulerError
from harness.model.recording import TimelineLog, Truth
from harness.results import percentiles
from harness.results.seed_result import SeedResult, partial_result, seed_result
from harness.results.seed_rows import SeedRows
from harness.wiring import scenario

POLL_S = 0.25
"""Wall seconds between two polls of the driver (streamed rows, live view)."""
START_LEAD_S = 0.3
"""Wall seconds between sending `start` to every actor and the run's t = 0."""
GROUP_RESTARTS = 3
"""How often Ray restarts a node-group actor whose process died (its nodes come back empty)."""
SOME = "some process"
"""A node group's started process, when the driver cannot tell which (see `lives`)."""
SALVAGE_S = 2.0
"""Wall seconds the driver waits for the pools' last rows when a seed stops early."""


def _round_robin_over_ray_nodes() -> Iterator[NodeAffinitySchedulingStrategy]:
    """Each actor on the next live Ray node in turn, pinned there. Ray's SPREAD is best effort
    and, on a busy machine, can put every actor on the node that answers first; soft affinity
    placed them as if at random (docs/performance.md, "Figures behind the code"). Pinned, a
    node group whose Ray node is lost cannot come back elsewhere: the seed ends, as when Ray
    gives up restarting it (actors take no CPU, so any live node takes one)."""
    alive = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    return (
        NodeAffinitySchedulingStrategy(node_id, soft=False) for node_id in itertools.cycle(alive)
    )


@dataclass(frozen=True)
class Layout:
    """How many actors of each kind a seed needs: seeds with the same layout share actors."""

    bounds: tuple[int, ...]
    """Node group g hosts nodes bounds[g] to bounds[g + 1] - 1."""
    replicas: int
    pools: int


def layout(config: Config) -> Layout:
    """The actors `config` runs on, sized to the Ray cluster joined (`RayConfig.sizes`)."""
    n = config.cluster.node_count
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    n_groups, n_pools = config.ray.sizes(n, cpus)
    bounds = tuple(n * g // n_groups for g in range(n_groups + 1))
    return Layout(bounds, config.placement.replicas, n_pools)


def _kill(actors: list[Any]) -> None:
    if ray.is_initialized():  # else they went with the Ray that ran them
        for actor in actors:
            ray.kill(actor)


class ActorSet:
    """The node groups, replicas and client pools of one layout, each a process placed on the
    next Ray node in turn: built once, then reset for every seed that has the layout (an actor
    costs some seconds to start, a reset milliseconds).

    The actors go when `kill` is called, or when the set is dropped unkilled (an engine used
    for one seed and let go), not when the interpreter exits: Ray's shutdown takes them then.
    """

    def __init__(self, shape: Layout) -> None:
        self.layout = shape
        place = _round_robin_over_ray_nodes()
        restart = {"max_restarts": GROUP_RESTARTS, "max_task_retries": 0}
        bounds = shape.bounds
        n_groups = len(bounds) - 1
        self.groups = [
            NodeGroup.options(scheduling_strategy=next(place), **restart).remote(g)
            for g in range(n_groups)
        ]
        self.group_of = [g for g in range(n_groups) for _ in range(bounds[g + 1] - bounds[g])]
        self.replicas = [
            Replica.options(scheduling_strategy=next(place)).remote(r)
            for r in range(shape.replicas)
        ]
        self.pools = [
            ClientPool.options(scheduling_strategy=next(place)).remote(p, shape.pools)
            for p in range(shape.pools)
        ]
        self.gens = itertools.count()
        """Seed runs on this set, numbered: every message carries its run's number."""
        self.ray_nodes: list[str] = []
        """The Ray node of every actor, once connected (empty before)."""
        self.processes: list[str] = []
        """Each node group's process when connected."""
        self.worn = False
        """A node group's process was restarted: Ray restarts an actor at most
        `GROUP_RESTARTS` times in its life, so a seed gets a set with every restart left."""
        self._finalizer = weakref.finalize(self, _kill, [*self.groups, *self.replicas, *self.pools])
        self._finalizer.atexit = False

    def wiring(self) -> tuple[list, list[int], list, list]:
        return self.groups, self.group_of, self.replicas, self.pools

    def kill(self) -> None:
        self._finalizer()


class RaySeedRun:
    """One (strategy, seed) on Ray: actors reset, run, results in.

    On the `ActorSet` given (the engine keeps one per run), or on one of its own, killed at the
    end. Processes die: a node group's is restarted by Ray (`GROUP_RESTARTS` times) and joined
    again by the driver whatever the driver was doing, set-up, run or collection
    (`_on_groups`); a scheduler replica or client pool that dies, or a group Ray gave up on,
    ends the seed with what had arrived (an `EngineError` naming the actor, with `partial`).
    After `run()`, `sandbox_ids[node]` holds the IDs each node runs at the end (ground truth
    for checks) and `ray_nodes` the Ray node of every actor.
    """

    def __init__(self, config: Config, seed: int, actors: ActorSet | None = None) -> None:
        self.config = config
        self.seed = seed
        self.own = actors is None
        self.actors = ActorSet(layout(config)) if actors is None else actors
        self.groups = self.actors.groups
        self.replicas = self.actors.replicas
        self.pools = self.actors.pools
        self.sandbox_ids: list[list[int]] = []
        self.epoch: float | None = None
        """Wall time of the run's t = 0, once chosen; None during set-up."""
        self.lives: list[str | None] = [None] * len(self.groups)
        """Per node group, the process (`NodeGroup.life`) the driver started, `SOME` when it
        cannot tell which, None before: a death of that process loses what it did."""
        self.deaths: list[int] = [0] * len(self.groups)
        """Per node group, how many processes it started died."""
        self.gen = next(self.actors.gens)
        self.group_reset = (self.gen, config, seed, list(self.actors.layout.bounds))
        """What `NodeGroup.reset` takes for this seed."""
        self.driver_cpu = math.nan
        """The driver's CPU over the run, a share of one core (`_play`)."""
        self.host_load = math.nan
        """The driver's host's 1-minute load average per core, mean over the run's polls."""
        self.scheduler: str | None = None
        """The external scheduler's name, as the replicas heard it in its Hello (`_collect`)."""

    @property
    def ray_nodes(self) -> list[str]:
        return self.actors.ray_nodes

    def _actors(self) -> None:
        """Every actor connected (once per set), reset for this seed, the pre-run sync
        delivered, the pools warmed up."""
        config, seed, actors = self.config, self.seed, self.actors
        if not actors.ray_nodes:
            replicas = self._get(self.replicas, "connect", *actors.wiring())
            pools = self._get(self.pools, "connect", *actors.wiring())
            groups = self._on_groups("connect", *actors.wiring())
            actors.processes = self._on_groups("life")
            actors.ray_nodes = [*groups, *replicas, *pools]
        self._get(self.replicas, "reset", self.gen, config, seed)
        self._get(self.pools, "reset", self.gen, config, seed)
        self._on_groups("reset", *self.group_reset)
        self._on_groups("sync")
        # A pool's first rows() loads pyarrow's kernels (~0.4 s here): not on the run's clock.
        self._get(self.pools, "rows")

    def _get(self, actors: list[Any], method: str, *args: Any) -> list[Any]:
        """`method(*args)` on every replica, or every pool, at once: their answers."""
        role = "scheduler replica" if actors is self.replicas else "client pool"
        return _answers((role, [getattr(actor, method).remote(*args) for actor in actors]))[0]

    def _on_groups(self, method: str, *args: Any) -> list[Any]:
        """`method(*args)` on every node group at once, and the answers. A group whose process
        died meanwhile is joined again (`_rejoin`) and asked again; one Ray gave up on, or a
        failure, ends the seed."""
        refs = [getattr(group, method).remote(*args) for group in self.groups]
        answers = []
        for g, ref in enumerate(refs):
            while True:
                try:
                    answers.append(ray.get(ref))
                    break
                except (ray.exceptions.ActorUnavailableError, Restarted):
                    self._rejoin(g)
                    ref = getattr(self.groups[g], method).remote(*args)
                except ray.exceptions.RayError as e:
                    raise _stopped("node group", g, e) from e
        return answers

    def _rejoin(self, g: int) -> None:
        """A call to node group g failed: its process died and Ray restarted it (calls wait
        for the new one), or the call failed on the way. The process is reset for this seed
        (a live one keeps its state) and connected; if the group was not started, nothing had
        happened, so it is set up as the others were (and started if they were); if the
        process started died, the new one starts as a restart, told how many died
        (`NodeHost.restart`)."""
        group = self.groups[g]
        while True:
            try:
                ray.get(group.reset.remote(*self.group_reset))
                ray.get(group.connect.remote(*self.actors.wiring()))
                life = ray.get(group.life.remote())
                if life == self.lives[g]:  # alive all along
                    return
                if self.lives[g] is None:
                    ray.get(group.sync.remote())
                    if self.epoch is None:
                        return
                else:
                    self.deaths[g] += 1
                self.lives[g] = life
                ray.get(group.start.remote(self.epoch, self.deaths[g]))
                return
            except (ray.exceptions.ActorUnavailableError, Restarted):
                continue  # it died again
            except ray.exceptions.RayError as e:
                raise _stopped("node group", g, e) from e

    def _start(self) -> None:
        """Tells every actor the run's t = 0, a little ahead."""
        self.epoch = time.time() + START_LEAD_S
        replicas = [r.start.remote(self.epoch) for r in self.replicas]
        pools = [p.start.remote(self.epoch) for p in self.pools]
        for g, ref in enumerate([group.start.remote(self.epoch, 0) for group in self.groups]):
            try:
                self.lives[g] = ray.get(ref)
            except Restarted:  # a new process, which never got `start`: nothing was lost
                self._rejoin(g)
            except ray.exceptions.ActorUnavailableError:  # it may have started, then died
                self.lives[g] = SOME
                self._rejoin(g)
            except ray.exceptions.RayError as e:
                raise _stopped("node group", g, e) from e
        _answers(("scheduler replica", replicas), ("client pool", pools))

    def _truth(self) -> Truth:
        """True allocated vCPUs, sandbox counts and CPU use, node by node, from every node
        group."""
        parts = self._on_groups("truth")
        cpu, counts, used = ([v for part in parts for v in part[i]] for i in range(3))
        return cpu, counts, used

    def _sample(self, t: float, rows: SeedRows) -> None:
        truth = self._truth()
        log = TimelineLog()
        log.sample(t, truth, self._get(self.replicas, "view"))
        rows.add("timeline", log.take())

    def _rows(self, rows: SeedRows, meter: LoadMeter) -> bool:
        """Request rows that arrived, into the seed's rows and the live view's meter; True once
        every pool is done."""
        had = meter.creates + meter.kills
        finished = True
        for batches, pool_done in self._get(self.pools, "rows"):
            for batch in batches:
                rows.add("requests", batch)
                meter.add(batch)
            finished = finished and pool_done
        if not had and meter.creates + meter.kills:
            testing_signals.at("rows")  # the seed's first rows are written
        return finished

    def _salvage(self, rows: SeedRows) -> None:
        """When the seed stops early: the rows every live pool recorded since the last poll
        (a pool that died took its own with it)."""
        refs = [p.rows.remote() for p in self.pools]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=SALVAGE_S)
        for ref in ready:
            try:
                batches, _ = ray.get(ref)
            except ray.exceptions.RayError:
                continue
            for batch in batches:
                rows.add("requests", batch)

    def _play(self, rows: SeedRows, progress: Progress | None) -> None:
        """From t = 0 until every client is done and the scenario's duration has passed; what
        the driver and its host went through meanwhile (`driver_cpu`, `host_load`: the time
        keeping's evidence, `harness.results.time_keeping`)."""
        config = self.config
        duration = config.run.duration_s
        lifecycle = scenario.lifecycle(config)
        self._start()
        clock = WallClock(self.epoch, config.run.time_scale)
        sample = lifecycle.first_sample()
        meter = LoadMeter()
        cpu, wall, loads = time.process_time(), time.perf_counter(), []
        try:
            while True:
                interrupts.poll()
                loads.append(os.getloadavg()[0])
                now = clock.now()
                # Replicas and pools first: a group that raised may only have talked to a dead one.
                replicas = [r.check.remote() for r in self.replicas]
                pools = [p.check.remote() for p in self.pools]
                _answers(("scheduler replica", replicas), ("client pool", pools))
                self._on_groups("check")
                while sample is not None and sample <= min(now, duration):
                    self._sample(sample, rows)
                    sample = lifecycle.sample_after(sample)
                finished = self._rows(rows, meter)
                if progress is not None:
                    counts = self._truth()[1]
                    snapshot = Snapshot(time.time() - self.epoch, counts, meter.load(now))
                    progress(min(now, duration), snapshot)
                if lifecycle.over(now, finished, sample):
                    return
                wait = POLL_S if sample is None else (sample - clock.now()) * clock.scale
                time.sleep(min(POLL_S, max(0.0, wait)))
        finally:
            elapsed = time.perf_counter() - wall
            self.driver_cpu = (time.process_time() - cpu) / elapsed if elapsed > 0 else math.nan
            if loads:
                self.host_load = sum(loads) / len(loads) / (os.cpu_count() or 1)

    def _collect(self) -> tuple[list[dict[str, Any]], list[list[float]], Any]:
        """After the run: every live node reports once more (the drain), then each replica's
        view and each group's end state; all again if a group died meanwhile, so the views
        and the end state are of the same nodes."""
        while True:
            deaths = sum(self.deaths)
            self._on_groups("drain")
            drained = [view[0] for view in self._get(self.replicas, "view")]
            finals = self._on_groups("final")
            if sum(self.deaths) == deaths:
                break
        measured = self._get(self.replicas, "sketches")
        sketches = {name: percentiles.merged(m[name] for m in measured) for name in measured[0]}
        self.scheduler = scenario.placed_by(
            [name for names in self._get(self.replicas, "scheduler_names") for name in names]
        )
        return finals, drained, sketches

    def run(self, progress: Progress | None = None, rows: SeedRows | None = None) -> SeedResult:
        """The seed, its rows into `rows` (kept in memory without)."""
        config = self.config
        rows = SeedRows(config.placement.strategy, self.seed) if rows is None else rows
        wall = time.perf_counter()
        try:
            self._actors()
            self._play(rows, progress)
            finals, drained, sketches = self._collect()
        except (KeyboardInterrupt, EngineError, ray.exceptions.RayError) as e:
            self._salvage(rows)
            partial = partial_result(RayEngine.name, config, self.seed, rows)
            if isinstance(e, EngineError | KeyboardInterrupt):
                e.partial = partial
                raise
            error = EngineError(f"the run stopped: {type(e).__name__}")
            error.partial = partial
            raise error from e
        finally:
            if self.config.external.active:  # the replicas' scheduler processes stop
                _release(self.replicas)
            if self.own:
                self.actors.kill()
        if self.lives != self.actors.processes:
            self.actors.worn = True
        columns: dict[str, list] = {}
        faults: Counter[str] = Counter()
        for part in finals:
            for name, values in part["columns"].items():
                columns.setdefault(name, []).extend(values)
            faults.update(part["faults"])
        self.sandbox_ids = [ids for part in finals for ids in part["sandbox_ids"]]
        lateness = percentiles.merged(part["lateness"] for part in finals)
        return seed_result(
            RayEngine.name,
            config,
            self.seed,
            columns,
            rows,
            engine_wall_s=time.perf_counter() - wall,
            faults=faults,
            extra={
                "time_scale": config.run.time_scale,
                "ray_nodes": len(set(self.ray_nodes)),
                "driver_cpu": self.driver_cpu,
                "host_load": self.host_load,
            },
            sketches={**sketches, "heartbeat_late": lateness},
            scheduler=self.scheduler,
            sandbox_ids=self.sandbox_ids,
            lost_ids=[i for part in finals for i in part["lost_ids"]],
            drained_views=drained,
        )


def _release(replicas: list[Any]) -> None:
    """Each replica ends its session with an external scheduler; a replica that died cannot,
    and its process is gone with it or orphaned, which nothing here can mend."""
    for ref in [r.release.remote() for r in replicas]:
        with contextlib.suppress(ray.exceptions.RayError):
            ray.get(ref)


def _answers(*calls: tuple[str, list[Any]]) -> list[list[Any]]:
    """The answers of calls to replicas or pools, (role, one call per actor) each, in order. A
    death or failure ends the seed, naming the actor (replicas and pools are not restarted:
    what they held is gone); a death before a failure, as an actor that raised may only have
    been talking to the dead one."""
    answers, deaths, failures = [], [], []
    for role, refs in calls:
        got = []
        for index, ref in enumerate(refs):
            try:
                got.append(ray.get(ref))
            except ray.exceptions.RayTaskError as e:  # alive, but it raised
                failures.append((role, index, e))
            except ray.exceptions.RayError as e:
                deaths.append((role, index, e))
        answers.append(got)
    # An external scheduler's error first: the other failures follow from it.
    failures.sort(key=lambda f: not isinstance(_cause(f[2]), SchedulerError))
    for role, index, e in (*deaths, *failures):
        raise _stopped(role, index, e) from e
    return answers


def _cause(error: Exception) -> BaseException:
    """What an actor raised, through the actors it was calling when it did."""
    cause: BaseException = error
    while isinstance(cause, ray.exceptions.RayTaskError):
        cause = cause.cause
    return cause


def _stopped(role: str, index: int, error: Exception) -> EngineError:
    """The one-line error that ends a seed when an actor died, or raised."""
    if isinstance(error, ray.exceptions.RayTaskError):  # alive, but it raised
        cause = _cause(error)
        if isinstance(cause, SchedulerError) and cause.replica is not None:
            # The scheduler's own line, whichever actor's call it surfaced in.
            return EngineError(
                f"the run stopped: scheduler replica {cause.replica} failed ({cause})"
            )
        what = f"{type(cause).__name__}: {(str(cause).splitlines() or [''])[0]}"
        return EngineError(f"the run stopped: {role} {index} failed ({what})")
    if role == "node group":
        why = f"Ray restarts it at most {GROUP_RESTARTS} times"
    else:
        why = "its process ended"
    return EngineError(f"the run stopped: {role} {index} died ({why})")


class RayEngine(Engine):
    """Runs seeds on one `ActorSet` as long as their layout is the same (a run's seeds and
    strategies), built anew after a seed that failed or wore it (`ActorSet.worn`); `close`
    kills it."""

    name = "ray"
    on_ray = True
    real_time = True

    def __init__(self) -> None:
        self._kept: ActorSet | None = None

    def prepare(self, config: Config, strategies: Sequence[str]) -> None:
        """Join or start Ray before any results folder exists, so a bad address costs nothing;
        a cluster gets the import-path plugins of every strategy with the job."""
        connect(config.ray.address, plugin_sources([config], strategies))

    def run_seed(
        self,
        config: Config,
        seed: int,
        progress: Progress | None = None,
        rows: SeedRows | None = None,
    ) -> SeedResult:
        connect(config.ray.address, plugin_sources([config]))
        shape = layout(config)
        if self._kept is not None and self._kept.layout != shape:
            self.close()
        if self._kept is None:
            self._kept = ActorSet(shape)
        try:
            result = RaySeedRun(config, seed, self._kept).run(progress, rows)
        except BaseException:
            self.close()
            raise
        if self._kept.worn:
            self.close()
        return result

    def close(self) -> None:
        """Kills the actors kept for the next seed."""
        if self._kept is not None:
            self._kept.kill()
            self._kept = None
