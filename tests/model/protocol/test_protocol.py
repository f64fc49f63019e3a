"""The protocol parties driven by hand: scripted messages and times, no engine.

Each test calls the handlers of `NodeHost`, `ReplicaHost` and `ClientHost` itself (or their
`deliver`), in the order a run could deliver them, and checks what each party emits (time,
kind, key, payload) and the state after every step: the replica's belief
(`ReplicaHost.view`), the node's true `cpu_allocated`. Times are chosen exactly
representable, so every number is compared exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import harness.wiring.scenario as sc
from harness.config import Config, ConfigError
from harness.model.cluster.node import Outcome
from harness.model.protocol import Kind
from harness.model.protocol.node_party import NodeHost
from harness.model.random_streams import Streams
from harness.model.workload.request import Shape
from tests.support.configs import scenario
from tests.support.messages import Message, Sink, clients, open_loop


class Parties:
    """The node side and scheduler replica 0 of `config`, emitting into one sink."""

    def __init__(self, config: Config, seed: int = 0) -> None:
        self.sink = Sink()
        self.node = sc.nodes(config, seed)
        self.nodes = sc.node_host(config, seed, self.node, self.sink)
        self.replica = sc.replica_host(config, seed, 0, self.sink)

    def sync(self) -> None:
        """The pre-run sync, applied at t = 0."""
        self.nodes.sync()
        for at, kind, key, report in self.sink.take():
            assert kind == Kind.REPORT and at == 0.0
            self.replica.on_report(key, report, at)

    def believed(self, now: float, node: int = 0) -> float:
        return self.replica.view(now)[0][node]


SHAPE = Shape(1.0, 1024.0, 1.0)
"""The shape of the default workload's creates."""


def submit(sandbox_id: int, now: float, vcpu: float = 1.0) -> tuple:
    """Client 0's SUBMIT_CREATE payload, issued now; its context is ("ctx", sandbox_id)."""
    return (0, sandbox_id, Shape(vcpu, 1024.0, 1.0), now, ("ctx", sandbox_id))


def rpc(sandbox_id: int, vcpu: float = 1.0) -> tuple:
    """The CREATE_RPC payload replica 0 sends for `submit(sandbox_id, ...)`."""
    return (sandbox_id, Shape(vcpu, 1024.0, 1.0), 0)


# --- the races of section 6 ---------------------------------------------------------------

STRATEGIES = ("optimistic", "optimistic_pre_rpc", "reconcile", "sync_response")


def race(strategy: str, vcpu: float = 1.0, base: float = 2.0) -> Parties:
    """One node with `base` vCPUs allocated; create and kill legs of 1 s; beats at 20 and 40
    (none at 60: the run ends at 50), each report applied 0.5 s after it is taken."""
    return Parties(
        scenario(
            cluster={
                "nodes": 1,
                "initial_cpu_per_node": [base],
                "create_latency_ms": 2000.0,
                "kill_latency_ms": 2000.0,
            },
            heartbeat={"interval_s": 20.0, "delay_ms": 500.0},
            placement={"k": 1, "strategy": strategy, "rpc_timeout_ms": 5000.0},
            workload={"vcpu": vcpu},
            run={"duration_s": 50.0},
        )
    )


def trace(p: Parties) -> tuple[list[float], list[float], Callable[[float], None]]:
    """(believed, true, step): step(now) records node 0 as the replica and the node see it."""
    seen: list[float] = []
    truth: list[float] = []

    def step(now: float) -> None:
        seen.append(p.believed(now))
        truth.append(p.node[0].cpu_allocated)

    return seen, truth, step


def beat(p: Parties, now: float) -> Message:
    """The beat at `now` (on time): its one report, for replica 0 at now + 0.5; the next beat
    is checked to be planned at now + 20, if before the run's end."""
    p.nodes.on_beat(0, now, now)
    report, *nxt = p.sink.take()
    assert nxt == ([(now + 20.0, Kind.BEAT, 0, now + 20.0)] if now + 20.0 < 50.0 else [])
    assert report[:3] == (now + 0.5, Kind.REPORT, 0)
    assert report[3].taken_at == now
    return report


