"""Node admission, the placement flow of one create, and the ledger strategies' rules."""

from __future__ import annotations

import random

import pytest

from harness.model.cluster.node import Node, Outcome
from harness.model.scheduling.plugin_settings import StartingCapSettings
from harness.model.scheduling.scheduler import PlacementSpec, Scheduler, Step
from harness.model.scheduling.strategies import STRATEGIES, make_strategy
from harness.model.workload.request import CreateRequest, Shape
from tests.support.configs import registered


def request(sandbox_id=1, vcpu=1.0, deadline=30.0):
    return CreateRequest(sandbox_id, Shape(vcpu, 1024.0, 1.0), 0.0, deadline, client=0)


def scheduler(strategy="optimistic", nodes=4, cpu=8, **rules):
    cpus = [cpu] * nodes
    return Scheduler(
        registered(cpus), PlacementSpec(**rules), make_strategy(strategy, cpus), random.Random(0)
    )


def test_node_admits_on_true_state_up_to_r_times_cpu_count():
    node = Node(0, cpu_count=2, memory_mib=4096, overcommit=2.0, base_cpu=1.0)
    assert node.create(1, Shape(2.0, 512, 1.0)) is Outcome.OK
    assert node.create(2, Shape(1.0, 512, 0.5)) is Outcome.OK  # 4 == R * cpu_count: still admitted
    assert node.create(3, Shape(0.5, 512, 1.0)) is Outcome.RESOURCE_EXHAUSTED
    assert node.cpu_allocated == 4.0
    assert node.cpu_percent == pytest.approx(250.0)
    report = node.report(now=7.0, with_ids=True)
    assert (report.seq, report.taken_at, report.sandboxes_running) == (1, 7.0, 2)
    assert report.sandbox_ids == {1, 2}
    assert node.kill(1) is Outcome.OK and node.kill(1) is Outcome.FAILED
    assert node.report(8.0).seq == 2 and node.cpu_allocated == 2.0


def test_a_sandbox_busier_than_it_asked_counts_at_most_its_nodes_own():
    """A trace's usage may exceed 1 (a sandbox bursting above its request): its CPU and memory
    use are its size x usage, each at most what the node has, and a kill takes back exactly
    what its create added."""
    node = Node(0, cpu_count=4, memory_mib=1000.0, overcommit=4.0)
    assert node.create(1, Shape(2.0, 300.0, 1.5)) is Outcome.OK  # 3 of 4 vCPUs busy
    assert (node.cpu_percent, node.memory_used_mib) == (300.0, 450.0)
    assert node.create(2, Shape(1.0, 600.0, 18.0)) is Outcome.OK  # 18 vCPUs: more than 4
    assert (node.cpu_percent, node.memory_used_mib) == (700.0, 1450.0)
    report = node.report(1.0)
    assert (report.cpu_percent, report.memory_used_mib) == (700.0, 1450.0)
    assert node.kill(2) is Outcome.OK
    assert (node.cpu_percent, node.memory_used_mib) == (300.0, 450.0)
    assert node.kill(1) is Outcome.OK
    assert (node.cpu_percent, node.memory_used_mib) == (0.0, 0.0)


def test_a_sandbox_id_cannot_be_created_twice_on_a_node():
    node = Node(0, 4, 4096, 4.0)
    node.create(1, Shape(1.0, 1, 1.0))
    with pytest.raises(ValueError):
        node.create(1, Shape(1.0, 1, 1.0))


def test_resource_exhausted_is_a_skip_not_an_attempt():
    s = scheduler()
    req = request()
    for _ in range(5):
        node = s.start_create(req, 0.0)
        assert (s.starting[node], s.pending_cpu[node]) == (1, 1.0)
        assert s.finish_create(req, Outcome.RESOURCE_EXHAUSTED, 0.001) is Step.RETRY
        assert (s.starting[node], s.pending_cpu[node]) == (0, 0.0)
    assert (req.skips, req.attempts, req.excluded) == (5, 0, None)


