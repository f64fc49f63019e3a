"""The scenario schema: which sections a config has and which keys each takes.

The model's sections are the model's own dataclasses (`ClusterSpec`, `HeartbeatSpec`,
`PlacementSpec`, `WorkloadSpec`, `FaultSpec`): each key is declared once, there, with its
default, bounds and help (`harness.model.tunables.key`). Only what the model does not know (how a
run is driven, where Ray is) is declared here."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, get_type_hints

from harness.config.engine_kind import ENGINES
from harness.config.traces import TRACE_FORMATS
from harness.external.spec import ExternalSpec
from harness.model.cluster.faults import FaultSpec
from harness.model.cluster.heartbeat import HeartbeatSpec
from harness.model.cluster.pools import ClusterSpec
from harness.model.scheduling.scheduler import PlacementSpec
from harness.model.tunables import key
from harness.model.workload.workload_keys import WorkloadSpec
from harness.results.thresholds import Threshold


@dataclass(frozen=True)
class RunConfig:
    name: str = key(
        "run",
        "Names the folder under results/ (a file name: no /, at most 200 bytes); "
        "a config file defaults it to its own name.",
    )
    duration_s: float = key(25.0, "Arrivals, heartbeats and samples stop at this time.", gt=0)
    seeds: int = key(20, "How many seeds to run, from first_seed on.", ge=1)
    first_seed: int = key(0, "The first seed.", ge=0)
    engine: str = key(
        "virtual",
        "virtual: deterministic, in simulated time; ray: real time, on Ray actors.",
        choices=ENGINES,
    )
    time_scale: float = key(
        1.0,
        "Ray engine: wall seconds per model second (0.2 runs 5x faster, rates 5x higher).",
        gt=0,
    )
    sample_interval_s: float = key(1.0, "Timeline sampling period; 0 turns the timeline off.", ge=0)
    workers: int = key(
        0,
        "Seeds run at once by an engine that runs in this process (virtual), each a Ray task on "
        "a core of its own (a cluster's, with ray.address): 0 lets the harness choose (every "
        "core when the run is long enough to repay starting Ray, else 1); 1 runs them one after "
        "another in this process. The results are the same either way.",
        ge=0,
    )

    @property
    def seed_numbers(self) -> list[int]:
        """The seeds a run goes through: `seeds` of them, from `first_seed` on."""
        return list(range(self.first_seed, self.first_seed + self.seeds))


@dataclass(frozen=True)
class WorkloadConfig(WorkloadSpec):
    """The `[workload]` section: the model's keys (`WorkloadSpec`) and the trace's, which only
    the config layer reads (it reads and imports the file, `harness.config.trace_file`), so
    its format names the trace formats' registry by import."""

    trace: str = key(
        "",
        "trace: its source; for trace_format harness a CSV or Parquet file of creates, one "
        "per row; a relative path is read from the config file's folder.",
    )
    trace_format: str = key(
        "harness",
        "trace: the source's format: harness (the file is replayed as it is), or one that is "
        "imported into that format first and cached (alibaba-2018).",
        choices=TRACE_FORMATS,
    )
    trace_start_s: float = key(
        0.0,
        "trace, an imported format: the second of the source the run starts at; the run "
        "replays [trace_start_s, trace_start_s + run.duration_s).",
        ge=0,
    )
    trace_spread_s: float | None = key(
        None,
        "trace: the rows recorded at one instant are sent at uniform times over this many "
        'seconds after it; "none": what the trace records (an imported one its resolution, '
        "alibaba-2018 1 s), else 0.",
        ge=0,
    )


NODES_PER_GROUP = 5000
"""Nodes per node-group actor when `ray.node_groups` is 0."""


@dataclass(frozen=True)
class RayConfig:
    address: str = key(
        "", "Ray cluster to join (host:port); empty: RAY_ADDRESS, else an embedded local Ray."
    )
    node_groups: int = key(0, "Node-group actors hosting the nodes; 0: sized to the cluster.", ge=0)
    client_pools: int = key(0, "Client-pool actors running the clients; 0: one per CPU.", ge=0)

    def sizes(self, nodes: int, cpus: int) -> tuple[int, int]:
        """(node groups, client pools) a seed starts on a Ray cluster of `cpus` CPUs: as set,
        or when 0 a group per `NODES_PER_GROUP` nodes up to one per CPU, and a pool per CPU.
        The Ray engine sizes its actors here, and the budget counts them."""
        groups = self.node_groups or min(cpus, math.ceil(nodes / NODES_PER_GROUP))
        return min(groups, nodes), self.client_pools or cpus


@dataclass(frozen=True)
class Sections:
    """Every section of a config, as declared; `harness.config.config.Config` is the
    checked whole (built only by validation, which changes of it go through again)."""

    run: RunConfig = field(default_factory=RunConfig)
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    heartbeat: HeartbeatSpec = field(default_factory=HeartbeatSpec)
    placement: PlacementSpec = field(default_factory=PlacementSpec)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    external: ExternalSpec = field(default_factory=ExternalSpec)
    faults: tuple[FaultSpec, ...] = ()
    thresholds: tuple[Threshold, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        raw = asdict(self)
        # Each plugin's settings as its own table, [placement.<table>].
        raw["placement"].update(raw["placement"].pop("settings"))
        # As a config file has them: a list of tables, the kind's own keys beside the common.
        raw["faults"] = [
            {k: v for k, v in entry.items() if k != "settings"} | entry["settings"]
            for entry in raw["faults"]
        ]
        # And a table of conditions by selector: {"optimistic.cv_median": ["< 0.05"]}.
        raw["thresholds"] = {}
        for t in self.thresholds:
            raw["thresholds"].setdefault(t.selector, []).append(t.condition)
        return raw


SECTIONS: dict[str, type] = {
    k: v for k, v in get_type_hints(Sections).items() if k not in ("faults", "thresholds")
}
"""The sections of a config made of keys (`[[faults]]` is a list of `FaultSpec` entries,
`[thresholds]` a table of conditions, `harness.results.thresholds`)."""
