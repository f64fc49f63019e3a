"""Checks at the end of every (strategy, seed): the harness's own numbers must add up, faults
or not. A broken check is a bug in the harness (or a fault the accounting missed), so the run
records it in run.json and fails loudly rather than publishing numbers nobody should trust.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from harness.model.scheduling.placement.eligibility import RULES
from harness.model.scheduling.strategies import STRATEGIES
from harness.results.seed_figures import matches
from harness.results.seed_result import SeedResult

if TYPE_CHECKING:  # what it reads of a config: `config_view`, none of the layer above
    from harness.results.config_view import ConfigView

TOLERANCE = 1e-6
"""vCPUs of float residue allowed where two sums must agree."""


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"check": name, "ok": bool(ok), "detail": detail}


def _first(items: list[Any], n: int = 5) -> str:
    return ", ".join(map(str, items[:n])) + (", ..." if len(items) > n else "")


PAIR_BITS = 32
"""A (node, sandbox) pair is kept as one integer, node above sandbox: sandbox IDs count the
creates of a seed, which stay below 2**32 (a Python int holds any, should they not)."""


def _pairs(node: np.ndarray, sandbox: np.ndarray, rows: np.ndarray) -> list[int]:
    nodes, sandboxes = node[rows].astype(np.int64), sandbox[rows]
    if sandboxes.size and int(sandboxes.max()) >> PAIR_BITS:  # beyond 64 bits: Python ints
        nodes, sandboxes = nodes.astype(object), sandboxes.astype(object)
    return ((nodes << PAIR_BITS) | sandboxes).tolist()


def _acknowledged(result: SeedResult, truth: set[int]) -> tuple[set[int], list[int]]:
    """From the request rows, in the order they were recorded (a sandbox's kill after its
    create): the (node, sandbox) pairs placed and not killed, and the sandboxes killed yet in
    `truth` (still on a node at the end). What is held is the pairs alive at once, not every
    row."""
    alive: set[int] = set()
    still_there: list[int] = []
    columns = ("kind", "outcome", "sandbox_id", "node_id")
    mask = (1 << PAIR_BITS) - 1
    for batch in result.rows.batches("requests", columns):
        create, placed = matches(batch["kind"], "create"), matches(batch["outcome"], "placed")
        kill, done = matches(batch["kind"], "kill"), matches(batch["outcome"], "killed")
        node, sandbox = batch["node_id"].to_numpy(), batch["sandbox_id"].to_numpy()
        # A batch's creates before its kills: a sandbox is killed only once its create
        # was answered, so its kill is never recorded before it.
        alive.update(_pairs(node, sandbox, create & placed))
        gone = _pairs(node, sandbox, kill & done)
        alive.difference_update(gone)
        still_there.extend(pair & mask for pair in gone if pair in truth)
    return alive, sorted(still_there)


def check(config: ConfigView, result: SeedResult) -> list[dict[str, Any]]:
    """The checks (name, ok, detail); what they found goes into the result's summary
    (`lost_sandboxes`, `unknown_sandboxes`, `orphans`, `invariants_ok`), so every engine's
    summary has it."""
    truth = {n << PAIR_BITS | i for n, on_node in enumerate(result.sandbox_ids) for i in on_node}
    alive, still_there = _acknowledged(result, truth)
    mask = (1 << PAIR_BITS) - 1
    lost = set(result.lost_ids)
    unknown_nodes = set(
        np.flatnonzero(result.nodes.column("lost_unknown").to_numpy(zero_copy_only=False)).tolist()
    )
    gone = [(pair >> PAIR_BITS, pair & mask) for pair in alive - truth if pair & mask not in lost]
    # On a node whose process died, what was lost is not known: counted apart, not missing.
    unknown = [i for n, i in gone if n in unknown_nodes]
    missing = sorted(i for n, i in gone if n not in unknown_nodes)
    orphans = len(truth - alive)
    timeouts = int(result.summary.get("fault_timeouts", 0))
    checks = [
        _check(
            "acknowledged_sandboxes",
            not missing and not still_there,
            f"{len(alive)} acknowledged and not killed: each on its node or lost to a crash "
            f"({len(lost)} lost, {len(unknown)} gone with a node's process); "
            f"missing: [{_first(missing)}]; "
            f"killed yet still on a node: [{_first(still_there)}]",
        ),
        _check(
            "orphans_from_timeouts",
            orphans <= timeouts,
            f"{orphans} sandboxes on nodes that no create answer acknowledged there, "
            f"{timeouts} create RPCs timed out",
        ),
    ]
    nodes = result.nodes
    peak = nodes.column("peak_cpu_allocated").to_numpy()
    capacity = nodes.column("capacity").to_numpy()
    over = np.flatnonzero(peak > capacity + TOLERANCE).tolist()
    checks.append(
        _check("capacity", not over, f"nodes whose peak exceeded R * cpu_count: [{_first(over)}]")
    )
    s = result.summary
    checks.append(
        _check(
            "requests_accounted",
            s["placed"] + s["failed"] == s["requests"],
            f"placed {s['placed']} + failed {s['failed']} vs requests {s['requests']}",
        )
    )
    if not config.external.active:  # an external scheduler's violations are its own, counted
        checks.append(
            _check(
                "placements_keep_rules",
                s["violations"] == 0,
                f"{s['violations']} creates placed by the pipeline on a node that breaks an "
                "eligibility rule: " + ", ".join(f"{r} {s[f'violations_{r}']}" for r in RULES),
            )
        )
    ledger = STRATEGIES[config.placement.strategy]
    if ledger.exact_when_drained and result.drained_views is not None:
        true_cpu = nodes.column("cpu_allocated").to_numpy()
        live = ~nodes.column("down").to_numpy(zero_copy_only=False)
        wrong = sorted(
            {
                int(n)
                for view in result.drained_views
                for n in np.flatnonzero(live & (np.abs(np.asarray(view) - true_cpu) > TOLERANCE))
            }
        )
        checks.append(
            _check(
                "reconcile_drained",
                not wrong,
                f"live nodes whose drained view differs from the truth: [{_first(wrong)}]",
            )
        )
    result.summary.update(
        lost_sandboxes=len(lost),
        unknown_sandboxes=len(unknown),
        orphans=orphans,
        invariants_ok=all(c["ok"] for c in checks),
    )
    return checks
