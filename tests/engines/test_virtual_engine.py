"""The virtual-time engine: reproducibility, invariants, heartbeats, workloads, seed-herd."""

from __future__ import annotations

import gc
import json
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from harness.config import load
from harness.engines import virtual
from harness.engines.virtual import VirtualEngine
from harness.model.scheduling.strategies import STRATEGIES
from harness.results.arrow_schemas import TABLES
from harness.results.seed_rows import SeedRows
from harness.running.runner import run
from tests.support.configs import CONFIGS, scenario
from tests.support.tiers import heavy, tiered

# A scenario that reaches every path: churn, full nodes, retries, kills, staggered reports.
TIGHT = {
    "run": {"duration_s": 30.0, "seeds": 1, "sample_interval_s": 0.5},
    "cluster": {
        "nodes": 6,
        "cpu_count": 4,
        "initial_cpu_allocated": [0, 6],
        "create_latency_ms": 20.0,
        "kill_latency_ms": 5.0,
    },
    "heartbeat": {"interval_s": 3.0, "phase": "staggered", "delay_ms": 30.0},
    "placement": {"r": 2.0, "deadline_s": 2.0},
    "workload": {
        "arrival": "closed",
        "clients": 60,
        "ramp_s": 2.0,
        "lifetime_s": 1.5,
        "lifetime_dist": "exponential",
        "vcpu": 1.0,
    },
}


def tables_of(out: Path) -> dict[str, pd.DataFrame]:
    """A run's tables without what differs between two runs of the same seeds: the run's id
    (checked to be that of run.json on every row) and wall-clock time."""
    run_id = json.loads((out / "run.json").read_text())["run_id"]
    frames = {name: pq.read_table(out / f"{name}.parquet").to_pandas() for name in TABLES}
    for frame in frames.values():
        assert (frame.pop("run_id") == run_id).all()
    frames["summary"] = frames["summary"].drop(columns="engine_wall_s")
    return frames


def test_the_same_seed_gives_identical_parquet_and_other_seeds_differ(tmp_path):
    config = load(CONFIGS / "churn.toml", ["run.seeds=2", "run.duration_s=20"])
    a = tables_of(run(config, ["optimistic", "stale"], tmp_path / "a"))
    b = tables_of(run(config, ["optimistic", "stale"], tmp_path / "b"))
    ids = {json.loads((tmp_path / x / "run.json").read_text())["run_id"] for x in "ab"}
    assert len(ids) == 2  # two runs, two ids
    for name in TABLES:
        pd.testing.assert_frame_equal(a[name], b[name])
    reqs = a["requests"][a["requests"]["strategy"] == "optimistic"]
    seed0 = reqs[reqs["seed"] == 0].reset_index(drop=True)
    seed1 = reqs[reqs["seed"] == 1].reset_index(drop=True)
    assert len(seed0) > 1000
    assert not seed0[["issued_at", "node_id"]].equals(seed1[["issued_at", "node_id"]])


QUIET = [
    ("churn", []),
    ("faults-crash", ["heartbeat.phase=staggered", "heartbeat.delay_ms=300"]),
    ("replicas", ["heartbeat.interval_s=3"]),
]


@pytest.mark.parametrize(
    ("name", "changes"), [pytest.param(*q, marks=heavy(q[0]), id=q[0]) for q in QUIET]
)
def test_quiet_nodes_give_the_same_tables_as_reporting_every_beat(tmp_path, name, changes):
    """Nodes skip the reports that would change nothing (`scenario.quiet_nodes`), for every
    strategy that ignores them: every table is what it is when every node reports on every beat.
    Staggered phases, crashes and comebacks, a delivery delay, four replicas, short intervals."""
    config = load(CONFIGS / f"{name}.toml", ["run.seeds=2", *changes])
    strategies = [s for s in STRATEGIES.builtins if STRATEGIES[s].ignores_unchanged_reports()]
    assert sorted(strategies) == ["in_progress", "stale", "ttl"]
    quiet = tables_of(
        run(config.with_value("heartbeat.quiet_nodes", "on"), strategies, tmp_path / "quiet")
    )
    loud = tables_of(
        run(config.with_value("heartbeat.quiet_nodes", "off"), strategies, tmp_path / "loud")
    )
    for table in TABLES:
        pd.testing.assert_frame_equal(quiet[table], loud[table])


