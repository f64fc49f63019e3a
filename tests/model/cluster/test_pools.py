"""Node pools and the eligibility filters on them: memory over-commit, required labels, CPU
family. Each filter against hand-computed cases; the pools and the memory filter in a run."""

from __future__ import annotations

import random

import pytest

from harness.config import ConfigError
from harness.model.cluster.node import NodeInfo, Outcome
from harness.model.cluster.pools import registrations
from harness.model.scheduling.scheduler import Scheduler
from harness.model.scheduling.strategies import make_strategy
from harness.model.workload.request import CreateRequest, Shape
from harness.wiring import scenario as sc
from tests.support.configs import refused, scenario
from tests.support.messages import Sink
from tests.support.pools import GIB, memory_in_use, memory_run

TWO_POOLS = {
    "pools": [
        {"count": 3, "cpu_count": 8, "memory_mib": 16 * GIB, "initial_cpu_per_node": [1, 2, 3]},
        {
            "count": 2,
            "cpu_count": 64,
            "memory_mib": 256 * GIB,
            "labels": ["gpu", "ssd"],
            "cpu_family": "zen4",
            "initial_cpu_allocated": [5, 5],
        },
    ]
}


def test_pools_number_their_nodes_in_order_each_with_its_size_and_facts():
    config = scenario(cluster=TWO_POOLS)
    nodes = sc.nodes(config, seed=0)
    assert config.cluster.node_count == len(nodes) == 5
    assert [n.node_id for n in nodes] == [0, 1, 2, 3, 4]
    assert [n.cpu_count for n in nodes] == [8, 8, 8, 64, 64]
    assert [n.memory_mib for n in nodes] == [16 * GIB] * 3 + [256 * GIB] * 2
    assert [n.base_cpu for n in nodes] == [1.0, 2.0, 3.0, 5.0, 5.0]
    small, large = NodeInfo(8, 16 * GIB), NodeInfo(64, 256 * GIB, frozenset({"gpu", "ssd"}), "zen4")
    assert registrations(config.cluster) == [small] * 3 + [large] * 2
    # Every replica learns the same facts at start-up; its ledger knows the vCPUs.
    replica = sc.replica_host(config, 0, 0, Sink()).scheduler
    assert replica.nodes == registrations(config.cluster) and replica.min_cpu_count == 8
    assert [v.cpu_count for v in replica.strategy.views] == [8, 8, 8, 64, 64]


def test_one_pool_draws_the_same_initial_loads_as_the_single_pool_keys():
    single = scenario(cluster={"nodes": 6, "initial_cpu_allocated": [0, 4]})
    pooled = scenario(cluster={"pools": [{"count": 6, "initial_cpu_allocated": [0, 4]}]})
    loads = [[n.base_cpu for n in sc.nodes(c, seed=3)] for c in (single, pooled)]
    assert loads[0] == loads[1] and len(set(loads[0])) > 1


@pytest.mark.parametrize(
    ("cluster", "key", "reason"),
    [
        ({**TWO_POOLS, "nodes": 4}, "cluster.pools", "cannot be used with cluster.nodes"),
        ({**TWO_POOLS, "cpu_count": 4}, "cluster.pools", "cannot be used with cluster.cpu_count"),
        (
            {**TWO_POOLS, "initial_cpu_allocated": [0, 4]},
            "cluster.pools",
            "cannot be used with cluster.initial_cpu_allocated",
        ),
        ({"pools": 3}, "cluster.pools", "must be a list of tables"),
        ({"pools": [{"count": 0}]}, "cluster.pools[0].count", "must be >= 1"),
        ({"pools": [{"count": 1}, {"cores": 2}]}, "cluster.pools[1].cores", "unknown key"),
        ({"pools": [{"labels": "gpu"}]}, "cluster.pools[0].labels", "must be a list"),
        (
            {"pools": [{"count": 2, "initial_cpu_per_node": [1]}]},
            "cluster.pools[0].initial_cpu_per_node",
            "has 1 values for 2 nodes",
        ),
        (
            {"pools": [{"cpu_count": 2, "initial_cpu_allocated": [0, 9]}]},
            "cluster.pools[0].initial_cpu_allocated",
            "exceeds a node's capacity R * cpu_count = 8",
        ),
    ],
)
def test_a_bad_pool_is_one_line_naming_its_key(cluster, key, reason):
    refused(key, reason, cluster=cluster)


