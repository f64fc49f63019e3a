"""Running a run's (strategy, seed) units: one after another in this process, or as Ray tasks
at once, each on a core of its own (or of a cluster's), each writing its rows into the part
folder it is given and checked where it ran. Either way the results, and the files, are the
same: a unit is deterministic, and the run gathers its parts in run order."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from harness import interrupts
from harness.config import Config
from harness.engines import ENGINES, Engine, EngineError, Progress, Snapshot, get_engine
from harness.results.invariants import check
from harness.results.seed_result import SeedResult
from harness.results.seed_rows import SeedRows

RAY_WORTH_S = 30.0
"""Computing a run must be estimated to take (on one core) before `run.workers = 0` runs its
seeds as Ray tasks: below, starting Ray costs more than the other cores give back."""

WAIT_S = 1.0
"""Wall seconds the driver waits for a task to finish before it looks again: for a stop asked
for (`harness.interrupts.poll`), and at how far the running tasks have gone."""
REPORT_S = 2.0
"""Wall seconds between two reports of a task's progress to the driver (`Board`)."""
STORM = 10
"""Creates in flight stuck in refusals at once (each refused `REFUSED_AGAIN` times or more,
`harness.model.protocol.replica_party`) from which a seed is in a storm of refusals: its
progress then counts the model time it may run past its duration, and the display names it."""

Checked = tuple[SeedResult, list[dict[str, Any]]]
"""A finished unit: its result, and its invariant checks."""
RowsFor = Callable[[str, int], SeedRows]
"""Where the rows of (strategy, seed) go (`harness.results.run_writer.RunWriter.seed_rows`)."""
Moved = Callable[[int, float | None, Snapshot | None, int], None]
"""Progress of the unit at an index: the share of its model time done (`Share`; None:
finished, said before its result is handed over), what an engine in real time shows live (a
snapshot), and the creates stuck in refusals."""


@dataclass(frozen=True)
class Unit:
    """One seed of one strategy: `config` has the strategy."""

    config: Config
    seed: int

    @property
    def strategy(self) -> str:
        return self.config.placement.strategy


class Share:
    """A seed's share done, from the model time it has reached: over its duration; once it
    has been in a storm of refusals (`STORM`), over its duration and the placement's deadline,
    for the creates sent before its end are placed again until then (the seed runs on past its
    duration, and a share pinned at 1 would say nothing is left). Never above 1."""

    def __init__(self, config: Config) -> None:
        self.duration = config.run.duration_s
        p = config.placement
        self.tail = p.deadline_s if p.retry_refused else 0.0
        self.stormed = False

    def __call__(self, t: float, refused: int) -> float:
        self.stormed = self.stormed or refused >= STORM
        end = self.duration + (self.tail if self.stormed else 0.0)
        return min(t / end, 1.0)


def run_checked(
    engine: Engine,
    config: Config,
    seed: int,
    progress: Progress | None = None,
    rows: SeedRows | None = None,
) -> tuple[SeedResult, list[dict[str, Any]], list[str]]:
    """One seed on `engine`, then its invariant checks (`harness.results.invariants`): the
    result, the checks, and a line for each broken one."""
    result = engine.run_seed(config, seed, progress, rows)
    checks = check(config, result)
    return result, checks, broken_lines(checks)


def broken_lines(checks: list[dict[str, Any]]) -> list[str]:
    """A line for each broken one of invariant `checks`."""
    return [f"{c['check']} ({c['detail']})" for c in checks if not c["ok"]]


def run_unit(
    config: Config,
    seed: int,
    rows: SeedRows | None = None,
    progress: Progress | None = None,
    home: str | None = None,
) -> Checked:
    """The body of a task: one seed on the config's engine, checked where it ran. The end
    state the checks needed stays here rather than travelling back. `home`: the Ray node whose
    disk `rows`' folder is on; a task Ray placed on another node writes the rows into a folder
    of its own node's instead, which the driver then fetches (`fetched`)."""
    if home is not None and rows is not None and rows.folder is not None and home != _node():
        rows = SeedRows(rows.strategy, rows.seed, _scratch() / rows.folder.name, rows.run_id)
    with closing(get_engine(config.run.engine)) as engine:  # stops what it kept for the seed
        result, checks, _ = run_checked(engine, config, seed, progress, rows)
    return replace(result, sandbox_ids=[], lost_ids=[], drained_views=None), checks


