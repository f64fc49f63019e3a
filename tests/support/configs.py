"""The shipped configs, and small scenarios and requests built in code."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from harness.config import Config, ConfigError, from_dict, load
from harness.config.traces import TRACE_FORMATS
from harness.model.cluster.node import NodeInfo
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.request import CreateRequest, Shape

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _is_sweep(path: Path) -> bool:
    return "sweep" in tomllib.loads(path.read_text(encoding="utf-8"))


SWEEPS = [p for p in sorted(CONFIGS.glob("*.toml")) if _is_sweep(p)]
"""Every shipped sweep file (a [sweep] table; tests/running/test_sweep.py)."""
SCENARIOS = [p for p in sorted(CONFIGS.glob("*.toml")) if not _is_sweep(p)]
"""Every shipped scenario."""
BRIEF: dict[str, tuple[str, ...]] = {"alibaba-2018.toml": ("run.duration_s=3",)}
"""What runs a long shipped scenario in brief wherever every scenario runs (golden digests,
compiled against pure, every config's run, the rules of every config): the hour of trace in its
first 3 s, 565 creates."""


def shipped(path: Path, overrides: Iterable[str] = ()) -> Config:
    """A shipped scenario as the tests that run every one load it: in brief where it is long
    (`BRIEF`), then `overrides`."""
    return load(path, [*BRIEF.get(path.name, ()), *overrides])


def brief_flags(path: Path) -> list[str]:
    """`BRIEF`'s overrides of a shipped scenario as `harness run` flags."""
    return [flag for value in BRIEF.get(path.name, ()) for flag in ("--set", value)]


def unrunnable(path: Path) -> str | None:
    """Why a shipped scenario cannot run here (its trace comes with an extra that is not
    installed: the line a run would say); None when it can."""
    w = load(path).workload
    if not ARRIVALS[w.arrival].replay:
        return None
    try:
        TRACE_FORMATS[w.trace_format].files(w.trace)
    except ConfigError as e:
        return str(e)
    return None


def runnable(paths: Iterable[Path], marks: Callable[[Path], list[Any]] = lambda p: []) -> list:
    """Shipped scenarios as test parameters (id: the file's stem, `marks(path)` on each), one
    that cannot run here skipped with the reason."""
    params = []
    for path in paths:
        reason = unrunnable(path)
        skip = [pytest.mark.skip(reason=reason)] if reason else []
        params.append(pytest.param(path, marks=[*marks(path), *skip], id=path.stem))
    return params


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
