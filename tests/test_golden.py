"""Every shipped scenario gives the Parquet content recorded in tests/golden.json: a refactor
(or a new plugin's wiring) changes no result unless a deliberate change records new digests
(`python tests/golden.py --record`) and names why in its commit."""

from __future__ import annotations

import json

import pytest

from tests.golden import GOLDEN, digests
from tests.helpers import SCENARIOS, tiered


@pytest.mark.parametrize("path", tiered(SCENARIOS))
def test_a_shipped_scenario_gives_the_recorded_parquet_content(path):
    recorded = json.loads(GOLDEN.read_text()).get(path.name)
    assert recorded is not None, f"{path.name} has no digests: run python tests/golden.py --record"
    assert digests(path) == recorded
