"""Pieces of the Ray engine that need no Ray: percentile sketches, the load meter and the
live view."""

from __future__ import annotations

import math
import re

import numpy as np
import pyarrow as pa
from rich.console import Console

from harness.engines import Load, Snapshot
from harness.engines.live_load import LoadMeter
from harness.presentation.terminal import live_detail
from harness.results import percentiles as sketch
from harness.results.arrow_schemas import REQUESTS, table
from harness.results.seed_figures import cv


def test_sketches_merge_across_actors_and_seeds_within_their_relative_accuracy():
    values = np.random.default_rng(1).lognormal(mean=0.0, sigma=2.0, size=60_000)
    parts = [sketch.new() for _ in range(3)]  # three actors, or three seeds
    for i, v in enumerate(values):
        parts[i % 3].add(float(v))
    stored = [sketch.from_bytes(sketch.to_bytes(p)) for p in parts]  # through Parquet bytes
    pooled = sketch.merged([*stored, None])
    assert pooled.count == len(values)
    for q, got in zip((0.5, 0.9, 0.99), sketch.quantiles(pooled, (0.5, 0.9, 0.99)), strict=True):
        exact = np.quantile(values, q, method="lower")
        assert abs(got - exact) <= sketch.RELATIVE_ACCURACY * exact
    assert all(math.isnan(v) for v in sketch.quantiles(sketch.new(), (0.5, 0.99)))


def _requests(rows: list[tuple[str, str, float]]) -> pa.Table:
    """Request rows of (kind, outcome, latency_ms); the other columns are not read."""
    n = len(rows)
    columns = {name: [None] * n for name in REQUESTS.names[2:]}
    columns["kind"], columns["outcome"], columns["latency_ms"] = map(list, zip(*rows, strict=True))
    return table(REQUESTS, "stale", 0, columns)


def test_load_meter_counts_what_streamed_in_and_sketches_placed_latency_only():
    meter = LoadMeter()
    meter.add(_requests([("create", "placed", float(ms)) for ms in range(1, 101)]))
    meter.add(_requests([("create", "failed", 5000.0), ("kill", "killed", 2.0)]))
    load = meter.load(model_s=4.0)
    assert (load.creates, load.kills, load.failed) == (101, 1, 1)
    assert load.rate(load.creates) == 101 / 4.0
    p50, p90, p99 = load.latency_ms
    assert abs(p50 - 50) <= 0.5 and abs(p90 - 90) <= 0.9 and abs(p99 - 99) <= 1.0


def _render(snapshot: Snapshot) -> str:
    console = Console(width=100, record=True)
    console.print(live_detail(snapshot))
    return console.export_text()


def test_live_view_shows_load_cv_and_one_bar_per_node_or_per_range():
    few = [3, 0, 7]
    load = Load(model_s=2.0, creates=10, kills=4, failed=1, latency_ms=(1.25, 2.5, 9.75))
    text = _render(Snapshot(2.5, few, load))
    assert "2.5 s elapsed" in text and f"CV {cv(few):.3f}" in text
    assert "10 creates (5.0/s), 1 failed, 4 kills (2.0/s)" in text
    assert "p50 1.2 ms, p90 2.5 ms, p99 9.8 ms" in text
    assert re.findall(r"node \d \|#*\s*\| (\d+)", text) == ["3", "0", "7"]
    many = list(range(200))
    nothing = Load(model_s=0.0, creates=0, kills=0, failed=0, latency_ms=(math.nan,) * 3)
    text = _render(Snapshot(1.0, many, nothing))
    assert "0 creates (0.0/s)" in text and "p50 - ms" in text
    per_range = [int(n) for n in re.findall(r"sandboxes \|#*\s*\| (\d+)", text)]
    assert len(per_range) == 10 and sum(per_range) == 200
