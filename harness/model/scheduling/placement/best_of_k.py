"""`best_of_k` and `every_node`: the samplers; `reference`: the reference's score; `lowest`:
the reference's selection. Together, Best-of-K exactly as the reference scheduler does it."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, final

from librt.vecs import append, vec
from mypy_extensions import i64, mypyc_attr

from harness.model.scheduling.placement.plugin import Eligible, Sampler, Scorer, Selector

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.scheduler import Scheduler
    from harness.model.workload.request import CreateRequest


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

    def __init__(self, rules: PlacementSpec) -> None:
        super().__init__(rules)
        self.k = rules.k
        """K, read once: the rules are an interpreted object."""
        self.shuffle = _Shuffle()

    def sample(self, scheduler: Scheduler, eligible: Eligible | None) -> list[int]:
        return sample(scheduler.random, scheduler.n, self.k, eligible, self.shuffle)


@mypyc_attr(allow_interpreted_subclasses=True)
class EveryNode(Sampler):
    """Every eligible node, in node order (a full scan)."""

    name = "every_node"

    def sample(self, scheduler: Scheduler, eligible: Eligible | None) -> list[int]:
        nodes = range(scheduler.n)
        return list(nodes) if eligible is None else [n for n in nodes if eligible(n)]


@mypyc_attr(allow_interpreted_subclasses=True)
class Reference(Scorer):
    """(vcpu + reserved + alpha * cpu_percent / 100) / (R * cpu_count), with `reserved` the
    believed allocation (plus creates in progress for strategies that count them)."""

    name = "reference"

    def __init__(self, rules: PlacementSpec) -> None:
        super().__init__(rules)
        self.r = rules.r
        self.alpha = rules.alpha
        """R and alpha, read once: the rules are an interpreted object, and this scores every
        create."""

    def scores(
        self, scheduler: Scheduler, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        # `reserved` is `scheduler.reserved`'s sum written out: a call less per candidate, and
        # compiled, a direct call of the ledger's method.
        ledger, pending = scheduler.ledger, scheduler.pending_cpu
        views, counts = ledger.views, ledger.counts_pending
        r, alpha, vcpu = self.r, self.alpha, req.vcpu
        out = []
        for node in candidates:
            view = views[node]
            count = view.cpu_count
            if count:
                reserved = ledger.believed_cpu(node, now)
                if counts:
                    reserved += pending[node]
                out.append((vcpu + reserved + alpha * view.cpu_percent / 100.0) / (r * count))
            else:  # a node that reports no CPUs is never chosen over one that does
                out.append(math.inf)
        return out


@mypyc_attr(allow_interpreted_subclasses=True)
class Lowest(Selector):
    """The lowest score, strict `<`: on a tie the candidate sampled first wins."""

    name = "lowest"

    def select(
        self, scheduler: Scheduler, candidates: list[int], scores: list[float]
    ) -> int | None:
        # The first of the lowest scores, by strict `<`, in one pass: what min() then index()
        # find, without two generic calls (compiled, the loop is plain float comparisons).
        if not candidates:
            return None
        best, low = 0, scores[0]
        for i in range(1, len(scores)):
            if scores[i] < low:
                best, low = i, scores[i]
        return candidates[best]
