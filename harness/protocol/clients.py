"""The client side: who sends what when. Open-loop arrivals or closed-loop clients, each
sandbox's lifetime and its kill, think and back-off pauses, and one request row per call.

One `ClientHost` runs the clients `c` with `c % hosts == index`: all of them in the virtual
engine, one client pool's share on Ray. Every host walks the whole arrival sequence (drawing
every lifetime), so the same client gets the same arrival time and lifetime wherever it runs.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from harness.protocol import Emit, Handler, Kind
from harness.recording import RequestLog
from harness.request import Shape
from harness.streams import stream
from harness.workload import ARRIVALS, WorkloadSpec


class ClientHost:
    def __init__(
        self,
        index: int,
        hosts: int,
        spec: WorkloadSpec,
        duration: float,
        replicas: int,
        seed: int,
        emit: Emit,
    ) -> None:
        self.index = index
        self.hosts = hosts
        self.spec = spec
        self.duration = duration
        self.replicas = replicas
        """Client c talks to scheduler replica c % replicas."""
        self.seed = seed
        self.emit = emit
        self.arrival = ARRIVALS[spec.arrival]
        self.shape = Shape(spec.vcpu, spec.memory_mib, spec.usage)
        self.log = RequestLog()
        self.waiting = 0
        """Creates and kills sent and not answered yet."""
        self.issued = 0
        self._arrivals: Iterator[tuple[int, float, float | None]] | None = None
        self._lifetimes: dict[int, random.Random] = {}

    def handlers(self) -> dict[int, Handler]:
        return {
            Kind.ARRIVAL: self.on_arrival,
            Kind.CLIENT_START: self.on_client_start,
            Kind.CREATE_DONE: self.on_create_done,
            Kind.KILL_DUE: self.on_kill_due,
            Kind.KILL_DONE: self.on_kill_done,
        }

    def start(self) -> None:
        workload = stream(self.seed, "workload")
        if self.arrival.closed:
            for client, t in enumerate(self.arrival.starts(self.spec, workload)):
                if client % self.hosts == self.index and t < self.duration:
                    self.emit(t, Kind.CLIENT_START, client, t)
        else:
            self._arrivals = self._own_arrivals(workload)
            self._next_arrival(0.0)

    def _own_arrivals(self, workload: random.Random) -> Iterator[tuple[int, float, float | None]]:
        """(arrival index, time, lifetime) of this host's open-loop arrivals. Lifetimes come
        from a stream of their own, drawn for every arrival in order."""
        lifetimes = stream(self.seed, "lifetime")
        times = self.arrival.times(self.spec, self.duration, workload)
        for client, t in enumerate(times):
            life = self.spec.lifetime(lifetimes)
            if client % self.hosts == self.index:
                yield client, t, life

    def _next_arrival(self, now: float) -> None:
        nxt = next(self._arrivals, None)
        if nxt is not None:
            self.emit(max(nxt[1], now), Kind.ARRIVAL, nxt[0], nxt)

    def on_arrival(self, client: int, payload: tuple[int, float, float | None], now: float) -> None:
        _, t, life = payload
        self._create(client, t, now, life)
        self._next_arrival(now)

    def on_client_start(self, client: int, intended: float, now: float) -> None:
        rng = self._lifetimes.get(client)
        if rng is None:
            rng = self._lifetimes[client] = stream(self.seed, f"lifetime/{client}")
        self._create(client, intended, now, self.spec.lifetime(rng))

    def _create(self, client: int, issued_at: float, now: float, life: float | None) -> None:
        """Send a create; the answer brings back (issued_at, sent_at, lifetime)."""
        sandbox_id = self.index + self.hosts * self.issued
        self.issued += 1
        context = (issued_at, now, life)
        submit = (client, sandbox_id, self.shape, issued_at, context)
        self.waiting += 1
        self.emit(now, Kind.SUBMIT_CREATE, client % self.replicas, submit)

    def on_create_done(self, client: int, answer: tuple, now: float) -> None:
        sandbox_id, step, _, _, _, _, _, (issued_at, sent_at, life) = answer
        self.log.create(answer, client, client % self.replicas, issued_at, sent_at, now)
        self.waiting -= 1
        if step == "placed":
            if life is not None and now + life < self.duration:
                self.emit(now + life, Kind.KILL_DUE, client, (sandbox_id, now + life))
        elif self.arrival.closed:
            self._next_cycle(client, self.spec.failure_backoff_s, now)

    def _next_cycle(self, client: int, pause: float, now: float) -> None:
        if now + pause < self.duration:
            self.emit(now + pause, Kind.CLIENT_START, client, now + pause)

    def on_kill_due(self, client: int, payload: tuple[int, float], now: float) -> None:
        """The kill is sent when due; its answer brings back (issued_at, sent_at)."""
        sandbox_id, intended = payload
        self.waiting += 1
        self.emit(now, Kind.SUBMIT_KILL, client % self.replicas, (sandbox_id, (intended, now)))

    def on_kill_done(self, client: int, payload: tuple, now: float) -> None:
        sandbox_id, outcome, node, (issued_at, sent_at) = payload
        self.waiting -= 1
        replica = client % self.replicas
        self.log.kill(sandbox_id, outcome, client, replica, node, issued_at, sent_at, now)
        if self.arrival.closed:
            self._next_cycle(client, self.spec.think_s, now)
