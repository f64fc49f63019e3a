"""The node side: nodes answering create and kill RPCs, reporting on their heartbeats,
crashing and coming back, with the run's faults applied.

One `NodeHost` holds a contiguous range of nodes: the whole cluster in the virtual engine, one
node group's share on Ray.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from harness.faults import Faults
from harness.heartbeat import HeartbeatPlan, Report
from harness.node import Node, Outcome
from harness.protocol import Emit, Handler, Kind
from harness.recording import Truth, node_columns
from harness.rpc import Rpc, RpcModel


class NodeHost:
    """Nodes `nodes[0].node_id ..` and everything that happens on their side of the wire.

    `with_ids` and `with_response` are what the scheduler's ledger asks of the nodes: reports
    listing sandbox IDs, and a fresh report with every RPC answer. `create_times` is (cold,
    warm): the seconds a node takes over a create, between acting on it and answering, without
    or with the template cached; None: it answers at once.
    """

    def __init__(
        self,
        nodes: Sequence[Node],
        plan: HeartbeatPlan,
        beat_groups: list[tuple[float, list[int]]],
        faults: Faults,
        rpc: RpcModel,
        create_times: tuple[float, float] | None,
        replicas: int,
        with_ids: bool,
        with_response: bool,
        delivery: random.Random,
        emit: Emit,
    ) -> None:
        self.nodes = list(nodes)
        self.first = self.nodes[0].node_id
        self.plan = plan
        self.groups = beat_groups
        self.faults = faults
        self.rpc = rpc
        self.create_times = create_times
        self.replicas = range(replicas)
        self.with_ids = with_ids
        self.with_response = with_response
        self.delivery = delivery
        self.emit = emit
        self.unknown_losses = False
        """Whether these nodes came back from a death of the process that held them, so the
        sandboxes they ran then are gone without a trace (only engines with processes)."""

    def handlers(self) -> dict[int, Handler]:
        return {
            Kind.CREATE_RPC: self.on_create,
            Kind.KILL_RPC: self.on_kill,
            Kind.BEAT: self.on_beat,
            Kind.CRASH: self.on_crash,
        }

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id - self.first]

    def sync(self, now: float = 0.0) -> None:
        """The pre-run sync of the reference: every node reports once, applied at once."""
        self._send_reports(self.nodes, now, delayed=False)

    def start(self) -> None:
        """The crash and comeback timers and the first beat of every group."""
        for t, node_id, down in self.faults.crash_events():
            self.emit(t, Kind.CRASH, node_id, down)
        for group, (t, _) in enumerate(self.groups):
            if t < self.plan.duration:
                self.emit(t, Kind.BEAT, group, t)

    def restart(self, now: float, deaths: int) -> None:
        """The process holding these nodes died `deaths` times since the run began, and this
        host is the fresh one that came back. Each death crashed every node (counted as
        crashes) and what the process held is gone without a trace (`unknown_losses`). The
        fault plan goes on: a node inside one of its crash windows stays down, and crashes and
        comebacks still to come happen. Beats resume from the next one due."""
        self.unknown_losses = True
        self.faults.process_died(len(self.nodes), deaths)
        down = self.faults.down_at(now)
        for node in self.nodes:
            if node.node_id in down:
                self.faults.crash(node, True)
            # The new process numbers reports from scratch; strategies that drop reports not
            # newer than the last would drop them all. Number them from the restart time in
            # ns instead: above any report sent before (fewer than one per ns).
            node.seq = max(node.seq, int(now * 1e9))
        for t, node_id, is_down in self.faults.crash_events():
            if t > now:
                self.emit(t, Kind.CRASH, node_id, is_down)
        for group, (first, _) in enumerate(self.groups):
            t = self.plan.first_at_or_after(first, now)
            if t < self.plan.duration:
                self.emit(t, Kind.BEAT, group, t)

    def _send_reports(self, nodes: Sequence[Node], now: float, delayed: bool = True) -> None:
        """Each node's report, to every replica after the delivery delay plus that replica's
        own jitter draw, so reports of one node can overtake each other."""
        emit, report, with_ids = self.emit, self.faults.report, self.with_ids
        for node in nodes:
            taken = report(node, now, with_ids)
            if taken is None:
                continue
            for replica in self.replicas:
                at = now + self.plan.delivery_delay(self.delivery) if delayed else now
                emit(at, Kind.REPORT, replica, taken)

    def on_beat(self, group: int, planned: float, now: float) -> None:
        self._send_reports([self.node(i) for i in self.groups[group][1]], now)
        nxt = self.plan.next_beat(planned)
        if nxt is not None:
            self.emit(nxt, Kind.BEAT, group, nxt)

    def on_crash(self, node_id: int, down: bool, now: float) -> None:
        self.faults.crash(self.node(node_id), down)

    def _response(self, node: Node, now: float) -> Report | None:
        """The node's fresh report, sent back with an answer to strategies that want it
        (`with_response`); a down node sends none."""
        return None if node.down else node.report(now, self.with_ids)

    def on_create(self, node_id: int, payload: tuple, now: float) -> None:
        sandbox_id, shape, replica = payload
        node = self.nodes[node_id - self.first]
        outcome = self.faults.create(node, sandbox_id, shape, now)
        leg = self.rpc.leg(Rpc.CREATE, node_id, now)
        # A lost answer (TIMEOUT) carries nothing; the caller hears of it at its timeout.
        response = None
        if self.with_response and outcome is not Outcome.TIMEOUT:
            response = self._response(node, now)
        at = now + self.rpc.answer_delay(outcome, leg)
        if self.create_times is not None and sandbox_id in node.sandboxes:
            # The node created it (also when its answer is lost): warm if the template was
            # cached; a lost answer's caller still hears at its timeout.
            cold, warm = self.create_times
            took = warm if node.cache(shape.template) else cold
            if outcome is Outcome.OK:
                at += took
        self.emit(at, Kind.CREATE_ANSWER, replica, (sandbox_id, outcome, response))

    def on_kill(self, node_id: int, payload: tuple, now: float) -> None:
        sandbox_id, replica = payload
        node = self.nodes[node_id - self.first]
        outcome = self.faults.kill(node, sandbox_id, now)
        leg = self.rpc.leg(Rpc.KILL, node_id, now)
        response = self._response(node, now) if self.with_response else None
        self.emit(now + leg, Kind.KILL_ANSWER, replica, (sandbox_id, outcome, response))

    def drain(self, now: float) -> None:
        """After the run: one last report of every live node, to every replica at once, so the
        end-of-run check can compare each replica's belief with the truth."""
        for node in self.nodes:
            if not node.down:
                taken = node.report(now, self.with_ids)
                for replica in self.replicas:
                    self.emit(now, Kind.REPORT, replica, taken)

    def truth(self) -> Truth:
        return [n.cpu_allocated for n in self.nodes], [len(n.sandboxes) for n in self.nodes]

    def end_state(self) -> dict[str, list]:
        """The `nodes` table's columns for these nodes."""
        return node_columns(self.nodes, self.unknown_losses)

    def sandbox_ids(self) -> list[list[int]]:
        """The sandbox IDs each node runs, node by node: the ground truth of the checks."""
        return [sorted(n.sandboxes) for n in self.nodes]

    def lost_ids(self) -> list[int]:
        """IDs of the sandboxes that were on a node when it crashed."""
        return [i for n in self.nodes for i in n.lost]


def died(kind: int, payload: tuple, now: float) -> tuple[float, int, int, tuple]:
    """The answer an RPC gets when the node side died before answering: failed, at once."""
    sandbox_id, replica = payload[0], payload[-1]
    answer = Kind.CREATE_ANSWER if kind == Kind.CREATE_RPC else Kind.KILL_ANSWER
    return now, answer, replica, (sandbox_id, Outcome.FAILED, None)
