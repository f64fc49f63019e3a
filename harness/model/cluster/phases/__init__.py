"""Heartbeat phase kinds by name (`PHASES`, the key `heartbeat.phase`): one file per kind, each
a `Phase`. A package adds one under the entry-point group `herd_harness.phases`."""

from __future__ import annotations

from harness.model.cluster.phases.aligned import Aligned
from harness.model.cluster.phases.phase import Phase
from harness.model.cluster.phases.staggered import Staggered
from harness.model.registry import Registry

PHASES = Registry("phases", "phase", Phase, (Aligned, Staggered))
"""Heartbeat phase kinds by name."""
