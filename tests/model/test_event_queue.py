"""The event queue's rules (`harness.model.event_queue.EventQueue`), as the virtual engine runs
it and as a Ray host's carrier advances it on a wall clock (`actors.carrier`): messages by time,
ties first in first out, timers waiting for their turn even when due now, a message due now for
another party handled at once and depth first, and the split of near and far messages
changing no order. CI runs this file on the compiled path and on pure Python (.ci/run)."""

from __future__ import annotations

import asyncio
import gc
import pickle
import random
import weakref
from typing import Any

import harness
from actors.carrier import BEAT_TICK_S, Carrier
from actors.wall_clock import WallClock
from harness.model import event_queue
from harness.model.event_queue import NEAR_S, EventQueue, Recipient
from harness.model.protocol import IS_TIMER, Kind

PLAIN, TIMER = 0, 1
"""The two kinds of `_queue`: a message for another party, and a timer."""


class Log(Recipient):
    """Records each delivery as (kind, key, payload, now); `then[key]` is called on the
    delivery of `key`, to send more from inside it."""

    def __init__(self) -> None:
        self.got: list[tuple[int, int, Any, float]] = []
        self.then: dict[int, Any] = {}

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        self.got.append((kind, key, payload, now))
        if key in self.then:
            self.then[key](now)

    def keys(self) -> list[int]:
        return [key for _, key, _, _ in self.got]


def _queue() -> tuple[EventQueue, Log]:
    queue = EventQueue([False, True])
    log = Log()
    queue.recipients = [log, log]
    return queue, log


def test_the_queue_under_test_is_the_live_build_paths() -> None:
    """Compiled, the queue is the extension module; with HARNESS_PURE=1, its source. (So this
    file checks the path it says it runs on, and `harness.COMPILED` is told the truth.)"""
    compiled = not event_queue.__file__.endswith(".py")
    assert compiled == harness.COMPILED


def test_messages_come_in_time_order_and_ties_first_in_first_out() -> None:
    """Thousands of messages, many at the same instants, some scheduled while others are
    delivered: the order is (time, order scheduled), as sorting them would give."""
    rng = random.Random(7)
    queue, log = _queue()
    scheduled: list[tuple[float, int]] = []

    def schedule(now: float) -> None:
        for _ in range(rng.choice((0, 1, 2))):
            if len(scheduled) < 5000:
                # ties are common (a few instants), near and far both (NEAR_S = 1 s)
                t = now + rng.choice((0.0, 0.001, 0.5, 1.0, 3.0, 20.0))
                key = len(scheduled)
                scheduled.append((t, key))
                queue.at(t, TIMER, key, None)
                log.then[key] = schedule

    for _ in range(200):
        t = float(rng.randrange(30))
        scheduled.append((t, len(scheduled)))
        queue.at(t, TIMER, len(scheduled) - 1, None)
        log.then[len(scheduled) - 1] = schedule
    queue.run()
    assert len(scheduled) == 5000
    assert log.keys() == [key for _, key in sorted(scheduled)]
    assert [now for *_, now in log.got] == sorted(t for t, _ in scheduled)
    assert len(queue) == 0


def test_a_timer_due_now_waits_its_turn_behind_what_is_already_queued() -> None:
    """A timer sent for the present is queued, after every message already waiting for this
    instant (a message for another party would be handled at once)."""
    queue, log = _queue()
    queue.at(1.0, TIMER, 0, None)
    queue.at(1.0, TIMER, 1, None)
    log.then[0] = lambda now: queue.emit(now, TIMER, 2, None)
    queue.run()
    assert [(key, now) for _, key, _, now in log.got] == [(0, 1.0), (1, 1.0), (2, 1.0)]


def test_a_message_due_now_for_another_party_is_handled_at_once_depth_first() -> None:
    """A hop of zero latency is a direct call: handled inside the emit, before what is queued
    for the same instant, and what it sends in turn before what it sends next."""
    queue, log = _queue()
    queue.at(2.0, TIMER, 0, None)
    queue.at(2.0, TIMER, 1, None)

    def fan_out(now: float) -> None:
        queue.emit(now, PLAIN, 10, None)
        queue.emit(now, PLAIN, 20, None)

    log.then[0] = fan_out
    log.then[10] = lambda now: queue.emit(now, PLAIN, 11, None)
    log.then[20] = lambda now: queue.emit(now + 0.001, PLAIN, 21, None)  # not due: queued
    queue.run()
    assert log.keys() == [0, 10, 11, 20, 1, 21]
    assert log.got[-1][3] == 2.001


