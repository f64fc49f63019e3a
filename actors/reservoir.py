"""A fixed-size uniform sample of a stream of measurements, so an actor's memory does not grow
with the length of the run while its percentiles stay honest."""

from __future__ import annotations

import random
from array import array


class Reservoir:
    """Every value while fewer than `size` have come; after that a uniform sample of them all
    (Vitter's algorithm R), so percentiles are exact for short runs and unbiased for long ones."""

    __slots__ = ("_rng", "count", "size", "values")

    def __init__(self, size: int = 100_000) -> None:
        self._rng = random.Random(size)  # only needs to be uniform, not tied to the scenario
        self.size = size
        self.count = 0
        self.values = array("d")

    def add(self, value: float) -> None:
        self.count += 1
        if len(self.values) < self.size:
            self.values.append(value)
        else:
            slot = self._rng.randrange(self.count)
            if slot < self.size:
                self.values[slot] = value
