"""`harness sweep`: every cell of a sweep file, each on the sweep's seeds, as Ray tasks."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli.command import Command
from harness.cli.exits import failed_code, threshold_code
from harness.cli.verb import Verb, check_threshold_strategies, joins_a_cluster
from harness.config.sweep_file import load_sweep


class Sweep(Verb):
    """A sweep: its cells, and, once run, the store it left and what its folder holds."""

    def load(self) -> None:
        args = self.args
        self.sweep = load_sweep(args.sweep, args.overrides, args.seeds, args.thresholds)
        strategies = dict.fromkeys(c.config.placement.strategy for c in self.sweep.cells)
        check_threshold_strategies(self.sweep.base, list(strategies))
        self.configs = [cell.config for cell in self.sweep.cells]

    def budget(self, refuse: bool) -> str | None:
        from harness.results.machine import this_machine
        from harness.running.cost_check import check_sweep

        remote = joins_a_cluster(self.args.address)
        seeds = self.sweep.base.run.seeds
        return check_sweep(self.configs, seeds, this_machine(), remote, refuse).line()

    def foreseen(self) -> str | None:
        from harness.running.cost_check import cells_over_capacity

        return cells_over_capacity(self.configs)

    def out(self) -> Path:
        return self.args.out or Path("results") / self.sweep.name

    def refuse_early(self, out: Path) -> None:
        from harness.engines.ray_setup import check_address
        from harness.results.sweep_folder import check_sweep_out

        check_sweep_out(out, self.sweep)
        check_address(self.args.address)

    def display(self) -> Any:
        from harness.presentation.progress import SweepBar

        return SweepBar(self.sweep.name)

    def work(self, out: Path, progress: Any) -> None:
        from harness.running.sweep_runner import run_sweep  # ray: only loaded when sweeping

        self.reused = run_sweep(self.sweep, out, progress, self.args.address).reused

    def kept(self, out: Path) -> str:
        from harness.results.sweep_folder import sweep_state

        return sweep_state(out)

    def show(self, out: Path) -> None:
        from harness.presentation.terminal import print_sweep
        from harness.results.sweep_folder import load_sweep_results

        self.meta, summary = load_sweep_results(out)
        print_sweep(self.meta, summary, self.console)

    def then(self, out: Path) -> int:
        if self.reused:
            self.console.print(
                f"reused {self.reused} of {len(self.sweep.cells)} cells complete in {out} from "
                "an earlier run of this sweep (another --out runs every cell)",
                soft_wrap=True,
                markup=False,
            )
        return 0

    def verdict(self, then: int) -> int:
        cells = self.meta["cells"]
        failures = [c["error"] for c in cells if c["status"] == "failed"]
        return failed_code("cells", failures, len(cells), self.args.accept_failed) or (
            threshold_code([r for c in cells for r in c.get("thresholds", [])])
        )


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sweep", help="sweep TOML file (a [sweep] table; see configs/)")


COMMAND = Command(
    "sweep",
    "run every cell of a sweep file on Ray",
    Sweep.act,
    _arguments,
    (
        "--out",
        "--address",
        "--seeds",
        "--set",
        "--threshold",
        "--accept-failed",
        "--force",
        "--quiet",
        "--no-report",
    ),
    {
        "what": "sweep",
        "units": "cells",
        "out": "new or empty, or this sweep's: rerunning into it skips the cells already "
        "complete (default results/<name>/)",
    },
    "harness sweep configs/sweep-reference.toml --out results/reference",
    "not run: a sweep of 25 cells on Ray, minutes",
)
