"""The periodic metrics report a node sends to the scheduler (the "heartbeat")."""

from __future__ import annotations

from typing import NamedTuple


class Report(NamedTuple):
    """Aggregates only, as in the real ServiceInfo: applying one overwrites the scheduler's view.

    Immutable, and a tuple because ten thousand nodes send one every interval: it is the
    cheapest immutable record Python builds.

    `seq` grows by one per report of a node, so a strategy can drop reports that arrive out of
    order; `sandbox_ids` is filled only for strategies that reconcile by ID.
    """

    node_id: int
    seq: int
    taken_at: float
    cpu_count: int
    cpu_allocated: float
    cpu_percent: float
    memory_total_mib: float
    memory_allocated_mib: float
    memory_used_mib: float
    sandboxes_running: int
    sandbox_ids: frozenset[int] | None = None
