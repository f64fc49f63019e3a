"""What clients ask for: the workload's keys, its sandbox templates, and which template and
lifetime each create gets.

A workload creates one kind of sandbox (the [workload] keys: size, usage, lifetime, labels) or
several, `[[workload.templates]]`, each with a weight. Each template becomes one `Shape`, built
once and shared by every create of it, and one lifetime distribution. Which template a create
gets is drawn from a stream of its own, and only when there are several, so a workload of one
template draws exactly what it always did."""

from __future__ import annotations

import random
from bisect import bisect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import accumulate, repeat

from harness.model.tunables import key
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.lifetimes import LIFETIMES, lifetime
from harness.model.workload.request import Shape
from harness.model.workload.variety import KINDS, Varied, VarietyStreams, varied


@dataclass(frozen=True)
class SandboxSpec:
    """One kind of sandbox: what it asks of a node and how long it lives."""

    template: str = key("", "Template ID (cache affinity, trace rows); empty: none.")
    vcpu: float = key(1.0, "vCPUs per sandbox.", gt=0)
    memory_mib: float = key(1024.0, "Memory per sandbox (MiB).", ge=0)
    usage: float = key(1.0, "Fraction of its vCPUs a sandbox keeps busy.", ge=0, le=1)
    labels: list[str] = key([], "Labels a node must carry to take the sandbox.")
    cpu_family: str = key("", "CPU family a node must have; empty: any.")
    lifetime_s: float | None = key(
        60.0, 'Mean sandbox lifetime before its kill; "none": never killed.', gt=0
    )
    lifetime_dist: str = key(
        "fixed",
        "fixed, exponential, lognormal or pareto, each with mean lifetime_s.",
        choices=LIFETIMES,
    )
    lifetime_sigma: float = key(
        1.0, "lognormal: standard deviation of the log of the lifetime.", gt=0
    )
    lifetime_alpha: float = key(
        2.0, "pareto: tail index (> 1; the smaller, the heavier the tail).", gt=1
    )
    vcpu_draw: str = key(
        "fixed",
        "vCPUs per create: fixed (vcpu), or drawn around vcpu: uniform, normal, lognormal.",
        choices=KINDS,
    )
    vcpu_spread: float = key(
        0.0,
        "uniform: vcpu x (1 + U(-s, s)); normal: standard deviation s x vcpu; lognormal: "
        "standard deviation of the log (at most 10: a draw stays finite).",
        ge=0,
        le=10,
    )
    vcpu_clip: list[float] = key([], "[lo, hi] a drawn vCPU count is clipped to; empty: none.")
    vcpu_integer: bool = key(False, "A drawn vCPU count is truncated: max(int(x), 1).")
    memory_draw: str = key(
        "fixed", "Memory per create: fixed (memory_mib), or drawn around it.", choices=KINDS
    )
    memory_spread: float = key(0.0, "Spread of the memory draw (as vcpu_spread).", ge=0, le=10)
    memory_clip: list[float] = key([], "[lo, hi] drawn memory is clipped to; empty: none.")
    memory_integer: bool = key(False, "Drawn memory is truncated: max(int(x), 1).")
    usage_draw: str = key(
        "fixed", "Usage ratio per create: fixed (usage), or drawn around it.", choices=KINDS
    )
    usage_spread: float = key(0.0, "Spread of the usage draw (as vcpu_spread).", ge=0, le=10)
    usage_clip: list[float] = key(
        [], "[lo, hi] a drawn usage ratio is clipped to, within [0, 1]; empty: none."
    )
    lifetime_draw: str = key(
        "fixed",
        "Lifetime per create: fixed (lifetime_dist decides), or drawn around lifetime_s "
        "(then lifetime_dist stays fixed); a non-positive one is killed at once, or at the "
        "next cleanup tick.",
        choices=KINDS,
    )
    lifetime_spread: float = key(0.0, "Spread of the lifetime draw (as vcpu_spread).", ge=0, le=10)
    lifetime_clip: list[float] = key([], "[lo, hi] a drawn lifetime is clipped to; empty: none.")


