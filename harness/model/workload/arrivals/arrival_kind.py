"""What an arrival kind is (`ArrivalKind`), and the Poisson machinery the open-loop kinds share.

Open-loop kinds give the intended send times of creates (`times`) and how many to expect
(`expected`, for the budget); a replaying kind (`trace`) reads a file's times instead
(`harness.config.trace_file` reads it); a closed-loop kind gives the start time of each client
(`starts`). Everything is a pure function of the spec and a seeded stream, so both engines send
the same requests at the same intended times for the same seed.

Rates that change over time are Poisson processes of that rate: the run is cut into pieces,
each with its highest rate, and arrivals are drawn by thinning (Lewis and Shedler, 1979):
candidates at the piece's highest rate, each kept with probability rate(t) / highest. A piece
whose rate is constant keeps every candidate and draws nothing more, so `poisson` is the
one-piece case and `steps` never thins.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar

from mypy_extensions import mypyc_attr

from harness.model.random_streams import expovariate

if TYPE_CHECKING:
    from harness.model.workload.arrivals.arrival_keys import ArrivalKeys

Piece = tuple[float, float, float, Callable[[float], float] | None]
"""(start, end, the highest rate in it, rate(t); None when the rate is the highest throughout)."""


def thinned(pieces: Iterable[Piece], rng: random.Random) -> Iterator[float]:
    """Arrival times of a Poisson process whose rate is given piece by piece. Starting each
    piece afresh at its start is exact: the gaps of a Poisson process are memoryless."""
    for start, end, top, rate in pieces:
        if top <= 0:
            continue
        t = start
        while (t := t + expovariate(rng, top)) < end:
            if rate is None or rng.random() * top < rate(t):
                yield t


def trapezoids(pieces: Iterable[Piece]) -> float:
    """The expected number of arrivals over pieces whose rate is constant or linear."""
    total = 0.0
    for start, end, top, rate in pieces:
        if rate is None:
            total += top * (end - start)
        else:
            total += (rate(start) + rate(end)) / 2 * (end - start)
    return total


@mypyc_attr(allow_interpreted_subclasses=True)
class ArrivalKind:
    """When clients send creates (`workload.arrival`): a class per kind, registered by name
    (`harness.model.workload.arrivals.ARRIVALS`), asked through its class attributes and
    static methods (a kind keeps no state)."""

    name: ClassVar[str] = ""
    closed: ClassVar[bool] = False
    """Whether clients cycle (create, hold for the lifetime, kill, think, create again) rather
    than send at times given in advance: `starts` instead of `times`; a sandbox must then have
    a lifetime."""
    replay: ClassVar[bool] = False
    """Whether the times come from the file `workload.trace`, not from `times`."""
    at_once: ClassVar[bool] = False
    """Whether every create is sent at one instant (`start`): nothing spreads them over the
    run, so an estimate of the sandboxes alive at once is not bounded by rate x lifetime."""
    rate_key: ClassVar[str] = "workload.rate_per_s"
    """The key that sets how many creates are sent (the budget names it)."""

    @classmethod
    def times(cls, spec: ArrivalKeys, duration: float, rng: random.Random) -> Iterator[float]:
        """Intended send times of the creates before `duration`, in order (open loop)."""
        raise NotImplementedError

    @classmethod
    def expected(cls, spec: ArrivalKeys, duration: float) -> float:
        """How many creates `times` sends before `duration`, on average (open loop)."""
        raise NotImplementedError

    @classmethod
    def starts(cls, spec: ArrivalKeys, rng: random.Random) -> list[float]:
        """Start times of the clients, in order (closed loop)."""
        raise NotImplementedError

    @classmethod
    def start(cls, spec: ArrivalKeys) -> float:
        """When the first create can be sent."""
        return 0.0

    @classmethod
    def check(cls, spec: ArrivalKeys, duration: float) -> None:
        """Refuse (`harness.model.tunables.ConfigError`, naming the key) a spec of this kind
        that cannot work in a run of `duration`; the config layer calls it when it loads."""
