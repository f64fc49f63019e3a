"""The deterministic virtual-time engine: the whole scenario as events on a VirtualClock.

It only moves messages and keeps time; every rule (admission, placement, ledger) is the
model's. An RPC is two legs: the node acts at the midpoint, the scheduler hears the answer
at the end, so a report can fall between the two just as in the real service.
"""

from __future__ import annotations

import time

from harness.analysis import seed_summary
from harness.clock import VirtualClock
from harness.cluster import build_nodes
from harness.config import Config
from harness.engine import Progress, make_scheduler, stream
from harness.faults import Faults
from harness.node import Node, Outcome
from harness.report import Report
from harness.request import CreateRequest
from harness.results import (
    NODES,
    REQUESTS,
    TIMELINE,
    Recorder,
    SeedResult,
    node_columns,
    table,
)
from harness.scheduler import Scheduler, Step
from harness.workload import client_starts, lifetime, open_loop_arrivals


class _World:
    """One (strategy, seed): nodes, scheduler replicas, clients, and the clock that runs them."""

    def __init__(self, config: Config, seed: int) -> None:
        self.config = config
        self.clock = VirtualClock()
        self.duration = config.run.duration_s
        self.nodes: list[Node] = build_nodes(config, stream(seed, "cluster"))
        cpu_counts = [n.cpu_count for n in self.nodes]
        self.schedulers = [
            make_scheduler(config, seed, r, cpu_counts) for r in range(config.placement.replicas)
        ]
        ledger = self.schedulers[0].ledger
        self.with_ids = ledger.wants_sandbox_ids
        self.with_response = ledger.wants_response_report
        self.workload_rng = stream(seed, "workload")
        self.heartbeat_rng = stream(seed, "heartbeat")
        self.delivery_rng = stream(seed, "report-delivery/0")
        self.seed = seed
        self.lifetime_rngs: dict[int, object] = {}
        self.recorder = Recorder()
        self.next_sandbox = 0
        c = config.cluster
        self.create_leg = c.create_latency_ms / 2000.0
        self.kill_leg = c.kill_latency_ms / 2000.0
        self.report_delay = config.heartbeat.delay_ms / 1000.0
        self.report_jitter = config.heartbeat.jitter_ms / 1000.0
        self.rpc_timeout = config.placement.rpc_timeout_ms / 1000.0
        self.faults = Faults(config.faults, stream(seed, "faults/0"), range(len(self.nodes)))

    # -- set-up ------------------------------------------------------------------------------

    def start(self) -> None:
        clock = self.clock
        # The reference syncs every node once before the run: applied at t=0, before anything.
        self._report(self.nodes, delayed=False)
        for t, node, down in self.faults.crash_events():
            clock.at(t, self._crash, (self.nodes[node], down))
        hb = self.config.heartbeat
        if hb.phase == "aligned":
            if hb.interval_s < self.duration:
                clock.at(hb.interval_s, self._aligned_beat)
        else:
            for node in self.nodes:
                phase = self.heartbeat_rng.uniform(0.0, hb.interval_s)
                if phase < self.duration:
                    clock.at(phase, self._node_beat, node)
        if self.config.run.sample_interval_s > 0:
            clock.at(0.0, self._sample)
        w = self.config.workload
        if w.arrival == "closed":
            for client, start in enumerate(client_starts(w, self.workload_rng)):
                if start < self.duration:
                    clock.at(start, self._issue, client)
        else:
            self.arrivals = open_loop_arrivals(w, self.duration, self.workload_rng)
            self.open_clients = 0
            first = next(self.arrivals, None)
            if first is not None:
                clock.at(first, self._arrival)

    # -- heartbeats and samples --------------------------------------------------------------

    def _report(self, nodes: list[Node], delayed: bool = True) -> None:
        """Take each node's report now; every replica receives it after the delivery delay
        plus its own jitter draw, so reports of one node can overtake each other."""
        now = self.clock.now()
        for node in nodes:
            report = self.faults.report(node, now, self.with_ids)
            if report is None:
                continue
            for scheduler in self.schedulers:
                delay = self.report_delay if delayed else 0.0
                if delayed and self.report_jitter > 0:
                    delay += self.delivery_rng.uniform(0.0, self.report_jitter)
                if delay > 0:
                    self.clock.after(delay, self._deliver, (scheduler, report))
                else:
                    scheduler.apply_report(report, now)

    def _deliver(self, arg: tuple[Scheduler, Report]) -> None:
        scheduler, report = arg
        scheduler.apply_report(report, self.clock.now())

    def _crash(self, arg: tuple[Node, bool]) -> None:
        self.faults.crash(*arg)

    def _aligned_beat(self, _: None) -> None:
        self._report(self.nodes)
        nxt = self.clock.now() + self.config.heartbeat.interval_s
        if nxt < self.duration:
            self.clock.at(nxt, self._aligned_beat)

    def _node_beat(self, node: Node) -> None:
        self._report([node])
        nxt = self.clock.now() + self.config.heartbeat.interval_s
        if nxt < self.duration:
            self.clock.at(nxt, self._node_beat, node)

    def _sample(self, _: None) -> None:
        now = self.clock.now()
        sample = self.recorder.sample
        for replica, scheduler in enumerate(self.schedulers):
            believed = scheduler.ledger.believed_cpu
            for node in self.nodes:
                i = node.node_id
                sample(
                    now,
                    i,
                    replica,
                    node.cpu_allocated,
                    len(node.sandboxes),
                    believed(i, now),
                    len(scheduler.in_progress[i]),
                    scheduler.pending_cpu[i],
                    scheduler.killing_cpu[i],
                )
        nxt = now + self.config.run.sample_interval_s
        if nxt <= self.duration:
            self.clock.at(nxt, self._sample)

    # -- creates ----------------------------------------------------------------------------

    def _arrival(self, _: None) -> None:
        now = self.clock.now()
        self._issue(self.open_clients)
        self.open_clients += 1
        nxt = next(self.arrivals, None)
        if nxt is not None:
            self.clock.at(max(nxt, now), self._arrival)

    def _issue(self, client: int) -> None:
        now = self.clock.now()
        w = self.config.workload
        req = CreateRequest(
            self.next_sandbox,
            w.vcpu,
            w.memory_mib,
            w.usage,
            lifetime(w, self._lifetime_rng(client)),
            now,
            now + self.config.placement.deadline_s,
            client,
        )
        self.next_sandbox += 1
        self._send_create(req)

    def _lifetime_rng(self, client: int):
        key = client if self.config.workload.arrival == "closed" else -1
        rng = self.lifetime_rngs.get(key)
        if rng is None:
            name = f"lifetime/{key}" if key >= 0 else "lifetime"
            rng = self.lifetime_rngs[key] = stream(self.seed, name)
        return rng

    def _scheduler_of(self, client: int) -> Scheduler:
        return self.schedulers[client % len(self.schedulers)]

    def _send_create(self, req: CreateRequest) -> None:
        if self._scheduler_of(req.client).start_create(req, self.clock.now()) is None:
            self._create_done(req, Step.FAILED)
        else:
            self.clock.after(self._leg(self.create_leg, req.node), self._node_create, req)

    def _leg(self, leg: float, node: int) -> float:
        return leg + self.faults.extra_leg(node, self.clock.now())

    def _response(self, node: Node) -> Report | None:
        """The node's fresh report, sent back with an RPC answer to strategies that want it."""
        if self.with_response and not node.down:
            return node.report(self.clock.now(), self.with_ids)
        return None

    def _node_create(self, req: CreateRequest) -> None:
        node = self.nodes[req.node]
        now = self.clock.now()
        outcome = self.faults.create(node, req.sandbox_id, req.vcpu, req.memory_mib, req.usage, now)
        leg = self._leg(self.create_leg, req.node)
        if outcome is Outcome.TIMEOUT:  # no answer: the scheduler gives up at its timeout
            self.clock.after(
                max(self.rpc_timeout - leg, 0.0), self._create_answer, (req, outcome, None)
            )
        else:
            self.clock.after(leg, self._create_answer, (req, outcome, self._response(node)))

    def _create_answer(self, arg: tuple[CreateRequest, Outcome, Report | None]) -> None:
        req, outcome, response = arg
        step = self._scheduler_of(req.client).finish_create(
            req, outcome, self.clock.now(), response
        )
        if step is Step.RETRY:
            self._send_create(req)
        else:
            self._create_done(req, step)

    def _create_done(self, req: CreateRequest, step: Step) -> None:
        now = self.clock.now()
        placed = step is Step.PLACED
        self.recorder.request(
            "create",
            req.sandbox_id,
            req.client,
            req.client % len(self.schedulers),
            req.issued_at,
            now,
            req.node if placed else -1,
            req.rpcs,
            req.skips,
            req.attempts,
            step.value,
            req.failure,
        )
        closed = self.config.workload.arrival == "closed"
        if placed:
            if req.lifetime is not None and now + req.lifetime < self.duration:
                self.clock.after(req.lifetime, self._send_kill, req)
        elif closed:
            self._next_cycle(req.client, self.config.workload.failure_backoff_s)

    def _next_cycle(self, client: int, pause: float) -> None:
        if self.clock.now() + pause < self.duration:
            self.clock.after(pause, self._issue, client)

    def drain(self) -> list[list[float]]:
        """Every live node reports once more after the last RPC; each replica's belief then."""
        now = self.clock.now()
        live = [node for node in self.nodes if not node.down]
        views = []
        for scheduler in self.schedulers:
            for node in live:
                scheduler.apply_report(node.report(now, self.with_ids), now)
            views.append([scheduler.ledger.believed_cpu(n.node_id, now) for n in self.nodes])
        return views

    # -- kills ------------------------------------------------------------------------------

    def _send_kill(self, req: CreateRequest) -> None:
        req.issued_at = self.clock.now()
        self._scheduler_of(req.client).start_kill(req, req.issued_at)
        self.clock.after(self._leg(self.kill_leg, req.node), self._node_kill, req)

    def _node_kill(self, req: CreateRequest) -> None:
        node = self.nodes[req.node]
        outcome = self.faults.kill(node, req.sandbox_id, self.clock.now())
        leg = self._leg(self.kill_leg, req.node)
        self.clock.after(leg, self._kill_answer, (req, outcome, self._response(node)))

    def _kill_answer(self, arg: tuple[CreateRequest, Outcome, Report | None]) -> None:
        req, outcome, response = arg
        now = self.clock.now()
        replica = req.client % len(self.schedulers)
        self.schedulers[replica].finish_kill(req, outcome, now, response)
        self.recorder.request(
            "kill",
            req.sandbox_id,
            req.client,
            replica,
            req.issued_at,
            now,
            req.node,
            1,
            0,
            1,
            "killed" if outcome is Outcome.OK else "failed",
            "" if outcome is Outcome.OK else outcome.value,
        )
        if self.config.workload.arrival == "closed":
            self._next_cycle(req.client, self.config.workload.think_s)


