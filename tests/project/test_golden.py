"""Every shipped scenario gives the Parquet content recorded in tests/support/golden.json: a
refactor (or a new plugin's wiring) changes no result unless a deliberate change records new digests
(`python tests/support/golden.py --record`) and names why in its commit. A table that differs is
named with its columns and first rows that differ (tests/support/golden-where.json)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.support.configs import CONFIGS, SCENARIOS, runnable
from tests.support.golden import GOLDEN, index, mismatches, tables, where

HERD = CONFIGS / "seed-herd.toml"
FAST = {"seed-herd", "seed-burst", "faults-crash", "faults-lost-reports"}
"""The scenarios whose digests the fast tier checks: the herd, a burst and two faults (a node
that dies, reports that are lost), the quickest of the kinds; the others in the slow tier
only, where every scenario is checked (compiled, in CI) and tests/project/test_compiled.py
holds pure Python to the same bytes."""


@pytest.fixture(scope="module")
def herd() -> dict[str, pd.DataFrame]:
    """seed-herd's tables, run once for the two tests that read them."""
    return tables(HERD)


@pytest.mark.parametrize(
    "path", runnable(SCENARIOS, lambda p: [] if p.stem in FAST else [pytest.mark.slow])
)
def test_a_shipped_scenario_gives_the_recorded_parquet_content(path, request):
    recorded = json.loads(GOLDEN.read_text()).get(path.name)
    assert recorded is not None, (
        f"{path.name} has no digests: run python tests/support/golden.py --record"
    )
    found = request.getfixturevalue("herd") if path == HERD else tables(path)
    differ = mismatches(path.name, found)
    assert not differ, f"{path.name} is not as recorded:\n" + "\n".join(differ)


def test_an_altered_table_is_named_with_its_column_and_first_row(herd):
    """seed-herd as run, then one value of its summary (16 rows: a run of rows is one row)
    changed: the message names the table, the column and the row."""
    frames = {name: frame.copy() for name, frame in herd.items()}
    assert mismatches("seed-herd.toml", frames) == []
    frames["summary"].loc[5, "cv"] += 0.001
    assert mismatches("seed-herd.toml", frames) == [
        "summary: column cv differs; first at row 5 (of 16 recorded)"
    ]


def test_a_long_table_is_named_with_the_first_run_of_rows_that_differs():
    """1000 rows are indexed as 64 runs of 16: a change at row 613 is in rows 608-623; the
    rows after a dropped one all move, so the first run that differs is the dropped row's."""
    frame = pd.DataFrame({"seed": np.repeat([0, 1], 500), "node_id": np.arange(1000) % 7})
    recorded = index(frame)
    changed = frame.copy()
    changed.loc[613, "node_id"] += 1
    assert where("requests", changed, recorded) == (
        "requests: column node_id differs; first at rows 608-623 (of 1000 recorded)"
    )
    shorter = frame.drop(index=40).reset_index(drop=True)
    assert where("requests", shorter, recorded) == (
        "requests: columns seed, node_id differ; first at rows 32-47 (of 1000 recorded, 999 now)"
    )
    assert where("requests", frame.assign(x=1), recorded) == (
        "requests: column x differs; first at rows 0-15 (of 1000 recorded)"
    )
