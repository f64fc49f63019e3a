"""The workload's keys: one kind of sandbox (`SandboxSpec`), a template (`TemplateSpec`) and the
`[workload]` section (`WorkloadSpec`).

Apart from the arrival kinds and lifetime distributions that read them, which they name only
("module:attribute" choices, read when a value is checked), so neither imports the other's
package.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.model.tunables import key


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
        choices="harness.model.workload.lifetimes:LIFETIMES",
    )
    lifetime_sigma: float = key(
        1.0, "lognormal: standard deviation of the log of the lifetime.", gt=0
    )
    lifetime_alpha: float = key(
        2.0, "pareto: tail index (> 1; the smaller, the heavier the tail).", gt=1
    )


@dataclass(frozen=True)
class TemplateSpec(SandboxSpec):
    """One `[[workload.templates]]` entry."""

    weight: float = key(1.0, "Share of creates, relative to the other templates' weights.", gt=0)


@dataclass(frozen=True)
class WorkloadSpec(SandboxSpec):
    arrival: str = key(
        "constant",
        "constant, poisson, burst, steps, ramp, diurnal, trace (open loop) or closed (clients).",
        choices="harness.model.workload.arrivals:ARRIVALS",
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