class VirtualEngine:
    name = "virtual"

    def prepare(self, config: Config) -> None:
        """Nothing to set up: the virtual engine needs only the config."""

    def run_seed(self, config: Config, seed: int, progress: Progress | None = None) -> SeedResult:
        wall = time.perf_counter()
        world = _World(config, seed)
        world.start()
        world.clock.run(progress)
        wall = time.perf_counter() - wall
        strategy = config.placement.strategy
        nodes = table(NODES, strategy, seed, node_columns(world.nodes))
        requests = table(
            REQUESTS, strategy, seed, Recorder.columns(REQUESTS, world.recorder.requests)
        )
        timeline = table(
            TIMELINE, strategy, seed, Recorder.columns(TIMELINE, world.recorder.timeline)
        )
        summary = {
            "engine": self.name,
            "strategy": strategy,
            "seed": seed,
            "nodes": len(world.nodes),
            "k": config.placement.k,
            "replicas": config.placement.replicas,
            **seed_summary(nodes, requests, timeline),
            "sim_duration_s": max(world.clock.now(), config.run.duration_s),
            "engine_wall_s": wall,
            **world.faults.counts,
        }
        return SeedResult(
            summary,
            nodes,
            requests,
            timeline,
            sandbox_ids=[list(n.sandboxes) for n in world.nodes],
            lost_ids=[i for n in world.nodes for i in n.lost],
            drained_views=world.drain(),
        )
