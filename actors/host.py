"""The Ray transport of the protocol: one actor hosts one party and carries its messages.

A party (`harness.protocol`) decides everything; its host only moves messages and keeps time.
Every message carries the model time `at` it is due: the host keeps those not yet due on a heap
and handles them, in (time, arrival) order, on a wall clock (`harness.clock.WallClock`); one
that arrives late is handled at once. A message for another party travels to the actor hosting
its key, coalesced with everything else sent to that actor in the same event-loop turn
(`actors.outbox`). RPCs to the node side travel as calls: what handling them sends back (the
answers) returns in the call's reply, one Ray call per batch both ways, as a real RPC would.

Actors outlive a seed: the driver builds them once per run and `reset`s them for each seed,
which rebuilds the party from the new (config, seed) and forgets everything of the last one.
Every batch carries the generation (the seed run) it was sent in: a host drops a batch of an
earlier one (a message still in flight when its seed ended never reaches the next) and holds
one of a later one until the driver has reset it (a node group's process that Ray restarted).
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import itertools
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any

import ray

from actors.outbox import PROTOCOL, Checked, Outbox
from harness import scenario, sketch
from harness.clock import WallClock
from harness.config import Config
from harness.protocol import IS_TIMER, PARTY, Handler, Kind, Party
from harness.protocol.nodes import died
from harness.schemas import REQUESTS, table

Message = tuple[float, int, int, Any]
"""(at, kind, key, payload)."""
PARTIES = tuple(PARTY[kind] for kind in range(len(IS_TIMER)))
"""`PARTY` as a table indexed by kind (the hot path's form)."""
Entry = tuple[float, int, int, int, Any, Any]
"""(at, arrival number, kind, key, payload, call) on a host's heap; `call` is None, or the
reply list and the completion callback of a call's item."""


GC_THRESHOLDS = (20_000, 20, 100)
"""The collector's thresholds in an actor's process. Handling a message allocates a few tuples;
at CPython's default (a young collection every 700 allocations) a busy replica spent some 15%
of its time collecting (py-spy), far more than anything kept cycles. The structures a seed
builds are frozen at its start (`gc.freeze`), so the rarer full collections skip them."""


class Restarted(Exception):
    """Raised by a node group's new process (Ray restarted it after the old one died) to the
    driver's queries until the driver has connected it again: its nodes are fresh and have not
    crashed yet, so nothing they say is true of the run."""


BEAT_TICK_S = 0.01
"""A node group wakes for heartbeats at most this often (wall seconds). With 10,000 staggered
nodes a beat falls due every few microseconds, and one Ray call per report would swamp the
schedulers; beats due within one tick are handled together, at most this much late (and the
lateness is measured)."""


class Carrier:
    """One host's hot path for one seed run: its agenda (the heap and the wake-up), the
    dispatch to the party's handlers and the outboxes to other actors.

    A plain class, not part of the actor: Ray wraps every method of an actor class for tracing
    (a Python frame with `*args` and `**kwargs` around each call, tracing on or not), and these
    methods run several times per message (py-spy: the wrappers took some 7% of a busy
    replica's time on their own)."""

    def __init__(self, gen: int, config: Config, errors: list[BaseException]) -> None:
        self.gen = gen
        """The seed run this carrier serves: sent with every batch."""
        self.errors = errors
        self.clock = WallClock(0.0, config.run.time_scale)
        self.heap: list[Entry] = []
        self.seq = itertools.count()
        self.actors: dict[Party, list[Any]] = {}
        self.group_of: list[int] = []
        self.boxes: tuple[dict[int, Outbox], ...] = tuple({} for _ in Party)
        """The outboxes to other actors, by party, then index (the hot path's lookup)."""
        self.wake: asyncio.TimerHandle | None = None
        self.wake_at = float("inf")
        self.calls: set[asyncio.Future] = set()
        """Calls from other actors waiting for their items to be handled."""
        self.reply: list[Message] | None = None
        """Where messages go while a call's message is handled: back in its reply."""
        self.started = False
        self.last_beat = float("-inf")
        self.handlers: list[Handler | None] = []
        self.round_trip: Callable[[float], None] | None = None
        """Takes the wall seconds from each create RPC to its reply (replicas keep them)."""
        self.beat_late: Callable[[float], None] | None = None
        """Takes how late each heartbeat was handled, model seconds (node groups keep it)."""

    def wire(self, actors: dict[Party, list[Any]], group_of: list[int]) -> None:
        """The actors messages go to (`Host.connect`); outboxes to earlier ones are dropped."""
        self.actors = actors
        self.group_of = group_of
        self.boxes = tuple({} for _ in Party)

    def close(self) -> None:
        """The seed run is over: nothing more is sent or handled (outboxes closed, waiting
        calls answered, the wake-up cancelled)."""
        for box in self._outboxes():
            box.close()
        for done in self.calls:
            if not done.done():
                done.set_result(None)
        if self.wake is not None:
            self.wake.cancel()

    def now(self) -> float:
        """Model time; 0 until the run starts (the pre-run sync happens at t = 0)."""
        return self.clock.now() if self.started else 0.0

    def set_party(self, handlers: dict[int, Handler]) -> None:
        """The party's handlers, as a table indexed by kind (the dispatch of every message)."""
        self.handlers = [handlers.get(kind) for kind in range(len(IS_TIMER))]

    def start(self, epoch: float) -> None:
        """The run's t = 0 is wall time `epoch`: model time runs from here."""
        self.clock = WallClock(epoch, self.clock.scale)
        self.started = True

    def _outboxes(self) -> list[Outbox]:
        return [box for boxes in self.boxes for box in boxes.values()]

    def _outbox(self, party: Party, index: int) -> Outbox:
        """A new outbox to actor `index` of `party` (`emit` looks up the ones made)."""
        actor = self.actors[party][index]
        if party is Party.NODES:
            # A node group whose process died answers every RPC in flight as failed: its
            # nodes crashed with it (the driver has Ray restart it, empty).
            box = Outbox(
                actor.call,
                self.gen,
                self.errors,
                lambda m: (died(m[1], m[3], m[0]),),
                self._answered,
            )
        else:
            box = Outbox(actor.deliver, self.gen, self.errors)
        self.boxes[party][index] = box
        return box

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        """The party's sink (`harness.protocol`): a timer waits on the heap; a message for
        another party goes into the outbox of the actor hosting its key, or into the reply
        while a call's item is handled."""
        if IS_TIMER[kind]:
            heapq.heappush(self.heap, (at, next(self.seq), kind, key, payload, None))
            return
        if self.reply is not None:
            self.reply.append((at, kind, key, payload))
            return
        party = PARTIES[kind]
        if party is Party.NODES:
            index = self.group_of[key]
        elif party is Party.REPLICA:
            index = key
        else:
            index = key % len(self.actors[party])
        box = self.boxes[party].get(index) or self._outbox(party, index)
        if party is Party.NODES:
            # A create's send time comes back with its answer: the round trip is measured.
            sent = time.perf_counter() if kind == Kind.CREATE_RPC else None
            box.call((at, kind, key, payload), sent)
        else:
            box.post((at, kind, key, payload))

    def _answered(self, sent: list[Any], answers: Sequence[Sequence[Message]]) -> None:
        """The reply of a call: per item, its send time (a create's, else None) and the
        messages its handling sent, for this party (`arrived`)."""
        back = time.perf_counter()
        round_trip = self.round_trip
        seq = self.seq
        entries = []
        for at_send, messages in zip(sent, answers, strict=True):
            if at_send is not None and round_trip is not None:
                round_trip(back - at_send)
            for at, kind, key, payload in messages:
                entries.append((at, next(seq), kind, key, payload, None))
        self.arrived(entries)

    def take(self, batch: bytes) -> None:
        """Messages from another actor (pickled, `actors.outbox`): each handled when due."""
        seq = self.seq
        self.arrived(
            [
                (at, next(seq), kind, key, payload, None)
                for at, kind, key, payload in pickle.loads(batch)
            ]
        )

    def arrived(self, entries: list[Entry]) -> None:
        """Messages that have just arrived, as heap entries numbered in arrival order: those
        due are handled at once, those not yet due wait on the heap. Most arrive due (a Ray
        hop takes longer than a modelled leg), so they skip the heap's push and pop; the order
        is the heap's all the same, (time, arrival), merged with any entry on it that is due
        earlier (or that handling one of them pushes)."""
        now = self.now()
        heap, handlers = self.heap, self.handlers
        due = []
        for entry in entries:
            if entry[0] <= now:
                due.append(entry)
            else:
                heapq.heappush(heap, entry)
        due.sort()  # by (at, arrival): the numbers are unique, so payloads are never compared
        for entry in due:
            while heap and heap[0] < entry:
                self._handle(heapq.heappop(heap), now)
            if entry[5] is None and entry[2] != Kind.BEAT:
                handlers[entry[2]](entry[3], entry[4], now)
            else:
                self._handle(entry, now)
        self.run()

    async def answer(self, batch: bytes) -> bytes:
        """RPCs from another actor (pickled): the reply holds, per item, what handling it sent
        back."""
        items: list[Message] = pickle.loads(batch)
        replies: list[list[Message]] = [[] for _ in items]
        left = [len(items)]
        done = asyncio.get_running_loop().create_future()
        self.calls.add(done)

        def finished() -> None:
            left[0] -= 1
            if left[0] == 0:
                done.set_result(None)

        seq = self.seq
        self.arrived(
            [
                (at, next(seq), kind, key, payload, (replied, finished))
                for (at, kind, key, payload), replied in zip(items, replies, strict=True)
            ]
        )
        try:
            await done
        finally:
            self.calls.discard(done)
        return pickle.dumps(replies, PROTOCOL)

    def arm(self) -> None:
        """The wake-up for the first message on the heap, unless one is set for that time."""
        heap = self.heap
        at = heap[0][0] if heap else float("inf")
        if heap and heap[0][2] == Kind.BEAT:
            at = max(at, self.last_beat + BEAT_TICK_S / self.clock.scale)
        if self.wake is not None:
            if at == self.wake_at:
                return
            self.wake.cancel()
        self.wake_at = at
        if at < float("inf"):
            delay = max(0.0, (at - self.now()) * self.clock.scale)
            self.wake = asyncio.get_running_loop().call_later(delay, self._woken)
        else:
            self.wake = None

    def _woken(self) -> None:
        self.wake = None
        self.run()

    def run(self) -> None:
        """Handle every message due by now, in (time, arrival) order."""
        heap, handlers = self.heap, self.handlers
        now = self.now()
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if entry[5] is None and entry[2] != Kind.BEAT:
                handlers[entry[2]](entry[3], entry[4], now)
            else:
                self._handle(entry, now)
        self.arm()

    def _handle(self, entry: Entry, now: float) -> None:
        """One entry due by `now`, heartbeats and calls included."""
        at, _, kind, key, payload, call = entry
        if kind == Kind.BEAT:
            if self.beat_late is not None:
                self.beat_late(now - at)
            self.last_beat = now
        if call is None:
            self.handlers[kind](key, payload, now)
            return
        replies, finished = call
        self.reply = replies
        try:
            self.handlers[kind](key, payload, now)
        finally:
            self.reply = None
        finished()

    async def settled(self) -> None:
        """Returns once everything sent so far has been handled where it went."""
        await asyncio.gather(*(box.settled() for box in self._outboxes()))


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
        self.carrier = Carrier(gen, config, self.errors)
        self.carrier.wire(self.actors, self.group_of)
        self.emit = self.carrier.emit
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
        self.host = scenario.node_host(config, seed, hosted, self.emit)
        self.carrier.set_party(self.host.handlers())
        self.lateness = sketch.new()
        """Heartbeat lateness, model ms."""
        self.carrier.beat_late = lambda model_s: self.lateness.add(model_s * 1000.0)
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
        carrier = self.carrier
        if carrier.wake is not None:
            carrier.wake.cancel()
            carrier.wake = None
        self.host.drain(self.now())
        await self.settled()

    async def truth(self) -> tuple[list[float], list[int]]:
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
        self.host = scenario.replica_host(config, seed, self.index, self.emit)
        self.carrier.set_party(self.host.handlers())
        self.round_trips = sketch.new()
        """Create RPC round trips, model ms."""
        ms_per_wall_s = 1000.0 / config.run.time_scale
        self.carrier.round_trip = lambda wall_s: self.round_trips.add(wall_s * ms_per_wall_s)

    async def view(self) -> tuple[list[float], list[int], list[float], list[float]]:
        self.raise_failure()
        return self.host.view(self.now())

    async def rpc_times(self) -> Any:
        """The sketch of create RPC round trips as this replica saw them, in model ms."""
        self.raise_failure()
        return self.round_trips


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
        self.host = scenario.client_host(config, seed, self.index, self.pools, self.emit)
        self.carrier.set_party(self.host.handlers())
        self.strategy = config.placement.strategy
        self.seed = seed

    def start_party(self) -> None:
        self.host.start()

    async def rows(self) -> tuple[Any, bool]:
        """Request rows recorded since the last call (Arrow batches), and whether every client
        of the pool is done. Never raises, so the rows of a run that stops on a failure (see
        `check`) are still collected."""
        rows = table(REQUESTS, self.strategy, self.seed, self.host.log.take())
        carrier = self.carrier
        done = carrier.started and not carrier.heap and not self.host.waiting
        return rows.to_batches(), done
