"""Client-pool actor: many concurrent client coroutines, open loop or closed loop.

Arrival times, client start times and lifetimes come from `harness.workload`, the functions the
virtual engine uses. Each call is recorded with its intended send time, its actual send time
and its completion: latency counts from the intended time, so a pool that falls behind shows
up as latency rather than as fewer requests (no coordinated omission).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pyarrow as pa
import ray

from actors.outbox import Checked, Outbox
from harness.clock import WallClock
from harness.config import Config
from harness.engine import stream
from harness.node import Outcome
from harness.results import REQUESTS, Recorder, table
from harness.workload import client_starts, lifetime, open_loop_arrivals


@ray.remote(num_cpus=0)
class ClientPool(Checked):
    """Pool `index` of `pools`: closed-loop client c (or open-loop arrival c) runs here when
    c % pools == index, and talks to scheduler replica c % replicas, as in the virtual engine."""

    def __init__(self, index: int, pools: int, config: Config, seed: int) -> None:
        super().__init__()
        self.index = index
        self.pools = pools
        self.workload = config.workload
        self.duration = config.run.duration_s
        self.scale = config.run.time_scale
        self.strategy = config.placement.strategy
        self.seed = seed
        self.arrival_rng = stream(seed, "workload")
        self.lifetime_rng = stream(seed, f"lifetime/{index}")
        self.recorder = Recorder()
        self.done = 0
        self.next_sandbox = index
        self.waiting: dict[int, asyncio.Future] = {}
        self.clock = WallClock(0.0, self.scale)
        self.creates: list[Outbox] = []
        self.kills: list[Outbox] = []

    async def connect(self, replicas: list[Any]) -> str:
        self.creates = [Outbox(r.create, self.errors) for r in replicas]
        self.kills = [Outbox(r.kill, self.errors) for r in replicas]
        return ray.get_runtime_context().get_node_id()

    async def run(self, epoch: float) -> None:
        """Runs every client of this pool to its end; returns when the last one is done."""
        self.clock = WallClock(epoch, self.scale)
        w = self.workload
        async with asyncio.TaskGroup() as clients:
            if w.arrival == "closed":
                for client, start in enumerate(client_starts(w, self.arrival_rng)):
                    if client % self.pools == self.index and start < self.duration:
                        clients.create_task(self._closed(client, start))
            else:
                arrivals = open_loop_arrivals(w, self.duration, self.arrival_rng)
                for client, t in enumerate(arrivals):
                    if client % self.pools == self.index:
                        # No yield when already due: a backlog leaves in one batch.
                        await self.clock.until(t)
                        clients.create_task(self._life(client, t))
        self.raise_failure()

    async def answers(self, batch: tuple[tuple[int, Any], ...]) -> None:
        """Answers from a scheduler replica, keyed by sandbox ID."""
        waiting = self.waiting
        for sandbox_id, answer in batch:
            waiting.pop(sandbox_id).set_result(answer)

    async def drain(self) -> tuple[list[pa.RecordBatch], int]:
        """Rows recorded since the last drain, and how many creates have finished in all."""
        self.raise_failure()
        rows, self.recorder = self.recorder.requests, Recorder()
        columns = Recorder.columns(REQUESTS, rows)
        return table(REQUESTS, self.strategy, self.seed, columns).to_batches(), self.done

    async def _closed(self, client: int, start: float) -> None:
        """create -> hold -> kill -> think -> create ... until the run's end."""
        intended = start
        while intended < self.duration:
            await self.clock.until(intended)
            pause = await self._life(client, intended)
            if pause is None:
                return
            intended = self.clock.now() + pause

    async def _life(self, client: int, intended: float) -> float | None:
        """One create and, if it was placed and its lifetime ends within the run, its kill.

        Returns the pause before this client's next create, or None when it has no next one.
        """
        w = self.workload
        life = lifetime(w, self.lifetime_rng)
        sandbox_id, node, done = await self._create(client, intended)
        if sandbox_id is None:
            return w.failure_backoff_s
        if life is None or done + life >= self.duration:
            return None
        await self.clock.until(done + life)
        await self._kill(client, sandbox_id, node, done + life)
        return w.think_s

    def _send(self, outbox: Outbox, sandbox_id: int, item: tuple) -> asyncio.Future:
        answer = asyncio.get_running_loop().create_future()
        self.waiting[sandbox_id] = answer
        outbox.post(item)
        return answer

    async def _create(self, client: int, intended: float) -> tuple[int | None, int, float]:
        w = self.workload
        sandbox_id = self.next_sandbox
        self.next_sandbox += self.pools
        replica = client % len(self.creates)
        sent = self.clock.now()
        item = (self.index, client, sandbox_id, w.vcpu, w.memory_mib, w.usage, intended)
        step, node, rpcs, skips, attempts, failure = await self._send(
            self.creates[replica], sandbox_id, item
        )
        done = self.clock.now()
        self.recorder.request(
            "create",
            sandbox_id,
            client,
            replica,
            intended,
            done,
            node,
            rpcs,
            skips,
            attempts,
            step,
            failure,
            sent_at=sent,
        )
        self.done += 1
        return (sandbox_id if step == "placed" else None), node, done

    async def _kill(self, client: int, sandbox_id: int, node: int, intended: float) -> None:
        replica = client % len(self.kills)
        sent = self.clock.now()
        item = (self.index, sandbox_id, intended)
        outcome = await self._send(self.kills[replica], sandbox_id, item)
        ok = outcome is Outcome.OK
        self.recorder.request(
            "kill",
            sandbox_id,
            client,
            replica,
            intended,
            self.clock.now(),
            node,
            1,
            0,
            1,
            "killed" if ok else "failed",
            "" if ok else outcome.value,
            sent_at=sent,
        )
