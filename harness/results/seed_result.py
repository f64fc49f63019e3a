"""What one (strategy, seed) produced, in the same form whichever engine ran, and the summary
row built from it: engines hand over their raw figures and compute no statistics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from harness.model.cluster.faults import COUNTS
from harness.model.scheduling.placement.record import drawn
from harness.results import percentiles
from harness.results.arrow_schemas import NODES, table
from harness.results.seed_figures import seed_summary
from harness.results.seed_rows import SeedRows
from harness.results.summary_columns import IN_PROCESS, SKETCHED
from harness.results.time_keeping import seed_verdict

if TYPE_CHECKING:  # what it reads of a config: `config_view`, none of the layer above
    from ddsketch import DDSketch

    from harness.results.config_view import ConfigView


@dataclass
class SeedResult:
    """Everything one (strategy, seed) produced, and the end state the invariant checks need
    (`harness.results.invariants`), in the same form whichever engine ran."""

    summary: dict[str, Any]
    nodes: pa.Table
    rows: SeedRows
    """Its request rows and timeline samples, on disk in its part or in memory."""
    sandbox_ids: list[list[int]] = field(default_factory=list)
    """The sandbox IDs each node runs at the end, node by node."""
    lost_ids: list[int] = field(default_factory=list)
    """IDs of sandboxes that were on a node when it crashed."""
    drained_views: list[list[float]] | None = None
    """Believed vCPUs per replica and node after the run drained and every live node sent one
    last report; None when the engine could not take it."""

    @property
    def requests(self) -> pa.Table:
        """The request rows whole: for tests and small runs, not where memory must stay
        bounded (read `rows` a batch at a time there)."""
        return self.rows.table("requests")

    @property
    def timeline(self) -> pa.Table:
        """The timeline samples whole (see `requests`)."""
        return self.rows.table("timeline")


def seed_result(
    engine: str,
    config: ConfigView,
    seed: int,
    nodes: Mapping[str, Sequence],
    rows: SeedRows,
    engine_wall_s: float,
    faults: Mapping[str, int],
    extra: Mapping[str, Any] | None = None,
    sketches: Mapping[str, DDSketch] | None = None,
    scheduler: str | None = None,
    **end_state: Any,
) -> SeedResult:
    """Tables and summary row of one finished seed. `nodes` are the end state's columns,
    `rows` the seed's request rows and samples (closed here: the seed is over), `faults` the
    injected-fault counters,
    `extra` what only some engines measure, and `sketches` the figures they measured in many
    places (`SKETCHED`: each becomes its p50, p99 and the sketch itself); `scheduler` the
    name an external scheduler gave itself, where the engine heard it; `end_state` goes
    to the SeedResult as is."""
    uncounted = sorted(set(faults) - set(COUNTS))
    if uncounted:  # a kind counting what it does not declare (`FaultKind.counters`)
        raise ValueError(f"fault counters no fault kind declares: {', '.join(uncounted)}")
    strategy = config.placement.strategy
    nodes_t = table(NODES, strategy, seed, dict(nodes))
    rows.close()
    summary = {
        "engine": engine,
        "strategy": strategy,
        "seed": seed,
        "nodes": config.cluster.node_count,
        "k": drawn(config.placement, config.cluster.node_count, config.external.active)[0],
        "replicas": config.placement.replicas,
        "scheduler": scheduler if config.external.active else IN_PROCESS,
        **seed_summary(nodes_t, rows, config.run.duration_s, config.heartbeat.interval_s),
        "engine_wall_s": engine_wall_s,
        **{name: int(faults.get(name, 0)) for name in COUNTS},
        **(extra or {}),
        **_sketched(sketches or {}),
    }
    if extra:  # an engine in real time: did it keep the model's time?
        summary |= seed_verdict(config, summary, rows)
    return SeedResult(summary, nodes_t, rows, **end_state)


def _sketched(sketches: Mapping[str, DDSketch]) -> dict[str, Any]:
    """The summary columns of each sketched figure: p50, p99 and the sketch (merged over seeds
    by `harness.results.statistics`)."""
    row: dict[str, Any] = {}
    for figure, sketch in sketches.items():
        if figure not in SKETCHED:
            raise ValueError(f"no summary columns for the sketched figure {figure!r}")
        row[f"{figure}_p50_ms"], row[f"{figure}_p99_ms"] = percentiles.quantiles(
            sketch, (0.5, 0.99)
        )
        row[f"{figure}_sketch"] = percentiles.to_bytes(sketch)
    return row


def partial_result(engine: str, config: ConfigView, seed: int, rows: SeedRows) -> SeedResult:
    """What an engine holds of a seed that did not finish: the requests and samples that had
    arrived (their files closed), and no summary figures; the nodes' end state is unknown."""
    try:
        rows.close()
    finally:
        rows.abandon()
    summary = {"engine": engine, "strategy": config.placement.strategy, "seed": seed}
    return SeedResult(summary, NODES.empty_table(), rows)
