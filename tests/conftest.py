"""Shared helpers: small scenarios built from the defaults with a few keys changed."""

from __future__ import annotations

import contextlib
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.config import Config, ConfigError, from_dict
from harness.model.cluster.node import NodeInfo
from harness.model.workload.request import CreateRequest, Shape

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _is_sweep(path: Path) -> bool:
    return "sweep" in tomllib.loads(path.read_text(encoding="utf-8"))


SWEEPS = [p for p in sorted(CONFIGS.glob("*.toml")) if _is_sweep(p)]
"""Every shipped sweep file (a [sweep] table; tests/test_sweep.py)."""
SCENARIOS = [p for p in sorted(CONFIGS.glob("*.toml")) if not _is_sweep(p)]
"""Every shipped scenario."""


def refused(key: str, reason: str, **sections: dict[str, Any]) -> None:
    """`scenario(**sections)` is refused with one line naming `key` and giving `reason`."""
    with pytest.raises(ConfigError) as caught:
        scenario(**sections)
    assert caught.value.key == key and reason in caught.value.reason
    assert "\n" not in str(caught.value)


def ask(vcpu: float = 1.0, excluded: set[int] | None = None) -> CreateRequest:
    """A create of `vcpu` vCPUs (excluding `excluded`), to ask a scheduler where it goes."""
    req = CreateRequest(0, Shape(vcpu, 512.0, 0.0), 0.0, 30.0, 0)
    req.excluded = excluded
    return req


def registered(cpu_counts: list[int], memory_mib: float = 524288.0) -> list[NodeInfo]:
    """Nodes of these vCPUs (and `memory_mib` each), as a scheduler learns them at start-up."""
    return [NodeInfo(cpus, memory_mib) for cpus in cpu_counts]


def scenario(**sections: dict[str, Any]) -> Config:
    """A validated config: `scenario(cluster={"nodes": 5}, run={"duration_s": 2})`."""
    return from_dict(sections)


@pytest.fixture
def make_config():
    return scenario


@pytest.fixture(scope="session")
def _ray_stopped_at_the_end() -> Iterator[None]:
    yield
    from harness.running.ray_setup import stop_ray

    stop_ray()


@pytest.fixture(scope="module")
def local_ray(_ray_stopped_at_the_end: None) -> None:
    """The embedded local Ray (`harness.running.ray_setup.connect`: loopback, private folder, sized
    to the machine) that every module needing no Ray of its own shares, as a `harness` command
    started in this process would: starting one costs seconds. Started on first use, again after a
    module that stopped it for a Ray of its own (`ray_cluster`, tests/test_sweep.py), stopped at the
    end of the session. A test that runs Ray through `harness.cli.main` joins it (`ray_scope` leaves
    a Ray that was up before alone)."""
    from harness.running.ray_setup import connect

    connect()


@contextlib.contextmanager
def ray_cluster(nodes: int = 2) -> Iterator[Any]:
    """A local Ray cluster of `nodes` nodes (one CPU each) for tests that join one with
    --address; the driver must join it, not an instance another module started (the shared
    one, `local_ray`, is stopped first)."""
    import ray
    from ray.cluster_utils import Cluster

    from harness.running.ray_setup import stop_ray

    stop_ray()
    ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
