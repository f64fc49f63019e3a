"""Engines drive the pure model through time. Each takes a config and a seed and returns a
SeedResult; the runner does not care which one ran."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from harness.config import Config
from harness.ledger import LedgerOptions
from harness.ledgers import make_ledger
from harness.results import SeedResult
from harness.scheduler import PlacementRules, Scheduler


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a live view shows of a running seed (engines in real time send one)."""

    elapsed_s: float
    requests_done: int
    counts: list[int]
    """True sandboxes per node, node by node."""


class Progress(Protocol):
    """Called now and then during a seed with the model time reached; engines in real time
    add a snapshot for the live view."""

    def __call__(self, t: float, snapshot: Snapshot | None = None) -> None: ...


class EngineError(Exception):
    """The engine could not finish a seed (say, an actor it cannot do without died).

    `partial`, when set, holds what had arrived of that seed; the runner writes its requests
    and samples, marked incomplete. An engine interrupted by Ctrl-C sets the same attribute on the
    KeyboardInterrupt."""

    partial: SeedResult | None = None


class Engine(Protocol):
    name: str

    def prepare(self, config: Config) -> None:
        """Check and set up what the engine needs before any results folder is created;
        raises ConfigError for a setting that cannot work (say, an unreachable cluster)."""

    def run_seed(
        self, config: Config, seed: int, progress: Progress | None = None
    ) -> SeedResult: ...


def stream(seed: int, purpose: str) -> random.Random:
    """An independent random stream per purpose, so changing one part of a scenario (say the
    strategy) leaves every other draw as it was: strategies compare on the same requests."""
    return random.Random(f"{seed}:{purpose}")


def make_scheduler(config: Config, seed: int, replica: int, cpu_counts: list[int]) -> Scheduler:
    """Scheduler replica `replica` as every engine builds it: the config's placement rules and
    strategy, and a random stream of its own."""
    p = config.placement
    rules = PlacementRules(
        k=p.k,
        r=p.r,
        alpha=p.alpha,
        too_many_starting=p.too_many_starting,
        max_starting=p.max_starting,
        max_attempts=p.max_attempts,
        deadline_s=p.deadline_s,
    )
    ledger = make_ledger(p.strategy, cpu_counts, LedgerOptions(ttl_s=p.ttl_s))
    return Scheduler(cpu_counts, rules, ledger, stream(seed, f"placement/{replica}"))


def get_engine(name: str) -> Engine:
    if name == "virtual":
        from harness.engine.virtual import VirtualEngine

        return VirtualEngine()
    if name == "ray":
        from harness.engine.ray import RayEngine

        return RayEngine()
    raise ValueError(f"unknown engine {name!r}")
