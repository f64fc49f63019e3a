"""Tiers: what runs in the fast tier (`-m "not slow"`) and what only in the full suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

HEAVY = {"churn", "replicas"}
"""The shipped scenarios that take several times longer than the others (thousands of
sandboxes; four replicas): a test run on each scenario runs these two in the slow tier only."""


def heavy(stem: str) -> list[pytest.MarkDecorator]:
    """The marks of a test parameter that runs the shipped scenario `stem`."""
    return [pytest.mark.slow] if stem in HEAVY else []


def tiered(paths: list[Path]) -> list[Any]:
    """Shipped scenarios as parameters of a test, the heavy ones marked slow."""
    return [pytest.param(p, marks=heavy(p.stem), id=p.stem) for p in paths]


def examples(fast: int, full: int) -> pytest.MarkDecorator:
    """Parametrizes `examples`, a generated test's count: `fast` in the fast tier, and `full`
    (the count the test was written for) in the slow tier."""
    return pytest.mark.parametrize(
        "examples", [fast, pytest.param(full, marks=pytest.mark.slow)], ids=["fast", "full"]
    )


def slow(*values: Any) -> Any:
    """A test parameter that runs in the slow tier only."""
    return pytest.param(*values, marks=pytest.mark.slow)
