"""What the results layer reads of the objects the config layer above builds (a config, a
sweep and its cells, a search), as `Protocol`s: the results layer names no type of that layer,
not even for type checking, so the layers contract (which counts type-only imports) holds. The
config layer's `Config`, `Sweep`, `Cell` and `Search` satisfy them
(`tests/results/test_config_view.py`); the model's own sections are named as they are."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness.model.cluster.heartbeat import HeartbeatSpec
    from harness.model.cluster.pools import ClusterSpec
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.results.thresholds import Threshold


class RunKeys(Protocol):
    """The `[run]` keys a result reads."""

    @property
    def duration_s(self) -> float: ...
    @property
    def time_scale(self) -> float: ...


class WorkloadKeys(Protocol):
    """The `[workload]` keys a result reads: its arrival kind (a burst has no gap between
    creates, `harness.results.time_keeping`)."""

    @property
    def arrival(self) -> str: ...


class ExternalKeys(Protocol):
    """Whether an external scheduler placed the creates (`[external]`)."""

    @property
    def active(self) -> bool: ...


class ConfigView(Protocol):
    """A checked config (`harness.config.Config`), as a seed's result, its invariants and its
    time keeping read it."""

    @property
    def run(self) -> RunKeys: ...
    @property
    def cluster(self) -> ClusterSpec: ...
    @property
    def heartbeat(self) -> HeartbeatSpec: ...
    @property
    def placement(self) -> PlacementSpec: ...
    @property
    def workload(self) -> WorkloadKeys: ...
    @property
    def external(self) -> ExternalKeys: ...
    @property
    def thresholds(self) -> tuple[Threshold, ...]: ...


class CellView(Protocol):
    """One cell of a sweep (`harness.config.sweep_file.Cell`)."""

    @property
    def index(self) -> int: ...
    @property
    def values(self) -> dict[str, Any]: ...
    @property
    def config(self) -> ConfigView: ...


class SweepView(Protocol):
    """A sweep (`harness.config.sweep_file.Sweep`), as its folder records it."""

    @property
    def name(self) -> str: ...
    @property
    def grid(self) -> dict[str, list[Any]]: ...
    @property
    def cells(self) -> list[CellView]: ...
    @property
    def seeds(self) -> list[int]: ...
    @property
    def keys(self) -> list[str]: ...
    def identity(self) -> dict[str, Any]: ...


class ObjectiveView(Protocol):
    """What a search minimises or maximises (`harness.config.search_file.Objective`)."""

    @property
    def direction(self) -> str: ...
    @property
    def strategies(self) -> list[str]: ...


class SearchView(Protocol):
    """A search (`harness.config.search_file.Search`), as its folder records it."""

    @property
    def name(self) -> str: ...
    @property
    def objective(self) -> ObjectiveView: ...
    @property
    def space(self) -> dict[str, Any]: ...
    @property
    def seeds(self) -> list[int]: ...
    @property
    def trials(self) -> int | None: ...
    @property
    def wall_s(self) -> float | None: ...
    def base_values(self) -> dict[str, Any]: ...
    def identity(self) -> dict[str, Any]: ...
