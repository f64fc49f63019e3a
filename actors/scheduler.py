"""Scheduler-replica actor: `harness.scheduler.Scheduler` behind an async Ray actor.

Every create chooses a node and sends the RPC; its answer is handled when it comes back. In
between, other creates choose on the same view and reports overwrite it, which is exactly where
the real service interleaves, so the herd and the races happen for real.
"""

from __future__ import annotations

import asyncio
import functools
import time
from array import array
from typing import Any

import ray

from actors.node_group import Answer
from actors.outbox import Checked, Outbox
from actors.reservoir import Reservoir
from harness.clock import WallClock
from harness.config import Config
from harness.engine import make_scheduler
from harness.node import Outcome
from harness.heartbeat import Report
from harness.request import CreateRequest
from harness.scheduler import Step

CreateItem = tuple[int, int, int, float, float, float, float]
"""(pool, client, sandbox_id, vcpu, memory_mib, usage, issued_at) of one create."""


@ray.remote(num_cpus=0)
class Replica(Checked):
    """One scheduler replica: its own view, in-progress map, ledger and random stream."""

    def __init__(self, replica: int, config: Config, seed: int, cpu_counts: list[int]) -> None:
        super().__init__()
        self.scheduler = make_scheduler(config, seed, replica, cpu_counts)
        self.deadline_s = config.placement.deadline_s
        self.rpc_timeout_s = config.placement.rpc_timeout_ms / 1000.0
        self.scale = config.run.time_scale
        self.clock: WallClock | None = None
        self.placed: dict[int, CreateRequest] = {}
        self.rpc_wall = Reservoir()
        self.group_of: list[int] = []
        self.creates: list[Outbox] = []
        self.kills: list[Outbox] = []
        self.answers: list[Outbox] = []

    async def connect(self, groups: list[Any], group_of: list[int], pools: list[Any]) -> str:
        """Learn the node groups (`group_of[node]` hosts the node) and the client pools."""
        self.group_of = group_of
        # A node group whose process died answers every RPC in flight as failed: its nodes
        # crashed with it (the driver has Ray restart it, empty).
        died = (Outcome.FAILED, None)
        self.creates = [Outbox(g.create, self.errors, died) for g in groups]
        self.kills = [Outbox(g.kill, self.errors, died) for g in groups]
        self.answers = [Outbox(p.answers, self.errors) for p in pools]
        return ray.get_runtime_context().get_node_id()

    async def start(self, epoch: float) -> None:
        self.clock = WallClock(epoch, self.scale)

    def _now(self) -> float:
        return 0.0 if self.clock is None else self.clock.now()

    async def reports(self, reports: tuple[Report, ...]) -> None:
        now = self._now()
        apply = self.scheduler.apply_report
        for report in reports:
            apply(report, now)

    async def create(self, items: tuple[CreateItem, ...]) -> None:
        """Creates from one client pool; each answer goes back to its pool on its own time."""
        for pool, client, sandbox_id, vcpu, memory_mib, usage, issued_at in items:
            req = CreateRequest(
                sandbox_id,
                vcpu,
                memory_mib,
                usage,
                None,
                issued_at,
                issued_at + self.deadline_s,
                client,
            )
            self._place(pool, req)

    def _place(self, pool: int, req: CreateRequest) -> None:
        """Choose a node and send the create RPC; `_placed` goes on when the answer is back,
        and in between this replica serves other calls on the same view."""
        if self.scheduler.start_create(req, self.clock.now()) is None:
            self._answer_create(pool, req, Step.FAILED)
            return
        rpc = (req.node, req.sandbox_id, req.vcpu, req.memory_mib, req.usage)
        answered = functools.partial(self._placed, pool, req, time.perf_counter())
        self.creates[self.group_of[req.node]].call(rpc, answered)

    def _placed(self, pool: int, req: CreateRequest, sent: float, answer: Answer) -> None:
        outcome, response = answer
        if outcome is Outcome.TIMEOUT:  # no answer came: give up when the timeout expires
            left = self.rpc_timeout_s * self.scale - (time.perf_counter() - sent)
            later = asyncio.get_running_loop().call_later
            later(max(left, 0.0), self._answered, pool, req, outcome, None)
            return
        self.rpc_wall.add(time.perf_counter() - sent)
        self._answered(pool, req, outcome, response)

    def _answered(
        self, pool: int, req: CreateRequest, outcome: Outcome, response: Report | None
    ) -> None:
        step = self.scheduler.finish_create(req, outcome, self.clock.now(), response)
        if step is Step.RETRY:
            self._place(pool, req)
        else:
            self._answer_create(pool, req, step)

    def _answer_create(self, pool: int, req: CreateRequest, step: Step) -> None:
        if step is Step.PLACED:
            self.placed[req.sandbox_id] = req
        node = req.node if step is Step.PLACED else -1
        self.answers[pool].post(
            (req.sandbox_id, (step.value, node, req.rpcs, req.skips, req.attempts, req.failure))
        )

    async def kill(self, items: tuple[tuple[int, int, float], ...]) -> None:
        """(pool, sandbox_id, issued_at) of kills of sandboxes this replica placed."""
        for pool, sandbox_id, issued_at in items:
            req = self.placed.pop(sandbox_id)
            req.issued_at = issued_at
            self.scheduler.start_kill(req, self.clock.now())
            answered = functools.partial(self._killed, pool, req)
            self.kills[self.group_of[req.node]].call((req.node, req.sandbox_id), answered)

    def _killed(self, pool: int, req: CreateRequest, answer: Answer) -> None:
        outcome, response = answer
        self.scheduler.finish_kill(req, outcome, self.clock.now(), response)
        self.answers[pool].post((req.sandbox_id, outcome))

    async def sample(self) -> tuple[list[float], list[int], list[float], list[float]]:
        """Believed vCPUs, in-progress creates (count, vCPUs) and in-progress kills (vCPUs),
        node by node."""
        self.raise_failure()
        s = self.scheduler
        now = self._now()
        believed = s.ledger.believed_cpu
        return (
            [believed(i, now) for i in range(s.n)],
            [len(pending) for pending in s.in_progress],
            list(s.pending_cpu),
            list(s.killing_cpu),
        )

    async def rpc_times(self) -> array:
        """Wall seconds of create RPC round trips as this replica saw them (all, or a uniform
        sample of 100,000 in a long run)."""
        self.raise_failure()
        return self.rpc_wall.values
