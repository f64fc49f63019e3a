"""Random streams: one independent, seeded stream per purpose, each named in one place
(`Streams`), whoever draws from it (the wiring, the client side).

Changing one part of a scenario (say the strategy, or the lifetimes) leaves every other draw as
it was, so strategies compare on the same requests and both engines draw the same numbers. A
stream's name is part of what a seed draws: renaming one changes every run's results."""

from __future__ import annotations

import math
import random


def _named(seed: int, name: str) -> random.Random:
    return random.Random(f"{seed}:{name}")


def _whose(purpose: str, client: int | None) -> str:
    """A purpose's name, or a closed-loop client's stream of it (`<purpose>/<client>`)."""
    return purpose if client is None else f"{purpose}/{client}"


class VarietyStreams:
    """The streams a create's varied sizes are drawn from: `variety/<q>` for open-loop creates
    (in arrival order), `variety/<q>/<client>` for a closed-loop client's. Made on first use:
    a workload that varies nothing makes none."""

    __slots__ = ("_streams", "seed", "suffix")

    def __init__(self, seed: int, suffix: str) -> None:
        self.seed = seed
        self.suffix = suffix
        self._streams: dict[str, random.Random] = {}

    def of(self, quantity: str) -> random.Random:
        rng = self._streams.get(quantity)
        if rng is None:
            rng = self._streams[quantity] = _named(self.seed, f"variety/{quantity}{self.suffix}")
        return rng


class Streams:
    """One seed's streams, by purpose: the one place each is named."""

    __slots__ = ("seed",)

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def cluster(self) -> random.Random:
        """The nodes' initial loads."""
        return _named(self.seed, "cluster")

    def workload(self) -> random.Random:
        """Arrival times, and closed-loop clients' starts."""
        return _named(self.seed, "workload")

    def lifetimes(self, client: int | None = None) -> random.Random:
        """Lifetimes: the open-loop creates', in arrival order, or a closed-loop client's."""
        return _named(self.seed, _whose("lifetime", client))

    def templates(self, client: int | None = None) -> random.Random:
        """The pick of a template (drawn only when there are several), as `lifetimes`."""
        return _named(self.seed, _whose("template", client))

    def sizes(self, client: int | None = None) -> VarietyStreams:
        """A create's vCPUs, memory and usage where they vary (`harness.model.workload.variety`),
        a stream per quantity, as `lifetimes`."""
        return VarietyStreams(self.seed, "" if client is None else f"/{client}")

    def spread(self) -> random.Random:
        """A trace's rows recorded at one instant, spread over the seconds after it."""
        return _named(self.seed, "spread")

    def heartbeat(self) -> random.Random:
        """The nodes' heartbeat phases."""
        return _named(self.seed, "heartbeat")

    def placement(self, replica: int) -> random.Random:
        """A scheduler replica's draws (its samples)."""
        return _named(self.seed, f"placement/{replica}")

    def faults(self, first: int) -> random.Random:
        """The faults of a node host, keyed by its first node."""
        return _named(self.seed, f"faults/{first}")

    def report_delivery(self, first: int) -> random.Random:
        """The delivery delays of a node host's reports, keyed by its first node."""
        return _named(self.seed, f"report-delivery/{first}")


def randints(rng: random.Random, lo: int, hi: int, n: int) -> list[int]:
    """`[rng.randint(lo, hi) for _ in range(n)]`: the same numbers, and `rng` left where those
    calls leave it, but without their two Python frames per draw (`randint` and `randrange`
    are Python functions around `getrandbits`, which is C): `randint` takes the top
    `width.bit_length()` bits of a draw until they are below the width."""
    width = hi - lo + 1
    if width <= 0:
        return [rng.randint(lo, hi) for _ in range(n)]  # its error
    bits = rng.getrandbits
    k = width.bit_length()
    out = [0] * n
    for i in range(n):
        r = bits(k)
        while r >= width:
            r = bits(k)
        out[i] = lo + r
    return out


def uniforms(rng: random.Random, a: float, b: float, n: int) -> list[float]:
    """`[rng.uniform(a, b) for _ in range(n)]`, the same numbers and `rng` left where those
    calls leave it, without a Python frame per draw: `uniform` is `a + (b - a) * random()`."""
    draw = rng.random
    span = b - a
    return [a + span * draw() for _ in range(n)]


def expovariate(rng: random.Random, rate: float) -> float:
    """`rng.expovariate(rate)`: the same number, and `rng` left where that call leaves it,
    without its Python frame (`expovariate` is a Python function around `random`, which is C);
    compiled callers draw an exponential gap or lifetime at the cost of one C call."""
    return -math.log(1.0 - rng.random()) / rate
