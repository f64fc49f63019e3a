"""`harness sweep`: every cell x seed of a sweep as one Ray task, over every core of this
machine (or of the cluster at --address); each cell is written as soon as its seeds are in.

The driver keeps a bounded window of tasks in flight, in cell order, so cells finish (and reach
the disk) one after another rather than all at the end, and a Ctrl-C loses only the cells in
flight. A task that raises fails its cell, which is recorded; the other cells go on.
"""

from __future__ import annotations

import time
import traceback
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import interrupts, testing_signals
from harness.config import Config
from harness.config.sweep_file import Cell, Sweep
from harness.engines.ray_setup import connect, plugin_sources, stop_ray
from harness.results.failures import InvariantError
from harness.results.seed_result import SeedResult
from harness.results.seed_rows import SeedRows
from harness.results.sweep_folder import SweepStore
from harness.running.seed_tasks import WAIT_S, broken_lines, fetched, located, run_unit

# progress(cells complete, cells failed, cells in the sweep)
SweepProgress = Callable[[int, int, int], None]


def run_seed(
    config: Config, seed: int, rows: SeedRows | None = None, home: str | None = None
) -> SeedResult:
    """The body of one task: one seed of one cell on the config's engine, its rows written
    into `rows`' folder (kept in memory without; see `run_unit` for `home`), checked where it
    ran (`harness.results.invariants`): a broken check fails the cell with its message."""
    result, checks = run_unit(config, seed, rows, None, home)
    broken = broken_lines(checks)
    if broken:
        raise InvariantError(f"seed {seed}", broken)
    return result


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
    if not store.pending():
        if progress is not None:
            progress(len(sweep.cells), 0, len(sweep.cells))
        store.close()
        return store
    started = False
    try:
        started = connect(address, plugin_sources(cell.config for cell in sweep.cells))
        _drive(store, progress)
    finally:
        store.close()
        if started:
            stop_ray()
    return store


def _describe(error: Exception) -> tuple[str, str]:
    """A one-line error for the record and the full traceback, from the task's own exception."""
    cause = getattr(error, "cause", None) or error
    return f"{type(cause).__name__}: {cause}", "".join(traceback.format_exception(error))


def _drive(store: SweepStore, progress: SweepProgress | None) -> None:
    import ray

    task = ray.remote(located(run_seed))
    home = ray.get_runtime_context().get_node_id()
    seeds = store.sweep.seeds
    total = len(store.sweep.cells)
    todo = store.pending()
    done, failed = total - len(todo), 0
    if progress is not None:
        progress(done, failed, total)
    window = 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))
    queue = deque((cell, seed) for cell in todo for seed in seeds)
    in_flight: dict[Any, tuple[Cell, int, SeedRows]] = {}
    results: dict[int, dict[int, SeedResult]] = {}
    began: dict[int, float] = {}
    dead: set[int] = set()
    while queue or in_flight:
        while queue and len(in_flight) < window:
            cell, seed = queue.popleft()
            if cell.index not in dead:
                began.setdefault(cell.index, time.monotonic())
                rows = store.seed_rows(cell, seed)
                in_flight[task.remote(cell.config, seed, rows, home)] = (cell, seed, rows)
        if not in_flight:
            continue
        ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=WAIT_S)
        interrupts.poll()
        if not ready:
            continue
        (ref,) = ready
        cell, seed, rows = in_flight.pop(ref)
        if cell.index in dead:
            continue
        try:
            result, node = ray.get(ref)
            result = fetched(result, node, rows)
        except ray.exceptions.RayError as e:
            # The cell's other seeds still in flight finish and are ignored: ray.cancel
            # racing a task's completion crashed the driver (Ray 2.60, task_manager.cc
            # "Tried to complete task that was not pending").
            dead.add(cell.index)
            results.pop(cell.index, None)
            error, trace = _describe(e)
            store.fail_cell(cell, f"seed {seed}: {error}", trace)
            failed += 1
        else:
            got = results.setdefault(cell.index, {})
            got[seed] = result
            if len(got) < len(seeds):
                continue
            del results[cell.index]
            wall = time.monotonic() - began[cell.index]
            store.add_cell(cell, [got[s] for s in seeds], wall)
            done += 1
        if progress is not None:
            progress(done, failed, total)
