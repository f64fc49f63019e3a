"""The Ray engine joins an existing two-node cluster with --address and spreads over it."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.run_store import load_run
from tests.conftest import CONFIGS, two_node_cluster


@pytest.fixture(scope="module")
def two_nodes():
    with two_node_cluster() as cluster:
        yield cluster


def test_run_with_address_uses_both_ray_nodes_and_every_row_arrives(two_nodes, tmp_path):
    out = tmp_path / "cluster"
    code = main(
        [
            "run",
            str(CONFIGS / "seed-herd.toml"),
            "--engine",
            "ray",
            "--address",
            two_nodes.address,
            "--seeds",
            "1",
            "--set",
            "run.duration_s=5",
            "--set",
            "ray.node_groups=2",
            "--set",
            "ray.client_pools=2",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    meta, frames = load_run(out)
    summary = frames["summary"].iloc[0]
    assert meta["completed"] and summary["ray_nodes"] == 2
    # 20 creates/s for 5 s at constant rate: exactly 100, each with one row, all placed.
    requests = frames["requests"]
    assert len(requests) == 100 and requests["sandbox_id"].is_unique
    assert summary["placed"] == 100 and frames["nodes"]["sandboxes"].sum() == 100
    assert sorted(frames["nodes"]["node_id"]) == list(range(10))
    assert sorted(frames["timeline"]["t"].unique()) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
