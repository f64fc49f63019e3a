"""`harness sweep`: every cell x seed of a sweep as one job of the pool, as Ray tasks over every
core of this machine (or of the cluster at --address); each cell is written as soon as its
seeds are in.

The pool keeps a window of tasks in flight, in cell order, so cells finish (and reach the
disk) one after another rather than all at the end, and a Ctrl-C loses only the cells in
flight. A seed that fails fails its cell, which is recorded; the other cells go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from harness import interrupts, testing_signals
from harness.config import Config
from harness.config.sweep_file import Sweep
from harness.engines.ray_setup import plugin_sources
from harness.results.failures import InvariantError
from harness.results.seed_result import SeedResult
from harness.results.sweep_folder import SweepStore
from harness.running.pool import Job, OnRay
from harness.running.seed_tasks import Checked, broken_lines, run_unit

# progress(cells complete, cells failed, cells in the sweep)
SweepProgress = Callable[[int, int, int], None]


def run_seed(config: Config, seed: int, **handed: Any) -> Checked:
    """The body of one job: one seed of one cell, as `run_unit` (`handed` what the pool hands
    it), checked where it ran (`harness.results.invariants`): a broken check fails the cell
    with its message."""
    result, checks = run_unit(config, seed, **handed)
    broken = broken_lines(checks)
    if broken:
        raise InvariantError(f"seed {seed}", broken)
    return result, checks


def run_sweep(
    sweep: Sweep,
    out_dir: Path,
    progress: SweepProgress | None = None,
    address: str | None = None,
) -> SweepStore:
    """Run the cells of `sweep` not yet complete in `out_dir` (none: Ray is not even started);
    uses the Ray already running in this process if any, else starts (and then stops) one."""
    testing_signals.at("start")
    interrupts.poll()  # a stop asked for so far: nothing is written yet
    store = SweepStore(out_dir, sweep)
    try:
        total = len(sweep.cells)
        todo = store.pending()
        done, failed = total - len(todo), 0
        if progress is not None:
            progress(done, failed, total)
        if not todo:
            return store
        cells = {cell.index: cell for cell in todo}
        dead: set[int] = set()
        began: dict[int, float] = {}
        got: dict[int, dict[int, SeedResult]] = {}

        def jobs() -> Iterator[Job]:
            """Each seed of each cell still to run, in order; a cell's other seeds are left
            once one has failed it."""
            for cell in todo:
                for seed in sweep.seeds:
                    if cell.index in dead:
                        break
                    began.setdefault(cell.index, time.monotonic())
                    rows = store.seed_rows(cell, seed)
                    yield Job((cell.index, seed), run_seed, (cell.config, seed), rows)

        sources = plugin_sources(cell.config for cell in sweep.cells)
        with OnRay(None, address, sources) as pool:
            pool.window = 2 * pool.cores()
            for finished in pool.results(jobs()):
                index, seed = finished.job.key
                cell = cells[index]
                if index in dead:
                    continue
                if finished.error is not None:
                    # The cell's other seeds still in flight finish and are ignored: ray.cancel
                    # racing a task's completion crashed the driver (Ray 2.60, task_manager.cc
                    # "Tried to complete task that was not pending").
                    dead.add(index)
                    got.pop(index, None)
                    said = f"{type(finished.error).__name__}: {finished.error}"
                    store.fail_cell(cell, f"seed {seed}: {said}", finished.trace)
                    failed += 1
                else:
                    seeds = got.setdefault(index, {})
                    seeds[seed] = finished.value[0]
                    if len(seeds) < len(sweep.seeds):
                        continue
                    del got[index]
                    wall = time.monotonic() - began[index]
                    store.add_cell(cell, [seeds[s] for s in sweep.seeds], wall)
                    done += 1
                if progress is not None:
                    progress(done, failed, total)
    finally:
        store.close()
    return store
