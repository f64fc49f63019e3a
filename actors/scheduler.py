"""Scheduler-replica actor: `harness.scheduler.Scheduler` behind an async Ray actor.

Every create is its own coroutine: it chooses a node, then awaits the node's answer. While it
waits, other creates choose on the same view and reports overwrite it, which is exactly where
the real service interleaves, so the herd and the races happen for real.
"""

from __future__ import annotations

import time
from array import array
from typing import Any

import ray

from actors.outbox import Checked, Outbox, spawn
from actors.reservoir import Reservoir
from harness.clock import WallClock
from harness.config import Config
from harness.engine import make_scheduler
from harness.report import Report
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
        self.creates = [Outbox(g.create, self.errors) for g in groups]
        self.kills = [Outbox(g.kill, self.errors) for g in groups]
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
            spawn(self._place(pool, req), self.errors)

    async def _place(self, pool: int, req: CreateRequest) -> None:
        scheduler = self.scheduler
        clock = self.clock
        while True:
            if scheduler.start_create(req, clock.now()) is None:
                step = Step.FAILED
                break
            sent = time.perf_counter()
            outcome, response = await self.creates[self.group_of[req.node]].call(
                (req.node, req.sandbox_id, req.vcpu, req.memory_mib, req.usage)
            )
            self.rpc_wall.add(time.perf_counter() - sent)
            step = scheduler.finish_create(req, outcome, clock.now(), response)
            if step is not Step.RETRY:
                break
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
            spawn(self._kill(pool, req), self.errors)

    async def _kill(self, pool: int, req: CreateRequest) -> None:
        self.scheduler.start_kill(req, self.clock.now())
        outcome, response = await self.kills[self.group_of[req.node]].call(
            (req.node, req.sandbox_id)
        )
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