def test_the_near_now_edge_is_where_it_says_and_changes_no_order() -> None:
    """A message due less than NEAR_S after the queue's time waits on the small heap, one due
    NEAR_S or later on the large one; a tie across the two still goes first in first out."""
    queue, log = _queue()
    queue.at(NEAR_S, TIMER, 0, None)  # far: exactly at the edge
    queue.at(NEAR_S - 1e-9, TIMER, 1, None)  # near
    assert (len(queue._near.at), len(queue._far.at)) == (1, 1)
    queue.at(5.0, TIMER, 2, None)  # far, and first at 5.0
    queue.at(4.5, TIMER, 3, None)
    log.then[3] = lambda now: queue.at(5.0, TIMER, 4, None)  # near now, and second at 5.0
    queue.run()
    assert log.keys() == [1, 0, 3, 2, 4]


def test_pop_and_head_give_the_same_order_and_let_go_of_payloads() -> None:
    """The queue taken message by message (as a Ray host does) is in the order `run` delivers,
    and keeps no reference to a payload once its message is taken (slots are reused)."""

    class Payload:
        pass

    queue = EventQueue()
    assert queue.head() == (float("inf"), -1)
    payload = Payload()
    held = weakref.ref(payload)
    queue.at(3.0, 5, 30, payload)
    queue.at(1.0, 6, 10, None)
    queue.at(3.0, 7, 31, "b")
    del payload
    assert queue.head() == (1.0, 6)
    assert queue.pop() == (1.0, 6, 10, None)
    first = queue.pop()
    assert first[:3] == (3.0, 5, 30)
    del first
    gc.collect()
    assert held() is None
    queue.at(2.0, 8, 20, None)  # into a freed slot
    assert [queue.pop() for _ in range(len(queue))] == [(2.0, 8, 20, None), (3.0, 7, 31, "b")]
    assert len(queue) == 0