@pytest.mark.parametrize("strategy", ["stale", "in_progress", "optimistic"])
@pytest.mark.parametrize("too_many_starting", [False, True])
def test_invariants_hold_under_pressure(strategy, too_many_starting):
    config = scenario(**TIGHT).with_value("placement.strategy", strategy)
    config = config.with_value("placement.too_many_starting", too_many_starting)
    result = VirtualEngine().run_seed(config, seed=5)
    nodes = result.nodes.to_pandas()
    reqs = result.requests.to_pandas()
    creates = reqs[reqs["kind"] == "create"]
    kills = reqs[reqs["kind"] == "kill"]
    s = result.summary
    assert s["placed"] + s["failed"] == s["requests"] == len(creates)
    assert s["failed"] > 0 and creates["skips"].sum() > 0  # the scenario does hit full nodes
    assert creates["sandbox_id"].is_unique
    assert (nodes["peak_cpu_allocated"] <= nodes["capacity"]).all()
    # every placed sandbox is either killed (once, on the node it was placed on) or still there
    placed = creates[creates["outcome"] == "placed"].set_index("sandbox_id")["node_id"]
    killed = kills[kills["outcome"] == "killed"].set_index("sandbox_id")["node_id"]
    assert killed.index.is_unique and (placed.loc[killed.index] == killed).all()
    alive = placed.drop(killed.index)
    assert len(alive) == nodes["sandboxes"].sum()
    assert (
        alive.value_counts().reindex(nodes["node_id"], fill_value=0).to_numpy()
        == nodes["sandboxes"].to_numpy()
    ).all()
    # the true allocation per node is the base load plus its live sandboxes
    expected = nodes["initial_cpu_allocated"] + nodes["sandboxes"] * config.workload.vcpu
    assert np.allclose(nodes["cpu_allocated"], expected)


@pytest.mark.parametrize(
    "path",
    [
        *tiered([CONFIGS / f"{n}.toml" for n in ("churn", "faults-crash", "replicas")]),
        # faults-crash (every fault path) in the fast tier; the trace's replay in the slow only.
        pytest.param(CONFIGS / "trace-replay.toml", marks=pytest.mark.slow, id="trace-replay"),
    ],
)
def test_a_seed_leaves_no_reference_cycles(path):
    """The engine runs a seed with the cyclic collector off (`_no_cycle_collection`); that is
    only free if the model, every strategy and every fault path included, makes no cycles:
    after a seed the collector finds nothing to free."""
    config = load(path)
    gc.collect()
    for strategy in STRATEGIES.builtins:
        gc.disable()
        try:
            VirtualEngine().run_seed(config.with_value("placement.strategy", strategy), seed=1)
            assert gc.collect() == 0, strategy
        finally:
            gc.enable()


def test_a_seeds_timeline_goes_to_its_files_as_it_is_sampled(tmp_path, monkeypatch):
    """Samples of 100 nodes every 10 ms, with hardly any other message between them: the
    timeline is handed over whenever it holds `SAMPLE_ROWS` rows (here 5,000), a row group
    each, not held until the seed's end."""
    monkeypatch.setattr(virtual, "SAMPLE_ROWS", 5_000)
    config = scenario(run={"duration_s": 2.0, "sample_interval_s": 0.01}, cluster={"nodes": 100})
    rows = SeedRows("stale", 0, tmp_path / "part", "id")
    VirtualEngine().run_seed(config, 0, rows=rows)
    timeline = pq.ParquetFile(rows.path("timeline")).metadata
    groups = [timeline.row_group(i).num_rows for i in range(timeline.num_row_groups)]
    assert groups == [5_000] * 4  # 200 samples of 100 rows


def test_closed_loop_clients_never_exceed_their_number():
    config = scenario(**TIGHT)
    reqs = VirtualEngine().run_seed(config, seed=1).requests.to_pandas()
    creates = reqs[reqs["kind"] == "create"]
    assert creates["client"].nunique() == config.workload.clients
    # a client's creates never overlap: each starts after its previous one ended
    for _, group in creates.sort_values("issued_at").groupby("client"):
        assert (group["issued_at"].to_numpy()[1:] >= group["done_at"].to_numpy()[:-1]).all()


def view_changes(timeline: pd.DataFrame, node: int) -> list[float]:
    rows = timeline[timeline["node_id"] == node].sort_values("t")
    changed = rows["view_cpu_allocated"].diff().fillna(0) != 0
    return rows.loc[changed, "t"].tolist()


