"""An example plugin package for herd-harness, installed like any other package.

It imports only `harness.api`, the harness's public plugin API, and declares two plugins under
its entry-point groups (see pyproject.toml), so a config names them without any import path:

    [placement]
    scorers = ["reference", "idle_first=0.5"]
    strategy = "optimistic_twice"
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.api import OptimisticLedger, Scorer


class IdleFirst(Scorer):
    """Lower for nodes whose last report shows less CPU in use, per vCPU they have. It reads
    only the report, so under `optimistic` (whose own placements move the view between two
    reports, not the reported usage) it brings part of the herd back: see the README."""

    name = "idle_first"

    def scores(self, scheduler, candidates: Sequence[int], req, now: float) -> list[float]:
        views = scheduler.ledger.views
        return [views[n].cpu_percent / 100.0 / max(views[n].cpu_count, 1) for n in candidates]


class OptimisticTwice(OptimisticLedger):
    """OptimisticAdd counted twice: a deliberately over-cautious ledger, to show a strategy
    plugin changes placements."""

    name = "optimistic_twice"

    def add(self, req) -> None:
        super().add(req)
        super().add(req)
