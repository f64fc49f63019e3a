"""Exact percentiles read in chunks (`harness.results.order_statistics`) against numpy's on the
whole column: equal to the bit, however the values are cut into chunks and however many passes
the selection takes."""

from __future__ import annotations

from itertools import pairwise
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.results import order_statistics
from harness.results.order_statistics import grouped_percentiles, in_chunks, percentiles
from harness.results.order_statistics import order_statistics as select

PERCENTS = (0, 1, 50, 90, 99, 99.9, 100)


def _chunked(values: np.ndarray, cuts: list[int]):
    edges = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    return lambda: (values[a:b] for a, b in pairwise(edges))


floats = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(floats, st.sampled_from([0.0, 1.0, 2.5, -3.0, 1e-300])), min_size=1),
    st.lists(st.integers(0, 10_000), max_size=5),
    st.sampled_from([0, 2, order_statistics.DISTINCT]),
)
def test_percentiles_equal_numpys_to_the_bit(
    values: list[float], cuts: list[int], distinct: int
) -> None:
    """Counted value by value (few distinct values) or selected by bits (more than
    `distinct`, 0: always): the same, numpy's."""
    a = np.array(values, dtype=np.float64)
    with patch.object(order_statistics, "DISTINCT", distinct):
        got = percentiles(_chunked(a, cuts), PERCENTS)
    want = np.percentile(a, PERCENTS)
    assert np.array_equal(np.array(got), want, equal_nan=True), (got, want.tolist())


@pytest.mark.parametrize("held", [1, 3, 1 << 20])
def test_every_rank_is_found_whether_buckets_are_sorted_or_counted_again(monkeypatch, held):
    """With buckets held only when tiny, the selection narrows 16 bits at a time down to the
    value itself; with large ones it sorts a bucket at once: both give every rank."""
    monkeypatch.setattr(order_statistics, "HELD", held)
    monkeypatch.setattr(order_statistics, "DISTINCT", 0)
    rng = np.random.default_rng(7)
    a = np.concatenate([rng.lognormal(0, 2, 5000), np.full(3000, 1.0), -rng.random(500)])
    ordered = np.sort(a)
    ranks = [0, 1, 499, 500, 2500, 7999, 8499]
    got = select(_chunked(a, [1000, 4321]), ranks)
    assert got == {r: float(ordered[r]) for r in ranks}


def test_values_all_equal_give_that_value_in_every_percentile():
    a = np.full(100_000, 1.0)
    assert percentiles(in_chunks(a), (50, 90, 99)) == [1.0, 1.0, 1.0]


def test_no_value_gives_nan():
    assert all(np.isnan(v) for v in percentiles(lambda: (), (50, 99)))


def test_values_are_never_all_held(monkeypatch):
    """The point of it: a long column is counted, not kept; what is kept at once is a bucket."""
    monkeypatch.setattr(order_statistics, "HELD", 1000)
    monkeypatch.setattr(order_statistics, "DISTINCT", 0)
    kept = []
    real = np.sort

    def spy(values, *args, **kwargs):
        kept.append(len(values))
        return real(values, *args, **kwargs)

    monkeypatch.setattr(order_statistics.np, "sort", spy)
    rng = np.random.default_rng(3)
    a = rng.random(200_000)
    assert (
        percentiles(_chunked(a, [50_000, 100_000]), (50, 99)) == np.percentile(a, (50, 99)).tolist()
    )
    assert kept and max(kept) <= 1000


@pytest.mark.parametrize("distinct", [0, 1 << 16])
def test_groups_are_selected_in_the_same_passes_each_as_alone(monkeypatch, distinct):
    monkeypatch.setattr(order_statistics, "DISTINCT", distinct)
    rng = np.random.default_rng(11)
    values = np.round(rng.exponential(5.0, 30_000), 1)  # ~500 distinct values
    groups = rng.integers(0, 4, values.size)  # group 3 is left empty below
    groups[groups == 3] = 2

    def chunks():
        for a in range(0, values.size, 7000):
            yield groups[a : a + 7000], values[a : a + 7000]

    got = grouped_percentiles(chunks, 4, (50, 90, 99))
    for g in range(3):
        assert got[g] == np.percentile(values[groups == g], (50, 90, 99)).tolist()
    assert all(np.isnan(v) for v in got[3])
