"""The Ray transport of the protocol: one actor hosts one party and carries its messages.

A party (`harness.model.protocol`) decides everything; its host only moves messages and keeps time.
The hot path, its agenda, dispatch and outboxes, is a `Carrier` (`actors.carrier`, compiled
where the model is); the actor wraps it, builds the party and answers the driver. RPCs to the
node side travel as calls: what handling them sends back (the answers) returns in the call's
reply, one Ray call per batch both ways, as a real RPC would.

Actors outlive a seed: the driver builds them once per run and `reset`s them for each seed,
which rebuilds the party from the new (config, seed) and forgets everything of the last one.
Every batch carries the generation (the seed run) it was sent in: a host drops a batch of an
earlier one (a message still in flight when its seed ended never reaches the next) and holds
one of a later one until the driver has reset it (a node group's process that Ray restarted).
"""

from __future__ import annotations

import asyncio
import gc
import pickle
from typing import Any

import ray
from ray.exceptions import RayActorError

from actors.carrier import Carrier
from actors.outbox import PROTOCOL
from harness.config import Config
from harness.model.protocol import Kind, Party
from harness.model.recording import Truth
from harness.results import percentiles
from harness.results.arrow_schemas import REQUESTS, table
from harness.wiring import scenario

GC_THRESHOLDS = (20_000, 20, 100)
"""The collector's thresholds in an actor's process. Handling a message allocates a few tuples,
so at CPython's default (a young collection every 700 allocations) a busy replica spends much
of its time collecting (docs/performance.md, "Figures behind the code"), while nothing it keeps
makes cycles. The structures a seed builds are frozen at its start (`gc.freeze`), so the rarer
full collections skip them."""


class Restarted(Exception):
    """Raised by a node group's new process (Ray restarted it after the old one died) to the
    driver's queries until the driver has connected it again: its nodes are fresh and have not
    crashed yet, so nothing they say is true of the run."""


