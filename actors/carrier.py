"""A Ray host's hot path: its agenda, the delivery to its party and its outboxes.

Every message carries the model time `at` it is due: the carrier keeps those not yet due on a
heap and handles them, in (time, arrival) order, on a wall clock
(`harness.model.event_queue.WallClock`);
one that arrives late is handled at once. A message for another party goes into the outbox of
the actor hosting its key (`actors.outbox`); while an RPC's item is handled, into its reply.

Compiled with mypyc like the model's hot modules (setup.py), so it imports no Ray: the actor
module (`actors.host`) hands it the actors, their methods and the exception a dead one raises.
It moves messages and keeps time only; what each message does is the party's (the model's).
"""

from __future__ import annotations

import asyncio
import heapq
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, final

from actors.outbox import PROTOCOL, Outbox
from harness.model.event_queue import Recipient, Sink, WallClock
from harness.model.protocol import IS_TIMER, PARTY, Kind, Party
from harness.model.protocol.node_party import died

Message = tuple[float, int, int, Any]
"""(at, kind, key, payload), as messages travel."""

_IS_TIMER: Final = IS_TIMER
_PARTIES: Final = tuple(int(PARTY[kind]) for kind in range(len(IS_TIMER)))
"""`PARTY` as a table of party numbers indexed by kind (the hot path's form)."""
_NODES: Final = int(Party.NODES)
_REPLICA: Final = int(Party.REPLICA)
_INF: Final = float("inf")

BEAT_TICK_S: Final = 0.01
"""A node group wakes for heartbeats at most this often (wall seconds). With 10,000 staggered
nodes a beat falls due every few microseconds, and one Ray call per report would swamp the
schedulers; beats due within one tick are handled together, at most this much late (and the
lateness is measured)."""


@final
class Call:
    """The items of one RPC batch (`Carrier.answer`): what handling each sent back, and the
    future the call waits on until every item has been handled."""

    def __init__(self, items: int, done: asyncio.Future[None]) -> None:
        self.replies: list[list[Message]] = [[] for _ in range(items)]
        self.left = items
        self.done = done

    def finished(self) -> None:
        """One more item has been handled."""
        self.left -= 1
        if self.left == 0:
            self.done.set_result(None)


@final
class Entry:
    """A message on a host's agenda: ordered by time, then by arrival (`seq`). `call` is the
    RPC batch an item belongs to (its reply is `call.replies[index]`), or None. Typed, so the
    heap compares two fields directly rather than two tuples."""

    __slots__ = ("at", "call", "index", "key", "kind", "payload", "seq")

    def __init__(
        self, at: float, seq: int, kind: int, key: Any, payload: Any, call: Call | None, index: int
    ) -> None:
        self.at = at
        self.seq = seq
        self.kind = kind
        self.key = key
        self.payload = payload
        self.call = call
        self.index = index

    def __lt__(self, other: Entry) -> bool:
        return self.at < other.at or (self.at == other.at and self.seq < other.seq)


