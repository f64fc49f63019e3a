"""The public plugin API: everything a placement plugin or a ledger strategy written outside
this package needs, in one import (`from harness.api import Scorer, Strategy, ...`).

These names are the stable surface (docs/reference/api.md, "Stability"): they keep their
meaning within a major version, and a change to any of them is announced in the release notes
one minor version ahead, with the old form kept working in between. Every other module of
`harness` is internal: it may move or change in any release, as the reorganisation that moved
`harness.ledgers` did. `tests/project/test_public_api.py` fails when a documented name disappears.
"""

from __future__ import annotations

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import NodeInfo, Outcome
from harness.model.registry import Registry, RegistryError
from harness.model.scheduling.placement.placement_keys import PlacementSpec
from harness.model.scheduling.placement.plugin import (
    Eligible,
    Filter,
    Plugin,
    Sampler,
    Scorer,
    Selector,
)
from harness.model.scheduling.placement.registries import FILTERS, SAMPLERS, SCORERS, SELECTORS
from harness.model.scheduling.replica_state import ReplicaState
from harness.model.scheduling.strategies import STRATEGIES
from harness.model.scheduling.strategies.optimistic import OptimisticStrategy
from harness.model.scheduling.strategy import NodeView, Strategy
from harness.model.tunables import PluginSettings, key
from harness.model.workload.request import CreateRequest, Shape

API_VERSION = 1
"""The major version of this surface: it changes only when a name is removed or changes
meaning, after the notice the stability policy gives."""

ENTRY_POINT_GROUPS = {r.axis: r.group for r in (SAMPLERS, FILTERS, SCORERS, SELECTORS, STRATEGIES)}
"""Axis -> the entry-point group a package declares its plugins in (`herd_harness.scorers`,
...), so a config names them without an import path."""

Ledger = Strategy
"""Deprecated: `Strategy`. The strategy axis had four names (`Ledger`, `LEDGERS`, the group
`herd_harness.strategies`, the key `placement.strategy`); it now has one. The old names work
until API_VERSION 2."""
LEDGERS = STRATEGIES
"""Deprecated: `STRATEGIES`."""
OptimisticLedger = OptimisticStrategy
"""Deprecated: `OptimisticStrategy`."""

__all__ = [
    "API_VERSION",
    "ENTRY_POINT_GROUPS",
    "FILTERS",
    "LEDGERS",
    "SAMPLERS",
    "SCORERS",
    "SELECTORS",
    "STRATEGIES",
    "CreateRequest",
    "Eligible",
    "Filter",
    "Ledger",
    "NodeInfo",
    "NodeView",
    "OptimisticLedger",
    "OptimisticStrategy",
    "Outcome",
    "PlacementSpec",
    "Plugin",
    "PluginSettings",
    "Registry",
    "RegistryError",
    "ReplicaState",
    "Report",
    "Sampler",
    "Scorer",
    "Selector",
    "Shape",
    "Strategy",
    "key",
]
