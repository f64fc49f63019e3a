"""Protocol messages caught in a sink, and client hosts driven by hand."""

from __future__ import annotations

from typing import Any

from harness.model import protocol
from harness.model.protocol import Kind
from harness.wiring import scenario as sc
from tests.support.configs import scenario

Message = tuple[float, int, int, Any]


class Sink(protocol.Sink):
    """A sink that records messages; `take()` hands over (and forgets) what was sent."""

    def __init__(self) -> None:
        self.sent: list[Message] = []

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        self.sent.append((at, kind, key, payload))

    def take(self) -> list[Message]:
        sent, self.sent = self.sent, []
        return sent


def clients(index: int = 0, hosts: int = 1, seed: int = 0, **workload: Any) -> tuple:
    """(ClientHost, its sink) for a 3 s run with 2 replicas."""
    config = scenario(workload=workload, placement={"replicas": 2}, run={"duration_s": 3.0})
    sink = Sink()
    return sc.client_host(config, seed, index, hosts, sink), sink


def open_loop(host: Any, sink: Sink) -> list[Message]:
    """Start the host and follow its ARRIVAL timers, each handled on time; every message."""
    host.start()
    sent = []
    while sink.sent:
        at, kind, key, payload = message = sink.sent.pop(0)
        sent.append(message)
        if kind == Kind.ARRIVAL:
            host.on_arrival(key, payload, at)
    return sent
