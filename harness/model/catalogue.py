"""Every registry of the model, for `harness plugins`: what a user can name in a config and where
each name comes from. Read from the registries themselves, so a new kind is listed by being
registered."""

from __future__ import annotations

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
"""The model's axes, in the order `harness plugins` lists them."""


def catalogue(*more: Registry) -> list[tuple[str, str, str]]:
    """(kind, name, source) of every name of the model's registries and of `more`
    (registries of the layers above, say the engines): built in ("harness"), an alias, or
    installed (its entry point)."""
    rows = []
    for registry in (*MODEL_REGISTRIES, *more):
        rows += registry.catalogue()
    return rows