@dataclass(frozen=True)
class TemplateSpec(SandboxSpec):
    """One `[[workload.templates]]` entry."""

    weight: float = key(1.0, "Share of creates, relative to the other templates' weights.", gt=0)


@dataclass(frozen=True)
class WorkloadSpec(SandboxSpec):
    arrival: str = key(
        "constant",
        "constant, poisson, burst, steps, ramp, diurnal, trace (open loop) or closed (clients).",
        choices=ARRIVALS,
    )
    rate_per_s: float = key(20.0, "Creates per second (constant, poisson; diurnal: mean).", gt=0)
    burst: int = key(500, "Creates issued at once (burst).", ge=1)
    burst_at_s: float = key(0.0, "When the burst is issued.", ge=0)
    profile_s: list[float] = key(
        [], "steps, ramp: times of the rate profile's points, from 0, increasing.", ge=0
    )
    profile_rates: list[float] = key(
        [],
        "steps, ramp: creates per second at those points, held to the next (steps) or "
        "straight to it (ramp); the last holds to the end.",
        ge=0,
    )
    diurnal_amplitude: float = key(
        0.5, "diurnal: the rate swings this fraction of rate_per_s above and below it.", ge=0, le=1
    )
    diurnal_period_s: float = key(86400.0, "diurnal: length of one cycle.", gt=0)
    diurnal_peak_s: float = key(0.0, "diurnal: a time at which the rate is highest.", ge=0)
    trace: str = key(
        "",
        "trace: CSV or Parquet file of creates, one per row; a relative path is read from "
        "the config file's folder.",
    )
    clients: int = key(100, "Concurrent closed-loop clients (closed).", ge=1)
    ramp_s: float = key(0.0, "Closed-loop clients start uniformly over this window.", ge=0)
    think_s: float = key(0.0, "Pause of a closed-loop client between kill and next create.", ge=0)
    failure_backoff_s: float = key(
        1.0, "Pause of a closed-loop client after a failed create.", gt=0
    )
    cleanup_tick_s: float = key(
        0.0,
        "Kills happen at the first multiple of this after they are due, as upstream's "
        "cleanup loop (every 0.1 s) removes expired sandboxes; 0: when due.",
        ge=0,
    )
    templates: tuple[TemplateSpec, ...] = key(
        (),
        "Sandbox templates, picked by weight per create; none: the sandbox keys (template to "
        "lifetime_alpha) are the one.",
    )

    @property
    def sandboxes(self) -> tuple[SandboxSpec, ...]:
        """The kinds of sandbox the workload creates: its templates, or itself."""
        return self.templates or (self,)

    def template_ids(self) -> frozenset[str]:
        """The template IDs a trace row may name."""
        return frozenset(s.template for s in self.sandboxes if s.template)


@dataclass(frozen=True, slots=True)
class Template:
    """One kind of sandbox, built: its shape and a draw of its lifetime."""

    shape: Shape
    life: Callable[[random.Random], float | None]
    """`draw(rng)` of its lifetime distribution: seconds, or None for never killed."""
    sizes: tuple[Varied | None, Varied | None, Varied | None] | None = None
    """Per-create draws of vCPUs, memory and usage (None: that one is fixed); None: all fixed,
    every create shares `shape`."""

    def shape_for(self, streams: VarietyStreams) -> Shape:
        """The shape of one create: `shape`, or with its varied sizes drawn, each from its
        own stream."""
        sizes = self.sizes
        if sizes is None:
            return self.shape
        vcpu, memory, usage = sizes
        shape = self.shape
        return Shape(
            shape.vcpu if vcpu is None else vcpu.draw(streams.of("vcpu")),
            shape.memory_mib if memory is None else memory.draw(streams.of("memory")),
            shape.usage if usage is None else usage.draw(streams.of("usage")),
            shape.template,
            shape.labels,
            shape.cpu_family,
        )


