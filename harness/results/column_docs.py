"""What every column of a run's tables means and in what unit, for the generated reference
(docs/reference/results.md). Kept apart from the Arrow schemas (`harness.results.arrow_schemas`) so
that documenting a column never changes a stored byte; a test holds the two to the same columns."""

from __future__ import annotations

COMMON: dict[str, tuple[str, str]] = {
    "run_id": (
        "text",
        "The run (or sweep) that wrote the row, as in `run.json`: stack tables of many runs "
        "and still join them.",
    ),
    "strategy": ("name", "The ledger strategy of the row (`--compare` runs several)."),
    "seed": ("integer", "The seed; the same seed gives every strategy the same requests."),
}
"""Columns every table has."""

COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "summary": {
        "engine": ("name", "`virtual` or `ray`."),
        "nodes": ("count", "Nodes in the cluster."),
        "k": ("count", "`placement.k`: candidates sampled per placement."),
        "replicas": ("count", "`placement.replicas`: scheduler replicas."),
        "requests": ("count", "Creates issued."),
        "placed": ("count", "Creates placed."),
        "failed": ("count", "Creates that failed, for any reason (`failed_*` split them)."),
        "failed_frac": ("fraction 0-1", "`failed / requests`."),
        "failed_no_candidate": ("count", "Failed creates: no candidate node was left."),
        "failed_attempts_exhausted": (
            "count",
            "Failed creates: `placement.max_attempts` RPCs failed.",
        ),
        "failed_deadline": ("count", "Failed creates: still unplaced at `placement.deadline_s`."),
        "failed_refused": (
            "count",
            "Failed creates: refused by a full node with `placement.retry_refused` false.",
        ),
        "kills": ("count", "Kill calls issued."),
        "kills_failed": ("count", "Kill calls that failed."),
        "creates_per_s": (
            "1/s (model time)",
            "Create calls answered per second of `sim_duration_s`.",
        ),
        "kills_per_s": ("1/s (model time)", "Kill calls answered per second of `sim_duration_s`."),
        "cv": (
            "ratio",
            "Population standard deviation / mean of the final sandboxes per node (initial "
            "load excluded): the balance, 0 is perfect.",
        ),
        "max_count": ("sandboxes", "The busiest node's sandboxes at the end."),
        "alloc_cv": (
            "ratio",
            "Population standard deviation / mean of the nodes' allocated vCPUs at the end.",
        ),
        "util_cv": (
            "ratio",
            "Population standard deviation / mean of the nodes' utilisation at the end "
            "(`cpu_percent` / 100 / `cpu_count`): upstream's LoadImbalanceCoefficient.",
        ),
        "util_mean": ("%", "Mean node utilisation at the end (actual CPU use over vCPUs)."),
        "util_min": ("%", "The least utilised node's utilisation at the end."),
        "util_max": ("%", "The most utilised node's utilisation at the end."),
        "min_count": ("sandboxes", "The idlest node's sandboxes at the end."),
        "p50_place_ms": ("ms (model time)", "Median `latency_ms` of the seed's placed creates."),
        "p90_place_ms": ("ms (model time)", "90th percentile of the same."),
        "p99_place_ms": ("ms (model time)", "99th percentile of the same."),
        "err_mean_abs": (
            "vCPU",
            "Time-weighted mean of the timeline's |`cpu_error`|; NaN without a timeline.",
        ),
        "err_over_max": ("vCPU", "Worst over-count (`cpu_error` > 0); NaN without a timeline."),
        "err_under_max": (
            "vCPU",
            "Worst under-count, as a positive number; NaN without a timeline.",
        ),
        "err_nonzero_frac": (
            "fraction 0-1",
            "Share of node-time with any accounting error; NaN without a timeline.",
        ),
        "sim_duration_s": (
            "s (model time)",
            "Model time covered: `run.duration_s`, or later while answers kept coming.",
        ),
        "engine_wall_s": ("s (wall clock)", "Wall time the engine took for the seed."),
        "fault_rpc_failed": ("count", "RPCs failed by an `rpc_error` fault (error `failed`)."),
        "fault_rpc_exhausted": (
            "count",
            "RPCs answered ResourceExhausted by an `rpc_error` fault.",
        ),
        "fault_timeouts": ("count", "Create RPCs left unanswered by a `timeout` fault."),
        "fault_down_creates": ("count", "Create RPCs sent to a node that was down."),
        "fault_down_kills": ("count", "Kill RPCs sent to a node that was down."),
        "fault_lost_reports": ("count", "Heartbeat reports dropped by a `lost_reports` fault."),
        "fault_crashes": (
            "count",
            "Node crashes (a `crash` stretch, or on Ray a node group's process dying).",
        ),
        "lost_sandboxes": ("sandboxes", "Sandboxes lost to crashes (the sum of `nodes.lost`)."),
        "unknown_sandboxes": (
            "sandboxes",
            "Acknowledged sandboxes gone with a process that died (Ray engine; 0 on the "
            "virtual one).",
        ),
        "orphans": (
            "sandboxes",
            "Sandboxes running that no answer acknowledged (a create RPC that timed out).",
        ),
        "invariants_ok": ("bool", "Every end-of-seed check held (`run.json`, `invariants`)."),
        "time_scale": (
            "wall s per model s",
            "`run.time_scale`. Ray engine only: null on the virtual engine.",
        ),
        "create_rpc_p50_ms": (
            "ms (model time)",
            "Median create RPC round trip the schedulers measured. Ray engine only: null on "
            "the virtual engine, where it is `cluster.create_latency_ms` by construction.",
        ),
        "create_rpc_p99_ms": ("ms (model time)", "99th percentile of the same. Ray engine only."),
        "heartbeat_late_p50_ms": (
            "ms (model time)",
            "Median lateness of a heartbeat (actual minus planned report time). Ray engine "
            "only: the virtual engine is never late.",
        ),
        "heartbeat_late_p99_ms": (
            "ms (model time)",
            "99th percentile of the same. Ray engine only.",
        ),
        "create_rpc_sketch": (
            "DDSketch bytes",
            "Every create RPC round trip of the seed (ms, model time) as a DDSketch "
            "(`harness.results.percentiles.from_bytes`); merges exactly over seeds. "
            "Ray engine only.",
        ),
        "heartbeat_late_sketch": (
            "DDSketch bytes",
            "Every heartbeat's lateness (ms, model time) as a DDSketch. Ray engine only.",
        ),
        "ray_nodes": ("count", "Ray nodes that ran actors. Ray engine only."),
    },
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
            "Actual CPU use at the end: the sum of live sandboxes' vCPU x usage, x 100.",
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
    },
    "timeline": {
        "t": ("s (model time)", "The sample's time (every `run.sample_interval_s`)."),
        "node_id": ("id", "The node."),
        "replica": ("id", "The scheduler replica whose view is sampled."),
        "cpu_allocated": ("vCPU", "The node's true allocation."),
        "sandboxes": ("sandboxes", "The node's true sandbox count."),
        "cpu_percent": (
            "% of one vCPU",
            "The node's actual CPU use: its live sandboxes' vCPU x usage, x 100.",
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
