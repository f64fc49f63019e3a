"""The one executor of every verb that runs things. A run's (strategy, seed) units, a sweep's
(cell, seed) and a search's trials are each a `Job`; a pool runs jobs one after another in this
process (`InProcess`) or as Ray tasks, a window of them at once (`OnRay`), and hands back each
one's `Done` as it finishes: its value, or the error it failed with. What a failure means (the
run stops, the sweep fails the cell, the search records the trial) is the caller's.

Whatever the jobs are, the pool polls for a stop between them and in every wait
(`harness.interrupts`), relays how far each has gone (on Ray through a `Board` actor the tasks
tell), keeps what a job stopped midway had written (`kept`), and fetches the rows a task wrote
on another node than the driver's (`fetched`): the files are the same wherever a job ran."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from harness import interrupts
from harness.engines import Engine, Snapshot
from harness.engines.ray_setup import connect, stop_ray
from harness.results.seed_result import SeedResult
from harness.results.seed_rows import SeedRows

WAIT_S = 1.0
"""Wall seconds the driver waits for a task to finish before it looks again: for a stop asked
for (`harness.interrupts.poll`), and at how far the running tasks have gone."""
REPORT_S = 2.0
"""Wall seconds between two reports of a task's progress to the driver (`Board`)."""
SHIP_BYTES = 8 << 20
"""A part's files travel from a task's node to the driver's in chunks of this size: what the
object store holds of them at once."""

Tell = Callable[[float, Snapshot | None, int], None]
"""How a job tells how far it has gone: the share of it done (0 to 1), what an engine in real
time shows live (a snapshot), and the creates stuck in refusals."""
Moved = Callable[[Any, float | None, Snapshot | None, int], None]
"""Progress of the job of a key, as `Tell`; None for the share once it finished (said before
its `Done` is handed over)."""
Kept = Callable[[SeedResult], None]
"""What keeps the rows a job stopped midway had written (the run marks them partial)."""


@dataclass(frozen=True)
class Job:
    """One piece of work: `body(*args, ...)`, a module-level function (a Ray task ships it by
    name). The pool hands it by keyword only what applies: `rows=` (the part its rows go to,
    `rows`; a task Ray placed on another node is handed one of its own node's instead, fetched
    after), `progress=` (a `Tell`, when the caller follows progress), `engine=` (the engine an
    `InProcess` pool keeps between jobs). A job with `rows` returns `Checked`: the result whose
    rows are fetched, and its checks."""

    key: Any
    """How the caller knows it: a unit's index, a (cell, seed), a trial's number."""
    body: Callable[..., Any]
    args: tuple[Any, ...] = ()
    rows: SeedRows | None = None


@dataclass(frozen=True)
class Done:
    """A job finished: its `value`, or the `error` it failed with (the job's own exception, also
    when it ran in a task) and its traceback as text. `remote`: it failed in another process,
    whose exception the driver has only a copy of; `died`: that process died before the job
    could say why (the error is Ray's)."""

    job: Job
    value: Any = None
    error: BaseException | None = None
    trace: str = ""
    remote: bool = False
    died: bool = False


def _kept(error: BaseException, kept: Kept | None, rows: SeedRows | None) -> None:
    """Hands `kept` what a job stopped midway had written (`partial`, which an engine sets on
    the exception), when those rows are on this disk: a task elsewhere wrote its own node's."""
    stopped = getattr(error, "partial", None)
    here = stopped is not None and rows is not None and stopped.rows.folder == rows.folder
    if kept is not None and here:
        kept(stopped)


class InProcess:
    """Every job in this process, in order; with an `engine`, on that one engine, which keeps
    what it may between jobs (an external scheduler's processes)."""

    def __init__(self, engine: Engine | None = None) -> None:
        self.engine = engine

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def results(
        self, jobs: Iterable[Job], moved: Moved | None = None, kept: Kept | None = None
    ) -> Iterator[Done]:
        """Each job's outcome as it finishes; `moved` meanwhile, `kept` with what a job that
        stopped midway had written. A stop (KeyboardInterrupt) is raised, not handed over."""
        for job in jobs:
            interrupts.poll()  # between jobs
            handed: dict[str, Any] = {}
            if self.engine is not None:
                handed["engine"] = self.engine
            if job.rows is not None:
                handed["rows"] = job.rows
            if moved is not None:
                handed["progress"] = _telling(moved, job.key)
            try:
                value = job.body(*job.args, **handed)
            except BaseException as e:
                _kept(e, kept, job.rows)
                if not isinstance(e, Exception):
                    raise
                yield Done(job, error=e, trace="".join(traceback.format_exception(e)))
                continue
            if moved is not None:
                moved(job.key, None, None, 0)
            yield Done(job, value)


def _telling(moved: Moved, key: Any) -> Tell:
    def tell(fraction: float, snapshot: Snapshot | None = None, refused: int = 0) -> None:
        moved(key, fraction, snapshot, refused)

    return tell


