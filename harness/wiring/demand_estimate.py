"""What a config asks of an engine, estimated from its keys before anything runs: how many
creates and kills one seed sends and how many sandboxes are alive at its peak.

The cost estimate (`harness.running.cost_check`) multiplies these by costs per unit; the wiring
(`harness.wiring.scenario`) weighs them against the cluster's reports to choose how nodes report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.config import Config, trace_file
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.distributions import LIFETIMES
from harness.model.workload.workload_keys import SandboxSpec, WorkloadSpec


@dataclass(frozen=True)
class Demand:
    creates: float
    kills: float
    alive: float
    """Sandboxes alive at once, at the peak."""
    cycle: float
    """A closed-loop client's cycle (lifetime, think time and the RPCs' round trips), seconds;
    NaN for other arrivals."""
    wanted: float
    """Sandboxes the workload would keep alive at once at its peak, were there room for all
    (`alive` is this, or the room, whichever is less)."""
    room: float
    """Sandboxes the cluster holds: its vCPUs, over-committed `placement.r` times, over the
    mean vCPUs a sandbox asks for."""


def _mix(w: WorkloadSpec) -> list[tuple[float, SandboxSpec]]:
    """(share of creates, kind of sandbox) for each template, or the one."""
    total = sum(t.weight for t in w.templates)
    return [(t.weight / total, t) for t in w.templates] or [(1.0, w)]


def _killed_share(sandbox: SandboxSpec, w: WorkloadSpec, duration: float) -> float:
    """The share of creates of `sandbox` whose kill falls within the run (lifetimes ending
    before it); lifetimes that vary (`Distribution.varies`) are taken as exponential of
    the same mean."""
    if sandbox.lifetime_s is None:
        return 0.0
    life = sandbox.lifetime_s
    exact = not LIFETIMES[sandbox.lifetime_dist].varies
    arrival = ARRIVALS[w.arrival]
    if arrival.at_once:
        window = duration - arrival.start(w)
        if exact:
            return 1.0 if life < window else 0.0
        return 1.0 - math.exp(-window / life)
    if exact:  # arrivals spread over the run: those before D - life
        return max(0.0, 1.0 - life / duration)
    return 1.0 - life / duration * (1.0 - math.exp(-duration / life))


def demand(config: Config) -> Demand:
    """One seed's creates, kills and peak of live sandboxes; a trace's rows are counted."""
    w, c, run = config.workload, config.cluster, config.run
    mix = _mix(w)
    vcpu = sum(share * s.vcpu for share, s in mix)
    lifetime = sum(share * (s.lifetime_s or math.inf) for share, s in mix)
    cpus = sum(p.count * p.cpu_count for p in c.node_pools())
    slots = config.placement.r * cpus / vcpu
    duration = run.duration_s
    arrival = ARRIVALS[w.arrival]
    if arrival.closed:
        started = w.clients * (min(1.0, duration / w.ramp_s) if w.ramp_s else 1.0)
        rtt = (c.create_latency_ms + c.kill_latency_ms) / 1000.0
        cycle = lifetime + w.think_s + rtt  # validation: closed clients have lifetimes
        creates = started * (1.0 + duration / cycle)
        return Demand(creates, creates - started, min(started, slots), cycle, started, slots)
    creates = float(trace_file.check(config)) if arrival.replay else arrival.expected(w, duration)
    wanted = creates if arrival.at_once else min(creates, creates / duration * lifetime)
    kills = creates * sum(share * _killed_share(s, w, duration) for share, s in mix)
    return Demand(creates, kills, min(wanted, slots), math.nan, wanted, slots)
