"""Best-of-K placement, exactly as the reference scheduler does it: the sampler and the score.

Sample up to K eligible nodes uniformly without replacement, score each, keep the lowest with
a strict `<` so that on a tie the candidate sampled first wins (`Scheduler.choose`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

Eligible = Callable[[int], bool]


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