# Believed vCPUs of the node after each step (true: 2, 2, 3, 3, 3, 3, 3, 3). Only the add after
# the RPC counts the sandbox twice (4) from its answer until the next report is applied.
# fmt: off
DOUBLE_COUNT = {
    #                     sync sent acts beat applied answer beat-40 applied
    "optimistic":         [2,  2,   2,   2,   3,      4,     4,      3],
    "optimistic_pre_rpc": [2,  3,   3,   3,   3,      3,     3,      3],
    "reconcile":          [2,  2,   2,   2,   3,      3,     3,      3],  # report lists 7: no add
    "sync_response":      [2,  2,   2,   2,   3,      3,     3,      3],  # answer's seq 2 dropped
}
# fmt: on


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_double_count_race(strategy: str) -> None:
    """A report taken after the node acted is applied before the create's answer."""
    p = race(strategy)
    seen, truth, step = trace(p)
    p.sync()
    step(0.0)
    # 18.75: the create is sent; it reaches the node one leg (1 s) later
    p.replica.on_submit_create(0, submit(7, 18.75), 18.75)
    assert p.sink.take() == [(19.75, Kind.CREATE_RPC, 0, rpc(7))]
    assert p.replica.view(18.75)[1:] == ([1], [1.0], [0.0])  # in progress: 1 create, 1 vCPU
    step(18.75)
    # 19.75: the node creates it and answers; the replica hears it at 20.75
    p.nodes.on_create(0, rpc(7), 19.75)
    ((at, kind, key, answer),) = p.sink.take()
    assert (at, kind, key, answer[:2]) == (20.75, Kind.CREATE_ANSWER, 0, (7, Outcome.OK))
    if strategy == "sync_response":
        assert (answer[2].seq, answer[2].taken_at, answer[2].cpu_allocated) == (2, 19.75, 3)
    else:
        assert answer[2] is None
    step(19.75)
    # 20: the beat takes a report that already counts sandbox 7; applied at 20.5
    report = beat(p, 20.0)
    assert report[3].cpu_allocated == 3
    step(20.0)
    p.replica.on_report(0, report[3], 20.5)
    step(20.5)
    # 20.75: the answer, after the report
    p.replica.on_create_answer(0, answer, 20.75)
    # the last report applied is still the beat's (sync_response drops the answer's older one)
    assert p.replica.scheduler.strategy.views[0].seq == report[3].seq
    assert p.sink.take() == [
        (20.75, Kind.CREATE_DONE, 0, (7, "placed", 0, 1, 0, 1, None, ("ctx", 7), 1, None, 0))
    ]
    assert p.replica.view(20.75)[1:] == ([0], [0.0], [0.0])
    step(20.75)
    # 40: the next beat; the view keeps what it had until its report is applied at 40.5
    report = beat(p, 40.0)
    step(40.25)
    p.replica.on_report(0, report[3], 40.5)
    step(40.5)
    assert truth == [2, 2, 3, 3, 3, 3, 3, 3]
    assert seen == DOUBLE_COUNT[strategy]


# Believed vCPUs after each step (true: 2, 2, 2, 2, 3, 3, 3, 3). Only the add before the RPC
# loses the sandbox: the report taken at 20 erases it, and it stays invisible until 40.5.
# fmt: off
ERASE = {
    #                     sync beat sent applied acts answer beat-40 applied
    "optimistic":         [2,  2,   2,   2,      2,   3,     3,      3],
    "optimistic_pre_rpc": [2,  2,   3,   2,      2,   2,     2,      3],
    "reconcile":          [2,  2,   2,   2,      2,   3,     3,      3],  # 7 unlisted: +1
    "sync_response":      [2,  2,   2,   2,      2,   3,     3,      3],  # answer's seq 3 applied
}
# fmt: on


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_erase_race(strategy: str) -> None:
    """A report taken before the create is applied while its RPC is on the wire."""
    p = race(strategy)
    seen, truth, step = trace(p)
    p.sync()
    step(0.0)
    # 20: the beat takes a report without sandbox 7; applied at 20.5
    report = beat(p, 20.0)
    assert report[3].cpu_allocated == 2
    step(20.0)
    # 20.25: the create is sent (reaches the node at 21.25)
    p.replica.on_submit_create(0, submit(7, 20.25), 20.25)
    assert p.sink.take() == [(21.25, Kind.CREATE_RPC, 0, rpc(7))]
    step(20.25)
    # 20.5: the old report is applied during the RPC; the create still counts as in progress
    p.replica.on_report(0, report[3], 20.5)
    assert p.replica.view(20.5)[1:] == ([1], [1.0], [0.0])
    step(20.5)
    # 21.25: the node creates it; the answer arrives at 22.25
    p.nodes.on_create(0, rpc(7), 21.25)
    ((at, kind, key, answer),) = p.sink.take()
    assert (at, kind, key, answer[:2]) == (22.25, Kind.CREATE_ANSWER, 0, (7, Outcome.OK))
    step(21.25)
    p.replica.on_create_answer(0, answer, 22.25)
    assert p.sink.take() == [
        (22.25, Kind.CREATE_DONE, 0, (7, "placed", 0, 1, 0, 1, None, ("ctx", 7), 1, None, 0))
    ]
    assert p.replica.view(22.25)[1:] == ([0], [0.0], [0.0])
    step(22.25)
    report = beat(p, 40.0)
    step(40.25)
    p.replica.on_report(0, report[3], 40.5)
    step(40.5)
    assert truth == [2, 2, 2, 2, 3, 3, 3, 3]
    assert seen == ERASE[strategy]


