"""A Ray host's hot path: its agenda, the delivery to its party and its outboxes.

Every message carries the model time `at` it is due: the carrier keeps its timers and every
message that arrives on the model's event queue (`harness.model.event_queue.EventQueue`, in the
order the virtual engine keeps) and advances the queue on a wall clock
(`actors.wall_clock.WallClock`): each message is handled when the clock reaches its
time, and one that arrives late at once. A message for another party goes into the outbox of
the actor hosting its key (`actors.outbox`); while an RPC's item is handled, into its reply.

Compiled with mypyc like the model's hot modules (setup.py), so it imports no Ray: the actor
module (`actors.host`) hands it the actors, their methods and the exception a dead one raises.
It moves messages and keeps time only; what each message does is the party's (the model's).
"""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, final

from actors.outbox import PROTOCOL, Outbox
from actors.wall_clock import WallClock
from harness.model.event_queue import EventQueue, Recipient, Sink
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
class Item:
    """An RPC item on a host's agenda, in its payload's place: the payload, and the call it
    belongs to (its reply is `call.replies[index]`)."""

    __slots__ = ("call", "index", "payload")

    def __init__(self, call: Call, index: int, payload: Any) -> None:
        self.call = call
        self.index = index
        self.payload = payload


class Carrier(Sink):
    """One host's hot path for one seed run: its agenda (the queue and the wake-up), the
    delivery to its party and the outboxes to other actors; the party's sink.

    A plain class, not part of the actor: Ray wraps every method of an actor class for tracing
    (a Python frame with `*args` and `**kwargs` around each call, tracing on or not), and these
    methods run several times per message (docs/performance.md, "Figures behind the code")."""

    def __init__(
        self, gen: int, scale: float, errors: list[BaseException], dead: type[BaseException]
    ) -> None:
        self.gen = gen
        """The seed run this carrier serves: sent with every batch."""
        self.errors = errors
        self.dead = dead
        """What a call to an actor that died raises (Ray's `RayActorError`)."""
        self.clock = WallClock(0.0, scale)
        self.agenda = EventQueue()
        """Timers and messages that have arrived, until handled."""
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
        self.late: list[Callable[[float], None] | None] = [None] * len(_IS_TIMER)
        """Per kind, what takes how late each message of that kind was handled, model seconds
        (None: not measured): a heartbeat on a node group, a report or a submitted create on a
        replica. Each is a modelled event the engine moved later, judged by the time keeping
        (`harness.results.time_keeping`)."""

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
        self.clock = WallClock(epoch, self.clock.scale, self.clock.source)
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
        """The party's sink (`harness.model.protocol`): a timer waits on the agenda; a message for
        another party goes into the outbox of the actor hosting its key, or into the reply
        while a call's item is handled."""
        if _IS_TIMER[kind]:
            self.agenda.at(at, kind, key, payload)
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
        self.arrived(messages_back, None)

    def take(self, batch: bytes) -> None:
        """Messages from another actor (pickled, `actors.outbox`): each handled when due."""
        self.arrived(pickle.loads(batch), None)

    def arrived(self, messages: list[Any], call: Call | None) -> None:
        """`Message`s that have just arrived, onto the agenda in arrival order (items of `call`
        with their place in its reply); then every message due is handled. Most arrive due (a
        Ray hop takes longer than a modelled leg)."""
        agenda = self.agenda
        for index, (at, kind, key, payload) in enumerate(messages):
            agenda.at(at, kind, key, payload if call is None else Item(call, index, payload))
        self.run()

    async def answer(self, batch: bytes) -> bytes:
        """RPCs from another actor (pickled): the reply holds, per item, what handling it sent
        back."""
        items: list[Any] = pickle.loads(batch)  # Messages, unboxed only where needed
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        call = Call(len(items), done)
        self.calls.add(done)
        self.arrived(items, call)
        try:
            await done
        finally:
            self.calls.discard(done)
        return pickle.dumps(call.replies, PROTOCOL)

    def arm(self) -> None:
        """The wake-up for the first message on the agenda, unless one is set for that time."""
        at, kind = self.agenda.head()
        if kind == Kind.BEAT:
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
        """No wake-up: nothing on the agenda is handled until something arrives (or `arm`)."""
        if self.wake is not None:
            self.wake.cancel()
            self.wake = None

    def _woken(self) -> None:
        self.wake = None
        self.run()

    def run(self) -> None:
        """The agenda's time advanced to the wall clock's: every message due by now is
        handled, in the queue's order, at now."""
        agenda = self.agenda
        now = agenda.time = self.now()
        while agenda.head()[0] <= now:
            at, kind, key, payload = agenda.pop()
            self._handle(at, kind, key, payload, now)
        self.arm()

    def _handle(self, at: float, kind: int, key: int, payload: Any, now: float) -> None:
        """One message due at `at`, handled at `now`: delivered, with its lateness taken where
        measured and an RPC item's replies collected."""
        late = self.late[kind]
        if late is not None:
            late(now - at)
        if kind == Kind.BEAT:
            self.last_beat = now
        if not isinstance(payload, Item):
            self.party.deliver(kind, key, payload, now)
            return
        call = payload.call
        self.reply = call.replies[payload.index]
        try:
            self.party.deliver(kind, key, payload.payload, now)
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
