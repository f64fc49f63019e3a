"""Faults: the keys of a `[[faults]]` entry (`fault_keys`), one file per fault kind (registered
in `kinds`, which derives the summary's fault columns from their counters), and the plan that
applies them (`plan`)."""

from __future__ import annotations

from harness.model.cluster.faults.fault_keys import FaultSpec
from harness.model.cluster.faults.kinds import COUNTERS, COUNTS, FAULT_KINDS
from harness.model.cluster.faults.plan import Faults, SlowNodes

__all__ = ["COUNTERS", "COUNTS", "FAULT_KINDS", "FaultSpec", "Faults", "SlowNodes"]