def test_optimistic_remove_subtracts_with_the_underflow_guard() -> None:
    """Base load 1, sandboxes of 2 vCPUs: a kill answered OK subtracts 2; when a report taken
    after the kill is applied first, the view holds 1 < 2 and the remove is skipped."""
    p = race("optimistic", vcpu=2.0, base=1.0)
    view = p.replica.scheduler.strategy.views[0]
    p.sync()

    def place(sandbox_id: int, now: float) -> None:
        p.replica.on_submit_create(0, submit(sandbox_id, now, vcpu=2.0), now)
        ((_, _, _, payload),) = p.sink.take()
        p.nodes.on_create(0, payload, now + 1.0)
        ((_, _, _, answer),) = p.sink.take()
        p.replica.on_create_answer(0, answer, now + 2.0)
        assert p.sink.take()[0][3][1] == "placed"

    place(7, 1.0)
    assert p.believed(3.0) == 3 == p.node[0].cpu_allocated
    # 5: kill 7; the node kills it at 6, the replica hears OK at 7 and subtracts
    p.replica.on_submit_kill(0, (7, ("kill", 7)), 5.0)
    assert p.sink.take() == [(6.0, Kind.KILL_RPC, 0, (7, 0))]
    assert p.replica.view(5.0) == ([3.0], [0], [0.0], [2.0])  # 2 vCPUs being killed
    p.nodes.on_kill(0, (7, 0), 6.0)
    assert p.sink.take() == [(7.0, Kind.KILL_ANSWER, 0, (7, Outcome.OK, None))]
    assert p.node[0].cpu_allocated == 1
    p.replica.on_kill_answer(0, (7, Outcome.OK, None), 7.0)
    assert p.sink.take() == [(7.0, Kind.KILL_DONE, 0, (7, Outcome.OK, 0, ("kill", 7)))]
    assert p.replica.view(7.0) == ([1.0], [0], [0.0], [0.0])
    # 10: place 8 (view 3); 18.75: kill it; the node kills it at 19.75 (true 1)
    place(8, 10.0)
    assert p.believed(12.0) == 3
    p.replica.on_submit_kill(0, (8, ("kill", 8)), 18.75)
    assert p.sink.take() == [(19.75, Kind.KILL_RPC, 0, (8, 0))]
    p.nodes.on_kill(0, (8, 0), 19.75)
    ((at, _, _, answer),) = p.sink.take()
    assert at == 20.75
    # 20: a report taken after the kill, applied at 20.5, already shows 1 vCPU, 0 MiB
    report = beat(p, 20.0)
    p.replica.on_report(0, report[3], 20.5)
    assert (p.believed(20.5), view.memory_allocated_mib) == (1, 0)
    # 20.75: OK; subtracting 2 vCPUs and 1024 MiB would go below zero: both skipped
    p.replica.on_kill_answer(0, answer, 20.75)
    assert (p.believed(20.75), view.memory_allocated_mib) == (1, 0)
    assert p.node[0].cpu_allocated == 1


# --- the create flow of section 3 ---------------------------------------------------------


def flow(*faults: dict, **placement: Any) -> Parties:
    """Three nodes loaded 0, 1, 2 vCPUs, all three sampled (K = 3): the least loaded node not
    excluded wins. Create legs of 0.5 s. The pre-run sync is applied."""
    p = Parties(
        scenario(
            cluster={"nodes": 3, "initial_cpu_per_node": [0, 1, 2], "create_latency_ms": 1000.0},
            placement={"k": 3, "rpc_timeout_ms": 5000.0, **placement},
            faults=list(faults),
        )
    )
    p.sync()
    return p


def answer_of(p: Parties, node: int, sandbox_id: int, now: float) -> Message:
    """The node handles the CREATE_RPC of `sandbox_id` at `now`; its one answer (a quiet
    node also sets its beat timer, `test_quiet_nodes_report_only_changes`)."""
    p.nodes.on_create(node, rpc(sandbox_id), now)
    (message,) = [m for m in p.sink.take() if m[1] != Kind.BEAT]
    return message


def test_resource_exhausted_is_a_skip_and_the_node_is_chosen_again() -> None:
    # node 0 refuses until 2.5
    p = flow({"kind": "rpc_error", "error": "resource_exhausted", "node": 0, "until_s": 2.5})
    p.replica.on_submit_create(0, submit(7, 1.0), 1.0)
    assert p.sink.take() == [(1.5, Kind.CREATE_RPC, 0, rpc(7))]
    exhausted = (7, Outcome.RESOURCE_EXHAUSTED, None)
    assert answer_of(p, 0, 7, 1.5) == (2.0, Kind.CREATE_ANSWER, 0, exhausted)
    assert p.node[0].cpu_allocated == 0
    p.replica.on_create_answer(0, exhausted, 2.0)
    assert p.sink.take() == [(2.5, Kind.CREATE_RPC, 0, rpc(7))]  # node 0 again: not excluded
    req = p.replica.creating[7]
    assert (req.rpcs, req.skips, req.attempts, req.excluded) == (2, 1, 0, None)
    assert answer_of(p, 0, 7, 2.5) == (3.0, Kind.CREATE_ANSWER, 0, (7, Outcome.OK, None))
    p.replica.on_create_answer(0, (7, Outcome.OK, None), 3.0)
    # (sandbox, step, node, rpcs, skips, attempts, failure, context)
    assert p.sink.take() == [
        (3.0, Kind.CREATE_DONE, 0, (7, "placed", 0, 2, 1, 1, None, ("ctx", 7), 2, None, 0))
    ]


