"""Pieces of the Ray engine that need no Ray: the bounded sample and the live view."""

from __future__ import annotations

import re

import numpy as np
from rich.console import Console

from actors.reservoir import Reservoir
from harness.analysis import cv
from harness.display import live_detail
from harness.engine import Snapshot


def test_reservoir_keeps_everything_until_full_then_a_uniform_sample_of_fixed_size():
    small = Reservoir(size=100)
    for v in range(50):
        small.add(float(v))
    assert list(small.values) == [float(v) for v in range(50)]
    big = Reservoir(size=1000)
    for v in range(100_000):
        big.add(float(v))
    assert len(big.values) == 1000 and big.count == 100_000
    # A uniform sample of 0..99,999: its median is near 50,000, and late values are kept too.
    assert 40_000 < np.median(big.values) < 60_000 and max(big.values) > 90_000


def _render(snapshot: Snapshot) -> str:
    console = Console(width=100, record=True)
    console.print(live_detail(snapshot))
    return console.export_text()


def test_live_view_shows_progress_cv_and_one_bar_per_node_or_per_range():
    few = [3, 0, 7]
    text = _render(Snapshot(2.5, 10, few))
    assert "2.5 s elapsed, 10 requests done" in text and f"CV {cv(few):.3f}" in text
    assert re.findall(r"node \d \|#*\s*\| (\d+)", text) == ["3", "0", "7"]
    many = list(range(200))
    text = _render(Snapshot(1.0, 5, many))
    per_range = [int(n) for n in re.findall(r"sandboxes \|#*\s*\| (\d+)", text)]
    assert len(per_range) == 10 and sum(per_range) == 200
