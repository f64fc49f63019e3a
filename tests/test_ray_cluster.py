"""The Ray engine joins an existing three-node cluster with --address: it spreads every kind of
actor over the nodes and every row arrives."""

from __future__ import annotations

import pytest

from actors.engine import ActorSet
from harness.cli import main
from harness.run_store import load_run
from tests.conftest import CONFIGS, ray_cluster

NODES = 3


@pytest.fixture(scope="module")
def cluster():
    with ray_cluster(NODES) as started:
        yield started


@pytest.fixture
def actor_sets(monkeypatch) -> list[ActorSet]:
    """Every ActorSet built during the test, to see where its actors ran."""
    built: list[ActorSet] = []
    build = ActorSet.__init__

    def spy(self, shape):
        build(self, shape)
        built.append(self)

    monkeypatch.setattr(ActorSet, "__init__", spy)
    return built


def run(address: str, out, *settings: str) -> int:
    """`harness run` of 5 model seconds of seed-herd (20 creates/s) at time scale 0.5."""
    argv = ["run", str(CONFIGS / "seed-herd.toml"), "--engine", "ray", "--address", address]
    argv += ["--seeds", "1", "--set", "run.duration_s=5", "--set", "run.time_scale=0.5"]
    for setting in settings:
        argv += ["--set", setting]
    return main([*argv, "--out", str(out), "--quiet", "--no-report"])


def test_every_kind_of_actor_is_spread_over_the_nodes_and_every_row_arrives(
    cluster, actor_sets, tmp_path
):
    out = tmp_path / "cluster"
    three = ["ray.node_groups=3", "ray.client_pools=3", "placement.replicas=3"]
    assert run(cluster.address, out, *three) == 0
    (actors,) = actor_sets
    groups, replicas, pools = (actors.ray_nodes[i : i + 3] for i in (0, 3, 6))
    assert len(actors.ray_nodes) == 9
    for kind in (groups, replicas, pools):
        assert len(set(kind)) == NODES, actors.ray_nodes
    meta, frames = load_run(out)
    summary = frames["summary"].iloc[0]
    assert meta["completed"] and summary["ray_nodes"] == NODES
    # 20 creates/s for 5 s at constant rate: exactly 100, each with one row, all placed.
    requests = frames["requests"]
    assert len(requests) == 100 and requests["sandbox_id"].is_unique
    assert sorted(requests["replica"].unique()) == [0, 1, 2]
    assert summary["placed"] == 100 and frames["nodes"]["sandboxes"].sum() == 100
    assert sorted(frames["nodes"]["node_id"]) == list(range(10))
    assert sorted(frames["timeline"]["t"].unique()) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
