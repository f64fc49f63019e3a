"""Engines drive the pure model through time. Each takes a config and a seed and returns a
SeedResult; the runner does not care which one ran."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Protocol

from harness.config import Config
from harness.results import SeedResult

Progress = Callable[[float], None]


class Engine(Protocol):
    name: str

    def run_seed(
        self, config: Config, seed: int, progress: Progress | None = None
    ) -> SeedResult: ...


def stream(seed: int, purpose: str) -> random.Random:
    """An independent random stream per purpose, so changing one part of a scenario (say the
    strategy) leaves every other draw as it was: strategies compare on the same requests."""
    return random.Random(f"{seed}:{purpose}")


def get_engine(name: str) -> Engine:
    if name == "virtual":
        from harness.engine.virtual import VirtualEngine

        return VirtualEngine()
    raise ValueError(f"unknown engine {name!r}")