class Carrier(Sink):
    """One host's hot path for one seed run: its agenda (the heap and the wake-up), the
    delivery to its party and the outboxes to other actors; the party's sink.

    A plain class, not part of the actor: Ray wraps every method of an actor class for tracing
    (a Python frame with `*args` and `**kwargs` around each call, tracing on or not), and these
    methods run several times per message (py-spy: the wrappers took some 7% of a busy
    replica's time on their own)."""

    def __init__(
        self, gen: int, scale: float, errors: list[BaseException], dead: type[BaseException]
    ) -> None:
        self.gen = gen
        """The seed run this carrier serves: sent with every batch."""
        self.errors = errors
        self.dead = dead
        """What a call to an actor that died raises (Ray's `RayActorError`)."""
        self.clock = WallClock(0.0, scale)
        self.heap: list[Entry] = []
        self.seq = 0
        """The last arrival number given."""
        self.actors: list[list[Any]] = [[] for _ in Party]
        """The actors of each party, indexed by party number."""
        self.group_of: list[int] = []
        self.boxes: tuple[dict[int, Outbox], ...] = tuple({} for _ in Party)
        """The outboxes to other actors, by party, then index (the hot path's lookup)."""
        self.wake: asyncio.TimerHandle | None = None
        self.wake_at = _INF
        self.calls: set[asyncio.Future[None]] = set()
        """Calls from other actors waiting for their items to be handled."""
        self.reply: list[Message] | None = None
        """Where messages go while a call's message is handled: back in its reply."""
        self.started = False
        self.last_beat = -_INF
        self.party: Recipient = Recipient()
        """Who this host's messages are delivered to (`set_party`)."""
        self.round_trip: Callable[[float], None] | None = None
        """Takes the wall seconds from each create RPC to its reply (replicas keep them)."""
        self.beat_late: Callable[[float], None] | None = None
        """Takes how late each heartbeat was handled, model seconds (node groups keep it)."""

    def wire(self, actors: dict[Party, list[Any]], group_of: list[int]) -> None:
        """The actors messages go to (`Host.connect`); outboxes to earlier ones are dropped."""
        self.actors = [actors.get(party, []) for party in Party]
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
        self.disarm()

    def now(self) -> float:
        """Model time; 0 until the run starts (the pre-run sync happens at t = 0)."""
        return self.clock.now() if self.started else 0.0

    def set_party(self, party: Recipient) -> None:
        """The party this host runs: every message is delivered to it."""
        self.party = party

    def start(self, epoch: float) -> None:
        """The run's t = 0 is wall time `epoch`: model time runs from here."""
        self.clock = WallClock(epoch, self.clock.scale)
        self.started = True

    def _outboxes(self) -> list[Outbox]:
        return [box for boxes in self.boxes for box in boxes.values()]

    def _outbox(self, party: int, index: int) -> Outbox:
        """A new outbox to actor `index` of `party` (`emit` looks up the ones made)."""
        actor = self.actors[party][index]
        if party == _NODES:
            # A node group whose process died answers every RPC in flight as failed: its
            # nodes crashed with it (the driver has Ray restart it, empty).
            box = Outbox(actor.call, self.gen, self.errors, (self.dead, _died), self._answered)
        else:
            box = Outbox(actor.deliver, self.gen, self.errors)
        self.boxes[party][index] = box
        return box

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        """The party's sink (`harness.model.protocol`): a timer waits on the heap; a message for
        another party goes into the outbox of the actor hosting its key, or into the reply
        while a call's item is handled."""
        if _IS_TIMER[kind]:
            self.seq += 1
            heapq.heappush(self.heap, Entry(at, self.seq, kind, key, payload, None, 0))
            return
        reply = self.reply
        if reply is not None:
            reply.append((at, kind, key, payload))
            return
        party = _PARTIES[kind]
        if party == _NODES:
            index = self.group_of[key]
        elif party == _REPLICA:
            index = key
        else:
            index = key % len(self.actors[party])
        box = self.boxes[party].get(index)
        if box is None:
            box = self._outbox(party, index)
        if party == _NODES:
            # A create's send time comes back with its answer: the round trip is measured.
            sent = time.perf_counter() if kind == Kind.CREATE_RPC else None
            box.call((at, kind, key, payload), sent)
        else:
            box.post((at, kind, key, payload))

    def _answered(self, sent: list[Any], answers: Sequence[Any]) -> None:
        """The reply of a call: per item, its send time (a create's, else None) and the
        messages its handling sent (`Message`s), for this party (`arrived`)."""
        back = time.perf_counter()
        round_trip = self.round_trip
        messages_back: list[Any] = []
        for at_send, messages in zip(sent, answers, strict=True):
            if at_send is not None and round_trip is not None:
                round_trip(back - at_send)
            messages_back.extend(messages)
        self.arrived(self._entries(messages_back, None))

    def take(self, batch: bytes) -> None:
        """Messages from another actor (pickled, `actors.outbox`): each handled when due."""
        self.arrived(self._entries(pickle.loads(batch), None))

    def _entries(self, messages: list[Any], call: Call | None) -> list[Entry]:
        """`Message`s that have just arrived as heap entries, numbered in arrival order; items
        of `call` know their place in its reply."""
        entries: list[Entry] = []
        seq = self.seq
        for index, (at, kind, key, payload) in enumerate(messages):
            seq += 1
            entries.append(Entry(at, seq, kind, key, payload, call, index))
        self.seq = seq
        return entries

    def arrived(self, entries: list[Entry]) -> None:
        """Messages that have just arrived, as heap entries numbered in arrival order: those
        due are handled at once, those not yet due wait on the heap. Most arrive due (a Ray
        hop takes longer than a modelled leg), so they skip the heap's push and pop; the order
        is the heap's all the same, (time, arrival), merged with any entry on it that is due
        earlier (or that handling one of them pushes)."""
        now = self.now()
        heap, party = self.heap, self.party
        due: list[Entry] = []
        for entry in entries:
            if entry.at <= now:
                due.append(entry)
            else:
                heapq.heappush(heap, entry)
        due.sort()
        for entry in due:
            while heap and heap[0] < entry:
                self._handle(heapq.heappop(heap), now)
            if entry.call is None and entry.kind != Kind.BEAT:  # `_handle`'s plain case, inline
                party.deliver(entry.kind, entry.key, entry.payload, now)
            else:
                self._handle(entry, now)
        self.run()

    async def answer(self, batch: bytes) -> bytes:
        """RPCs from another actor (pickled): the reply holds, per item, what handling it sent
        back."""
        items: list[Any] = pickle.loads(batch)  # Messages, unboxed only where needed
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        call = Call(len(items), done)
        self.calls.add(done)
        self.arrived(self._entries(items, call))
        try:
            await done
        finally:
            self.calls.discard(done)
        return pickle.dumps(call.replies, PROTOCOL)

    def arm(self) -> None:
        """The wake-up for the first message on the heap, unless one is set for that time."""
        heap = self.heap
        at = heap[0].at if heap else _INF
        if heap and heap[0].kind == Kind.BEAT:
            at = max(at, self.last_beat + BEAT_TICK_S / self.clock.scale)
        if self.wake is not None:
            if at == self.wake_at:
                return
            self.wake.cancel()
        self.wake_at = at
        if at < _INF:
            delay = max(0.0, (at - self.now()) * self.clock.scale)
            self.wake = asyncio.get_running_loop().call_later(delay, self._woken)
        else:
            self.wake = None

    def disarm(self) -> None:
        """No wake-up: nothing on the heap is handled until something arrives (or `arm`)."""
        if self.wake is not None:
            self.wake.cancel()
            self.wake = None

    def _woken(self) -> None:
        self.wake = None
        self.run()

    def run(self) -> None:
        """Handle every message due by now, in (time, arrival) order."""
        heap, party = self.heap, self.party
        now = self.now()
        while heap and heap[0].at <= now:
            entry = heapq.heappop(heap)
            if entry.call is None and entry.kind != Kind.BEAT:  # as in `arrived`
                party.deliver(entry.kind, entry.key, entry.payload, now)
            else:
                self._handle(entry, now)
        self.arm()

    def _handle(self, entry: Entry, now: float) -> None:
        """One entry due by `now`: delivered, with a heartbeat's lateness taken and a call's
        replies collected. `arrived` and `run` handle a plain message (no call, no beat) inline:
        calling this for every one cost 6% more instructions per pair (callgrind, the hosts
        in one process)."""
        kind = entry.kind
        if kind == Kind.BEAT:
            if self.beat_late is not None:
                self.beat_late(now - entry.at)
            self.last_beat = now
        call = entry.call
        if call is None:
            self.party.deliver(kind, entry.key, entry.payload, now)
            return
        self.reply = call.replies[entry.index]
        try:
            self.party.deliver(kind, entry.key, entry.payload, now)
        finally:
            self.reply = None
        call.finished()

    async def settled(self) -> None:
        """Returns once everything sent so far has been handled where it went."""
        await asyncio.gather(*(box.settled() for box in self._outboxes()))


def _died(item: Message) -> tuple[Message]:
    """What an RPC's handling sends back when the node group died before answering: the
    failed answer (`harness.model.protocol.node_party.died`)."""
    at, kind, _, payload = item
    return (died(kind, payload, at),)
