"""Exact percentiles of a column too long to hold: the values are read in chunks, as often as
needed, and never all at once.

A percentile is two order statistics and a weight between them (numpy's "linear" method).
Each order statistic is found by radix selection on the float's bits: a first pass counts the
values by their top 16 bits, and each later pass only those of the bucket holding the rank
sought, 16 bits further, until the bucket is small enough to hold and sort. Memory is a
histogram and one bucket per rank sought, whatever the column's length; the values are read
two to five times, for every group of values at once (a percentile per strategy, say).
A group of few distinct values (latencies that are sums of a few fixed delays) is counted
value by value in the first pass instead, and needs no other. The result is the one
`numpy.percentile` gives on the whole column, to the bit, either way
(tests/results/test_order_statistics.py holds both against numpy)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

Chunks = Callable[[], Iterable[np.ndarray]]
"""A fresh pass over the values: each call yields them again, chunk by chunk, in any order."""
GroupedChunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]
"""A fresh pass over values of several groups: (each value's group, 0 to groups - 1; values)."""

DIGIT_BITS = 16
HELD = 1 << 20
"""Values of one bucket held in memory to be sorted, rather than counted once more."""
DISTINCT = 1 << 12
"""Distinct values of a group counted one by one in the first pass; a group with more is
selected by its bits instead."""
_SIGN = np.uint64(1 << 63)
_DIGIT = np.uint64((1 << DIGIT_BITS) - 1)

Target = tuple[int, int, int]
"""Where a rank is looked for: (its group, the key bits fixed so far, how many bits)."""


def _keys(values: np.ndarray) -> np.ndarray:
    """Unsigned integers in the order of the floats `values` (negative ones with every bit
    flipped, the others with the sign bit set)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def _value(key: int) -> float:
    """The float whose `_keys` key is `key`."""
    bits = np.uint64(key)
    bits = bits & ~_SIGN if bits & _SIGN else ~bits
    return float(np.array([bits], np.uint64).view(np.float64)[0])


def _in(target: Target, groups: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The keys of a chunk that lie in `target`'s group and bucket."""
    group, prefix, width = target
    mine = keys[groups == group]
    return mine if width == 0 else mine[(mine >> np.uint64(64 - width)) == prefix]


def grouped_order_statistics(
    chunks: GroupedChunks,
    ranks: dict[int, Sequence[int]],
    first: dict[int, np.ndarray] | None = None,
) -> dict[tuple[int, int], float]:
    """The value of each rank (0: the smallest) of each group's values: {(group, rank): value}.
    `first`: each group's histogram of its values' top 16 bits, when a pass has counted them
    already (`grouped_percentiles` counts them with the values)."""
    found: dict[tuple[int, int], float] = {}
    # Each rank sought: its target and the values of its group below the target's bucket.
    sought = {(g, r): ((g, 0, 0), 0) for g, rs in ranks.items() for r in rs}
    while sought:
        targets = {target for target, _ in sought.values()}
        if first is not None and all(width == 0 for _, _, width in targets):
            counts = {target: first[target[0]] for target in targets}
        else:
            counts = _histograms(chunks, targets)
        held: dict[Target, list[tuple[int, int]]] = {}
        for key, ((group, prefix, width), below) in list(sought.items()):
            cumulative = np.cumsum(counts[(group, prefix, width)])
            digit = int(np.searchsorted(cumulative, key[1] - below, side="right"))
            before = int(cumulative[digit - 1]) if digit else 0
            narrowed = (group, (prefix << DIGIT_BITS) | digit, width + DIGIT_BITS)
            sought[key] = (narrowed, below + before)
            if narrowed[2] == 64:  # every value of the bucket is this one
                del sought[key]
                found[key] = _value(narrowed[1])
            elif int(cumulative[digit]) - before <= HELD:
                held.setdefault(narrowed, []).append(key)
        if held:
            kept: dict[Target, list[np.ndarray]] = {target: [] for target in held}
            for groups, values in chunks():
                keys = _keys(values)
                for target, parts in kept.items():
                    parts.append(_in(target, groups, keys))
            for target, keys_sought in held.items():
                bucket = np.sort(np.concatenate(kept.pop(target)))
                for key in keys_sought:
                    found[key] = _value(int(bucket[key[1] - sought.pop(key)[1]]))
    return found


def _histograms(chunks: GroupedChunks, targets: Iterable[Target]) -> dict[Target, np.ndarray]:
    """For each target, its values counted by their next 16 bits, in one pass."""
    counts = {target: np.zeros(1 << DIGIT_BITS, np.int64) for target in targets}
    for groups, values in chunks():
        keys = _keys(values)
        for target, histogram in counts.items():
            shift = np.uint64(64 - target[2] - DIGIT_BITS)
            digits = (_in(target, groups, keys) >> shift) & _DIGIT
            histogram += np.bincount(digits.astype(np.intp), minlength=1 << DIGIT_BITS)
    return counts


def order_statistics(chunks: Chunks, ranks: Sequence[int]) -> dict[int, float]:
    """The value of each rank (0: the smallest) of the values `chunks` yields."""
    found = grouped_order_statistics(_one_group(chunks), {0: ranks})
    return {rank: value for (_, rank), value in found.items()}


def grouped_percentiles(
    chunks: GroupedChunks, groups: int, percents: Sequence[float]
) -> list[list[float]]:
    """`numpy.percentile(values, percents)` (linear interpolation) of each group's values,
    without holding them; NaN for each percent of a group without values."""
    # One pass counts each group's values and their top 16 bits (the first histograms), and
    # while a group has few distinct values, how many of each: then its ranks are read off
    # those counts, with no pass more.
    top = {group: np.zeros(1 << DIGIT_BITS, np.int64) for group in range(groups)}
    distinct: dict[int, dict[int, int] | None] = {group: {} for group in range(groups)}
    for codes, values in chunks():
        keys = _keys(values)
        digits = (keys >> np.uint64(64 - DIGIT_BITS)).astype(np.intp)
        cells = np.bincount(
            codes.astype(np.intp) * (1 << DIGIT_BITS) + digits, minlength=groups << DIGIT_BITS
        )
        for group in range(groups):
            top[group] += cells[group << DIGIT_BITS : (group + 1) << DIGIT_BITS]
            tally = distinct[group]
            if tally is not None:
                seen, many = np.unique(keys[codes == group], return_counts=True)
                for key, count in zip(seen.tolist(), many.tolist(), strict=True):
                    tally[key] = tally.get(key, 0) + count
                if len(tally) > DISTINCT:
                    distinct[group] = None
    n = np.array([int(top[group].sum()) for group in range(groups)], np.int64)
    wanted: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for group in range(groups):
        if n[group]:
            wanted[group] = _neighbours(int(n[group]), percents)
    ranks = {g: sorted({*lo.tolist(), *hi.tolist()}) for g, (lo, hi, _) in wanted.items()}
    found: dict[tuple[int, int], float] = {}
    for group in list(ranks):
        tally = distinct[group]
        if tally is not None:
            keys_in_order = sorted(tally)
            ends = np.cumsum([tally[k] for k in keys_in_order])
            for rank in ranks.pop(group):
                key = keys_in_order[int(np.searchsorted(ends, rank, side="right"))]
                found[(group, rank)] = _value(key)
    if ranks:
        found |= grouped_order_statistics(chunks, ranks, top)
    out = []
    for group in range(groups):
        if group not in wanted:
            out.append([math.nan] * len(percents))
            continue
        lo, hi, gamma = wanted[group]
        a = np.array([found[(group, i)] for i in lo.tolist()])
        b = np.array([found[(group, i)] for i in hi.tolist()])
        out.append([float(v) for v in _lerp(a, b, gamma)])
    return out


def percentiles(chunks: Chunks, percents: Sequence[float]) -> list[float]:
    """`numpy.percentile(values, percents)` of every value `chunks` yields, without holding
    them; NaN for each when there is none."""
    return grouped_percentiles(_one_group(chunks), 1, percents)[0]


def _neighbours(n: int, percents: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As numpy: the ranks below and above each percent's virtual index (n - 1) * q, clipped
    to the values, and the weight between them."""
    virtual = (n - 1) * np.true_divide(np.asarray(percents, dtype=np.float64), 100)
    below = np.floor(virtual)
    top = virtual >= n - 1
    lower = np.where(top, n - 1, np.clip(below, 0, n - 1)).astype(np.intp)
    upper = np.where(top, n - 1, np.clip(below + 1, 0, n - 1)).astype(np.intp)
    return lower, upper, virtual - below


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """numpy's interpolation between two order statistics: from the lower one below half
    way, from the upper one above, so that either end is exact."""
    diff = b - a
    out = a + diff * t
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


def _one_group(chunks: Chunks) -> GroupedChunks:
    return lambda: ((np.zeros(len(values), np.intp), values) for values in chunks())


def in_chunks(values: np.ndarray) -> Chunks:
    """`chunks` of values already in memory."""
    return lambda: (values,)
