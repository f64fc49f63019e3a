"""Shared helpers: small scenarios built from the defaults with a few keys changed."""

from __future__ import annotations

from typing import Any

import pytest

from harness.config import Config, from_dict


def scenario(**sections: dict[str, Any]) -> Config:
    """A validated config: `scenario(cluster={"nodes": 5}, run={"duration_s": 2})`."""
    return from_dict(sections)


@pytest.fixture
def make_config():
    return scenario