def test_the_checks_that_read_the_size_of_the_cluster_count_every_pool():
    with pytest.raises(ConfigError, match=r"placement\.k: 6 exceeds the pools' count 5"):
        scenario(cluster=TWO_POOLS, placement={"k": 6})
    with pytest.raises(ConfigError, match=r"workload\.vcpu: 65 exceeds the largest pool's"):
        scenario(cluster=TWO_POOLS, workload={"vcpu": 65})
    with pytest.raises(ConfigError, match=r"faults\[0\]\.node: 5 is not a node"):
        scenario(cluster=TWO_POOLS, faults=[{"kind": "crash", "node": 5}])
    fits = scenario(cluster=TWO_POOLS, workload={"vcpu": 64}, placement={"k": 5})
    assert fits.with_value("run.seeds", 2).cluster.pools == fits.cluster.pools  # round trip


@pytest.mark.parametrize(
    ("template", "key", "reason"),
    [
        ({"labels": ["gpu", "arm"]}, "labels", "no pool has them all"),
        ({"cpu_family": "icelake"}, "cpu_family", "'icelake': no pool of it takes it"),
        ({"labels": ["gpu"], "vcpu": 65}, "vcpu", "65 exceeds the largest pool's cpu_count 64"),
        ({"memory_mib": 300 * GIB}, "memory_mib", "at most 262144"),
    ],
)
def test_a_template_no_pool_could_take_is_refused_with_its_key(template, key, reason):
    """Pools: 3 x 8 vCPU / 16 GiB unlabelled, 2 x 64 vCPU / 256 GiB with gpu, ssd and zen4;
    the memory filter at M = 1."""
    workload = {"templates": [{"template": "ok", "labels": ["ssd"]}, template]}
    with pytest.raises(ConfigError) as error:
        scenario(
            cluster=TWO_POOLS, workload=workload, placement={"memory_overcommit": {"ratio": 1.0}}
        )
    assert error.value.key == f"workload.templates[1].{key}" and reason in error.value.reason
    # Without the labels and cpu_family filters, labels and family bind nothing.
    if key in ("labels", "cpu_family"):
        scenario(cluster=TWO_POOLS, workload=workload, placement={"filters": ["cpu_fits"]})


# --- the filters, against hand-computed cases -------------------------------------------------


def replica(nodes: list[NodeInfo], strategy: str = "stale", **placement) -> Scheduler:
    """A replica that samples every node in order, over `nodes`, with `placement` rules."""
    config = scenario(placement={"sampler": "every_node", **placement})
    cpus = [info.cpu_count for info in nodes]
    return Scheduler(nodes, config.placement, make_strategy(strategy, cpus), random.Random(0))


def create(memory_mib: float = 512.0, labels: frozenset[str] = frozenset(), family: str = ""):
    return CreateRequest(0, Shape(1.0, memory_mib, 1.0, "", labels, family), 0.0, 30.0, 0)


def report_memory(s: Scheduler, node: int, allocated: float, total: float) -> None:
    view = s.strategy.views[node]
    view.memory_allocated_mib, view.memory_total_mib = allocated, total


def candidates(s: Scheduler, req: CreateRequest) -> list[int]:
    """The nodes that pass every filter that applies, in node order."""
    return s.pipeline.sample(s, s.pipeline.eligible(s, req, 0.0))


