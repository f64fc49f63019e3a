"""`best_of_k` and `every_node`: the samplers; `reference`: the reference's score; `lowest`:
the reference's selection. Together, Best-of-K exactly as the reference scheduler does it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from harness.placement.plugin import Eligible, Sampler, Scorer, Selector

if TYPE_CHECKING:
    from harness.scheduler import Scheduler


def sample(random: Callable[[], float], n: int, k: int, eligible: Eligible | None) -> list[int]:
    """Partial Fisher-Yates over the virtual array 0..n-1, skipping ineligible nodes.

    Same draws, same order and same distribution as the original's array shuffle, but the array
    is never built: only swapped positions are kept in a dict, so the cost is O(K + nodes
    skipped), not O(n). `random` is a seeded `random.Random().random`.
    """
    chosen: list[int] = []
    swapped: dict[int, int] = {}
    i = 0
    while i < n and len(chosen) < k:
        span = n - i
        r = int(random() * span)
        j = i + (r if r < span else span - 1)  # random() * span can round up to span
        node = swapped.get(j, j)
        swapped[j] = swapped.get(i, i)
        i += 1
        if eligible is None or eligible(node):
            chosen.append(node)
    return chosen


def score(
    vcpu: float, reserved: float, cpu_percent: float, cpu_count: int, r: float, alpha: float
) -> float:
    """Lower is better: projected allocation plus a share of actual usage, over capacity."""
    if cpu_count == 0:
        return math.inf
    return (vcpu + reserved + alpha * cpu_percent / 100.0) / (r * cpu_count)


class BestOfK(Sampler):
    """Up to K eligible nodes, uniformly without replacement (`placement.k`)."""

    name = "best_of_k"

    def sample(self, scheduler: Scheduler, eligible: Eligible | None) -> list[int]:
        return sample(scheduler.random, scheduler.n, self.rules.k, eligible)


class EveryNode(Sampler):
    """Every eligible node, in node order (a full scan)."""

    name = "every_node"

    def sample(self, scheduler: Scheduler, eligible: Eligible | None) -> list[int]:
        nodes = range(scheduler.n)
        return list(nodes) if eligible is None else [n for n in nodes if eligible(n)]


class Reference(Scorer):
    """(vcpu + reserved + alpha * cpu_percent / 100) / (R * cpu_count), with `reserved` the
    believed allocation (plus creates in progress for strategies that count them)."""

    name = "reference"

    def scores(
        self, scheduler: Scheduler, candidates: Sequence[int], vcpu: float, now: float
    ) -> list[float]:
        views, reserved = scheduler.ledger.views, scheduler.reserved
        r, alpha = self.rules.r, self.rules.alpha
        out = []
        for node in candidates:
            view = views[node]
            out.append(score(vcpu, reserved(node, now), view.cpu_percent, view.cpu_count, r, alpha))
        return out


class Lowest(Selector):
    """The lowest score, strict `<`: on a tie the candidate sampled first wins."""

    name = "lowest"

    def select(
        self, scheduler: Scheduler, candidates: Sequence[int], scores: Sequence[float]
    ) -> int | None:
        winner = None
        winner_score = math.inf
        for node, s in zip(candidates, scores, strict=True):
            if winner is None or s < winner_score:
                winner, winner_score = node, s
        return winner
