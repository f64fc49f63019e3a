"""The workload's keys: one kind of sandbox (`SandboxSpec`), a template (`TemplateSpec`) and the
`[workload]` section (`WorkloadSpec`).

The keys an arrival kind reads are its own (`harness.model.workload.arrivals.arrival_keys`),
so the kinds import nothing of this module and `arrival` names their registry by import, as
the lifetime and draw keys name theirs. The trace's keys (its file, format and window) are the
config layer's (`harness.config.sections.WorkloadConfig`): it reads the file.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.model.tunables import key
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.arrivals.arrival_keys import ArrivalKeys
from harness.model.workload.distributions import DRAWS, LIFETIMES


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
        choices=DRAWS,
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
        "fixed",
        "Memory per create: fixed (memory_mib), or drawn around it.",
        choices=DRAWS,
    )
    memory_spread: float = key(0.0, "Spread of the memory draw (as vcpu_spread).", ge=0, le=10)
    memory_clip: list[float] = key([], "[lo, hi] drawn memory is clipped to; empty: none.")
    memory_integer: bool = key(False, "Drawn memory is truncated: max(int(x), 1).")
    usage_draw: str = key(
        "fixed",
        "Usage ratio per create: fixed (usage), or drawn around it.",
        choices=DRAWS,
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
        choices=DRAWS,
    )
    lifetime_spread: float = key(0.0, "Spread of the lifetime draw (as vcpu_spread).", ge=0, le=10)
    lifetime_clip: list[float] = key([], "[lo, hi] a drawn lifetime is clipped to; empty: none.")


@dataclass(frozen=True)
class TemplateSpec(SandboxSpec):
    """One `[[workload.templates]]` entry."""

    weight: float = key(1.0, "Share of creates, relative to the other templates' weights.", gt=0)


@dataclass(frozen=True)
class WorkloadSpec(ArrivalKeys, SandboxSpec):
    """The `[workload]` section: a sandbox's keys, the arrival kinds' keys, and which kind."""

    arrival: str = key(
        "constant",
        "constant, poisson, burst, steps, ramp, diurnal, trace (open loop) or closed (clients).",
        choices=ARRIVALS,
    )
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
