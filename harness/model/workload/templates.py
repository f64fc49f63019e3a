"""What clients ask for: the workload's sandbox templates, built, and which template and lifetime
each create gets (the keys are `harness.model.workload.workload_keys`).

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

from harness.model.random_streams import VarietyStreams
from harness.model.workload.distributions import LIFETIMES
from harness.model.workload.distributions.distribution import Distribution
from harness.model.workload.request import Shape
from harness.model.workload.variety import Varied, varied
from harness.model.workload.workload_keys import SandboxSpec, WorkloadSpec


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


class Never:
    """`lifetime_s = "none"`: the sandbox is never killed; nothing is drawn. Not a registered
    distribution: no `lifetime_dist` names it."""

    def draw(self, rng: random.Random) -> None:
        return None


def lifetime(spec: SandboxSpec) -> Distribution | Never:
    """The lifetime distribution `spec` asks for, built: `lifetime_dist` with mean
    `lifetime_s` and, for one with a shape, the key it names (`Distribution.shape_key`)."""
    if spec.lifetime_s is None:
        return Never()
    cls = LIFETIMES.resolve(spec.lifetime_dist)
    return cls(spec.lifetime_s, getattr(spec, cls.shape_key) if cls.shape_key else 0.0)


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


TraceRow = tuple[
    float, str | None, float | None, float | None, float | None, float | None, str | None
]
"""(time, template ID, vCPUs, memory MiB, lifetime, usage, tag) of one create to replay; None:
not given."""
Create = tuple[float, Shape, float | None, str | None]
"""(intended time, shape, lifetime, tag) of one open-loop create; the tag (a trace row's, say
its job and task) is carried to the create's request row, None when it has none."""


SHAPES_KEPT = 4096
"""Distinct row sizes whose shape a replay keeps to share: a trace of a few sizes shares
them all, and one whose every row has sizes of its own (a real trace's usage) does not keep
a shape per row for the whole run."""


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
        if not self.several or rng is None:
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
            lives = map(only.life, repeat(lifetimes))
            return zip(times, repeat(only.shape), lives, repeat(None), strict=False)
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
            yield t, template.shape_for(sizes), template.life(lifetimes), None

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
        distinct combination of a fixed template, up to `SHAPES_KEPT` of them at a time); its
        lifetime, or when not given a draw of its template's (in row order); an infinite one
        is never killed."""
        shapes: dict[tuple, Shape] = {}
        for t, template_id, vcpu, memory, life, usage, tag in rows:
            if t >= duration:
                return
            template = self.by_id[template_id] if template_id else self.default
            shape = template.shape_for(sizes)
            if vcpu is not None or memory is not None or usage is not None:
                sized = (template_id, vcpu, memory, usage)
                if template.sizes is not None or sized not in shapes:
                    if len(shapes) >= SHAPES_KEPT:
                        shapes.clear()
                    shapes[sized] = replace(
                        shape,
                        vcpu=shape.vcpu if vcpu is None else vcpu,
                        memory_mib=shape.memory_mib if memory is None else memory,
                        usage=shape.usage if usage is None else usage,
                    )
                shape = shapes[sized]
            yield t, shape, template.life(lifetimes) if life is None else life, tag


def spread(rows: Iterable[TraceRow], seconds: float, rng: random.Random) -> Iterator[TraceRow]:
    """Trace rows with the rows recorded at one instant spread over the `seconds` after it: a
    trace recorded to the second gives a second's creates one time, and a whole second's
    creates at one instant is a burst the system never saw. The n rows of an instant t get
    the n draws t + seconds x U(0, 1) of `rng`, sorted, in row order: the times of n uniform
    arrivals, and the rows' order (and so each create's number, its `sandbox_id`) as in the
    file. Rows stay in time order while no instant falls within `seconds` of the one before
    (`harness.config.trace_file` refuses a spread wider than that); `seconds` <= 0 changes
    nothing."""
    if seconds <= 0:
        yield from rows
        return
    draw = rng.random
    group: list[TraceRow] = []
    for row in rows:
        if group and row[0] != group[0][0]:
            yield from _spread_group(group, seconds, draw)
            group = []
        group.append(row)
    yield from _spread_group(group, seconds, draw)


def _spread_group(
    group: list[TraceRow], seconds: float, draw: Callable[[], float]
) -> Iterator[TraceRow]:
    if not group:
        return
    t = group[0][0]
    offsets = sorted(draw() for _ in group)
    for row, offset in zip(group, offsets, strict=True):
        _, template, vcpu, memory, life, usage, tag = row
        yield t + seconds * offset, template, vcpu, memory, life, usage, tag
