"""`best_of_k`: up to K candidates uniformly without replacement, drawn exactly as the reference
scheduler draws them (with the `reference` scorer and the `lowest` selector, its Best-of-K)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final, final

from librt.vecs import append, vec
from mypy_extensions import i64, mypyc_attr

from harness.model.scheduling.placement.plugin import Eligible, Sampler

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.replica_state import ReplicaState


SHORT: Final = 16
"""Moved positions a `_Shuffle` searches in two lists before it takes a dict."""


@final
class _Shuffle:
    """The virtual array 0..n-1 of a partial Fisher-Yates: only positions whose value moved
    are kept. The first few are kept in two native vectors and searched: a placement moves
    about K of them, and compiled, a list or a dict would box each int (an allocation past
    256), several times the cost of comparing a few numbers. Past `SHORT` (many candidates
    skipped as ineligible) they go to a dict, whose lookups do not grow. A sampler keeps one
    and clears it for each placement: the vectors keep their room, and nothing is allocated."""

    __slots__ = ("at", "far", "size", "was")

    def __init__(self) -> None:
        self.at = vec[i64]()
        self.was = vec[i64]()
        self.size: i64 = 0
        """Moved positions kept in the vectors (their first `size` entries)."""
        self.far: dict[int, int] | None = None

    def clear(self) -> None:
        self.size = 0
        self.far = None

    def value(self, p: i64) -> i64:
        far = self.far
        if far is not None:
            return far.get(p, p)
        at = self.at
        for x in range(self.size):
            if at[x] == p:
                return self.was[x]
        return p

    def put(self, p: i64, v: i64) -> None:
        far = self.far
        if far is not None:
            far[p] = v
            return
        at, size = self.at, self.size
        for x in range(size):
            if at[x] == p:
                self.was[x] = v
                return
        if size == SHORT:
            self.far = dict(zip(at, self.was, strict=True))
            self.far[p] = v
            return
        if size < len(at):
            at[size] = p
            self.was[size] = v
        else:
            self.at = append(at, p)
            self.was = append(self.was, v)
        self.size = size + 1


def sample(
    random: Callable[[], float],
    n: int,
    k: int,
    eligible: Eligible | None,
    shuffle: _Shuffle | None = None,
) -> list[int]:
    """Partial Fisher-Yates over the virtual array 0..n-1, skipping ineligible nodes.

    Same draws, same order and same distribution as the original's array shuffle, but the array
    is never built: only moved positions are kept (`_Shuffle`: the caller's, cleared, or a new
    one), so the cost is O(K + nodes skipped), not O(n). `random` is a seeded
    `random.Random().random`.
    """
    chosen: list[int] = []
    if shuffle is None:
        shuffle = _Shuffle()
    else:
        shuffle.clear()
    m: i64 = n  # compiled, positions are machine ints, as the shuffle's vectors keep them
    for i in range(m):
        span = m - i
        r = i64(random() * float(span))
        j = i + (r if r < span else span - 1)  # random() * span can round up to span
        node = shuffle.value(j)
        if j != i:  # position i is never read again: a swap with itself changes nothing
            shuffle.put(j, shuffle.value(i))
        if eligible is None or eligible(node):
            chosen.append(node)
            if len(chosen) == k:
                break
    return chosen


@mypyc_attr(allow_interpreted_subclasses=True)
class BestOfK(Sampler):
    """Up to K eligible nodes, uniformly without replacement (`placement.k`)."""

    name = "best_of_k"
    uniform = True

    def __init__(self, rules: PlacementSpec) -> None:
        super().__init__(rules)
        self.k = rules.k
        """K, read once: the rules are an interpreted object."""
        self.shuffle = _Shuffle()

    def candidates(self, n_nodes: int) -> int | None:
        return min(self.k, n_nodes)

    def sample(self, replica: ReplicaState, eligible: Eligible | None) -> list[int]:
        return sample(replica.random, replica.n, self.k, eligible, self.shuffle)