@pytest.mark.parametrize(
    ("m", "allocated", "total", "eligible"),
    [
        (0.0, 900.0, GIB, True),  # M = 0: the filter is off
        (1.0, 1900.0, 2 * GIB, False),  # 1900 + 512 > 1 x 2048
        (1.0, GIB, 4 * GIB, True),  # 1024 + 512 <= 4096
        (1.5, 1900.0, 2 * GIB, True),  # 2412 <= 1.5 x 2048 = 3072
        (1.0, 1536.0, 2 * GIB, True),  # 1536 + 512 = 2048: equal is allowed
        (1.0, 1900.0, 0.0, True),  # no total reported: the filter skips the node
    ],
)
def test_memory_overcommit_skips_a_node_above_m_times_its_reported_total(
    m, allocated, total, eligible
):
    """Upstream's memory filter tests, case by case (sandbox of 512 MiB)."""
    s = replica([NodeInfo(8, total)], memory_overcommit={"ratio": m})
    report_memory(s, 0, allocated, total)
    assert candidates(s, create()) == ([0] if eligible else [])


def test_memory_overcommit_keeps_the_node_with_headroom():
    s = replica([NodeInfo(8, 4 * GIB)] * 2, memory_overcommit={"ratio": 1.0})
    report_memory(s, 0, 4 * GIB - 200, 4 * GIB)  # 3896 + 512 > 4096
    report_memory(s, 1, 2 * GIB, 4 * GIB)
    assert candidates(s, create()) == [1] and s.choose(create(), 0.0) == 1


def test_memory_overcommit_reads_the_optimistic_adds_of_the_view():
    """`optimistic` adds a placed sandbox's memory to the view at once, so the filter sees it
    before the next report; `stale` does not."""
    for strategy, after in (("optimistic", []), ("stale", [0])):
        s = replica([NodeInfo(8, 2 * GIB)], strategy, memory_overcommit={"ratio": 1.0})
        report_memory(s, 0, GIB, 2 * GIB)
        req = create(memory_mib=600.0)
        assert s.start_create(req, 0.0) == 0
        s.finish_create(req, Outcome.OK, 0.001)
        assert candidates(s, create(memory_mib=600.0)) == after, strategy


LABELLED = [
    NodeInfo(8, GIB),
    NodeInfo(8, GIB, frozenset({"gpu"}), "zen4"),
    NodeInfo(8, GIB, frozenset({"gpu", "ssd"}), "icelake"),
]


@pytest.mark.parametrize(
    ("labels", "family", "eligible"),
    [
        (frozenset({"gpu"}), "", [1, 2]),
        (frozenset({"gpu", "ssd"}), "", [2]),
        (frozenset({"ssd", "arm"}), "", []),
        (frozenset(), "zen4", [1]),
        (frozenset({"ssd"}), "zen4", []),
        (frozenset({"gpu"}), "icelake", [2]),
        (frozenset(), "", [0, 1, 2]),
    ],
)
def test_labels_must_be_a_subset_of_the_nodes_and_the_family_equal(labels, family, eligible):
    assert candidates(replica(LABELLED), create(labels=labels, family=family)) == eligible


def test_the_eligibility_filters_cost_nothing_when_unused():
    """Without labels, family or M, no per-node test runs: the memory filter is not even in
    the pipeline, and labels and cpu_family do not apply to the request."""
    s = replica(LABELLED, sampler="")
    assert [f.name for f in s.pipeline.filters] == ["excluded", "cpu_fits", "labels", "cpu_family"]
    assert s.pipeline.eligible(s, create(), 0.0) is None
    with_m = replica(LABELLED, sampler="", memory_overcommit={"ratio": 1.0}).pipeline.filters
    assert "memory_overcommit" in [f.name for f in with_m]


# --- two pools and the memory filter in a run ------------------------------------------------


def test_the_memory_filter_holds_each_pool_to_m_times_its_memory_with_optimistic_accounting():
    """With `optimistic` the view counts every own create at once and creates never overlap
    (1 ms each, 50 ms apart), so no node ever exceeds M x total: exactly 44 are placed, each
    node full, and the rest fail for want of a candidate."""
    allocated, limits, placed = memory_in_use(memory_run("optimistic"))
    assert allocated == limits and placed == 44


def test_under_stale_reports_the_memory_filter_lets_nodes_overcommit_between_reports():
    """`stale` sees memory only in reports (every 2 s, 40 creates): a node reported with room
    takes creates past its memory until the next report shows it full."""
    allocated, limits, placed = memory_in_use(memory_run("stale"))
    assert any(a > m for a, m in zip(allocated, limits, strict=True)) and placed > 44