def test_a_failure_excludes_the_node_and_counts_an_attempt_up_to_max_attempts() -> None:
    p = flow({"kind": "rpc_error", "error": "failed"}, max_attempts=2)  # every create fails
    p.replica.on_submit_create(0, submit(7, 1.0), 1.0)
    assert p.sink.take() == [(1.5, Kind.CREATE_RPC, 0, rpc(7))]
    assert answer_of(p, 0, 7, 1.5) == (2.0, Kind.CREATE_ANSWER, 0, (7, Outcome.FAILED, None))
    p.replica.on_create_answer(0, (7, Outcome.FAILED, None), 2.0)
    assert p.sink.take() == [(2.5, Kind.CREATE_RPC, 1, rpc(7))]  # node 0 excluded: node 1
    req = p.replica.creating[7]
    assert (req.rpcs, req.skips, req.attempts, req.excluded) == (2, 0, 1, {0})
    assert answer_of(p, 1, 7, 2.5) == (3.0, Kind.CREATE_ANSWER, 0, (7, Outcome.FAILED, None))
    p.replica.on_create_answer(0, (7, Outcome.FAILED, None), 3.0)
    # two attempts: over, although node 2 was never tried
    done = (7, "failed", -1, 2, 0, 2, "attempts_exhausted", ("ctx", 7), 2, None, 0)
    assert p.sink.take() == [(3.0, Kind.CREATE_DONE, 0, done)]
    assert p.replica.creating == {} and p.replica.placed == {}
    assert [n.cpu_allocated for n in p.node] == [0, 1, 2]


def test_the_deadline_ends_a_create_that_keeps_being_skipped() -> None:
    # every node refuses; issued at 1 with deadline_s 1.5: no retry from 2.5 on
    p = flow({"kind": "rpc_error", "error": "resource_exhausted"}, deadline_s=1.5)
    p.replica.on_submit_create(0, submit(7, 1.0), 1.0)
    assert p.sink.take() == [(1.5, Kind.CREATE_RPC, 0, rpc(7))]
    p.replica.on_create_answer(0, answer_of(p, 0, 7, 1.5)[3], 2.0)
    assert p.sink.take() == [(2.5, Kind.CREATE_RPC, 0, rpc(7))]  # 2.0 < 2.5: again
    p.replica.on_create_answer(0, answer_of(p, 0, 7, 2.5)[3], 3.0)
    done = (7, "failed", -1, 2, 2, 0, "deadline", ("ctx", 7), 2, None, 0)
    assert p.sink.take() == [(3.0, Kind.CREATE_DONE, 0, done)]


def test_a_timeout_answer_arrives_at_rpc_timeout_without_a_report() -> None:
    """sync_response wants a report with every answer; a lost answer has none. Timeout 1.5 s,
    leg 0.5 s: sent at 1, acted at 1.5, heard at 1.5 + (1.5 - 0.5) = 2.5 = 1 + 1.5."""
    p = flow({"kind": "timeout", "node": 0}, strategy="sync_response", rpc_timeout_ms=1500.0)
    p.replica.on_submit_create(0, submit(7, 1.0), 1.0)
    assert p.sink.take() == [(1.5, Kind.CREATE_RPC, 0, rpc(7))]
    assert answer_of(p, 0, 7, 1.5) == (2.5, Kind.CREATE_ANSWER, 0, (7, Outcome.TIMEOUT, None))
    assert p.node[0].cpu_allocated == 1  # the node did create it
    p.replica.on_create_answer(0, (7, Outcome.TIMEOUT, None), 2.5)
    assert p.sink.take() == [(3.0, Kind.CREATE_RPC, 1, rpc(7))]  # a failure: node 0 excluded
    assert p.replica.creating[7].attempts == 1
    at, kind, key, (sandbox, outcome, report) = answer_of(p, 1, 7, 3.0)
    assert (at, kind, key, sandbox, outcome) == (3.5, Kind.CREATE_ANSWER, 0, 7, Outcome.OK)
    assert (report.node_id, report.taken_at, report.cpu_allocated) == (1, 3.0, 2)


