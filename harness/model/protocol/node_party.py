"""The node side: nodes answering create and kill RPCs, reporting on their heartbeats,
crashing and coming back, with the run's faults applied.

One `NodeHost` holds a contiguous range of nodes: the whole cluster in the virtual engine, one
node group's share on Ray."""

from __future__ import annotations

import random
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from harness.model.cluster.faults import Faults
from harness.model.cluster.heartbeat import HeartbeatPlan
from harness.model.cluster.node import Node, Outcome
from harness.model.cluster.rpc import Rpc, RpcModel
from harness.model.protocol import Kind, Recipient, Sink, unhandled
from harness.model.recording import Truth, node_columns

_node_id = attrgetter("node_id")


class NodeHost(Recipient):
    """Nodes `nodes[0].node_id ..` and everything that happens on their side of the wire.

    `with_ids` and `with_response` are what the scheduler's ledger asks of the nodes: reports
    listing sandbox IDs, and a fresh report with every RPC answer. `create_times` is (cold,
    warm): the seconds a node takes over a create, between acting on it and answering, without
    or with the template cached; None: it answers at once.

    Every part but the nodes is given by name (the wiring builds one, `harness.wiring.scenario`).

    `quiet`: the replicas ignore a report that says what the node's last one said
    (`harness.wiring.scenario.quiet_nodes`). Unless reports take random draws (delivery jitter, lost
    reports), a node then sends one only if it changed (a create, a kill, a crash or a comeback)
    since its last, at its group's first beat after the change: the others would arrive in order
    and find their view as they would leave it. A beat group has a timer only while it has such
    a node, so a large cluster costs per change rather than per node and interval.
    """

    def __init__(
        self,
        nodes: Sequence[Node],
        *,
        plan: HeartbeatPlan,
        beat_groups: list[tuple[float, list[int]]],
        faults: Faults,
        rpc: RpcModel,
        create_times: tuple[float, float] | None,
        replicas: int,
        with_ids: bool,
        with_response: bool,
        delivery: random.Random,
        sink: Sink,
        quiet: bool = False,
    ) -> None:
        self.nodes = list(nodes)
        self.first = self.nodes[0].node_id
        self.plan = plan
        self.interval: float = plan.interval
        self.duration: float = plan.duration
        """The plan's, read for every change of a quiet node (the plan is interpreted)."""
        self.firsts = [t for t, _ in beat_groups]
        """Each beat group's first beat."""
        self.fixed_delay = plan.fixed_delay
        # Quiet nodes report changes only: not where reports may be lost.
        self.quiet = quiet and self.fixed_delay is not None and not faults.report_faults
        self._plan_beats(self.firsts.copy())
        self.beat_nodes: list[list[Node]] = []
        """Every-beat mode: each beat group's nodes, looked up once (a beat of one node is the
        most frequent message of a large run)."""
        self.group_of: list[int] = []
        """Quiet mode: each node's beat group, by its index here."""
        if self.quiet:
            self.group_of = [0] * len(self.nodes)
            for group, (_, ids) in enumerate(beat_groups):
                for i in ids:
                    self.group_of[i - self.first] = group
        else:
            self.beat_nodes = [[self.node(i) for i in ids] for _, ids in beat_groups]
        self.changed: dict[int, set[Node]] = {}
        """Quiet nodes: by beat group, its nodes changed since their last report."""
        self.faults = faults
        self.rpc = rpc
        self.create_times = create_times
        self.replicas = replicas
        self.with_ids = with_ids
        self.with_response = with_response
        self.delivery = delivery
        self.sink = sink
        self.unknown_losses = False
        """Whether these nodes came back from a death of the process that held them, so the
        sandboxes they ran then are gone without a trace (only engines with processes)."""

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        if kind == Kind.CREATE_RPC:
            self.on_create(key, payload, now)
        elif kind == Kind.KILL_RPC:
            self.on_kill(key, payload, now)
        elif kind == Kind.BEAT:
            if self.quiet:
                self.on_quiet_beat(key, payload, now)
            else:
                self.on_beat(key, payload, now)
        elif kind == Kind.CRASH:
            self.on_crash(key, payload, now)
        else:
            raise unhandled(kind, self)

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id - self.first]

    def sync(self, now: float = 0.0) -> None:
        """The pre-run sync of the reference: every node reports once, applied at once."""
        self._send_reports(self.nodes, now, delayed=False)

    def start(self) -> None:
        """The crash and comeback timers and the beat timer."""
        for t, node_id, down in self.faults.crash_events():
            self.sink.emit(t, Kind.CRASH, node_id, down)
        if not self.quiet:  # quiet nodes have no change to report yet
            self._first_beat()

    def _plan_beats(self, planned: list[float]) -> None:
        """Each beat group's next beat is `planned`. Every-beat nodes take their turns on one
        timer for all groups (`wheel`, over `planned`); quiet nodes set a timer per group
        instead and need no turn order (a sort of every group: a quarter of a second at a
        million nodes), so their wheel has no groups."""
        self.planned = planned
        self.wheel = self.plan.wheel([] if self.quiet else planned)

    def _first_beat(self) -> None:
        t = self.wheel.first()
        if t is not None:
            self.sink.emit(t, Kind.BEAT, 0, t)

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
                self.sink.emit(t, Kind.CRASH, node_id, is_down)
        self._plan_beats([self.plan.first_at_or_after(first, now) for first in self.firsts])
        if not self.quiet:
            self._first_beat()
            return
        self.changed = {}
        for node in self.nodes:  # every node crashed with the process: a change
            self._change(node, now)

    def _send_reports(self, nodes: list[Node], now: float, delayed: bool = True) -> None:
        """Each node's report, to every replica after the delivery delay plus that replica's
        own jitter draw, so reports of one node can overtake each other."""
        sink, with_ids, faults = self.sink, self.with_ids, self.faults
        fixed = self.fixed_delay if delayed else 0.0
        for node in nodes:
            taken = faults.report(node, now, with_ids)
            if taken is None:
                continue
            for replica in range(self.replicas):
                delay = self.plan.delivery_delay(self.delivery) if fixed is None else fixed
                sink.emit(now + delay, Kind.REPORT, replica, taken)

    def on_beat(self, turn: int, planned: float, now: float) -> None:
        group, turn, nxt = self.wheel.turn(turn, planned)
        self._send_reports(self.beat_nodes[group], now)
        if nxt is not None:
            self.sink.emit(nxt, Kind.BEAT, turn, nxt)

    def on_quiet_beat(self, group: int, planned: float, now: float) -> None:
        """A beat of a group with changed nodes: they report (those down do not, and report
        the change of their comeback), and the group's timer sleeps until the next change."""
        self._send_reports(sorted(self.changed.pop(group), key=_node_id), now)
        self.planned[group] = planned + self.interval

    def _change(self, node: Node, now: float) -> None:
        """Quiet nodes: `node` has changed, so it reports at its group's first beat after
        `now`, for which the group's timer is set unless it is already."""
        group = self.group_of[node.node_id - self.first]
        changed = self.changed.get(group)
        if changed is not None:
            changed.add(node)
            return
        self.changed[group] = {node}
        planned = self.planned
        t = planned[group]
        while t <= now:  # the beats it skipped, added up one by one as they would have been
            t += self.interval
        planned[group] = t
        if t < self.duration:  # else the drain after the run reports it
            self.sink.emit(t, Kind.BEAT, group, t)

    def on_crash(self, node_id: int, down: bool, now: float) -> None:
        node = self.node(node_id)
        self.faults.crash(node, down)
        if self.quiet:
            self._change(node, now)

    def on_create(self, node_id: int, payload: tuple, now: float) -> None:
        sandbox_id, shape, replica = payload
        node = self.nodes[node_id - self.first]
        outcome = self.faults.create(node, sandbox_id, shape, now)
        if self.quiet:
            self._change(node, now)
        leg = self.rpc.leg(Rpc.CREATE, node_id, now)
        # A lost answer (TIMEOUT) carries nothing; the caller hears of it at its timeout.
        response = None
        if self.with_response and outcome is not Outcome.TIMEOUT:
            response = node.beat(now, self.with_ids)
        at = now + self.rpc.answer_delay(outcome, leg)
        if self.create_times is not None and sandbox_id in node.sandboxes:
            # The node created it (also when its answer is lost): warm if the template was
            # cached; a lost answer's caller still hears at its timeout.
            cold, warm = self.create_times
            took = warm if node.cache(shape.template) else cold
            if outcome is Outcome.OK:
                at += took
        self.sink.emit(at, Kind.CREATE_ANSWER, replica, (sandbox_id, outcome, response))

    def on_kill(self, node_id: int, payload: tuple, now: float) -> None:
        sandbox_id, replica = payload
        node = self.nodes[node_id - self.first]
        outcome = self.faults.kill(node, sandbox_id, now)
        if self.quiet:
            self._change(node, now)
        leg = self.rpc.leg(Rpc.KILL, node_id, now)
        response = node.beat(now, self.with_ids) if self.with_response else None
        self.sink.emit(now + leg, Kind.KILL_ANSWER, replica, (sandbox_id, outcome, response))

    def drain(self, now: float) -> None:
        """After the run: one last report of every live node, to every replica at once, so the
        end-of-run check can compare each replica's belief with the truth. Quiet nodes: those
        changed since their last report."""
        nodes = self.nodes
        if self.quiet:
            nodes = sorted((n for group in self.changed.values() for n in group), key=_node_id)
        for node in nodes:
            if not node.down:
                taken = node.report(now, self.with_ids)
                for replica in range(self.replicas):
                    self.sink.emit(now, Kind.REPORT, replica, taken)

    def truth(self) -> Truth:
        nodes = self.nodes
        return (
            [n.cpu_allocated for n in nodes],
            [len(n.sandboxes) for n in nodes],
            [n.cpu_percent for n in nodes],
        )

    def end_state(self) -> dict[str, list]:
        """The `nodes` table's columns for these nodes."""
        return node_columns(self.nodes, self.unknown_losses)

    def sandbox_ids(self) -> list[list[int]]:
        """The sandbox IDs each node runs, node by node: the ground truth of the checks."""
        return [sorted(n.sandboxes) if n.sandboxes else [] for n in self.nodes]

    def lost_ids(self) -> list[int]:
        """IDs of the sandboxes that were on a node when it crashed."""
        return [i for n in self.nodes for i in n.lost]


def died(kind: int, payload: tuple, now: float) -> tuple[float, int, int, tuple]:
    """The answer an RPC gets when the node side died before answering: failed, at once."""
    sandbox_id, replica = payload[0], payload[-1]
    answer = Kind.CREATE_ANSWER if kind == Kind.CREATE_RPC else Kind.KILL_ANSWER
    return now, answer, replica, (sandbox_id, Outcome.FAILED, None)