class Checked:
    """Base of every actor: failures of one-way messages and of their callbacks collect in
    `errors`, and `check` (called by the driver on every poll) raises the first, so the run
    stops."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    def raise_failure(self) -> None:
        if self.errors:
            raise self.errors[0]

    async def check(self) -> None:
        self.raise_failure()


class Host(Checked):
    """The actor around one party's `Carrier`; subclasses build the party in `reset` and add
    what the driver asks of them."""

    party: Party

    def __init__(self) -> None:
        super().__init__()
        gc.set_threshold(*GC_THRESHOLDS)
        self.gen: int | None = None
        """The seed run this actor was last reset for; None until the first `reset`."""
        self.carrier: Carrier | None = None
        self.actors: dict[Party, list[Any]] = {}
        self.group_of: list[int] = []
        self.was_reset = asyncio.Event()
        """Set, and replaced by a new one, at every `reset`."""

    def _reset(self, gen: int, config: Config) -> bool:
        """Forget the last seed and get ready for seed run `gen`: what is in flight is dropped
        (`Carrier.close`). The subclass builds its party when this returns True; False when
        already at `gen` (the driver asks again after a group's process restarted, and a live
        group must keep its state)."""
        if gen == self.gen:
            return False
        if self.carrier is not None:
            self.carrier.close()
        gc.unfreeze()  # the last seed's structures may be collected again
        self.gen = gen
        self.config = config
        self.errors = []
        self.carrier = Carrier(gen, config.run.time_scale, self.errors, RayActorError)
        self.carrier.wire(self.actors, self.group_of)
        event, self.was_reset = self.was_reset, asyncio.Event()
        event.set()
        return True

    async def _current(self, gen: int) -> bool:
        """Whether a batch sent in seed run `gen` belongs to this actor's; one of a later run
        waits for the reset that brings this actor there (a node group's restarted process
        takes RPCs before the driver has reset it, and handles them as the old one would)."""
        while self.gen is None or gen > self.gen:
            await self.was_reset.wait()
        return gen == self.gen

    def _lateness(self, kind: int) -> Any:
        """A sketch of how late each message of `kind` is handled, model ms, filled from now
        on (`Carrier.late`)."""
        sketch = percentiles.new()
        self.carrier.late[kind] = lambda model_s: sketch.add(model_s * 1000.0)
        return sketch

    def now(self) -> float:
        """Model time; 0 until the run starts."""
        return self.carrier.now() if self.carrier is not None else 0.0

    async def connect(
        self, groups: list[Any], group_of: list[int], replicas: list, pools: list
    ) -> str:
        """Learn every actor (node groups with the group of each node, replicas, client
        pools); returns the Ray node this actor runs on."""
        self.group_of = group_of
        self.actors = {Party.NODES: groups, Party.REPLICA: replicas, Party.CLIENTS: pools}
        if self.carrier is not None:
            self.carrier.wire(self.actors, group_of)
        return ray.get_runtime_context().get_node_id()

    async def deliver(self, gen: int, batch: bytes) -> None:
        """Messages from another actor (pickled, `actors.outbox`), sent in seed run `gen`;
        each is handled when due."""
        if gen != self.gen and not await self._current(gen):
            return
        self.carrier.take(batch)

    async def call(self, gen: int, batch: bytes) -> bytes:
        """RPCs from another actor (pickled, `actors.outbox`), sent in seed run `gen`; the
        reply holds, per item, what handling it sent back."""
        if gen != self.gen and not await self._current(gen):
            return pickle.dumps([[] for _ in pickle.loads(batch)], PROTOCOL)
        return await self.carrier.answer(batch)

    async def start(self, epoch: float) -> None:
        """The run's t = 0 is wall time `epoch` (the driver's choice, the same everywhere)."""
        gc.collect()
        gc.freeze()
        self.carrier.start(epoch)
        self.start_party()
        self.carrier.arm()

    def start_party(self) -> None: ...

    async def settled(self) -> None:
        """Returns once everything sent so far has been handled where it went."""
        await self.carrier.settled()


@ray.remote(num_cpus=0)
class NodeGroup(Host):
    """Node group `index`: nodes `bounds[index]..bounds[index + 1] - 1` of the cluster, each
    with its heartbeats, answering RPCs.

    Ray restarts the actor when its process dies (with the same constructor arguments, so
    nothing of a seed is in them); the new process answers the driver only once the driver
    has reset and connected it again (`Restarted`), and starts as the driver says: as if
    nothing had happened when the run had not begun, else as a restart (`NodeHost.restart`).
    """

    party = Party.NODES

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index
        context = ray.get_runtime_context()
        self.joined = not context.was_current_actor_reconstructed
        self.process = context.get_worker_id()

    async def reset(self, gen: int, config: Config, seed: int, bounds: list[int]) -> None:
        """This group's nodes as they are at t = 0 of `seed` (see `Host._reset`)."""
        if not self._reset(gen, config):
            return
        lo, hi = bounds[self.index], bounds[self.index + 1]
        hosted = scenario.nodes(config, seed)[lo:hi]
        self.host = scenario.node_host(config, seed, hosted, self.carrier)
        self.carrier.set_party(self.host)
        self.lateness = self._lateness(Kind.BEAT)
        """Heartbeat lateness, model ms."""
        self.deaths = 0

    def _joined(self) -> None:
        if not self.joined:
            raise Restarted

    async def connect(
        self, groups: list[Any], group_of: list[int], replicas: list, pools: list
    ) -> str:
        self.joined = True
        return await super().connect(groups, group_of, replicas, pools)

    async def check(self) -> None:
        self.raise_failure()
        self._joined()

    async def life(self) -> str:
        """Which process this is: a new one after each restart."""
        return self.process

    async def sync(self) -> None:
        """The pre-run sync, delivered to every replica before this returns."""
        self._joined()
        self.host.sync(0.0)
        await self.settled()

    async def start(self, epoch: float, deaths: int = 0) -> str:
        """`deaths`: how many of this group's processes died since the run began. Returns
        which process this is (`life`)."""
        self._joined()
        self.deaths = deaths
        await super().start(epoch)
        return self.process

    def start_party(self) -> None:
        if self.deaths:
            self.host.restart(self.now(), self.deaths)
        else:
            self.host.start()

    async def drain(self) -> None:
        """After the run: one last report of every live node, delivered before this returns."""
        self._joined()
        self.carrier.disarm()
        self.host.drain(self.now())
        await self.settled()

    async def truth(self) -> Truth:
        self._joined()
        return self.host.truth()

    async def final(self) -> dict[str, Any]:
        """End state: the nodes' columns, their sandbox IDs, the IDs lost to crashes, the
        faults injected and the sketch of heartbeat lateness (model ms)."""
        self.raise_failure()
        self._joined()
        host = self.host
        return {
            "columns": host.end_state(),
            "sandbox_ids": host.sandbox_ids(),
            "lost_ids": host.lost_ids(),
            "faults": dict(host.faults.counts),
            "lateness": self.lateness,
        }