@pytest.mark.parametrize(
    "faults", [[], [{"kind": "slow_node", "node": 0, "latency_ms": 1000.0}]], ids=["", "slow"]
)
def test_a_timeout_no_longer_than_a_create_round_trip_is_refused(faults: list[dict]) -> None:
    """The timeout models lost answers: an answer slower than it would have to be given up on
    before the node acts, which the protocol does not do, so such a config is refused."""
    with pytest.raises(ConfigError, match=r"placement\.rpc_timeout_ms: .* slowest create"):
        scenario(
            cluster={"nodes": 1, "create_latency_ms": 1000.0 if faults else 3000.0},
            placement={"k": 1, "rpc_timeout_ms": 1500.0},
            faults=faults,
        )


# --- heartbeats ---------------------------------------------------------------------------


def test_sync_reports_at_once_then_start_sets_crash_and_beat_timers() -> None:
    config = scenario(
        cluster={"nodes": 2, "initial_cpu_per_node": [3, 0]},
        placement={"k": 1, "replicas": 2},
        heartbeat={"interval_s": 10.0, "delay_ms": 250.0, "jitter_ms": 500.0},
        run={"duration_s": 25.0},
        faults=[{"kind": "crash", "node": 1, "at_s": 5.0, "until_s": 15.0}],
    )
    p = Parties(config)
    p.nodes.sync()
    p.nodes.start()
    sent = p.sink.take()
    # the sync: each node's report to each replica at t = 0, no delay or jitter
    assert [(at, kind, key, r.node_id, r.cpu_allocated) for at, kind, key, r in sent[:4]] == [
        (0.0, Kind.REPORT, 0, 0, 3.0),
        (0.0, Kind.REPORT, 1, 0, 3.0),
        (0.0, Kind.REPORT, 0, 1, 0.0),
        (0.0, Kind.REPORT, 1, 1, 0.0),
    ]
    assert sent[4:] == [
        (5.0, Kind.CRASH, 1, True),
        (15.0, Kind.CRASH, 1, False),
        (10.0, Kind.BEAT, 0, 10.0),  # aligned: one group, first beat at one interval
    ]


def test_a_node_host_is_built_from_named_parts() -> None:
    """Its parts (plan, faults, RPC model, ...) are given by name: eleven positionals, which
    are easy to give in the wrong order, are refused."""
    p = Parties(scenario(cluster={"nodes": 3}))
    h = p.nodes
    parts = (h.plan, [], h.faults, h.rpc, h.create_times, h.replicas, False, False)
    with pytest.raises(TypeError):
        NodeHost(h.nodes, *parts, h.delivery, h.sink)


def test_a_party_refuses_a_kind_of_message_it_does_not_handle() -> None:
    """Each party dispatches on the kind itself; another party's kind is an error naming it."""
    p = Parties(scenario(cluster={"nodes": 3}))
    with pytest.raises(TypeError, match="NodeHost does not handle SUBMIT_CREATE messages"):
        p.nodes.deliver(Kind.SUBMIT_CREATE, 0, None, 0.0)
    with pytest.raises(TypeError, match="ReplicaHost does not handle BEAT messages"):
        p.replica.deliver(Kind.BEAT, 0, None, 0.0)
    assert p.sink.take() == []


@pytest.mark.parametrize("quiet", ["on", "off"])
def test_a_restart_after_process_deaths_counts_them_and_keeps_to_the_fault_plan(quiet) -> None:
    """A node side that came back after its process died twice (Ray engine): 2 x 3 crashes,
    unknown losses, node 1 still inside its crash window, node 2's crash still to come,
    beats from the next one due, reports numbered above any sent before. Quiet nodes set
    their group's timer for the crashes' change; the others resume their beats."""
    config = scenario(
        cluster={"nodes": 3},
        placement={"k": 1},
        heartbeat={"interval_s": 10.0, "quiet_nodes": quiet},
        run={"duration_s": 25.0},
        faults=[
            {"kind": "crash", "node": 1, "at_s": 5.0, "until_s": 15.0},
            {"kind": "crash", "node": 2, "at_s": 20.0},
        ],
    )
    p = Parties(config)
    p.nodes.restart(12.0, deaths=2)
    assert p.nodes.unknown_losses and [n.down for n in p.node] == [False, True, False]
    assert p.nodes.faults.counts["fault_crashes"] == 2 * 3 + 1
    assert p.sink.take() == [
        (15.0, Kind.CRASH, 1, False),
        (20.0, Kind.CRASH, 2, True),
        (20.0, Kind.BEAT, 0, 20.0),
    ]
    assert all(n.seq == 12 * 10**9 for n in p.node)
    assert p.nodes.end_state()["lost_unknown"] == [True] * 3


def four_staggered(strategy: str, duration: float) -> tuple[Parties, list[float]]:
    """Four nodes at staggered phases over a 20 s interval, and those phases (seed 0: 5.108,
    14.569, 0.551, 18.841)."""
    config = scenario(
        cluster={"nodes": 4},
        placement={"k": 1, "strategy": strategy},
        heartbeat={"interval_s": 20.0, "phase": "staggered", "quiet_nodes": "on"},
        run={"duration_s": duration},
    )
    rng = Streams(0).heartbeat()
    return Parties(config), [rng.uniform(0.0, 20.0) for _ in range(4)]


