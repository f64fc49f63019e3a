"""The client side: who sends what when. Open-loop arrivals or closed-loop clients, each
sandbox's template and lifetime and its kill, think and back-off pauses, and one request row
per call.

One `ClientHost` runs the clients `c` with `c % hosts == index`: all of them in the virtual
engine, one client pool's share on Ray. Every host walks the whole arrival sequence (drawing
every template and lifetime, or reading every row of a trace), so the same client gets the same
arrival time, template and lifetime wherever it runs."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, cast

from harness.model.cluster.node import Outcome
from harness.model.protocol import Kind, Recipient, Sink, unhandled
from harness.model.random_streams import Streams, VarietyStreams
from harness.model.recording import CreateAnswer, RequestLog
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.request import Shape
from harness.model.workload.templates import Create, Templates, TraceRow, spread
from harness.model.workload.workload_keys import WorkloadSpec

CreateContext = tuple[float, float, float | None, str | None]
"""What a create's answer brings back to its client: (issued_at, sent_at, lifetime, tag)."""
KillAnswer = tuple[int, Outcome, int, tuple[float, float]]
"""(sandbox_id, outcome, node, (issued_at, sent_at)) of an answered kill."""


class ClientHost(Recipient):
    def __init__(
        self,
        index: int,
        hosts: int,
        spec: WorkloadSpec,
        duration: float,
        replicas: int,
        seed: int,
        sink: Sink,
        trace: Callable[[], Iterable[TraceRow]] | None = None,
        spread_s: float = 0.0,
    ) -> None:
        self.index = index
        self.hosts = hosts
        self.spec = spec
        self.duration = duration
        self.replicas = replicas
        """Client c talks to scheduler replica c % replicas."""
        self.seed = seed
        self.streams = Streams(seed)
        self.sink = sink
        self.arrival: Any = ARRIVALS[spec.arrival]
        """The arrival kind: open loop (`times`, or `replay` of a trace) or `closed` (`starts`)."""
        self.closed: bool = self.arrival.closed
        """Whether clients run closed loops (asked for every answer; the kind is interpreted)."""
        self.templates = Templates(spec)
        self.trace = trace
        """The rows of the trace to replay, read afresh by each call (arrival `trace`)."""
        self.spread_s = spread_s
        """The trace's rows recorded at one instant are spread over this many seconds after
        it (`harness.model.workload.templates.spread`, stream `spread`); 0: as recorded."""
        self.log = RequestLog()
        self.waiting = 0
        """Creates and kills sent and not answered yet."""
        self.timers = 0
        """Timers of this host's clients set and not yet due (arrivals, starts, kills)."""
        self.issued = 0
        self._arrivals: Iterator[tuple[int, Create]] = iter(())
        self._streams: dict[int, tuple[random.Random, random.Random | None, VarietyStreams]] = {}
        """A closed-loop client's lifetime stream, its template stream if it picks, and its
        streams of varied sizes."""
        self.cleanup_tick = spec.cleanup_tick_s

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        if kind == Kind.ARRIVAL:
            self.on_arrival(key, payload, now)
        elif kind == Kind.CREATE_DONE:
            self.on_create_done(key, payload, now)
        elif kind == Kind.KILL_DUE:
            self.on_kill_due(key, payload, now)
        elif kind == Kind.KILL_DONE:
            self.on_kill_done(key, payload, now)
        elif kind == Kind.CLIENT_START:
            self.on_client_start(key, payload, now)
        else:
            raise unhandled(kind, self)

    @property
    def done(self) -> bool:
        """Whether every client of this host is done: no answer awaited, no timer pending."""
        return self.waiting == 0 and self.timers == 0

    def start(self) -> None:
        workload = self.streams.workload()
        if self.closed:
            for client, t in enumerate(self.arrival.starts(self.spec, workload)):
                if client % self.hosts == self.index and t < self.duration:
                    self.timers += 1
                    self.sink.emit(t, Kind.CLIENT_START, client, t)
        else:
            # This host's share, clients index, index + hosts, ...: every create is drawn, and
            # no Python frame runs per create.
            creates = enumerate(self._creates(workload))
            self._arrivals = islice(creates, self.index, None, self.hosts)
            self._next_arrival(0.0)

    def _creates(self, workload: random.Random) -> Iterator[Create]:
        """Every open-loop create in order. Lifetimes come from a stream of their own, drawn
        for every create in order (none for a trace row that gives its own), and so do the
        picks of a template."""
        lifetimes = self.streams.lifetimes()
        sizes = self.streams.sizes()
        if self.arrival.replay:
            assert self.trace is not None, "a trace arrival needs the trace's rows"
            rows = spread(self.trace(), self.spread_s, self.streams.spread())
            return self.templates.replay(rows, self.duration, lifetimes, sizes)
        times = self.arrival.times(self.spec, self.duration, workload)
        return self.templates.draw(times, self.streams.templates(), lifetimes, sizes)

    def _next_arrival(self, now: float) -> None:
        try:  # compiled, `next` with a default is a generic call of the builtin
            nxt = next(self._arrivals)
        except StopIteration:
            return
        self.timers += 1
        self.sink.emit(max(nxt[1][0], now), Kind.ARRIVAL, nxt[0], nxt)

    def on_arrival(self, client: int, payload: tuple[int, Create], now: float) -> None:
        self.timers -= 1
        t, shape, life, tag = payload[1]
        self._create(client, t, now, shape, life, tag)
        self._next_arrival(now)

    def on_client_start(self, client: int, intended: float, now: float) -> None:
        self.timers -= 1
        streams = self._streams.get(client)
        if streams is None:
            several = self.templates.several
            picks = self.streams.templates(client) if several else None
            lifetimes = self.streams.lifetimes(client)
            sizes = self.streams.sizes(client)
            streams = self._streams[client] = (lifetimes, picks, sizes)
        template = self.templates.pick(streams[1])
        shape = template.shape_for(streams[2])
        self._create(client, intended, now, shape, template.life(streams[0]), None)

    def _create(
        self,
        client: int,
        issued_at: float,
        now: float,
        shape: Shape,
        life: float | None,
        tag: str | None,
    ) -> None:
        """Send a create; the answer brings back (issued_at, sent_at, lifetime, tag)."""
        sandbox_id = self.index + self.hosts * self.issued
        self.issued += 1
        context = (issued_at, now, life, tag)
        submit = (client, sandbox_id, shape, issued_at, context)
        self.waiting += 1
        self.sink.emit(now, Kind.SUBMIT_CREATE, client % self.replicas, submit)

    def on_create_done(self, client: int, answer: CreateAnswer, now: float) -> None:
        sandbox_id, step = answer[0], answer[1]
        issued_at, sent_at, life, tag = cast(CreateContext, answer[7])
        self.log.create(answer, client, client % self.replicas, issued_at, sent_at, now, tag)
        self.waiting -= 1
        if step == "placed":
            due = None if life is None else self.kill_at(now, life)
            if due is not None and due < self.duration:
                self.timers += 1
                self.sink.emit(due, Kind.KILL_DUE, client, (sandbox_id, due))
        elif self.closed:
            self._next_cycle(client, self.spec.failure_backoff_s, now)

    def kill_at(self, placed_at: float, life: float) -> float:
        """When a sandbox placed at `placed_at` that lives `life` is killed: when due (at once
        for a non-positive lifetime, as upstream's planned lifetimes may be), or with a cleanup
        tick at the first tick after that, as upstream's cleanup loop finds it expired (its
        age above its lifetime): time always moves on from a create to its kill."""
        due = placed_at + life if life > 0 else placed_at
        tick = self.cleanup_tick
        if tick <= 0:
            return due
        at = (math.floor(due / tick) + 1) * tick
        return at if at > due else at + tick  # in floats the tick found may be `due` itself

    def _next_cycle(self, client: int, pause: float, now: float) -> None:
        if now + pause < self.duration:
            self.timers += 1
            self.sink.emit(now + pause, Kind.CLIENT_START, client, now + pause)

    def on_kill_due(self, client: int, payload: tuple[int, float], now: float) -> None:
        """The kill is sent when due; its answer brings back (issued_at, sent_at)."""
        sandbox_id, intended = payload
        self.timers -= 1
        self.waiting += 1
        self.sink.emit(now, Kind.SUBMIT_KILL, client % self.replicas, (sandbox_id, (intended, now)))

    def on_kill_done(self, client: int, payload: KillAnswer, now: float) -> None:
        sandbox_id, outcome, node, context = payload
        issued_at, sent_at = context
        self.waiting -= 1
        replica = client % self.replicas
        self.log.kill(sandbox_id, outcome, client, replica, node, issued_at, sent_at, now)
        if self.closed:
            self._next_cycle(client, self.spec.think_s, now)
