"""Random streams: one independent, seeded stream per purpose.

Changing one part of a scenario (say the strategy, or the lifetimes) leaves every other draw as
it was, so strategies compare on the same requests and both engines draw the same numbers.
Purposes: `cluster` (initial loads), `workload` (arrivals, client starts), `lifetime` (open-loop
lifetimes, in arrival order) and `lifetime/<client>` (a closed-loop client's), `template` and
`template/<client>` (the same for the pick of a template, drawn only when there are several),
`heartbeat` (phases), `placement/<replica>`, and per node host (keyed by its first node)
`faults/<first>` and `report-delivery/<first>`.
"""

from __future__ import annotations

import random
import sys
from array import array
from typing import Final

_TWO_TO_MINUS_53: Final = 1.0 / 9007199254740992.0


def stream(seed: int, purpose: str) -> random.Random:
    return random.Random(f"{seed}:{purpose}")


def _words(rng: random.Random, count: int) -> list[int]:
    """The next `count` 32-bit outputs of `rng`'s generator, in order: one `getrandbits` call
    fills its bits word by word, least significant first."""
    data = array("I", rng.getrandbits(32 * count).to_bytes(4 * count, "little"))
    if sys.byteorder == "big":
        data.byteswap()
    return data.tolist()


def randints(rng: random.Random, lo: int, hi: int, n: int) -> list[int]:
    """`[rng.randint(lo, hi) for _ in range(n)]`, the same numbers and `rng` left where those
    calls leave it, drawn in a few calls rather than a million. `randint` takes the top
    `width.bit_length()` bits of one word and draws again while they are not below the width."""
    width = hi - lo + 1
    if n <= 0 or width <= 0 or width >= 1 << 32:  # one word per draw, or the loop
        return [rng.randint(lo, hi) for _ in range(n)]
    shift = 32 - width.bit_length()
    start = rng.getstate()
    out: list[int] = []
    used = 0
    while len(out) < n:
        for w in _words(rng, n - len(out) + 64):
            used += 1
            r = w >> shift
            if r < width:
                out.append(lo + r)
                if len(out) == n:
                    break
    rng.setstate(start)
    _words(rng, used)
    return out


def uniforms(rng: random.Random, a: float, b: float, n: int) -> list[float]:
    """`[rng.uniform(a, b) for _ in range(n)]`, the same numbers and `rng` left where those
    calls leave it: `random()` makes a 53-bit fraction of two words, `uniform` scales it."""
    if n <= 0:
        return []
    words = _words(rng, 2 * n)
    span = b - a
    out = [0.0] * n
    for i in range(n):
        fraction = ((words[2 * i] >> 5) * 67108864.0 + (words[2 * i + 1] >> 6)) * _TWO_TO_MINUS_53
        out[i] = a + span * fraction
    return out
