"""What every column of a run's tables means and in what unit, for the generated reference
(docs/reference/results.md). Kept apart from the Arrow schemas (`harness.results.arrow_schemas`) so
that documenting a column never changes a stored byte; a test holds the two to the same columns.
The summary's come from its one declaration (`harness.results.summary_columns`)."""

from __future__ import annotations

from harness.results.summary_columns import SUMMARY_COLUMNS

COMMON: dict[str, tuple[str, str]] = {
    "run_id": (
        "text",
        "The run (or sweep) that wrote the row, as in `run.json`: stack tables of many runs "
        "and still join them.",
    ),
    **{c.name: (c.unit, c.meaning) for c in SUMMARY_COLUMNS if c.name in ("strategy", "seed")},
}
"""Columns every table has (the strategy and seed as the summary declares them)."""

COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "summary": {c.name: (c.unit, c.meaning) for c in SUMMARY_COLUMNS if c.name not in COMMON},
    "nodes": {
        "node_id": ("id", "The node, numbered from 0 (pool after pool, in the file's order)."),
        "sandboxes": ("sandboxes", "Sandboxes on the node at the end."),
        "cpu_allocated": ("vCPU", "Allocated vCPUs at the end, initial load included."),
        "initial_cpu_allocated": ("vCPU", "Allocated vCPUs at t = 0, belonging to no sandbox."),
        "peak_cpu_allocated": ("vCPU", "Highest allocation over the run."),
        "capacity": ("vCPU", "What the node may allocate: `placement.r` x its `cpu_count`."),
        "cpu_count": ("vCPU", "The node's vCPUs."),
        "cpu_percent": (
            "% of one vCPU",
            "Actual CPU use at the end: the sum of live sandboxes' vCPU x usage (each at most "
            "the node's vCPUs), x 100.",
        ),
        "down": ("bool", "The node is down (crashed) at the end."),
        "lost": ("sandboxes", "Sandboxes the node lost to crashes."),
        "lost_unknown": (
            "bool",
            "The process holding the node died (Ray engine): what it ran is gone without a trace.",
        ),
    },
    "requests": {
        "kind": ("name", "`create` or `kill`."),
        "sandbox_id": ("id", "The sandbox; a kill names the sandbox its create made."),
        "client": ("id", "The client that issued the call."),
        "replica": ("id", "The scheduler replica that handled it (client % replicas)."),
        "issued_at": ("s (model time)", "When the call was meant to be sent."),
        "sent_at": (
            "s (model time)",
            "When it was sent (equal to `issued_at` on the virtual engine).",
        ),
        "done_at": ("s (model time)", "When its answer reached the client."),
        "latency_ms": ("ms (model time)", "`done_at - issued_at`."),
        "node_id": ("id", "The node it ended on; -1 for a create never placed."),
        "rpcs": ("count", "Create RPCs sent for it."),
        "skips": ("count", "ResourceExhausted answers (a skip: no attempt counted)."),
        "attempts": ("count", "Counted attempts (failed RPCs other than ResourceExhausted)."),
        "outcome": ("name", "`placed` or `failed` for a create, `killed` or `failed` for a kill."),
        "reason": (
            "name",
            "Why it failed: `no_candidate`, `attempts_exhausted`, `deadline` (a create) or the "
            "RPC's outcome (a kill); null when nothing failed.",
        ),
        "asks": (
            "count",
            "Times the scheduler was asked for a node for the create (its RPCs, plus a last ask "
            "that found none); 0 for a kill.",
        ),
        "in_flight": (
            "count",
            "Other creates of its replica in flight (sent to a node, not yet answered) when the "
            "replica placed it, the most over its placements: what a strategy counting creates "
            "in progress adds to its score; 0 for a kill.",
        ),
        "violated": (
            "names",
            "The eligibility rules the create's placements broke (`excluded`, `labels`, "
            "`cpu_family`, `memory`, joined by `+`); null when none did (always for a kill).",
        ),
        "tag": (
            "text",
            "What the create's trace row names it (`tag`; an imported trace's job/task/instance); "
            "null without one, and for a kill (its `sandbox_id` joins it to its create).",
        ),
    },
    "timeline": {
        "t": ("s (model time)", "The sample's time (every `run.sample_interval_s`)."),
        "node_id": ("id", "The node."),
        "replica": ("id", "The scheduler replica whose view is sampled."),
        "cpu_allocated": ("vCPU", "The node's true allocation."),
        "sandboxes": ("sandboxes", "The node's true sandbox count."),
        "cpu_percent": (
            "% of one vCPU",
            "The node's actual CPU use: its live sandboxes' vCPU x usage (each at most the "
            "node's vCPUs), x 100.",
        ),
        "view_cpu_allocated": (
            "vCPU",
            "What the replica's ledger believes is allocated (without pending creates).",
        ),
        "in_progress": ("count", "The replica's creates in flight to the node."),
        "in_progress_cpu": ("vCPU", "Their vCPUs."),
        "kill_in_progress_cpu": ("vCPU", "vCPUs of the replica's kills sent and not answered."),
        "cpu_error": (
            "vCPU",
            "`view_cpu_allocated - cpu_allocated`: the accounting error (positive: over-count).",
        ),
    },
}
"""Per table, each column but the common ones: (unit, meaning)."""

ROW: dict[str, str] = {
    "summary": "strategy and seed",
    "nodes": "node at the end of a seed",
    "requests": "create or kill call",
    "timeline": "sample, node and replica",
}
"""What one row of each table is."""
