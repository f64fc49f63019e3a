"""The scheduler side: one scheduler replica taking creates and kills from clients, placing
them with `harness.model.scheduling.scheduler.Scheduler`, sending the RPCs and answering the
clients.

Between sending an RPC and hearing its answer the replica serves other messages on the same
view, which is where the real service interleaves: the herd and the races happen there.
"""

from __future__ import annotations

from typing import Any

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.rpc import Rpc, RpcModel
from harness.model.protocol import Kind, Recipient, Sink, unhandled
from harness.model.recording import View
from harness.model.scheduling.scheduler import Scheduler, Step
from harness.model.workload.request import CreateRequest, Shape


def _take(requests: dict[int, CreateRequest], sandbox_id: int) -> CreateRequest:
    """`requests.pop(sandbox_id)`. Compiled, `pop` is a generic method call, and an index and a
    delete are two native ones (the delete finds the entry the index just brought in)."""
    req = requests[sandbox_id]
    del requests[sandbox_id]
    return req


REFUSED_AGAIN = 10
"""Refusals of one create from which it counts as stuck in refusals (a storm, shown live)."""


class ReplicaHost(Recipient):
    """Replica `index`: its scheduler (view, in-progress map, ledger, random stream) and the
    creates and kills it has in flight."""

    def __init__(self, index: int, scheduler: Scheduler, rpc: RpcModel, sink: Sink) -> None:
        self.index = index
        self.scheduler = scheduler
        self.deadline_s = scheduler.rules.deadline_s
        self.rpc = rpc
        self.sink = sink
        self.creating: dict[int, CreateRequest] = {}
        """Creates whose RPC is on the wire, by sandbox ID."""
        self.placed: dict[int, CreateRequest] = {}
        """Sandboxes this replica placed and has not been asked to kill."""
        self.killing: dict[int, CreateRequest] = {}
        """Kills on the wire."""
        self.strategy = scheduler.strategy

    def refused_again(self) -> int:
        """Creates in flight that nodes have refused `REFUSED_AGAIN` times or more."""
        return sum(1 for req in self.creating.values() if req.skips >= REFUSED_AGAIN)

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        if kind == Kind.SUBMIT_CREATE:
            self.on_submit_create(key, payload, now)
        elif kind == Kind.CREATE_ANSWER:
            self.on_create_answer(key, payload, now)
        elif kind == Kind.REPORT:
            self.on_report(key, payload, now)
        elif kind == Kind.SUBMIT_KILL:
            self.on_submit_kill(key, payload, now)
        elif kind == Kind.KILL_ANSWER:
            self.on_kill_answer(key, payload, now)
        else:
            raise unhandled(kind, self)

    def on_submit_create(
        self, key: int, payload: tuple[int, int, Shape, float, object], now: float
    ) -> None:
        client, sandbox_id, shape, issued_at, context = payload
        # The request fails once the placement's deadline has passed since its issue.
        req = CreateRequest(sandbox_id, shape, issued_at, issued_at + self.deadline_s, client)
        req.context = context
        self._place(req, now)

    def _place(self, req: CreateRequest, now: float) -> None:
        """Choose a node and send the create RPC, or answer "failed to place"."""
        if self.scheduler.start_create(req, now) is None:
            self._done(req, Step.FAILED, now)
            return
        creating = self.creating
        if len(creating) > req.in_flight:
            req.in_flight = len(creating)
        creating[req.sandbox_id] = req
        at = now + self.rpc.leg(Rpc.CREATE, req.node, now)
        self.sink.emit(at, Kind.CREATE_RPC, req.node, (req.sandbox_id, req.shape, self.index))

    def on_create_answer(self, key: int, payload: tuple, now: float) -> None:
        sandbox_id, outcome, response = payload
        req = _take(self.creating, sandbox_id)
        step = self.scheduler.finish_create(req, outcome, now, response)
        if step is Step.RETRY:
            self._place(req, now)
        else:
            self._done(req, step, now)

    def _done(self, req: CreateRequest, step: Step, now: float) -> None:
        placed = step is Step.PLACED
        if placed:
            self.placed[req.sandbox_id] = req
        answer = (
            req.sandbox_id,
            str(step),  # its value (`.value` is a property, interpreted even when compiled)
            req.node if placed else -1,
            req.rpcs,
            req.skips,
            req.attempts,
            req.failure,
            req.context,
            req.asks,
            req.violated or None,
            req.in_flight,
        )
        req.context = None  # the client's, not needed here any more
        self.sink.emit(now, Kind.CREATE_DONE, req.client, answer)

    def on_submit_kill(self, key: int, payload: tuple, now: float) -> None:
        sandbox_id, context = payload
        req = _take(self.placed, sandbox_id)
        req.context = context
        self.killing[sandbox_id] = req
        self.scheduler.start_kill(req, now)
        at = now + self.rpc.leg(Rpc.KILL, req.node, now)
        self.sink.emit(at, Kind.KILL_RPC, req.node, (sandbox_id, self.index))

    def on_kill_answer(self, key: int, payload: tuple, now: float) -> None:
        sandbox_id, outcome, response = payload
        req = _take(self.killing, sandbox_id)
        self.scheduler.finish_kill(req, outcome, now, response)
        answer = (sandbox_id, outcome, req.node, req.context)
        self.sink.emit(now, Kind.KILL_DONE, req.client, answer)

    def on_report(self, key: int, report: Report, now: float) -> None:
        self.strategy.apply_report(report, now)  # compiled: a direct call, not a bound method's

    def believed(self, now: float) -> list[float]:
        """The vCPUs this replica believes each node has allocated at `now` (a view's first
        part, which is all the end-of-run check reads)."""
        ledger = self.strategy  # compiled: a direct call for each node, not a bound method's
        return [ledger.believed_cpu(i, now) for i in range(self.scheduler.n)]

    def view(self, now: float) -> View:
        s = self.scheduler
        return (
            self.believed(now),
            list(s.starting),
            list(s.pending_cpu),
            list(s.killing_cpu),
        )


class Replicas(Recipient):
    """Several replicas in one process (the virtual engine): each message to replica `key`."""

    def __init__(self, hosts: list[Recipient]) -> None:
        self.hosts = hosts  # each a ReplicaHost, or one wrapped (`harness.external.replica`)

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        self.hosts[key].deliver(kind, key, payload, now)