def test_one_timer_takes_every_beat_in_time_order_until_the_run_end() -> None:
    """Staggered phases of seed 0 over a 20 s interval: 5.108, 14.569, 0.551, 18.841; the run
    ends at 30. One beat timer waits at a time: nodes 2, 0, 1, 3 report, then 2 and 0 again,
    and node 1's second beat (34.569) is past the end. (`optimistic` needs every report.)"""
    p, phases = four_staggered("optimistic", 30.0)
    p.nodes.start()
    timers = [m for m in p.sink.take() if m[1] == Kind.BEAT]
    reported: list[tuple[float, int]] = []
    while timers:
        ((at, _, turn, planned),) = timers
        p.nodes.on_beat(turn, planned, at)
        sent = p.sink.take()
        reported += [(at, r.node_id) for _, kind, _, r in sent if kind == Kind.REPORT]
        timers = [m for m in sent if m[1] == Kind.BEAT]
    assert reported == [
        (phases[2], 2),
        (phases[0], 0),
        (phases[1], 1),
        (phases[3], 3),
        (phases[2] + 20.0, 2),
        (phases[0] + 20.0, 0),
    ]
    assert phases[1] + 20.0 > 30.0


def test_quiet_nodes_report_only_changes() -> None:
    """`stale` ignores a report that says what the last said, so nodes report only a change,
    at their first beat after it (phases of seed 0: 5.108, 14.569, 0.551, 18.841; interval 20,
    run of 60 s). A node down at its beat reports its comeback."""
    p, phases = four_staggered("stale", 60.0)
    p.sync()
    p.nodes.start()
    assert p.sink.take() == []  # nothing changed yet: no timer at all

    def follow(message: Message) -> list[Message]:
        at, kind, group, planned = message
        assert kind == Kind.BEAT and at == planned
        p.nodes.deliver(Kind.BEAT, group, planned, at)
        return p.sink.take()

    p.nodes.on_create(1, rpc(7), 3.0)
    beat, answer = p.sink.take()
    assert answer[1] == Kind.CREATE_ANSWER and beat == (phases[1], Kind.BEAT, 1, phases[1])
    ((_, kind, _, report),) = follow(beat)  # one report, and no timer after it
    assert (kind, report.node_id, report.sandboxes_running) == (Kind.REPORT, 1, 1)

    p.nodes.on_kill(1, (7, 0), 40.0)  # its beat at 34.569 has passed: the next, 54.569
    beat, answer = p.sink.take()
    assert beat == (phases[1] + 40.0, Kind.BEAT, 1, phases[1] + 40.0)
    ((_, _, _, report),) = follow(beat)
    assert report.sandboxes_running == 0

    p.nodes.on_crash(2, True, 1.0)
    (beat,) = p.sink.take()
    assert beat[0] == phases[2] + 20.0
    assert follow(beat) == []  # down: no report
    p.nodes.on_crash(2, False, 30.0)  # the comeback is a change
    (again,) = p.sink.take()
    assert again == (phases[2] + 40.0, Kind.BEAT, 2, phases[2] + 40.0)
    ((_, kind, _, report),) = follow(again)
    assert (kind, report.node_id) == (Kind.REPORT, 2)

    p.nodes.on_create(3, rpc(8), 59.0)  # no beat before the end: the drain reports it alone
    assert [m[1] for m in p.sink.take()] == [Kind.CREATE_ANSWER]
    p.nodes.drain(60.0)
    assert [(r.node_id, r.sandboxes_running) for *_, r in p.sink.take()] == [(3, 1)]


def test_a_beat_reports_to_each_replica_after_delay_and_jitter_except_lost_and_down() -> None:
    config = scenario(
        cluster={"nodes": 2},
        placement={"k": 1, "replicas": 2},
        heartbeat={"interval_s": 10.0, "delay_ms": 250.0, "jitter_ms": 500.0},
        run={"duration_s": 25.0},
        faults=[
            {"kind": "crash", "node": 1, "at_s": 5.0, "until_s": 15.0},
            {"kind": "lost_reports", "node": 0, "at_s": 5.0, "until_s": 15.0},
        ],
    )
    p = Parties(config)
    p.nodes.sync()
    p.nodes.start()
    p.sink.take()
    p.nodes.on_crash(1, True, 5.0)
    assert p.sink.take() == [] and p.node[1].down
    # 10: node 0's report is lost, node 1 is down: no report, but the next beat is planned
    p.nodes.on_beat(0, 10.0, 10.0)
    assert p.sink.take() == [(20.0, Kind.BEAT, 0, 20.0)]
    assert p.nodes.faults.counts["fault_lost_reports"] == 1
    p.nodes.on_crash(1, False, 15.0)
    # the beat planned at 20, handled late at 20.5: reports taken at 20.5, each at
    # 20.5 + 0.25 + a jitter draw (node by node, replica by replica; no draw was used before);
    # no next beat (30 >= 25)
    p.nodes.on_beat(0, 20.0, 20.5)
    rng = Streams(0).report_delivery(0)
    expected = [
        (20.5 + (0.25 + rng.uniform(0.0, 0.5)), Kind.REPORT, replica, node, 20.5)
        for node in (0, 1)
        for replica in (0, 1)
    ]
    got = [(at, kind, key, r.node_id, r.taken_at) for at, kind, key, r in p.sink.take()]
    assert got == expected


