"""Node-group actor: many simulated nodes in one process, each with its own heartbeat timer.

One Ray actor is a whole Python process, so one per node stops at ~100 nodes on a small
machine; a group hosts thousands. Admission is `harness.node.Node`'s, on the true state.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from typing import Any

import ray

from actors.outbox import Checked, Outbox, spawn
from actors.reservoir import Reservoir
from harness.clock import WallClock
from harness.config import Config
from harness.engine import stream
from harness.faults import Faults
from harness.node import Node, Outcome
from harness.heartbeat import Report
from harness.results import node_columns

CreateRpc = tuple[int, int, float, float, float]
"""(node_id, sandbox_id, vcpu, memory_mib, usage) of one create RPC."""
Answer = tuple[Outcome, Report | None]

REPORT_TICK_S = 0.01
"""A group wakes for reports at most this often (wall seconds). With 10,000 staggered nodes a
report falls due every few microseconds, and one Ray call per report would swamp the schedulers;
reports due within one tick leave together, at most this much late (and the lateness is
measured)."""


@ray.remote(num_cpus=0)
class NodeGroup(Checked):
    """Nodes `nodes[0].node_id ..`, contiguous. Answers create and kill RPCs in batches (one per
    scheduler per loop turn, see `actors.outbox`): the RPC takes its configured round trip and
    the node acts at the midpoint, as in the virtual engine."""

    def __init__(
        self,
        nodes: list[Node],
        config: Config,
        seed: int,
        first_beats: list[float],
        with_ids: bool,
        with_response: bool,
    ) -> None:
        super().__init__()
        self.nodes = nodes
        self.first = nodes[0].node_id
        self.first_beats = first_beats
        self.with_ids = with_ids
        self.with_response = with_response
        self.scale = config.run.time_scale
        self.duration = config.run.duration_s
        self.interval = config.heartbeat.interval_s
        self.delay = config.heartbeat.delay_ms / 1000.0
        self.jitter = config.heartbeat.jitter_ms / 1000.0
        self.delivery_rng = stream(seed, f"report-delivery/{self.first}")
        self.create_leg = config.cluster.create_latency_ms / 2000.0
        self.kill_leg = config.cluster.kill_latency_ms / 2000.0
        ids = [n.node_id for n in nodes]
        self.faults = Faults(config.faults, stream(seed, f"faults/{self.first}"), ids)
        self.lateness = Reservoir()
        self.clock = WallClock(0.0, self.scale)
        self.schedulers: list[Any] = []
        self.outboxes: list[Outbox] = []
        self.beats: asyncio.Future | None = None
        self.restarted = ray.get_runtime_context().was_current_actor_reconstructed
        if self.restarted:  # Ray restarted this process: every node of it crashed, back empty
            for node in nodes:
                self.faults.crash(node, True)
                self.faults.crash(node, False)

    async def check(self) -> bool:
        """Raises a failure if any; True when Ray restarted this group and the driver has to
        connect and start it again."""
        self.raise_failure()
        return self.restarted and not self.schedulers

    async def connect(self, schedulers: list[Any]) -> str:
        """Learn the scheduler replicas (every report goes to each); returns this Ray node."""
        self.schedulers = schedulers
        self.outboxes = [Outbox(s.reports, self.errors) for s in schedulers]
        return ray.get_runtime_context().get_node_id()

    async def initial_sync(self) -> None:
        """The pre-run sync of the reference: every node reports once, applied at t = 0."""
        reports = tuple(
            r for r in (self.faults.report(n, 0.0, self.with_ids) for n in self.nodes) if r
        )
        await asyncio.gather(*(s.reports.remote(reports) for s in self.schedulers))

    async def start(self, epoch: float) -> None:
        self.clock = WallClock(epoch, self.scale)
        if self.restarted:  # no burst of the beats missed while down: from the next one on
            now = self.clock.now()
            self.first_beats = [
                t + max(0, math.ceil((now - t) / self.interval)) * self.interval
                for t in self.first_beats
            ]
        self.beats = spawn(self._beat(), self.errors)
        self.crashes = spawn(self._crashes(), self.errors)

    async def _crashes(self) -> None:
        """Crashes and comebacks of this group's nodes, at their model times."""
        for t, node_id, down in self.faults.crash_events():
            await self.clock.until(t)
            self.faults.crash(self.nodes[node_id - self.first], down)

    async def _beat(self) -> None:
        """Every node's timer in one heap; all reports due by the same wake-up leave together."""
        clock = self.clock
        heap = [(t, i) for i, t in enumerate(self.first_beats) if t < self.duration]
        heapq.heapify(heap)
        tick = REPORT_TICK_S / self.scale
        woke = -tick
        while heap:
            await clock.until(max(heap[0][0], woke + tick))
            now = woke = clock.now()
            due = []
            while heap and heap[0][0] <= now:
                planned, i = heapq.heappop(heap)
                self.lateness.add(now - planned)
                report = self.faults.report(self.nodes[i], now, self.with_ids)
                if report is not None:
                    due.append(report)
                if planned + self.interval < self.duration:
                    heapq.heappush(heap, (planned + self.interval, i))
            self._deliver(due)

    def _deliver(self, reports: list[Report]) -> None:
        """Every replica gets every report after the delivery delay plus, with jitter, a draw
        of its own (as in the virtual engine), so reports of one node can overtake each other.
        Reports landing in the same loop turn still travel together."""
        if self.jitter > 0:
            later = asyncio.get_running_loop().call_later
            for report in reports:
                for outbox in self.outboxes:
                    delay = self.delay + self.delivery_rng.uniform(0.0, self.jitter)
                    later(delay * self.scale, outbox.post, report)
        elif self.delay > 0:
            asyncio.get_running_loop().call_later(self.delay * self.scale, self._post, reports)
        else:
            self._post(reports)

    def _post(self, reports: list[Report]) -> None:
        for outbox in self.outboxes:
            for report in reports:
                outbox.post(report)

    def _response(self, node: Node) -> Report | None:
        if self.with_response and not node.down:
            return node.report(self.clock.now(), self.with_ids)
        return None

    def _legs(self, leg: float, node_ids: list[int]) -> float:
        """One leg of a batch: a slow node in it delays the whole batch (they travel
        together), so its extra latency is the largest of the batch."""
        if not self.faults.slow:
            return leg
        now = self.clock.now()
        return leg + max(self.faults.extra_leg(i, now) for i in node_ids)

    async def create(self, items: tuple[CreateRpc, ...]) -> tuple[Answer, ...]:
        """Each create's (outcome, the node's fresh report if the strategy wants one)."""
        leg = self._legs(self.create_leg, [item[0] for item in items])
        await self.clock.sleep(leg)
        answers = []
        create = self.faults.create
        now = self.clock.now()
        for node_id, sandbox_id, vcpu, memory_mib, usage in items:
            node = self.nodes[node_id - self.first]
            outcome = create(node, sandbox_id, vcpu, memory_mib, usage, now)
            answers.append((outcome, self._response(node)))
        await self.clock.sleep(leg)
        return tuple(answers)

    async def kill(self, items: tuple[tuple[int, int], ...]) -> tuple[Answer, ...]:
        """(node_id, sandbox_id) each -> (outcome, fresh report)."""
        leg = self._legs(self.kill_leg, [item[0] for item in items])
        await self.clock.sleep(leg)
        answers = []
        now = self.clock.now()
        for node_id, sandbox_id in items:
            node = self.nodes[node_id - self.first]
            answers.append((self.faults.kill(node, sandbox_id, now), self._response(node)))
        await self.clock.sleep(leg)
        return tuple(answers)

    async def drain_sync(self) -> None:
        """After the run: one last report of every live node, straight to every replica, so
        the end-of-run check can compare each replica's belief with the truth."""
        now = self.clock.now()
        reports = tuple(n.report(now, self.with_ids) for n in self.nodes if not n.down)
        await asyncio.gather(*(s.reports.remote(reports) for s in self.schedulers))

    async def sample(self) -> tuple[list[float], list[int]]:
        """True allocated vCPUs and sandbox counts, node by node; raises a failure if any."""
        self.raise_failure()
        return [n.cpu_allocated for n in self.nodes], [len(n.sandboxes) for n in self.nodes]

    async def final(self) -> dict[str, Any]:
        """End state: the NODES columns, each node's sandbox IDs, the IDs lost to crashes,
        the faults injected and heartbeat lateness."""
        if self.beats is not None:
            self.beats.cancel()
            self.crashes.cancel()
        self.raise_failure()
        return {
            "restarted": self.restarted,
            "columns": node_columns(self.nodes),
            "sandbox_ids": [sorted(n.sandboxes) for n in self.nodes],
            "lost_ids": [i for n in self.nodes for i in n.lost],
            "faults": dict(self.faults.counts),
            "lateness": self.lateness.values,
        }
