"""What `harness plugins` lists (`Listed`): every registry of the model (`MODEL_REGISTRIES`, in
`harness.api.AXES` with the registries of the layers above), so a new kind is listed by being
registered; and a choice a config makes otherwise than by a registry's name, by what declares
it (`Declared`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from harness.model.cluster.faults import FAULT_KINDS
from harness.model.cluster.phases import PHASES
from harness.model.registry import Registry
from harness.model.scheduling.placement.algorithms import ALGORITHMS
from harness.model.scheduling.placement.registries import REGISTRIES
from harness.model.scheduling.strategies import STRATEGIES
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.distributions import DRAWS, LIFETIMES

MODEL_REGISTRIES: tuple[Registry, ...] = (
    ALGORITHMS,
    *REGISTRIES.values(),
    STRATEGIES,
    ARRIVALS,
    LIFETIMES,
    DRAWS,
    PHASES,
    FAULT_KINDS,
)
"""The model's axes, in the order `harness plugins` lists them (`harness.api.AXES`)."""


class Listed(Protocol):
    """What `harness plugins` lists: (kind, name, source) of each name (a `Registry`, or one
    `Declared` choice)."""

    def catalogue(self) -> list[tuple[str, str, str]]: ...


@dataclass(frozen=True)
class Declared:
    """A choice a config makes by a section of its own rather than by a registry's name (the
    external scheduler, by `[external]`), declared where it lives: `one` is what it is called,
    `source` the package that provides it."""

    one: str
    name: str
    source: str

    def catalogue(self) -> list[tuple[str, str, str]]:
        return [(self.one, self.name, self.source)]