SHIP_BYTES = 8 << 20
"""A part's files travel from a task's node to the driver's in chunks of this size: what the
object store holds of them at once."""


def _node() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def _scratch() -> Path:
    """A folder of this node's for the rows of a task whose part is on another node's disk."""
    return Path(tempfile.mkdtemp(prefix="harness-rows-"))


def _ship(folder: str) -> Iterator[tuple[str, bytes]]:
    """The files of a finished seed's rows on this node, chunk by chunk, then the folder goes
    (a Ray task that yields: `fetched`)."""
    try:
        for path in sorted(Path(folder).iterdir()):
            with path.open("rb") as f:
                for chunk in iter(lambda f=f: f.read(SHIP_BYTES), b""):
                    yield path.name, chunk
    finally:
        shutil.rmtree(Path(folder).parent, ignore_errors=True)


def fetched(result: SeedResult, node: str, rows: SeedRows) -> SeedResult:
    """`result` with its rows in `rows`' folder (the driver's), fetched from the folder of
    `node`'s where a task placed there wrote them, a chunk at a time (a stop is acted on
    between chunks)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    there = result.rows.folder
    if there is None or rows.folder is None or there == rows.folder:
        return result
    place = NodeAffinitySchedulingStrategy(node, soft=False)
    ship = ray.remote(num_cpus=0, num_returns="streaming", max_retries=0)(_ship)
    rows.folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, BinaryIO] = {}
    try:
        for ref in ship.options(scheduling_strategy=place).remote(str(there)):
            name, chunk = ray.get(ref)
            interrupts.poll()
            if name not in files:
                files[name] = (rows.folder / name).open("wb")
            files[name].write(chunk)
    finally:
        for f in files.values():
            f.close()
    here = SeedRows(rows.strategy, rows.seed, rows.folder, rows.run_id)
    here.rows, here.closed = dict(result.rows.rows), True
    return replace(result, rows=here)


def located(body: Callable[..., Checked]) -> Callable[..., tuple[Checked, str]]:
    """`body`, answering the node it ran on beside its result (where its rows are). It keeps
    `body`'s name: Ray names a task's worker process after it (`ray::run_seed`)."""

    @functools.wraps(body)
    def located(*args: Any) -> tuple[Checked, str]:
        return body(*args), _node()

    return located


class Board:
    """Where the tasks of a run leave how far their seeds have gone (a Ray actor that takes no
    core), for the driver to read while it waits: a seed of hours must not look hung."""

    def __init__(self) -> None:
        self.moved: dict[int, tuple[float, int]] = {}

    def report(self, index: int, fraction: float, refused: int) -> None:
        self.moved[index] = (fraction, refused)

    def read(self) -> dict[int, tuple[float, int]]:
        return self.moved


def run_reporting(
    config: Config, seed: int, rows: SeedRows, board: Any, index: int, home: str | None = None
) -> Checked:
    """`run_unit` as a task that tells `board` the share of its model time done, and the
    creates stuck in refusals, every `REPORT_S` at most."""
    share = Share(config)
    due = 0.0

    def tick(t: float, snapshot: Snapshot | None = None, refused: int = 0) -> None:
        nonlocal due
        done = share(t, refused)
        now = time.monotonic()
        if now >= due:
            due = now + REPORT_S
            board.report.remote(index, done, refused)

    return run_unit(config, seed, rows, tick, home)


def workers(config: Config, units: int, estimate_s: float, cpus: int) -> int:
    """How many units run at once: `run.workers`, or by default every core when the run is
    estimated to take `RAY_WORTH_S` of computing or more (or joins a cluster), else 1. An
    engine that runs on Ray itself runs its seeds one after another."""
    if ENGINES[config.run.engine].on_ray or units <= 1:
        return 1
    if config.run.workers:
        return min(config.run.workers, units)
    if config.ray.address or os.environ.get("RAY_ADDRESS"):
        return units
    return min(cpus, units) if estimate_s >= RAY_WORTH_S else 1


class InProcess:
    """Every unit in this process, in order, on one engine (which keeps what it may between
    seeds: external scheduler processes)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def results(
        self,
        units: list[Unit],
        rows_for: RowsFor,
        progress: Moved,
        partial: Callable[[SeedResult], None],
    ) -> Iterator[Checked]:
        """Each unit's result as it finishes; `progress` meanwhile, and `partial(result)`
        with what a unit that stopped midway had written."""
        for index, unit in enumerate(units):
            interrupts.poll()  # between seeds
            shares = Share(unit.config)

            def tick(
                t: float,
                snapshot: Snapshot | None = None,
                refused: int = 0,
                index: int = index,
                share: Share = shares,
            ) -> None:
                progress(index, share(t, refused), snapshot, refused)

            try:
                result, checks, _ = run_checked(
                    self.engine, unit.config, unit.seed, tick, rows_for(unit.strategy, unit.seed)
                )
            except BaseException as e:
                stopped = getattr(e, "partial", None)
                if stopped is not None:
                    partial(stopped)
                raise
            progress(index, None, None, 0)
            yield result, checks


