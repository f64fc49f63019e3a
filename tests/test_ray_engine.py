"""The Ray engine on one embedded local Ray: the herd picture, ground-truth invariants, CLI."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
import ray

from harness.cli import main
from harness.config import load
from harness.engine import get_engine
from harness.engine.ray import RaySeedRun, connect
from harness.results import REQUESTS, SUMMARY, load_run
from tests.conftest import CONFIGS, scenario


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One Ray instance for the whole module: starting one costs seconds."""
    connect()
    yield
    ray.shutdown()


def test_embedded_ray_is_on_loopback_and_sized_to_the_machine():
    (node,) = ray.nodes()
    assert node["NodeManagerAddress"] == "127.0.0.1"
    assert ray.cluster_resources()["CPU"] == os.cpu_count()


def test_seed_herd_on_ray_gives_the_virtual_engines_picture(tmp_path):
    out = tmp_path / "herd"
    code = main(
        [
            "run",
            str(CONFIGS / "seed-herd.toml"),
            "--engine",
            "ray",
            "--set",
            "run.time_scale=0.2",
            "--seeds",
            "3",
            "--compare",
            "stale,optimistic",
            "--out",
            str(out),
        ]
    )
    assert code == 0  # with the live view on (it draws on stderr)
    meta, frames = load_run(out)
    assert meta["completed"] and meta["engine"] == "ray"
    summary = frames["summary"]
    assert list(summary.columns) == SUMMARY.names
    assert list(frames["requests"].columns) == REQUESTS.names
    cv = summary.groupby("strategy")["cv"]
    assert cv.min()["stale"] >= 0.4
    assert cv.max()["optimistic"] <= 0.1
    # 20/s for 25 s, 1 ms RPCs: every create placed, at time scale 0.2, with Ray's own time
    # showing in the measured RPC latency.
    assert (summary["placed"] == 500).all() and (summary["time_scale"] == 0.2).all()
    assert (summary["create_rpc_p50_ms"] >= 1.0).all()
    assert (frames["timeline"].groupby(["strategy", "seed"])["t"].max() == 25.0).all()


def test_every_acknowledged_create_and_kill_matches_the_nodes_at_the_end():
    config = scenario(
        run={"duration_s": 10.0, "seeds": 1, "time_scale": 0.2, "sample_interval_s": 0.0},
        # 12 nodes x 3 vCPU x R=4 hold 144 sandboxes for 150 clients: full nodes, skips, retries.
        cluster={"nodes": 12, "cpu_count": 3, "create_latency_ms": 5.0, "kill_latency_ms": 2.0},
        heartbeat={"interval_s": 2.0, "phase": "staggered", "delay_ms": 20.0},
        placement={"strategy": "optimistic", "replicas": 2, "deadline_s": 1.0},
        workload={
            "arrival": "closed",
            "clients": 150,
            "ramp_s": 1.0,
            "lifetime_s": 0.5,
            "lifetime_dist": "exponential",
            "failure_backoff_s": 0.2,
        },
        ray={"node_groups": 3, "client_pools": 2},
    )
    run = RaySeedRun(config, seed=4)
    result = run.run()
    rows = result.requests.to_pandas()
    creates = rows[rows["kind"] == "create"]
    kills = rows[rows["kind"] == "kill"]
    placed = creates[creates["outcome"] == "placed"].set_index("sandbox_id")["node_id"]
    assert len(placed) > 500 and len(kills) > 300  # the scenario did churn
    assert creates["skips"].sum() > 0  # and hit full nodes
    assert placed.index.is_unique and set(kills["sandbox_id"]) <= set(placed.index)
    assert (kills["outcome"] == "killed").all()
    where = {}
    for node, ids in enumerate(run.sandbox_ids):
        for sandbox in ids:
            assert sandbox not in where, f"sandbox {sandbox} on nodes {where[sandbox]}, {node}"
            where[sandbox] = node
    alive = placed.drop(kills["sandbox_id"])
    assert where == alive.to_dict()
    counts = result.nodes.column("sandboxes").to_pylist()
    assert counts == [len(ids) for ids in run.sandbox_ids]
    # Latency counts from the intended send time, which never follows the actual one.
    assert (rows["sent_at"] >= rows["issued_at"] - 1e-9).all()
    assert (rows["done_at"] >= rows["sent_at"]).all()


def test_open_loop_burst_sends_every_create_and_reports_heartbeat_lateness():
    config = load(
        CONFIGS / "seed-burst.toml",
        ["run.engine=ray", "run.duration_s=2", "run.time_scale=0.5", "heartbeat.interval_s=0.5"],
    )
    result = RaySeedRun(config, seed=1).run()
    assert result.summary["requests"] == result.summary["placed"] == 500
    assert sum(result.nodes.column("sandboxes").to_pylist()) == 500
    assert 0.0 <= result.summary["heartbeat_late_p50_ms"] <= result.summary["heartbeat_late_p99_ms"]
    assert isinstance(result.requests, pa.Table)


def test_unreachable_address_is_a_one_line_error_with_exit_code_2(tmp_path, capsys):
    out = tmp_path / "never"
    code = main(
        [
            "run",
            str(CONFIGS / "seed-burst.toml"),
            "--engine",
            "ray",
            "--address",
            "127.0.0.1:1",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--address" in err and len(err.splitlines()) == 1
    assert not out.exists()


def _beyond_in_flight(timeline) -> tuple[float, float]:
    """Share of node-time under-counted, and over-counted, by more than the calls in flight."""
    under = -timeline["cpu_error"] - timeline["in_progress_cpu"]
    over = timeline["cpu_error"] - timeline["kill_in_progress_cpu"]
    return float((under > 1e-9).mean()), float((over > 1e-9).mean())


def test_the_erase_race_has_the_same_sign_on_ray_as_in_virtual_time():
    """race-erase: adding before the RPC lets older reports erase the add. Both engines must
    find the scheduler under-counting beyond its calls in flight, and rarely over-counting."""
    config = load(
        CONFIGS / "race-erase.toml",
        ["placement.strategy=optimistic_pre_rpc", "run.duration_s=20", "run.time_scale=0.5"],
    )
    shares = {}
    for engine in ("virtual", "ray"):
        result = get_engine(engine).run_seed(config.with_value("run.engine", engine), seed=0)
        shares[engine] = _beyond_in_flight(result.timeline.to_pandas())
    for engine, (under, over) in shares.items():
        assert under > 0.2, (engine, shares)
        assert over < under / 4, (engine, shares)
