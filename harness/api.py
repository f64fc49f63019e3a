"""The public plugin API: everything a design written outside this package needs, for every axis
a package can extend, in one import (`from harness.api import Scorer, Strategy, ...`).

These names are the stable surface (docs/reference/api.md, "Stability"): they keep their
meaning within a major version, and a change to any of them is announced in the release notes
one minor version ahead, with the old form kept working in between. Every other module of
`harness` is internal: it may move or change in any release, as the reorganisation that moved
`harness.ledgers` did. `tests/project/test_public_api.py` fails when a documented name
disappears, and when an axis's base class is not exported here.
"""

from __future__ import annotations

from harness.config.engine_kind import ENGINES, EngineKind
from harness.config.traces import TRACE_FORMATS, Imported, TraceFormat
from harness.engines import Engine, EngineError, Load, Progress, Snapshot
from harness.model.catalogue import MODEL_REGISTRIES
from harness.model.cluster.faults import FAULT_KINDS
from harness.model.cluster.faults.fault_kind import Counter, FaultKind, Where
from harness.model.cluster.faults.fault_window import Drawn, FaultWindow
from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Node, NodeInfo, Outcome
from harness.model.cluster.phases import PHASES
from harness.model.cluster.phases.phase import BeatGroup, Phase
from harness.model.registry import Registry, RegistryError
from harness.model.scheduling.placement.algorithms import ALGORITHMS, Algorithm
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
from harness.model.tunables import ConfigError, PluginSettings, key
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.arrivals.arrival_keys import ArrivalKeys
from harness.model.workload.arrivals.arrival_kind import ArrivalKind
from harness.model.workload.distributions import DRAWS, LIFETIMES, Distribution
from harness.model.workload.request import CreateRequest, Shape

API_VERSION = 1
"""The major version of this surface: it changes only when a name is removed or changes
meaning, after the notice the stability policy gives."""

AXES: tuple[Registry, ...] = (*MODEL_REGISTRIES, ENGINES, TRACE_FORMATS)
"""Every axis a package can extend, as its registry (whose `base` is exported here), in the
order `harness plugins` lists them: the model's, then the engines and the trace formats."""

ENTRY_POINT_GROUPS = {r.axis: r.group for r in AXES}
"""Axis -> the entry-point group a package declares its designs in (`herd_harness.scorers`,
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
    "ALGORITHMS",
    "API_VERSION",
    "ARRIVALS",
    "AXES",
    "DRAWS",
    "ENGINES",
    "ENTRY_POINT_GROUPS",
    "FAULT_KINDS",
    "FILTERS",
    "LEDGERS",
    "LIFETIMES",
    "PHASES",
    "SAMPLERS",
    "SCORERS",
    "SELECTORS",
    "STRATEGIES",
    "TRACE_FORMATS",
    "Algorithm",
    "ArrivalKeys",
    "ArrivalKind",
    "BeatGroup",
    "ConfigError",
    "Counter",
    "CreateRequest",
    "Distribution",
    "Drawn",
    "Eligible",
    "Engine",
    "EngineError",
    "EngineKind",
    "FaultKind",
    "FaultWindow",
    "Filter",
    "Imported",
    "Ledger",
    "Load",
    "Node",
    "NodeInfo",
    "NodeView",
    "OptimisticLedger",
    "OptimisticStrategy",
    "Outcome",
    "Phase",
    "PlacementSpec",
    "Plugin",
    "PluginSettings",
    "Progress",
    "Registry",
    "RegistryError",
    "ReplicaState",
    "Report",
    "Sampler",
    "Scorer",
    "Selector",
    "Shape",
    "Snapshot",
    "Strategy",
    "TraceFormat",
    "Where",
    "key",
]
