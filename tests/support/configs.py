"""The shipped configs, and small scenarios and requests built in code."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from harness.config import Config, ConfigError, from_dict
from harness.model.cluster.node import NodeInfo
from harness.model.workload.request import CreateRequest, Shape

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _is_sweep(path: Path) -> bool:
    return "sweep" in tomllib.loads(path.read_text(encoding="utf-8"))


SWEEPS = [p for p in sorted(CONFIGS.glob("*.toml")) if _is_sweep(p)]
"""Every shipped sweep file (a [sweep] table; tests/running/test_sweep.py)."""
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
