"""Load figures of a seed while it runs, from its request rows as they stream in: the Ray
driver feeds every batch it spools, and the live view shows the result."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from harness.engines import Load
from harness.results import percentiles

QUANTILES = (0.5, 0.9, 0.99)


class LoadMeter:
    """Counts creates, kills and failures, and sketches the placed creates' latency (DDSketch:
    1% relative accuracy, bounded memory however long the run)."""

    def __init__(self) -> None:
        self.creates = 0
        self.kills = 0
        self.failed = 0
        self.latency = percentiles.new()

    def add(self, rows: pa.RecordBatch | pa.Table) -> None:
        """Request rows (the `requests` schema) just answered."""
        creates = pc.equal(rows["kind"], "create")  # every other row is a kill
        placed = pc.and_(creates, pc.equal(rows["outcome"], "placed"))
        n = pc.sum(creates).as_py() or 0
        self.creates += n
        self.kills += rows.num_rows - n
        self.failed += n - (pc.sum(placed).as_py() or 0)
        for ms in pc.filter(rows["latency_ms"], placed).to_pylist():
            self.latency.add(ms)

    def load(self, model_s: float) -> Load:
        p50, p90, p99 = percentiles.quantiles(self.latency, QUANTILES)
        return Load(model_s, self.creates, self.kills, self.failed, (p50, p90, p99))
