"""An example plugin package for herd-harness, installed like any other package.

It imports only `harness.api`, the harness's public plugin API, and declares two plugins under
its entry-point groups (see pyproject.toml), so a config names them without any import path:

    [placement]
    scorers = ["reference", "idle_first=0.5"]
    strategy = "optimistic_twice"

    [placement.idle_first]   # its own setting, validated and listed by `harness keys`
    per_vcpu = false
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.api import OptimisticStrategy, PluginSettings, Scorer, key


@dataclass(frozen=True)
class IdleFirstSettings(PluginSettings):
    """Written under `[placement.idle_first]`."""

    per_vcpu: bool = key(True, "Weigh the CPU in use per vCPU the node has; false: as is.")


class IdleFirst(Scorer):
    """Lower for nodes whose last report shows less CPU in use, per vCPU they have. It reads
    only the report, so under `optimistic` (whose own placements move the view between two
    reports, not the reported usage) it brings part of the herd back: see the README."""

    name = "idle_first"
    Settings = IdleFirstSettings

    def scores(self, replica, candidates: Sequence[int], req, now: float) -> list[float]:
        views, per_vcpu = replica.strategy.views, self.settings.per_vcpu
        return [
            views[n].cpu_percent / 100.0 / (max(views[n].cpu_count, 1) if per_vcpu else 1)
            for n in candidates
        ]


class OptimisticTwice(OptimisticStrategy):
    """OptimisticAdd counted twice: a deliberately over-cautious ledger, to show a strategy
    plugin changes placements."""

    name = "optimistic_twice"

    def add(self, req) -> None:
        super().add(req)
        super().add(req)
