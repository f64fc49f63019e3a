"""The deterministic virtual-time engine: the protocol's messages on one heap.

It decides nothing: the parties (`harness.model.protocol`) decide what happens and when, this engine
delivers each message at its time. A message due now for another party is handled at once
(a hop of zero latency, depth first, as a direct call would be); everything else waits on the
heap, where messages due at the same instant run in the order they were sent. That order, and
one random stream per purpose, make a seeded run repeatable to the bit.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from harness import interrupts
from harness.config import Config
from harness.engines import Engine, Progress
from harness.model.event_queue import EventQueue
from harness.model.protocol import IS_TIMER, KINDS, PARTY, Party, Recipient
from harness.model.protocol.replica_party import Replicas
from harness.model.recording import TimelineLog
from harness.results.seed_result import SeedResult, partial_result, seed_result
from harness.results.seed_rows import SeedRows
from harness.wiring import scenario

PROGRESS_EVERY = 8192
"""Messages between two progress calls, two looks at how many rows the logs hold, and two
looks for a stop asked for (`harness.interrupts.poll`)."""
FLUSH_ROWS = 1 << 16
"""Request rows the log holds before they go to the seed's rows (`SeedRows`): what a seed
keeps of its requests in memory, however long it runs. The log is looked at every
`PROGRESS_EVERY` messages."""
SAMPLE_ROWS = 1 << 13
"""Timeline rows the log holds before they go to the seed's rows, looked at after each sample
(a row per node and replica). Fewer than requests: samples come slowly (a few hundred rows
every 10 s on a large cluster), so with as many a run would hold more the longer it ran,
for its first tens of minutes."""
SAMPLE = len(KINDS)
"""The engine's own message: take a timeline sample."""


class _World(Recipient):
    """One (strategy, seed): every party in one process, and the heap that carries their
    messages. It takes the engine's own message (a timeline sample) itself."""

    def __init__(self, config: Config, seed: int, rows: SeedRows, kept: dict | None = None) -> None:
        self.config = config
        self.rows = rows
        self.clock = EventQueue(IS_TIMER)
        self.nodes = scenario.nodes(config, seed)
        self.node_host = scenario.node_host(config, seed, self.nodes, self.clock)
        self.replicas = scenario.replica_hosts(config, seed, self.clock, kept)
        self.clients = scenario.client_host(config, seed, 0, 1, self.clock)
        self.timeline = TimelineLog()
        self.lifecycle = scenario.lifecycle(config)
        replicas = self.replicas[0] if len(self.replicas) == 1 else Replicas(self.replicas)
        party: dict[Party, Recipient] = {
            Party.NODES: self.node_host,
            Party.REPLICA: replicas,
            Party.CLIENTS: self.clients,
        }
        self.clock.recipients = [party[PARTY[kind]] for kind in KINDS] + [self]

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        """A timeline sample (`SAMPLE`), the only message for the engine itself."""
        views = [r.view(now) for r in self.replicas]
        self.timeline.sample(now, self.node_host.truth(), views)
        self.flush()  # thousands of samples may come between two ticks
        nxt = self.lifecycle.sample_after(now)
        if nxt is not None:
            self.clock.at(nxt, SAMPLE, 0, None)

    def flush(self, final: bool = False) -> None:
        """The rows each log holds, to the seed's rows, once there are as many as it keeps
        (`FLUSH_ROWS`, `SAMPLE_ROWS`); at the end (`final`), whatever there is."""
        for name, log, keeps in (
            ("requests", self.clients.log, FLUSH_ROWS),
            ("timeline", self.timeline, SAMPLE_ROWS),
        ):
            if len(log) >= (1 if final else keeps):
                self.rows.add(name, log.take())

    def run(self, progress: Progress | None) -> None:
        self.node_host.sync()
        self.node_host.start()
        first = self.lifecycle.first_sample()
        if first is not None:
            self.clock.at(first, SAMPLE, 0, None)
        self.clients.start()

        def tick(t: float) -> None:
            interrupts.poll()  # a stop asked for is acted on between events
            self.flush()
            if progress is not None:
                progress(t, None, self.refused_again())

        self.clock.run(tick, PROGRESS_EVERY)
        self.flush(final=True)
        # Nothing is left to deliver, and virtual time runs on to the end for free: the rule the
        # Ray driver polls must agree that the run is over.
        end = max(self.clock.now(), self.config.run.duration_s)
        if not self.lifecycle.over(end, self.clients.done, None):
            raise RuntimeError("the run ran out of messages before its clients were done")

    def refused_again(self) -> int:
        """Creates in flight stuck in refusals, as each replica counts them."""
        return sum(r.refused_again() for r in self.replicas)

    def close(self) -> None:
        """Drop the parties: each holds the clock, which holds them and this world, and the
        reference cycle would keep a finished seed's whole state alive until the cyclic
        collector ran (in the middle of the next seed). Sessions with an external scheduler end
        here."""
        scenario.close_replicas(self.replicas)
        del self.node_host, self.replicas, self.clients
        self.clock.recipients = []

    def drained_views(self) -> list[list[float]]:
        """Every live node reports once more after the last message; each replica's belief
        then."""
        now = self.clock.now()
        self.node_host.drain(now)
        return [r.believed(now) for r in self.replicas]


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector off while a seed is set up, run and collected. A seed makes
    no reference cycles (`tests/engines/test_virtual_engine.py` checks every strategy), so reference
    counting frees all it drops, and the collector would only walk the seed's growing state
    again and again (docs/performance.md, "Virtual engine: the garbage collector off"). A
    plugin that makes cycles keeps them until the seed ends, when the collector is back."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class VirtualEngine(Engine):
    """Every party in this process, on one event queue, as fast as it goes."""

    name = "virtual"

    def __init__(self) -> None:
        self.kept: dict = {}
        """External scheduler processes that serve many seeds, kept from one to the next
        (`harness.external.client.open_session`)."""

    def prepare(self, config: Config, strategies: Sequence[str]) -> None:
        """Nothing to set up: the virtual engine needs only the config."""

    def close(self) -> None:
        """Stops the scheduler processes kept between seeds; nothing else is kept."""
        kept, self.kept = self.kept, {}
        for process in kept.values():
            process.stop()

    def run_seed(
        self,
        config: Config,
        seed: int,
        progress: Progress | None = None,
        rows: SeedRows | None = None,
    ) -> SeedResult:
        rows = SeedRows(config.placement.strategy, seed) if rows is None else rows
        with _no_cycle_collection():
            return self._run_seed(config, seed, progress, rows)

    def _run_seed(
        self, config: Config, seed: int, progress: Progress | None, rows: SeedRows
    ) -> SeedResult:
        wall = time.perf_counter()
        world = _World(config, seed, rows, self.kept)
        try:
            world.run(progress)
            wall = time.perf_counter() - wall
            return self._result(world, config, seed, wall)
        except BaseException as e:
            e.partial = partial_result(self.name, config, seed, rows)  # type: ignore[attr-defined]
            raise
        finally:
            world.close()

    def _result(self, world: _World, config: Config, seed: int, wall: float) -> SeedResult:
        host = world.node_host
        return seed_result(
            self.name,
            config,
            seed,
            host.end_state(),
            world.rows,
            engine_wall_s=wall,
            faults=host.faults.counts,
            sandbox_ids=host.sandbox_ids(),
            lost_ids=host.lost_ids(),
            drained_views=world.drained_views(),
            scheduler=scenario.placed_by(scenario.scheduler_names(world.replicas)),
        )
