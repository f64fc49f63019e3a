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

from harness.model.workload.lifetimes import lifetime
from harness.model.workload.request import Shape
from harness.model.workload.workload_keys import SandboxSpec, WorkloadSpec


@dataclass(frozen=True, slots=True)
class Template:
    """One kind of sandbox, built: its shape and a draw of its lifetime."""

    shape: Shape
    life: Callable[[random.Random], float | None]
    """`draw(rng)` of its lifetime distribution: seconds, or None for never killed."""


def _built(spec: SandboxSpec) -> Template:
    shape = Shape(
        spec.vcpu,
        spec.memory_mib,
        spec.usage,
        spec.template,
        frozenset(spec.labels),
        spec.cpu_family,
    )
    return Template(shape, lifetime(spec).draw)


TraceRow = tuple[float, str | None, float | None, float | None, float | None]
"""(time, template ID, vCPUs, memory MiB, lifetime) of one create to replay; None: not given."""
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
        self._cumulative = list(accumulate(s.weight for s in spec.templates))

    def pick(self, rng: random.Random | None) -> Template:
        """The template of the next create: with several, one draw of `rng`, template i with
        probability weight_i / the sum of the weights; with one, no draw."""
        if not self.several:
            return self.all[0]
        cumulative = self._cumulative
        return self.all[bisect(cumulative, rng.random() * cumulative[-1], 0, len(cumulative) - 1)]

    def draw(
        self, times: Iterable[float], picks: random.Random, lifetimes: random.Random
    ) -> Iterator[Create]:
        """A template and a lifetime for each time, in order, each from its own stream. With
        one template, iterators only (no Python frame per create: the default path)."""
        if not self.several:
            only = self.all[0]
            return zip(times, repeat(only.shape), map(only.life, repeat(lifetimes)), strict=False)
        return self._drawn(times, picks, lifetimes)

    def _drawn(
        self, times: Iterable[float], picks: random.Random, lifetimes: random.Random
    ) -> Iterator[Create]:
        for t in times:
            template = self.pick(picks)
            yield t, template.shape, template.life(lifetimes)

    def replay(
        self, rows: Iterable[TraceRow], duration: float, lifetimes: random.Random
    ) -> Iterator[Create]:
        """The creates of trace rows issued before `duration` (rows come in time order). A row
        takes its template's shape (the [workload] keys' when it names none) with the row's
        vCPUs and memory where given (one shape per distinct combination); its lifetime, or
        when not given a draw of its template's (in row order); an infinite one is never
        killed."""
        shapes: dict[tuple, Shape] = {}
        for t, template_id, vcpu, memory, life in rows:
            if t >= duration:
                return
            template = self.by_id[template_id] if template_id else self.default
            shape = template.shape
            if vcpu is not None or memory is not None:
                sized = (template_id, vcpu, memory)
                if sized not in shapes:
                    shapes[sized] = replace(
                        shape,
                        vcpu=shape.vcpu if vcpu is None else vcpu,
                        memory_mib=shape.memory_mib if memory is None else memory,
                    )
                shape = shapes[sized]
            yield t, shape, template.life(lifetimes) if life is None else life