def test_aligned_reports_change_the_stale_view_only_at_sync_times():
    config = scenario(
        run={"duration_s": 10.0, "sample_interval_s": 0.25},
        heartbeat={"interval_s": 2.0, "delay_ms": 500.0},
        placement={"strategy": "stale"},
        workload={"rate_per_s": 50.0, "lifetime_s": "none"},
    )
    timeline = VirtualEngine().run_seed(config, seed=0).timeline.to_pandas()
    for node in range(config.cluster.nodes):
        # report taken at 2, 4, 6, 8 and applied 0.5 s later; the sample at t sees it from t
        assert set(view_changes(timeline, node)) <= {2.5, 4.5, 6.5, 8.5}
    assert sum(len(view_changes(timeline, n)) for n in range(10)) >= 30


def test_staggered_reports_spread_over_the_interval():
    config = scenario(
        run={"duration_s": 20.0, "sample_interval_s": 0.1},
        heartbeat={"interval_s": 10.0, "phase": "staggered"},
        cluster={"nodes": 20},
        placement={"strategy": "stale"},
        workload={"rate_per_s": 100.0, "lifetime_s": "none"},
    )
    timeline = VirtualEngine().run_seed(config, seed=0).timeline.to_pandas()
    first_change = [view_changes(timeline, n)[0] % 10.0 for n in range(20)]
    assert len({round(x, 1) for x in first_change}) >= 15


@pytest.mark.parametrize(
    "workload,expected",
    [
        ({"arrival": "constant", "rate_per_s": 40.0}, 400),
        ({"arrival": "burst", "burst": 77, "burst_at_s": 3.0}, 77),
    ],
)
def test_open_loop_arrivals_issue_the_configured_requests(workload, expected):
    config = scenario(run={"duration_s": 10.0}, workload={**workload, "lifetime_s": "none"})
    reqs = VirtualEngine().run_seed(config, seed=0).requests.to_pandas()
    assert len(reqs) == expected
    if workload["arrival"] == "burst":
        assert (reqs["issued_at"] == 3.0).all()


def test_poisson_arrivals_average_the_rate():
    config = scenario(
        run={"duration_s": 100.0, "sample_interval_s": 0},
        workload={"arrival": "poisson", "rate_per_s": 50.0, "lifetime_s": "none"},
    )
    counts = [VirtualEngine().run_seed(config, seed).summary["requests"] for seed in range(5)]
    # 5000 expected per seed, Poisson sd ~71: the mean of 5 within 4 sd of the mean
    assert abs(statistics.mean(counts) - 5000) < 4 * 71 / 5**0.5
    assert len(set(counts)) == 5


def test_fixed_lifetime_kills_each_sandbox_after_that_long():
    config = scenario(run={"duration_s": 10.0}, workload={"rate_per_s": 10.0, "lifetime_s": 2.0})
    reqs = VirtualEngine().run_seed(config, seed=0).requests.to_pandas()
    creates = reqs[reqs["kind"] == "create"].set_index("sandbox_id")
    kills = reqs[reqs["kind"] == "kill"].set_index("sandbox_id")
    assert len(kills) == (creates["done_at"] + 2.0 < 10.0).sum()
    assert np.allclose(kills["issued_at"] - creates.loc[kills.index, "done_at"], 2.0)


def test_seed_herd_reproduces_the_herd_and_the_fix():
    """Acceptance: stale median CV in [0.5, 1.2], busiest >= 4x idlest; optimistic <= 0.05."""
    config = load(CONFIGS / "seed-herd.toml", ["run.sample_interval_s=0"])
    assert config.run.seeds == 20
    engine = VirtualEngine()
    summaries = {
        strategy: pd.DataFrame(
            [
                engine.run_seed(config.with_value("placement.strategy", strategy), seed).summary
                for seed in range(20)
            ]
        )
        for strategy in ("stale", "optimistic")
    }
    stale, optimistic = summaries["stale"], summaries["optimistic"]
    assert 0.5 <= stale["cv"].median() <= 1.2
    assert (stale["max_count"] >= 4 * stale["min_count"]).mean() >= 0.75
    assert stale["max_count"].median() >= 4 * stale["min_count"].median()
    assert optimistic["cv"].median() <= 0.05
    assert (stale["placed"] == 500).all() and (optimistic["placed"] == 500).all()