def test_the_in_progress_map_counts_and_sums_each_nodes_creates_and_kills():
    """Two creates of 0.1 and 0.2 vCPUs on one node: counted, summed, and back to exactly 0
    when both are answered (no float residue). An answer with nothing in progress on its node
    is the harness's bug, not a run's outcome: an error."""
    s = scheduler(nodes=1)
    a, b = request(1, vcpu=0.1), request(2, vcpu=0.2)
    s.start_create(a, 0.0)
    s.start_create(b, 0.0)
    assert (s.starting[0], s.pending_cpu[0]) == (2, 0.1 + 0.2)
    s.finish_create(a, Outcome.OK, 0.001)
    assert (s.starting[0], s.pending_cpu[0]) == (1, 0.1 + 0.2 - 0.1)
    s.finish_create(b, Outcome.OK, 0.001)
    assert (s.starting[0], s.pending_cpu[0]) == (0, 0.0)
    s.start_kill(a, 1.0)
    s.start_kill(b, 1.0)
    assert (s.killing[0], s.killing_cpu[0]) == (2, 0.1 + 0.2)
    s.finish_kill(b, Outcome.OK, 1.001)
    s.finish_kill(a, Outcome.OK, 1.001)
    assert (s.killing[0], s.killing_cpu[0]) == (0, 0.0)
    with pytest.raises(ValueError, match="no create in progress on node 0"):
        s.finish_create(a, Outcome.OK, 2.0)
    with pytest.raises(ValueError, match="no kill in progress on node 0"):
        s.finish_kill(a, Outcome.OK, 2.0)


def test_other_failures_exclude_the_node_and_stop_after_three_attempts():
    s = scheduler(nodes=5)
    req = request()
    tried = []
    for attempt in range(3):
        tried.append(s.start_create(req, 0.0))
        step = s.finish_create(req, Outcome.FAILED, 0.001)
        assert step is (Step.RETRY if attempt < 2 else Step.FAILED)
    assert len(set(tried)) == 3 and req.excluded == set(tried)
    assert req.failure == "attempts_exhausted"


def test_no_candidate_left_is_failed_to_place():
    s = scheduler(nodes=2, max_attempts=5)
    req = request()
    for _ in range(2):
        s.start_create(req, 0.0)
        s.finish_create(req, Outcome.FAILED, 0.0)
    assert s.start_create(req, 0.0) is None and req.failure == "no_candidate"


def test_the_deadline_ends_a_request_that_keeps_being_skipped():
    s = scheduler()
    req = request(deadline=1.0)
    s.start_create(req, 0.0)
    assert s.finish_create(req, Outcome.RESOURCE_EXHAUSTED, 1.0) is Step.FAILED
    assert req.failure == "deadline"


def test_only_strategies_that_count_in_progress_see_pending_creates():
    for name in ("stale", "in_progress"):
        s = scheduler(name, nodes=1)
        s.start_create(request(1, vcpu=3.0), 0.0)
        assert s.reserved(0, 0.0) == (3.0 if STRATEGIES[name].counts_in_progress else 0.0)


def test_optimistic_adds_after_success_and_removes_with_an_underflow_guard():
    s = scheduler("optimistic", nodes=1)
    req = request(vcpu=2.0)
    s.start_create(req, 0.0)
    assert s.finish_create(req, Outcome.OK, 0.001) is Step.PLACED
    view = s.strategy.views[0]
    assert view.cpu_allocated == 2.0 and view.memory_allocated_mib == 1024
    s.start_kill(req, 0.5)
    s.finish_kill(req, Outcome.OK, 1.0)
    assert view.cpu_allocated == 0.0
    s.start_kill(req, 1.5)
    s.finish_kill(req, Outcome.OK, 2.0)  # would go below zero: skipped
    assert view.cpu_allocated == 0.0


def test_a_report_overwrites_the_view():
    s = scheduler("optimistic", nodes=1)
    req = request(vcpu=2.0)
    s.start_create(req, 0.0)
    s.finish_create(req, Outcome.OK, 0.0)
    s.strategy.apply_report(Node(0, 8, 1024, 4.0, base_cpu=5.0).report(1.0), 1.0)
    assert s.strategy.believed_cpu(0, 1.0) == 5.0


def test_too_many_starting_skips_nodes_with_more_than_max_starting_in_progress():
    cap = {"starting_cap": StartingCapSettings(max_starting=1)}
    s = scheduler("stale", nodes=3, too_many_starting=True, settings=cap, k=3)
    placed = [s.start_create(request(i), 0.0) for i in range(6)]
    assert sorted(placed) == [0, 0, 1, 1, 2, 2]  # each node takes 2 (> 1 closes it)
    assert s.start_create(request(99), 0.0) is None