class OnRay:
    """Jobs as Ray tasks, `window` at once (None: all at once), each writing its rows where its
    job says (on this machine; see `fetched` for a task Ray places elsewhere); outcomes as they
    finish, in any order. As a context manager it joins Ray at `address` (or RAY_ADDRESS, else
    starts a local one), shipping `sources` (the import-path plugins' modules), and stops a Ray
    it started. A task that fails is not tried again: its job failed."""

    def __init__(
        self,
        window: int | None = None,
        address: str | None = None,
        sources: Iterable[str] = (),
        home: str | None = None,
    ) -> None:
        self.window = window
        self.address = address
        self.sources = list(sources)
        self.home = home
        """The Ray node whose disk the rows' folders are on; None: the driver's."""
        self.started = False
        self._task: Any = None

    def __enter__(self) -> OnRay:
        import ray

        self.started = connect(self.address, self.sources)
        self._task = ray.remote(num_cpus=1, max_retries=0)(_run_there)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started:
            stop_ray()

    @staticmethod
    def cores() -> int:
        """The CPUs of the Ray this pool joined (at least one)."""
        import ray

        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def results(
        self, jobs: Iterable[Job], moved: Moved | None = None, kept: Kept | None = None
    ) -> Iterator[Done]:
        """As `InProcess.results`, from tasks: pulled from `jobs` as the window has room."""
        import ray

        board = None if moved is None else ray.remote(num_cpus=0)(Board).remote()
        home = self.home or _node()
        pending = iter(jobs)
        flying: dict[Any, Job] = {}
        try:
            while True:
                while self.window is None or len(flying) < self.window:
                    job = next(pending, None)
                    if job is None:
                        break
                    task = self._task.options(name=job.body.__name__)
                    ref = task.remote(job.body, job.args, job.rows, home, board, job.key)
                    flying[ref] = job
                if not flying:
                    return
                ready, _ = ray.wait(list(flying), num_returns=1, timeout=WAIT_S)
                interrupts.poll()
                if not ready:
                    if board is not None and moved is not None:
                        running = {job.key for job in flying.values()}
                        for key, (fraction, refused) in ray.get(board.read.remote()).items():
                            if key in running:
                                moved(key, fraction, None, refused)
                    continue
                (ref,) = ready
                yield self._done(flying.pop(ref), ref, moved, kept)
        finally:
            if not self.started:  # a Ray this pool started stops, and its tasks with it
                for ref in flying:
                    with contextlib.suppress(Exception):
                        ray.cancel(ref, force=True)
            if board is not None:
                with contextlib.suppress(Exception):
                    ray.kill(board)

    @staticmethod
    def _done(job: Job, ref: Any, moved: Moved | None, kept: Kept | None) -> Done:
        """The outcome of the task of `job`, its rows fetched to this node."""
        import ray

        trace = ""
        try:
            value, node = ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            trace = "".join(traceback.format_exception(e))
            _kept(e.cause, kept, job.rows)
            cause = e.cause if isinstance(e.cause, Exception) else e
            return Done(job, error=cause, trace=trace, remote=True)
        except ray.exceptions.RayError as e:
            trace = "".join(traceback.format_exception(e))
            return Done(job, error=e, trace=trace, remote=True, died=True)
        if job.rows is not None:
            result, checks = value
            value = fetched(result, node, job.rows), checks
        if moved is not None:
            moved(job.key, None, None, 0)
        return Done(job, value)


Pool = InProcess | OnRay
"""Where jobs run: this process, or Ray tasks."""


def _run_there(
    body: Callable[..., Any],
    args: tuple[Any, ...],
    rows: SeedRows | None,
    home: str,
    board: Any,
    key: Any,
) -> tuple[Any, str]:
    """A job as a Ray task: its value, and the node it ran on (where its rows are). Rows whose
    folder is on `home`'s disk go, on another node, into a folder of that node's."""
    handed: dict[str, Any] = {}
    if rows is not None:
        if rows.folder is not None and home != _node():
            rows = SeedRows(rows.strategy, rows.seed, _scratch() / rows.folder.name, rows.run_id)
        handed["rows"] = rows
    if board is not None:
        handed["progress"] = _reporting(board, key)
    return body(*args, **handed), _node()


def _reporting(board: Any, key: Any) -> Tell:
    """A `Tell` that reports to `board`, every `REPORT_S` at most."""
    due = 0.0

    def tell(fraction: float, snapshot: Snapshot | None = None, refused: int = 0) -> None:
        nonlocal due
        now = time.monotonic()
        if now >= due:
            due = now + REPORT_S
            board.report.remote(key, fraction, refused)

    return tell


class Board:
    """Where the tasks leave how far their jobs have gone (a Ray actor that takes no core), for
    the driver to read while it waits: a seed of hours must not look hung."""

    def __init__(self) -> None:
        self.moved: dict[Any, tuple[float, int]] = {}

    def report(self, key: Any, fraction: float, refused: int) -> None:
        self.moved[key] = (fraction, refused)

    def read(self) -> dict[Any, tuple[float, int]]:
        return self.moved


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
