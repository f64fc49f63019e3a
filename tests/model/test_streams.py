"""Many draws at once (`harness.model.random_streams.randints`, `uniforms`) are the draws one call
at a time would make, and leave the stream where those calls would; so is `expovariate`'s one
draw."""

from __future__ import annotations

import random

import pytest

from harness.model.random_streams import expovariate, randints, uniforms


@pytest.mark.parametrize(
    ("lo", "hi", "n"),
    [(0, 4, 1000), (0, 0, 300), (3, 3, 10), (0, 7, 333), (-5, 100, 2000), (1, 10**6, 500),
     (0, 2**32 - 1, 50), (0, 2**32, 20), (5, 4, 0)],
)  # fmt: skip
def test_randints_are_randint_one_at_a_time(lo: int, hi: int, n: int) -> None:
    for seed in range(5):
        bulk, one = random.Random(f"{seed}:cluster"), random.Random(f"{seed}:cluster")
        assert randints(bulk, lo, hi, n) == [one.randint(lo, hi) for _ in range(n)]
        assert bulk.getstate() == one.getstate()


@pytest.mark.parametrize(
    ("a", "b", "n"),
    [(0.0, 20.0, 1000), (0.0, 1.0, 7), (-3.5, 17.25, 100), (5.0, 5.0, 3), (0, 1, 0)],
)
def test_uniforms_are_uniform_one_at_a_time(a: float, b: float, n: int) -> None:
    for seed in range(5):
        bulk, one = random.Random(f"{seed}:heartbeat"), random.Random(f"{seed}:heartbeat")
        assert uniforms(bulk, a, b, n) == [one.uniform(a, b) for _ in range(n)]
        assert bulk.getstate() == one.getstate()


@pytest.mark.parametrize("rate", [2000.0, 1 / 30.0, 1.0, 1e-9, 7.5e6])
def test_expovariate_is_the_streams_own(rate: float) -> None:
    for seed in range(5):
        ours, theirs = random.Random(f"{seed}:lifetime"), random.Random(f"{seed}:lifetime")
        assert [expovariate(ours, rate) for _ in range(500)] == [
            theirs.expovariate(rate) for _ in range(500)
        ]
        assert ours.getstate() == theirs.getstate()