class FakeTime:
    """A wall clock's source that a test moves by hand: no sleeping."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Party(Recipient):
    """A Ray host's party: records deliveries; `reply_to[kind]` is sent back while one of that
    kind is handled."""

    def __init__(self, carrier: Carrier) -> None:
        self.carrier = carrier
        self.got: list[tuple[int, int, Any, float]] = []
        self.reply_to: dict[int, tuple[float, int, int, Any]] = {}

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        self.got.append((kind, key, payload, now))
        if kind in self.reply_to:
            self.carrier.emit(*self.reply_to[kind])


def _carrier(scale: float = 1.0) -> tuple[Carrier, Party, FakeTime]:
    """A carrier whose wall clock is `FakeTime` (t = 0 at wall time 0), with its party."""
    source = FakeTime()
    carrier = Carrier(0, scale, [], RuntimeError)
    carrier.clock = WallClock(0.0, scale, source)
    carrier.start(0.0)
    party = Party(carrier)
    carrier.set_party(party)
    return carrier, party, source


def _in_loop(test: Any) -> None:
    """`test()` inside an event loop (a carrier sets its wake-up on the running loop)."""

    async def main() -> None:
        test()

    asyncio.run(main())


def test_a_ray_host_handles_each_message_when_the_wall_clock_reaches_it() -> None:
    """Advanced on a wall clock, the same queue: nothing before its time; then every message
    due, in (time, arrival) order, at the clock's time; one that arrives late at once; and the
    wake-up set for the next one."""

    def test() -> None:
        carrier, party, source = _carrier(scale=0.5)
        carrier.emit(2.0, Kind.ARRIVAL, 1, "timer")
        carrier.take(pickle.dumps([(2.0, Kind.REPORT, 2, "r"), (1.0, Kind.REPORT, 3, "r")]))
        carrier.emit(2.0, Kind.KILL_DUE, 4, "timer")
        carrier.emit(9.0, Kind.ARRIVAL, 5, "timer")
        assert party.got == []
        assert carrier.wake_at == 1.0
        source.t = 0.4  # model 0.8 s
        carrier.run()
        assert party.got == []
        source.t = 1.1  # model 2.2 s
        carrier.run()
        assert [(key, now) for _, key, _, now in party.got] == [
            (3, 2.2),
            (1, 2.2),
            (2, 2.2),
            (4, 2.2),
        ]
        assert carrier.wake_at == 9.0
        carrier.take(pickle.dumps([(1.5, Kind.REPORT, 6, "late")]))
        assert party.got[-1] == (Kind.REPORT, 6, "late", 2.2)
        carrier.close()

    _in_loop(test)


def test_a_ray_host_takes_a_beats_lateness_and_wakes_for_beats_at_most_once_a_tick() -> None:
    def test() -> None:
        carrier, party, source = _carrier()
        late: list[float] = []
        carrier.late[Kind.BEAT] = late.append
        carrier.emit(1.0, Kind.BEAT, 0, 1.0)
        carrier.emit(1.001, Kind.BEAT, 1, 1.001)
        source.t = 1.0005
        carrier.run()
        assert [key for _, key, _, _ in party.got] == [0] and late == [1.0005 - 1.0]
        assert carrier.wake_at == 1.0005 + BEAT_TICK_S
        carrier.close()

    _in_loop(test)


def test_a_ray_host_takes_the_lateness_of_the_kinds_asked_for_only() -> None:
    """A replica measures how late reports reach it: a report due at model 1.0 s handled when
    it arrives at 2.2 s is 1.2 s late; a submitted create is not measured unless asked for."""

    def test() -> None:
        carrier, party, source = _carrier()
        late: list[float] = []
        carrier.late[Kind.REPORT] = late.append
        source.t = 2.2
        carrier.take(
            pickle.dumps([(1.0, Kind.REPORT, 0, "report"), (2.0, Kind.SUBMIT_CREATE, 0, "c")])
        )
        assert [kind for kind, _, _, _ in party.got] == [Kind.REPORT, Kind.SUBMIT_CREATE]
        assert len(late) == 1 and abs(late[0] - 1.2) < 1e-9
        carrier.close()

    _in_loop(test)


def test_a_ray_hosts_rpc_items_are_handled_in_order_and_answered_with_what_they_sent() -> None:
    """An RPC batch's items take their turn on the queue like any message, and the reply holds,
    per item, what handling it sent."""

    async def main() -> list[Any]:
        carrier, party, source = _carrier()
        source.t = 5.0
        answer = (5.0, Kind.CREATE_ANSWER, 0, "ok")
        party.reply_to[Kind.CREATE_RPC] = answer
        carrier.emit(4.0, Kind.ARRIVAL, 9, "timer")
        items = [(4.5, Kind.CREATE_RPC, 1, "c"), (3.0, Kind.KILL_RPC, 2, "k")]
        replies = pickle.loads(await carrier.answer(pickle.dumps(items)))
        assert [key for _, key, _, _ in party.got] == [2, 9, 1]
        carrier.close()
        return replies

    assert asyncio.run(main()) == [[(5.0, Kind.CREATE_ANSWER, 0, "ok")], []]


def test_a_ray_host_and_the_virtual_engine_keep_one_order() -> None:
    """The same messages, all due when a Ray host wakes, come in the order `run` gives them."""
    rng = random.Random(3)
    messages = [
        (float(rng.randrange(20)), rng.choice((Kind.ARRIVAL, Kind.KILL_DUE)), key, None)
        for key in range(500)
    ]
    queue = EventQueue(IS_TIMER)
    log = Log()
    queue.recipients = [log] * len(IS_TIMER)
    for message in messages:
        queue.at(*message)
    queue.run()

    def test() -> None:
        carrier, party, source = _carrier()
        for message in messages:
            carrier.emit(*message)
        source.t = 100.0
        carrier.run()
        assert [key for _, key, _, _ in party.got] == log.keys()
        carrier.close()

    _in_loop(test)
