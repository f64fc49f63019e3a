"""Shared helpers: small scenarios built from the defaults with a few keys changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.config import Config, from_dict

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
# Every shipped scenario; the sweep-*.toml files are sweeps over them (tests/test_sweep.py).
SCENARIOS = sorted(p for p in CONFIGS.glob("*.toml") if not p.name.startswith("sweep-"))


def scenario(**sections: dict[str, Any]) -> Config:
    """A validated config: `scenario(cluster={"nodes": 5}, run={"duration_s": 2})`."""
    return from_dict(sections)


@pytest.fixture
def make_config():
    return scenario