class OnRay:
    """Units as Ray tasks, `workers` at once, each writing its rows into its part folder
    (on this machine: a task Ray places elsewhere writes where the driver does only on a
    shared file system); results come as they finish, in any order."""

    def __init__(self, workers: int, home: str | None = None) -> None:
        self.workers = workers
        self.home = home
        """The Ray node whose disk the parts are on; None: the driver's."""

    def results(
        self,
        units: list[Unit],
        rows_for: RowsFor,
        progress: Moved,
        partial: Callable[[SeedResult], None],
    ) -> Iterator[Checked]:
        import ray

        task = ray.remote(num_cpus=1, max_retries=0)(located(run_reporting))
        board = ray.remote(num_cpus=0)(Board).remote()
        home = self.home or _node()
        queue = list(enumerate(units))
        queue.reverse()
        flying: dict[Any, tuple[int, Unit, SeedRows]] = {}
        try:
            while queue or flying:
                while queue and len(flying) < self.workers:
                    index, unit = queue.pop()
                    rows = rows_for(unit.strategy, unit.seed)
                    ref = task.remote(unit.config, unit.seed, rows, board, index, home)
                    flying[ref] = (index, unit, rows)
                ready, _ = ray.wait(list(flying), num_returns=1, timeout=WAIT_S)
                interrupts.poll()
                if not ready:
                    running = {i for i, _, _ in flying.values()}
                    for i, (fraction, refused) in ray.get(board.read.remote()).items():
                        if i in running:
                            progress(i, fraction, None, refused)
                    continue
                (ref,) = ready
                index, unit, rows = flying.pop(ref)
                try:
                    (result, checks), node = ray.get(ref)
                    done = fetched(result, node, rows), checks
                except ray.exceptions.RayTaskError as e:
                    stopped = getattr(e.cause, "partial", None)
                    if stopped is not None and stopped.rows.folder == rows.folder:
                        partial(stopped)  # on this node's disk: a task elsewhere kept its own
                    cause = e.cause if isinstance(e.cause, Exception) else e
                    raise EngineError(
                        f"{unit.strategy} seed {unit.seed} failed: {type(cause).__name__}: "
                        f"{(str(cause).splitlines() or [''])[0]}"
                    ) from e
                except ray.exceptions.RayError as e:
                    raise EngineError(
                        f"{unit.strategy} seed {unit.seed}: its task's process died ({e})"
                    ) from e
                progress(index, None, None, 0)
                yield done
        finally:
            for ref in flying:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            with contextlib.suppress(Exception):
                ray.kill(board)