def test_a_beat_planned_late_keeps_the_schedule() -> None:
    config = scenario(
        cluster={"nodes": 1},
        placement={"k": 1, "strategy": "optimistic"},
        heartbeat={"interval_s": 10.0},
    )
    p = Parties(config)
    p.nodes.on_beat(0, 10.0, 13.0)  # planned at 10, handled at 13
    assert p.sink.take()[-1] == (20.0, Kind.BEAT, 0, 20.0)


# --- clients ------------------------------------------------------------------------------


def test_open_loop_arrivals_in_order_with_lifetimes_from_their_own_stream() -> None:
    """Constant 2/s for 3 s: arrivals 0..5 at i / 2; arrival i is client i and sandbox i, sent
    to replica i % 2, with the i-th draw of the `lifetime` stream."""
    host, sink = clients(rate_per_s=2.0, lifetime_s=5.0, lifetime_dist="exponential")
    rng = Streams(0).lifetimes()
    lifetimes = [rng.expovariate(1 / 5.0) for _ in range(6)]
    expected = []
    for i, life in enumerate(lifetimes):
        t = i / 2
        expected.append((t, Kind.ARRIVAL, i, (i, (t, SHAPE, life, None))))
        expected.append((t, Kind.SUBMIT_CREATE, i % 2, (i, i, SHAPE, t, (t, t, life, None))))
    assert open_loop(host, sink) == expected


def test_a_late_arrival_keeps_its_intended_time_and_the_next_is_not_early() -> None:
    host, sink = clients(rate_per_s=2.0)
    host.start()
    ((_, _, _, first),) = sink.take()
    host.on_arrival(0, first, 0.75)  # handled 0.75 s late; the next was due at 0.5
    (create, nxt) = sink.take()
    assert create == (0.75, Kind.SUBMIT_CREATE, 0, (0, 0, SHAPE, 0.0, (0.0, 0.75, 60.0, None)))
    assert nxt == (0.75, Kind.ARRIVAL, 1, (1, (0.5, SHAPE, 60.0, None)))


def test_poisson_arrival_times_do_not_depend_on_lifetimes() -> None:
    def times(**lifetime: Any) -> list[tuple[int, float]]:
        host, sink = clients(arrival="poisson", rate_per_s=5.0, **lifetime)
        return [(key, at) for at, kind, key, _ in open_loop(host, sink) if kind == Kind.ARRIVAL]

    base = times(lifetime_s=60.0)
    assert len(base) > 5 and base == sorted(base)
    assert times(lifetime_s=5.0) == base
    assert times(lifetime_s=5.0, lifetime_dist="exponential") == base
    assert times(lifetime_s=None) == base


def test_closed_loop_cycle() -> None:
    """3 clients, 2 replicas, lifetime 1.5, think 0.25, failure back-off 0.5, 3 s run."""
    host, sink = clients(
        arrival="closed", clients=3, lifetime_s=1.5, think_s=0.25, failure_backoff_s=0.5
    )
    host.start()
    assert sink.take() == [(0.0, Kind.CLIENT_START, c, 0.0) for c in range(3)]
    # client 1 creates (sandbox 0) through replica 1; placed at 0.125; dies at 1.625
    host.on_client_start(1, 0.0, 0.0)
    assert sink.take() == [(0.0, Kind.SUBMIT_CREATE, 1, (1, 0, SHAPE, 0.0, (0.0, 0.0, 1.5, None)))]
    host.on_create_done(
        1, (0, "placed", 2, 1, 0, 1, None, (0.0, 0.0, 1.5, None), 1, None, 0), 0.125
    )
    assert sink.take() == [(1.625, Kind.KILL_DUE, 1, (0, 1.625))]
    host.on_kill_due(1, (0, 1.625), 1.625)
    assert sink.take() == [(1.625, Kind.SUBMIT_KILL, 1, (0, (1.625, 1.625)))]
    host.on_kill_done(1, (0, Outcome.OK, 2, (1.625, 1.625)), 1.75)
    assert sink.take() == [(2.0, Kind.CLIENT_START, 1, 2.0)]  # 1.75 + think 0.25
    # next cycle (sandbox 1): fails; back-off 0.5 → starts again at 2.75
    host.on_client_start(1, 2.0, 2.0)
    assert sink.take() == [(2.0, Kind.SUBMIT_CREATE, 1, (1, 1, SHAPE, 2.0, (2.0, 2.0, 1.5, None)))]
    host.on_create_done(
        1, (1, "failed", -1, 1, 0, 1, "no_candidate", (2.0, 2.0, 1.5, None), 1, None, 0), 2.25
    )
    assert sink.take() == [(2.75, Kind.CLIENT_START, 1, 2.75)]
    # sandbox 2 placed at 2.875: it would die at 4.375, after the run's end: no kill, no cycle
    host.on_client_start(1, 2.75, 2.75)
    sink.take()
    host.on_create_done(
        1, (2, "placed", 0, 1, 0, 1, None, (2.75, 2.75, 1.5, None), 1, None, 0), 2.875
    )
    assert sink.take() == []
    # client 0 (replica 0): sandbox 3 placed at 1.375, killed at 2.875, answered at 2.9375;
    # its next cycle would start at 3.1875, after the run's end: none
    host.on_client_start(0, 1.25, 1.25)
    sink.take()
    host.on_create_done(
        0, (3, "placed", 1, 1, 0, 1, None, (1.25, 1.25, 1.5, None), 1, None, 0), 1.375
    )
    assert sink.take() == [(2.875, Kind.KILL_DUE, 0, (3, 2.875))]
    host.on_kill_due(0, (3, 2.875), 2.875)
    assert sink.take() == [(2.875, Kind.SUBMIT_KILL, 0, (3, (2.875, 2.875)))]
    host.on_kill_done(0, (3, Outcome.OK, 1, (2.875, 2.875)), 2.9375)
    assert sink.take() == []


