"""Random streams: one independent, seeded stream per purpose.

Changing one part of a scenario (say the strategy, or the lifetimes) leaves every other draw as
it was, so strategies compare on the same requests and both engines draw the same numbers.
Purposes: `cluster` (initial loads), `workload` (arrivals, client starts), `lifetime` (open-loop
lifetimes, in arrival order) and `lifetime/<client>` (a closed-loop client's), `template` and
`template/<client>` (the same for the pick of a template, drawn only when there are several),
`variety/<quantity>` and `variety/<quantity>/<client>` (a create's vCPUs, memory or usage where
they vary, `harness.model.workload.variety`), `spread` (a trace's rows recorded at one instant,
spread over the seconds after it),
`heartbeat` (phases), `placement/<replica>`, and per node host (keyed by its first node)
`faults/<first>` and `report-delivery/<first>`."""

from __future__ import annotations

import math
import random


def stream(seed: int, purpose: str) -> random.Random:
    return random.Random(f"{seed}:{purpose}")


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