@ray.remote(num_cpus=0)
class Replica(Host):
    """One scheduler replica."""

    party = Party.REPLICA

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    async def reset(self, gen: int, config: Config, seed: int) -> None:
        """Replica `index` of `seed`: the nodes as they register, its view empty until the
        pre-run sync (`Host._reset`)."""
        if not self._reset(gen, config):
            return
        self.release()
        self.host = scenario.replica(config, seed, self.index, self.carrier)
        self.carrier.set_party(self.host)
        self.round_trips = percentiles.new()
        """Create RPC round trips, model ms."""
        self.late = {
            "report_late": self._lateness(Kind.REPORT),
            "submit_late": self._lateness(Kind.SUBMIT_CREATE),
        }
        """How late reports and submitted creates reached the replica, model ms."""
        ms_per_wall_s = 1000.0 / config.run.time_scale
        self.carrier.round_trip = lambda wall_s: self.round_trips.add(wall_s * ms_per_wall_s)

    async def view(self) -> tuple[list[float], list[int], list[float], list[float]]:
        self.raise_failure()
        return self.host.view(self.now())

    def release(self) -> None:
        """Ends the last seed's session with an external scheduler, if it had one (and stops
        its process): the driver asks when a seed ends, and a reset makes sure."""
        host = getattr(self, "host", None)
        if host is not None:
            scenario.close_replicas([host])

    async def scheduler_names(self) -> list[str]:
        """The name this replica's external scheduler gave itself, if it has one: the seed's
        `scheduler`, as the virtual engine records it."""
        self.raise_failure()
        return scenario.scheduler_names([self.host])

    async def sketches(self) -> dict[str, Any]:
        """What this replica measured of the engine's own delays, in model ms: create RPC
        round trips, and how late reports and submitted creates reached it."""
        self.raise_failure()
        return {"create_rpc": self.round_trips, **self.late}


@ray.remote(num_cpus=0)
class ClientPool(Host):
    """The clients `c % pools == index`."""

    party = Party.CLIENTS

    def __init__(self, index: int, pools: int) -> None:
        super().__init__()
        self.index = index
        self.pools = pools

    async def reset(self, gen: int, config: Config, seed: int) -> None:
        """The clients of this pool in `seed`, none started (`Host._reset`)."""
        if not self._reset(gen, config):
            return
        self.host = scenario.client_host(config, seed, self.index, self.pools, self.carrier)
        self.carrier.set_party(self.host)
        self.strategy = config.placement.strategy
        self.seed = seed

    def start_party(self) -> None:
        self.host.start()

    async def rows(self) -> tuple[Any, bool]:
        """Request rows recorded since the last call (Arrow batches), and whether every client
        of the pool is done. Never raises, so the rows of a run that stops on a failure (see
        `check`) are still collected."""
        rows = table(REQUESTS, self.strategy, self.seed, self.host.log.take())
        return rows.to_batches(), self.carrier.started and self.host.done
