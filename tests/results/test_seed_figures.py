"""A seed's figures read back from its rows (`harness.results.seed_figures`) on hand-made rows
whose answers are worked out here: the accounting error, the balance over time, the herd and
the creates in flight."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.model.recording import REQUEST_COLUMNS, TIMELINE_COLUMNS
from harness.results.arrow_schemas import NODES, table
from harness.results.seed_figures import herd, seed_summary, timeline_figures
from harness.results.seed_rows import SeedRows


def _timeline(samples: dict[float, list[tuple[int, float, float, float]]]) -> SeedRows:
    """Rows of instants in time order, each instant every (sandboxes, true vCPUs, believed
    vCPUs) of its nodes in order, for one replica, as an engine records them."""
    rows = SeedRows("x", 0)
    for t, nodes in samples.items():
        columns: dict[str, list] = {name: [] for name in TIMELINE_COLUMNS}
        for node, (sandboxes, true, believed, _) in enumerate(nodes):
            values = {
                "t": t,
                "node_id": node,
                "replica": 0,
                "cpu_allocated": true,
                "sandboxes": sandboxes,
                "cpu_percent": 0.0,
                "view_cpu_allocated": believed,
                "in_progress": 0,
                "in_progress_cpu": 0.0,
                "kill_in_progress_cpu": 0.0,
                "cpu_error": believed - true,
            }
            for name in TIMELINE_COLUMNS:
                columns[name].append(values[name])
        rows.add("timeline", columns)
    return rows


def test_accounting_error_is_time_weighted_and_signed():
    # Node 0 is over-counted by 4 for the first second, node 1 under-counted by 2 for two;
    # five samples a second apart weigh 1, 1, 1, 1 and the last nothing.
    samples = {
        float(t): [(1, 10.0, 14.0 if t == 0 else 10.0, 0), (1, 5.0, 3.0 if t < 2 else 5.0, 0)]
        for t in range(5)
    }
    err = timeline_figures(_timeline(samples))
    assert err["err_mean_abs"] == pytest.approx((4 * 1 + 2 * 2) / 8)
    assert err["err_over_max"] == 4.0
    assert err["err_under_max"] == 2.0
    assert err["err_nonzero_frac"] == pytest.approx(3 / 8)


def test_a_timeline_of_one_sample_weighs_its_rows_alike():
    err = timeline_figures(_timeline({0.0: [(1, 2.0, 3.0, 0), (1, 2.0, 2.0, 0)]}))
    assert err["err_mean_abs"] == pytest.approx(0.5)
    assert err["err_nonzero_frac"] == pytest.approx(0.5)


def test_no_timeline_gives_nan_figures():
    assert all(math.isnan(v) for v in timeline_figures(SeedRows("x", 0)).values())


def test_an_even_spread_has_no_cv_at_any_time():
    samples = {float(t): [(t + 1, 2.0 * (t + 1), 0.0, 0)] * 4 for t in range(6)}
    figures = timeline_figures(_timeline(samples))
    assert figures["cv_time_mean"] == figures["cv_time_peak"] == 0.0
    assert figures["alloc_cv_time_mean"] == figures["alloc_cv_time_peak"] == 0.0


def test_one_hot_node_weighs_by_the_time_it_lasts_and_peaks_at_its_worst():
    # Four nodes. 0-1 s: 4 sandboxes, one on each (CV 0); 1-4 s: 8, all on node 0 (CV
    # sqrt(3)); 4-5 s: 8, five on node 0 and one on each other; the last sample closes the run
    # and weighs nothing.
    even = [(1, 1.0, 0.0, 0)] * 4
    hot = [(8, 8.0, 0.0, 0)] + [(0, 0.0, 0.0, 0)] * 3
    lopsided = [(5, 5.0, 0.0, 0), (1, 1.0, 0.0, 0), (1, 1.0, 0.0, 0), (1, 1.0, 0.0, 0)]
    samples = {0.0: even, 1.0: hot, 4.0: lopsided, 5.0: even}
    figures = timeline_figures(_timeline(samples))
    lopsided_cv = np.std([5, 1, 1, 1]) / 2
    assert figures["cv_time_mean"] == pytest.approx((0 * 1 + math.sqrt(3) * 3 + lopsided_cv) / 5)
    assert figures["cv_time_peak"] == pytest.approx(math.sqrt(3))


def test_a_cluster_below_one_sandbox_per_node_is_left_out_of_the_balance():
    # 10 nodes, one sandbox for most of the run (CV 3), then ten spread evenly.
    lonely = [(1, 1.0, 0.0, 0)] + [(0, 0.0, 0.0, 0)] * 9
    samples = {0.0: lonely, 9.0: [(1, 1.0, 0.0, 0)] * 10, 10.0: [(1, 1.0, 0.0, 0)] * 10}
    figures = timeline_figures(_timeline(samples))
    assert figures["cv_time_mean"] == 0.0 and figures["cv_time_peak"] == 0.0


def _requests(n: int, **columns: list) -> SeedRows:
    """`n` placed creates, 0 or none in every column but `columns`."""
    values = {name: [0] * n for name in REQUEST_COLUMNS}
    values |= {
        "kind": ["create"] * n,
        "outcome": ["placed"] * n,
        "reason": [None] * n,
        "violated": [None] * n,
        "tag": [None] * n,
        "latency_ms": [0.0] * n,
        **columns,
    }
    rows = SeedRows("x", 0)
    if n:
        rows.add("requests", values)
    return rows


def _placements(placed: list[tuple[float, int]]) -> SeedRows:
    """Placed creates answered at the times, on the nodes, given."""
    times = [t for t, _ in placed]
    nodes = [node for _, node in placed]
    return _requests(len(placed), done_at=times, issued_at=times, sent_at=times, node_id=nodes)


def test_an_even_spread_is_no_herd():
    # Two 20 s intervals, 10 placements each over 5 nodes: two on every node.
    placed = [(t + i * 0.5, i % 5) for t in (0.0, 20.0) for i in range(10)]
    found = herd(_placements(placed), nodes=5, report_interval_s=20.0, sim_duration_s=40.0)
    assert found == {"herd_share": pytest.approx(2 / 10), "herd_ratio": pytest.approx(1.0)}


def test_one_hot_node_takes_the_whole_share():
    placed = [(i * 1.0, 3) for i in range(30)]  # 20 in the first interval, 10 in the second
    found = herd(_placements(placed), nodes=5, report_interval_s=20.0, sim_duration_s=30.0)
    assert found["herd_share"] == pytest.approx(1.0)
    # An even spread gives the busiest node ceil(20/5) + ceil(10/5) = 6 of the 30.
    assert found["herd_ratio"] == pytest.approx(30 / 6)


def test_a_burst_within_one_interval_weighs_its_placements():
    # Interval 0: a burst of 10 on node 2; interval 1: 10 spread over 10 nodes.
    burst = [(5.0, 2)] * 10
    spread = [(25.0 + i * 0.1, i) for i in range(10)]
    found = herd(_placements(burst + spread), nodes=10, report_interval_s=20.0, sim_duration_s=40.0)
    assert found["herd_share"] == pytest.approx((10 + 1) / 20)
    assert found["herd_ratio"] == pytest.approx((10 + 1) / (1 + 1))


def test_nothing_placed_is_no_herd_figure():
    found = herd(_placements([]), nodes=3, report_interval_s=20.0, sim_duration_s=10.0)
    assert all(math.isnan(v) for v in found.values())


def test_the_herd_counts_every_interval_however_few_are_held_at_once(monkeypatch):
    """A long run is counted a span of intervals per pass: the figure is the same."""
    rng = np.random.default_rng(5)
    times, nodes = rng.uniform(0, 400, 500), rng.integers(0, 7, 500)
    placed = [(float(t), int(n)) for t, n in zip(times, nodes, strict=True)]
    rows = _placements(sorted(placed))
    whole = herd(rows, nodes=7, report_interval_s=20.0, sim_duration_s=400.0)
    monkeypatch.setattr("harness.results.seed_figures.HERD_CELLS", 7 * 3)
    assert herd(rows, nodes=7, report_interval_s=20.0, sim_duration_s=400.0) == whole


def test_creates_in_flight_come_from_what_each_replica_saw_when_it_placed():
    """`in_flight` is recorded per create by its replica: the most of its others still in
    flight when it placed it."""
    rows = _requests(
        6,
        latency_ms=[1.0] * 6,
        rpcs=[1, 1, 1, 1, 1, 0],  # the last never reached a node: not counted
        replica=[0, 0, 0, 1, 1, 1],
        in_flight=[0, 1, 2, 0, 0, 9],
    )
    nodes = {"sandboxes": [1, 1, 1, 1], "cpu_allocated": [1.0] * 4}
    columns = {name: [0] * 4 for name in NODES.names[2:]}
    columns |= nodes | {"cpu_count": [4] * 4, "down": [False] * 4, "lost_unknown": [False] * 4}
    figures = seed_summary(table(NODES, "x", 0, columns), rows, 1.0, 20.0)
    assert figures["max_in_flight"] == 3
    assert figures["in_flight_frac"] == pytest.approx(2 / 5)
    # Replica 0 placed its third with its two others in flight; replica 1 placed both alone.
    assert figures["all_in_flight"] is False
