"""Engines carry the protocol's messages through time; each takes a config and a seed and
returns a SeedResult, and the runner does not care which one ran.

Engines are a `Registry` (`ENGINES`, declared with what an engine declares, `EngineKind`, in
`harness.config.engine_kind`, so the config names it) whose built-ins are named by the import
path of their class, so naming one costs nothing until it runs; a package may add one under the
entry-point group `herd_harness.engines`, deriving from `Engine`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from harness.config.engine_kind import ENGINES, EngineKind, real_time
from harness.model.registry import RegistryError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harness.config import Config
    from harness.results.seed_result import SeedResult


@dataclass(frozen=True, slots=True)
class Load:
    """The requests answered so far in a running seed: what a load test watches."""

    model_s: float
    """Model time reached."""
    creates: int
    kills: int
    failed: int
    """Creates that failed."""
    latency_ms: tuple[float, float, float]
    """p50, p90 and p99 of the placed creates' latency (NaN before the first)."""

    def rate(self, count: int) -> float:
        """`count` per model second so far."""
        return count / self.model_s if self.model_s > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a live view shows of a running seed (engines in real time send one)."""

    elapsed_s: float
    counts: list[int]
    """True sandboxes per node, node by node."""
    load: Load


class Progress(Protocol):
    """Called now and then during a seed with the model time reached; engines in real time
    add a snapshot for the live view. `refused`: creates in flight that nodes have refused
    `harness.model.protocol.replica_party.REFUSED_AGAIN` times or more, asked about again and
    again (a storm, shown live)."""

    def __call__(self, t: float, snapshot: Snapshot | None = None, refused: int = 0) -> None: ...


class EngineError(Exception):
    """The engine could not finish a seed (say, an actor it cannot do without died).

    `partial`, when set, holds what had arrived of that seed; the runner writes its requests
    and samples, marked incomplete. An engine interrupted by Ctrl-C sets the same attribute on
    the KeyboardInterrupt."""

    partial: SeedResult | None = None


class Engine(EngineKind):
    """What every engine is: a name and its capabilities (`EngineKind`), and three steps."""

    def prepare(self, config: Config, strategies: Sequence[str]) -> None:
        """Check and set up what the engine needs to run `config` under each of `strategies`
        before any results folder is created; raises ConfigError for a setting that cannot
        work (say, an unreachable cluster)."""

    def run_seed(self, config: Config, seed: int, progress: Progress | None = None) -> SeedResult:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the engine kept between seeds (the Ray engine keeps its actors); the
        runner calls it when the run ends, however it ends."""


def get_engine(name: str) -> Engine:
    """A new engine of the kind `name` names."""
    try:
        cls = ENGINES.resolve(name)
    except RegistryError as e:
        raise ValueError(str(e)) from None
    if not issubclass(cls, Engine):  # the registry checks what the config layer knows
        raise ValueError(f"{cls.__module__}.{cls.__name__} is not an Engine (harness.api.Engine)")
    return cls()


__all__ = [
    "ENGINES",
    "Engine",
    "EngineError",
    "EngineKind",
    "Load",
    "Progress",
    "Snapshot",
    "get_engine",
    "real_time",
]