def test_a_client_host_runs_its_share_with_sandbox_ids_index_plus_hosts_times_n() -> None:
    host, sink = clients(index=1, hosts=2, arrival="closed", clients=5)
    host.start()
    assert [key for _, _, key, _ in sink.take()] == [1, 3]
    for client in (3, 1, 3):
        host.on_client_start(client, 0.0, 0.0)
    submits = sink.take()
    assert [(key, p[0], p[1]) for _, _, key, p in submits] == [(1, 3, 1), (1, 1, 3), (1, 3, 5)]


@pytest.mark.parametrize("arrival", ["poisson", "closed"])
def test_two_client_hosts_issue_exactly_what_one_does(arrival: str) -> None:
    """The first create of every client (open loop: every arrival): same client, replica,
    time and lifetime, from one host of 1 or two hosts of 2 (open loop: same sandbox IDs)."""
    workload = {
        "arrival": arrival,
        "rate_per_s": 5.0,
        "clients": 7,
        "ramp_s": 2.0,
        "lifetime_s": 4.0,
        "lifetime_dist": "exponential",
    }

    def creates(index: int, hosts: int) -> list[tuple]:
        host, sink = clients(index, hosts, seed=3, **workload)
        if arrival != "closed":
            sent = open_loop(host, sink)
        else:
            host.start()
            for at, _, client, _ in sink.take():
                host.on_client_start(client, at, at)
            sent = sink.take()
        ids = arrival != "closed"
        return [
            (at, key, p[0], p[1] if ids else None, p[3], p[4])
            for at, kind, key, p in sent
            if kind == Kind.SUBMIT_CREATE
        ]

    one = creates(0, 1)
    assert len(one) > 5 and len({c[-1][2] for c in one}) == len(one)  # distinct lifetimes
    assert sorted(creates(0, 2) + creates(1, 2)) == sorted(one)


def _in_flight(**workload: Any) -> list[int]:
    """Each create's `in_flight`, in the order their answers came, on a virtual run of 3 nodes
    and one replica."""
    from harness.engines.virtual import VirtualEngine

    cluster = {"nodes": 3, **workload.pop("cluster", {})}
    placement = workload.pop("placement", {})
    config = scenario(
        cluster=cluster, placement=placement, run={"duration_s": 2.0, "seeds": 1}, workload=workload
    )
    requests = VirtualEngine().run_seed(config, 0).requests.to_pandas()
    return requests.loc[requests["kind"] == "create", "in_flight"].tolist()


def test_a_replica_records_the_others_in_flight_when_it_places_a_create() -> None:
    """What a strategy that counts creates in progress sees when it places: a burst's creates
    each see all the earlier ones still on the wire; creates apart see none."""
    assert sorted(_in_flight(arrival="burst", burst=4, lifetime_s="none")) == [0, 1, 2, 3]
    assert set(_in_flight(arrival="constant", rate_per_s=5.0, lifetime_s="none")) == {0}


def test_a_create_answered_the_instant_it_is_sent_is_never_in_flight() -> None:
    """0 ms RPCs (as upstream's second benchmark): each create is answered before the next is
    placed, burst or not."""
    instant = {"create_latency_ms": 0.0}
    no_retry = {"retry_refused": False}
    assert set(_in_flight(arrival="burst", burst=3, cluster=instant, placement=no_retry)) == {0}
