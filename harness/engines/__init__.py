"""Engines carry the protocol's messages through time; each takes a config and a seed and
returns a SeedResult, and the runner does not care which one ran.

Engines are a `Registry` (`ENGINES`) whose built-ins are named by the import path of their
class, so naming one costs nothing until it runs (the Ray engine lives in `actors/` and imports
Ray); a package may add one under the entry-point group `herd_harness.engines`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from harness.model.registry import Registry, RegistryError

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


class Engine:
    """What every engine is: a name, what it needs of the machine, and three steps."""

    name: ClassVar[str] = ""
    on_ray: ClassVar[bool] = False
    """Whether its parties run as Ray actors: a run then needs a Ray cluster (its own,
    embedded, or one at `ray.address`, which then holds everything but the results), and the
    budget counts the actors; otherwise every party runs in this process."""
    real_time: ClassVar[bool] = False
    """Whether it plays the model in real time: its timings (latencies, RPC times, rates: the
    summary columns whose `Kind.pace` is `REAL_TIME`) are then partly the machine's, no two
    runs of a seed are alike, and it judges its own time keeping (`time_keeping`). Otherwise it
    keeps model time by construction and a seed gives the same results on any machine."""

    def prepare(self, config: Config, strategies: Sequence[str]) -> None:
        """Check and set up what the engine needs to run `config` under each of `strategies`
        before any results folder is created; raises ConfigError for a setting that cannot
        work (say, an unreachable cluster)."""

    def run_seed(self, config: Config, seed: int, progress: Progress | None = None) -> SeedResult:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the engine kept between seeds (the Ray engine keeps its actors); the
        runner calls it when the run ends, however it ends."""


ENGINES = Registry(
    "engines",
    "engine",
    Engine,
    (),
    lazy={"virtual": "harness.engines.virtual:VirtualEngine", "ray": "actors.engine:RayEngine"},
)
"""Engines by name, each class imported when a run needs it."""


def real_time(name: str) -> bool:
    """Whether the engine `name` runs in real time (`Engine.real_time`); an engine that cannot
    be found here (a plugin not installed) is taken to, as nothing says it keeps model time."""
    try:
        return ENGINES.resolve(name).real_time
    except RegistryError:
        return True


def get_engine(name: str) -> Engine:
    """A new engine of the kind `name` names."""
    try:
        return ENGINES.resolve(name)()
    except RegistryError as e:
        raise ValueError(str(e)) from None
