"""When clients send creates: arrival kinds, small classes registered by name (as locust's
wait-time callables are).

Open-loop kinds give the intended send times of creates (`times`) and how many to expect
(`expected`, for the budget); `trace` replays a file's times instead (`harness.config.trace_file`
reads it); the closed-loop kind gives the start time of each client. Everything is a pure function
of the spec and a seeded stream, so both engines send the same requests at the same intended times
for the same seed.

Rates that change over time (`steps`, `ramp`, `diurnal`) are Poisson processes of that rate:
the run is cut into pieces, each with its highest rate, and arrivals are drawn by thinning
(Lewis and Shedler, 1979): candidates at the piece's highest rate, each kept with probability
rate(t) / highest. A piece whose rate is constant keeps every candidate and draws nothing more,
so `poisson` is the one-piece case and `steps` never thins."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar

from harness.model.random_streams import expovariate

if TYPE_CHECKING:
    from harness.model.workload.templates import WorkloadSpec

Piece = tuple[float, float, float, Callable[[float], float] | None]
"""(start, end, the highest rate in it, rate(t); None when the rate is the highest throughout)."""


def _thinned(pieces: Iterable[Piece], rng: random.Random) -> Iterator[float]:
    """Arrival times of a Poisson process whose rate is given piece by piece. Starting each
    piece afresh at its start is exact: the gaps of a Poisson process are memoryless."""
    for start, end, top, rate in pieces:
        if top <= 0:
            continue
        t = start
        while (t := t + expovariate(rng, top)) < end:
            if rate is None or rng.random() * top < rate(t):
                yield t


def _trapezoids(pieces: Iterable[Piece]) -> float:
    """The expected number of arrivals over pieces whose rate is constant or linear."""
    total = 0.0
    for start, end, top, rate in pieces:
        if rate is None:
            total += top * (end - start)
        else:
            total += (rate(start) + rate(end)) / 2 * (end - start)
    return total


class OpenLoop:
    """What every open-loop kind shares: no clients, times drawn rather than replayed."""

    closed: ClassVar[bool] = False
    replay: ClassVar[bool] = False
    rate_key: ClassVar[str] = "workload.rate_per_s"
    """The key that sets how many creates are sent (the budget names it)."""


class Constant(OpenLoop):
    """One create every 1/rate seconds from t = 0 (the reference's ticker)."""

    name: ClassVar[str] = "constant"

    @staticmethod
    def times(spec: WorkloadSpec, duration: float, rng: random.Random) -> Iterator[float]:
        i, rate = 0, spec.rate_per_s  # the spec is interpreted: read once, not per create
        while (t := i / rate) < duration:
            yield t
            i += 1

    @staticmethod
    def expected(spec: WorkloadSpec, duration: float) -> float:
        return spec.rate_per_s * duration


class Poisson(OpenLoop):
    """Exponential gaps with mean 1/rate."""

    name: ClassVar[str] = "poisson"

    @staticmethod
    def times(spec: WorkloadSpec, duration: float, rng: random.Random) -> Iterator[float]:
        return _thinned([(0.0, duration, spec.rate_per_s, None)], rng)

    @staticmethod
    def expected(spec: WorkloadSpec, duration: float) -> float:
        return spec.rate_per_s * duration


class Burst(OpenLoop):
    """`burst` creates at once at `burst_at_s`."""

    name: ClassVar[str] = "burst"
    rate_key: ClassVar[str] = "workload.burst"

    @staticmethod
    def times(spec: WorkloadSpec, duration: float, rng: random.Random) -> Iterator[float]:
        if spec.burst_at_s < duration:
            yield from (spec.burst_at_s for _ in range(spec.burst))

    @staticmethod
    def expected(spec: WorkloadSpec, duration: float) -> float:
        return float(spec.burst) if spec.burst_at_s < duration else 0.0


def _points(spec: WorkloadSpec, duration: float) -> Iterator[tuple[float, float, float, float]]:
    """(t0, rate at t0, t1, rate at t1) for each span of the profile that starts before the
    end, t1 cut at the end; the last point's rate holds to the end."""
    times, rates = spec.profile_s, spec.profile_rates
    for i, (t0, r0) in enumerate(zip(times, rates, strict=True)):
        if t0 >= duration:
            return
        last = i + 1 == len(times)
        t1, r1 = (duration, r0) if last else (times[i + 1], rates[i + 1])
        yield t0, r0, t1, r1


class Profiled(OpenLoop):
    """Poisson arrivals whose rate follows the profile (`profile_s`, `profile_rates`), piece by
    piece: a subclass says how the rate runs within a piece (`pieces`)."""

    rate_key: ClassVar[str] = "workload.profile_rates"

    @staticmethod
    def pieces(spec: WorkloadSpec, duration: float) -> Iterator[Piece]:
        raise NotImplementedError

    @classmethod
    def times(cls, spec: WorkloadSpec, duration: float, rng: random.Random) -> Iterator[float]:
        return _thinned(cls.pieces(spec, duration), rng)

    @classmethod
    def expected(cls, spec: WorkloadSpec, duration: float) -> float:
        return _trapezoids(cls.pieces(spec, duration))


class Steps(Profiled):
    """Poisson arrivals at `profile_rates[i]` per second from `profile_s[i]` until the next
    point; the last rate holds to the end."""

    name: ClassVar[str] = "steps"

    @staticmethod
    def pieces(spec: WorkloadSpec, duration: float) -> Iterator[Piece]:
        for t0, r0, t1, _ in _points(spec, duration):
            yield t0, min(t1, duration), r0, None


def _line(t0: float, r0: float, t1: float, r1: float) -> Callable[[float], float]:
    """The rate at t on the straight line from (t0, r0) to (t1, r1)."""
    slope = (r1 - r0) / (t1 - t0)
    return lambda t: r0 + slope * (t - t0)


class Ramp(Profiled):
    """Poisson arrivals whose rate runs in a straight line from each point of the profile
    (`profile_s`, `profile_rates`) to the next; the last rate holds to the end."""

    name: ClassVar[str] = "ramp"

    @staticmethod
    def pieces(spec: WorkloadSpec, duration: float) -> Iterator[Piece]:
        for t0, r0, t1, r1 in _points(spec, duration):
            rate = None if r0 == r1 else _line(t0, r0, t1, r1)
            end = min(t1, duration)
            yield t0, end, max(r0, r1 if rate is None else rate(end)), rate


class Diurnal(OpenLoop):
    """Poisson arrivals at rate_per_s x (1 + amplitude x cos(2 pi (t - peak) / period)): a
    mean of `rate_per_s` over whole periods, the highest rate at `diurnal_peak_s` and every
    period after, the lowest half a period away."""

    name: ClassVar[str] = "diurnal"

    @staticmethod
    def rate(spec: WorkloadSpec) -> Callable[[float], float]:
        mean, swing = spec.rate_per_s, spec.diurnal_amplitude
        omega, peak = 2 * math.pi / spec.diurnal_period_s, spec.diurnal_peak_s
        return lambda t: mean * (1.0 + swing * math.cos(omega * (t - peak)))

    @classmethod
    def times(cls, spec: WorkloadSpec, duration: float, rng: random.Random) -> Iterator[float]:
        top = spec.rate_per_s * (1.0 + spec.diurnal_amplitude)
        rate = cls.rate(spec) if spec.diurnal_amplitude else None
        return _thinned([(0.0, duration, top, rate)], rng)

    @staticmethod
    def expected(spec: WorkloadSpec, duration: float) -> float:
        """The integral of the rate over [0, duration]."""
        omega, peak = 2 * math.pi / spec.diurnal_period_s, spec.diurnal_peak_s
        swing = math.sin(omega * (duration - peak)) + math.sin(omega * peak)
        return spec.rate_per_s * (duration + spec.diurnal_amplitude * swing / omega)


class Trace(OpenLoop):
    """One create per row of the file `trace`, at the row's time (`harness.config.trace_file` reads
    it and hands the client side plain rows)."""

    name: ClassVar[str] = "trace"
    replay: ClassVar[bool] = True
    rate_key: ClassVar[str] = "workload.trace"


class Closed:
    """`clients` clients, each: create, hold for its lifetime, kill, think, create again."""

    name: ClassVar[str] = "closed"
    closed: ClassVar[bool] = True
    replay: ClassVar[bool] = False

    @staticmethod
    def starts(spec: WorkloadSpec, rng: random.Random) -> list[float]:
        """Start times of the clients, spread uniformly over the ramp, in order."""
        ramp = spec.ramp_s
        return sorted(rng.uniform(0.0, ramp) if ramp else 0.0 for _ in range(spec.clients))


ARRIVALS = {
    cls.name: cls for cls in (Constant, Poisson, Burst, Steps, Ramp, Diurnal, Trace, Closed)
}
"""Arrival kinds by name."""