def _built(spec: SandboxSpec) -> Template:
    shape = Shape(
        spec.vcpu,
        spec.memory_mib,
        spec.usage,
        spec.template,
        frozenset(spec.labels),
        spec.cpu_family,
    )
    sizes = (varied(spec, "vcpu"), varied(spec, "memory"), varied(spec, "usage"))
    life = varied(spec, "lifetime")
    return Template(
        shape,
        lifetime(spec).draw if life is None else life.draw,
        None if sizes == (None, None, None) else sizes,
    )


TraceRow = tuple[float, str | None, float | None, float | None, float | None, float | None]
"""(time, template ID, vCPUs, memory MiB, lifetime, usage) of one create to replay; None: not
given."""
Create = tuple[float, Shape, float | None]
"""(intended time, shape, lifetime) of one open-loop create."""


class Templates:
    """A workload's templates, each built once, and the pick of one per create."""

    def __init__(self, spec: WorkloadSpec) -> None:
        self.default = _built(spec)
        """The [workload] keys' own template: the only one without [[workload.templates]],
        and the base of a trace row that names none."""
        self.all = [_built(s) for s in spec.templates] or [self.default]
        self.by_id = {s.template: t for s, t in zip(spec.sandboxes, self.all, strict=True)}
        self.several = len(self.all) > 1
        self.varies = any(t.sizes is not None for t in self.all)
        """Whether any template draws its sizes per create."""
        self._cumulative = list(accumulate(s.weight for s in spec.templates))

    def pick(self, rng: random.Random | None) -> Template:
        """The template of the next create: with several, one draw of `rng`, template i with
        probability weight_i / the sum of the weights; with one, no draw."""
        if not self.several:
            return self.all[0]
        cumulative = self._cumulative
        return self.all[bisect(cumulative, rng.random() * cumulative[-1], 0, len(cumulative) - 1)]

    def draw(
        self,
        times: Iterable[float],
        picks: random.Random,
        lifetimes: random.Random,
        sizes: VarietyStreams,
    ) -> Iterator[Create]:
        """A template, a lifetime and (where they vary) sizes for each time, in order, each from
        its own stream. With one template of fixed sizes, iterators only (no Python frame per
        create: the default path)."""
        if not self.several and not self.varies:
            only = self.all[0]
            return zip(times, repeat(only.shape), map(only.life, repeat(lifetimes)), strict=False)
        return self._drawn(times, picks, lifetimes, sizes)

    def _drawn(
        self,
        times: Iterable[float],
        picks: random.Random,
        lifetimes: random.Random,
        sizes: VarietyStreams,
    ) -> Iterator[Create]:
        for t in times:
            template = self.pick(picks)
            yield t, template.shape_for(sizes), template.life(lifetimes)

    def replay(
        self,
        rows: Iterable[TraceRow],
        duration: float,
        lifetimes: random.Random,
        sizes: VarietyStreams,
    ) -> Iterator[Create]:
        """The creates of trace rows issued before `duration` (rows come in time order). A row
        takes its template's shape (the [workload] keys' when it names none; its sizes drawn
        where they vary) with the row's vCPUs, memory and usage where given (one shape per
        distinct combination of a fixed template); its lifetime, or when not given a draw of
        its template's (in row order); an infinite one is never killed."""
        shapes: dict[tuple, Shape] = {}
        for t, template_id, vcpu, memory, life, usage in rows:
            if t >= duration:
                return
            template = self.by_id[template_id] if template_id else self.default
            shape = template.shape_for(sizes)
            if vcpu is not None or memory is not None or usage is not None:
                sized = (template_id, vcpu, memory, usage)
                if template.sizes is not None or sized not in shapes:
                    shapes[sized] = replace(
                        shape,
                        vcpu=shape.vcpu if vcpu is None else vcpu,
                        memory_mib=shape.memory_mib if memory is None else memory,
                        usage=shape.usage if usage is None else usage,
                    )
                shape = shapes[sized]
            yield t, shape, template.life(lifetimes) if life is None else life
