"""The Ray engine joins an existing three-node cluster with --address: it spreads every kind of
actor over the nodes, every row arrives, and import-path plugins travel with the job."""

from __future__ import annotations

import pytest

from actors.engine import ActorSet
from harness.cli import main
from harness.engines.ray_setup import plugin_sources
from harness.results.run_reader import load_run
from tests.support.configs import CONFIGS, scenario
from tests.support.ray_runs import ray_cluster

pytestmark = [pytest.mark.ray, pytest.mark.shares_machine, pytest.mark.own_ray]  # placement

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


PLUGIN = '''
from harness.model.scheduling.strategies.optimistic import OptimisticStrategy
from harness.model.scheduling.placement import Scorer


class NodeZero(Scorer):
    """0 for node 0, 1 for any other: with a large weight and every node a candidate, every
    create goes to node 0."""

    name = "node_zero"

    def scores(self, scheduler, candidates, vcpu, now):
        return [0.0 if n == 0 else 1.0 for n in candidates]


class Counted(OptimisticStrategy):
    name = "counted"
'''


def test_import_path_plugins_are_shipped_to_the_cluster(cluster, tmp_path, monkeypatch):
    """The plugin package is importable here only (not on the cluster's paths): the replicas
    can build their placement only if it came with the job."""
    package = tmp_path / "plugins" / "herd_probe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "placement.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(package.parent))
    out = tmp_path / "plugin"
    scorers = "placement.scorers=['reference', 'herd_probe.placement:NodeZero=100']"
    strategy = "placement.strategy=herd_probe.placement:Counted"
    assert run(cluster.address, out, "placement.sampler=every_node", scorers, strategy) == 0
    meta, frames = load_run(out)
    assert meta["completed"]
    sandboxes = frames["nodes"].set_index("node_id")["sandboxes"]
    assert sandboxes[0] == 100 and sandboxes.sum() == 100


def test_plugin_sources_are_where_import_path_plugins_live_and_nothing_else(tmp_path, monkeypatch):
    """What the job ships besides the harness: the top-level package (its folder) or module
    (its file) of each import-path plugin of every config and compared strategy, once;
    built-in and installed names ship nothing."""
    package = tmp_path / "probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "placement.py").write_text(PLUGIN)
    (tmp_path / "probe_solo.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = scenario(
        placement={
            "strategy": "probe_solo:Counted",
            "scorers": ["reference", "probe_pkg.placement:NodeZero=2"],
            "filters": ["excluded", "cpu_fits"],
        }
    )
    plain = scenario(placement={"strategy": "optimistic"})
    strategies = ["stale", "probe_pkg.placement:Counted"]
    expected = sorted([str(package), str(tmp_path / "probe_solo.py")])
    assert plugin_sources([config, plain], strategies) == expected
    assert plugin_sources([plain], ["stale", "optimistic"]) == []
