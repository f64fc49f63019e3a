"""Time, as one explicit abstraction: the model takes `now` as an argument, engines own a clock.

`EventQueue` is the one discrete-event queue for the protocol's messages, in the virtual engine
and on every Ray host. Its order is the whole of its rules: by time, and at one instant in the
order they were scheduled (first in, first out), which is what makes a seeded run repeatable to
the bit. Two clocks advance it. The virtual engine's jumps from one message to the next
(`EventQueue.run`); a Ray host's carrier (`actors.carrier`) reads a wall clock
(`actors.wall_clock`, outside the model, which reads no clock) and handles every message due
by then (`EventQueue.pop`), as simpy's `RealtimeEnvironment` is its
`Environment` with only the advance of time changed.

`Sink` and `Recipient` are a message's two ends: a party sends through its engine's sink and is
handed each message as a recipient. The queue and the Ray hosts' carrier are sinks.

The queue is written for the compiled path (README, "Compiled hot path") and runs unchanged as
plain Python. Its heaps are native vectors: each message's time and slot. A message's sequence
number, kind, key and payload stay in its slot, which the heaps never move (the sequence number
is read only when two times tie), so keeping order compares and moves plain numbers and never
touches a message's objects (at 10,000 nodes a heap of tuples spent most of its time waiting for
them to come from memory, and compiled, each comparison of two tuples is a generic call).
`tests/model/test_event_queue.py` states the rules; it runs on both build paths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, final

from librt.vecs import append, pop, vec
from mypy_extensions import i64, mypyc_attr


@mypyc_attr(allow_interpreted_subclasses=True)
class Sink:
    """Where a party sends a message: `emit(at, kind, key, payload)` (see `harness.model.protocol`).
    An engine's transport is one. A class rather than a callable: compiled, a party's call of
    `emit` is then a direct native call, with `at` and `key` unboxed, not a generic call of a
    bound method (some 5 per create)."""

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        raise NotImplementedError


@mypyc_attr(allow_interpreted_subclasses=True)
class Recipient:
    """What a message is delivered to: `deliver(kind, key, payload, now)`. Each party is one
    and dispatches on `kind` itself, so a transport makes one native call per message, not a
    generic call of a handler looked up in a table."""

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        raise NotImplementedError


NEAR_S: Final = 1.0
"""Messages due within this many seconds of the queue's time wait on a small heap of their own,
later ones (a lifetime's kill, a node's next beat) on a large one. Most messages are RPC legs due
in milliseconds, and each push or pop costs comparisons in proportion to the log of its heap's
size. The order is the same with any split: the next message is the earlier of the two heads."""

_INF: Final = float("inf")


@final
class _Heap:
    """Slots ordered by (time, sequence number): the times and slots are parallel vectors, and
    `seq` (the queue's, by slot) breaks a tie."""

    __slots__ = ("at", "slot")

    def __init__(self) -> None:
        self.at = vec[float]()
        self.slot = vec[i64]()

    def before(self, other: _Heap, seq: vec[i64]) -> bool:
        """Whether this heap's first message is due before `other`'s (both non-empty)."""
        t, u = self.at[0], other.at[0]
        return t < u or (t == u and seq[self.slot[0]] < seq[other.slot[0]])

    def push(self, t: float, slot: i64, seq: vec[i64]) -> None:
        at = self.at = append(self.at, t)
        slots = self.slot = append(self.slot, slot)
        _sift_up(at, slots, seq, len(at) - 1, t, slot)

    def pop(self, seq: vec[i64]) -> i64:
        """The first message's slot, taken off the heap. As `heapq.heappop`: the hole left at
        the top goes down to a leaf along the earlier child, and the last entry comes up into
        it from there."""
        top = self.slot[0]
        at, t = pop(self.at)
        slots, slot = pop(self.slot)
        self.at, self.slot = at, slots
        n = len(at)
        if n == 0:
            return top
        pos: i64 = 0
        child: i64 = 1
        while child < n:
            right = child + 1
            if right < n:
                a, b = at[right], at[child]
                if a < b or (a == b and seq[slots[right]] < seq[slots[child]]):
                    child = right
            at[pos] = at[child]
            slots[pos] = slots[child]
            pos = child
            child = 2 * pos + 1
        _sift_up(at, slots, seq, pos, t, slot)
        return top


def _sift_up(at: vec[float], slots: vec[i64], seq: vec[i64], pos: i64, t: float, slot: i64) -> None:
    """(t, slot) into the hole at `pos`, moved up past every parent due after it."""
    s = seq[slot]
    while pos > 0:
        up = (pos - 1) >> 1
        u = at[up]
        if t < u or (t == u and s < seq[slots[up]]):
            at[pos] = u
            slots[pos] = slots[up]
            pos = up
        else:
            break
    at[pos] = t
    slots[pos] = slot


class EventQueue(Sink):
    """Messages in time order, and at one instant in the order they were scheduled.

    As the parties' sink (the virtual engine's) it delivers a message due now to its recipient
    at once, a hop of zero latency taken depth first as a direct call would be, unless
    `waits[kind]` (a timer, which always takes its turn on the queue); any other it schedules.
    `recipients[kind]` is who handles each kind of message; the engine fills it once the
    parties, which take this queue as their sink, are made. `time` is the queue's present:
    `run` moves it to each message's time; a Ray host sets it from its wall clock."""

    def __init__(self, waits: Sequence[bool] = ()) -> None:
        self.time = 0.0
        """The current time (what `now()` returns), readable without a call on hot paths."""
        self.waits = list(waits)
        self.recipients: list[Recipient] = []
        self._near = _Heap()
        self._far = _Heap()
        self._seq: i64 = 0
        self._kind = vec[i64]()
        self._key = vec[i64]()
        self._seqs = vec[i64]()
        """Each slot's sequence number."""
        self._payload: list[Any] = []
        """Each slot's payload (with `_kind`, `_key` and `_seqs`, its message); a slot is used
        again once its message is taken off."""
        self._free = vec[i64]()
        """Slots free for `at`."""

    def now(self) -> float:
        return self.time

    def __len__(self) -> int:
        """How many messages wait."""
        return len(self._near.at) + len(self._far.at)

    def at(self, t: float, kind: int, key: int, payload: Any) -> None:
        """Schedule a message (`kind`, `key`, `payload`) for time `t`: after every message
        scheduled before it for `t` or earlier."""
        self._seq += 1
        if len(self._free):
            self._free, slot = pop(self._free)
            self._kind[slot] = kind
            self._key[slot] = key
            self._seqs[slot] = self._seq
            self._payload[slot] = payload
        else:
            slot = len(self._kind)
            self._kind = append(self._kind, kind)
            self._key = append(self._key, key)
            self._seqs = append(self._seqs, self._seq)
            self._payload.append(payload)
        (self._near if t < self.time + NEAR_S else self._far).push(t, slot, self._seqs)

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        if at <= self.time and not self.waits[kind]:
            self.recipients[kind].deliver(kind, key, payload, at)
        else:
            self.at(at, kind, key, payload)

    def _first(self) -> _Heap | None:
        """The heap whose head is the first message, None when none waits."""
        near, far = self._near, self._far
        if len(near.at):
            return far if len(far.at) and far.before(near, self._seqs) else near
        return far if len(far.at) else None

    def _take(self, heap: _Heap) -> i64:
        """`heap`'s first message's slot, taken off and freed (its payload is read first)."""
        slot = heap.pop(self._seqs)
        self._free = append(self._free, slot)
        return slot

    def head(self) -> tuple[float, int]:
        """The first message's time and kind; (infinity, -1) when none waits."""
        heap = self._first()
        if heap is None:
            return _INF, -1
        return heap.at[0], self._kind[heap.slot[0]]

    def pop(self) -> tuple[float, int, int, Any]:
        """The first message, (at, kind, key, payload), taken off the queue (one must wait)."""
        heap = self._first()
        assert heap is not None, "pop from an empty EventQueue"
        t = heap.at[0]
        slot = self._take(heap)
        payload = self._payload[slot]
        self._payload[slot] = None
        return t, self._kind[slot], self._key[slot], payload

    def run(self, progress: Callable[[float], None] | None = None, every: int = 8192) -> None:
        """Virtual time: deliver every message, each to `recipients[kind]` at its own time,
        until none is left; `progress(now)` is called every `every` messages."""
        recipients, payloads = self.recipients, self._payload
        n = 0
        while True:
            heap = self._first()
            if heap is None:
                break
            t = heap.at[0]
            slot = self._take(heap)
            self.time = t
            kind = self._kind[slot]
            payload = payloads[slot]
            payloads[slot] = None
            recipients[kind].deliver(kind, self._key[slot], payload, t)
            n += 1
            if progress is not None and n % every == 0:
                progress(t)
