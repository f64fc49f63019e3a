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


def stream(seed: int, purpose: str) -> random.Random:
    return random.Random(f"{seed}:{purpose}")
