"""The one executor (`harness.running.pool`), in this process: jobs of any kind (a seed, a
trial, anything a module-level function does) each come back as a `Done`, a failure handed
over rather than raised, a stop raised with what the job had written kept, progress relayed per
job. On Ray the same pool runs a run's seeds, a sweep's cells and a search's trials
(tests/running/test_seed_tasks.py, test_sweep.py, test_search.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.results.seed_rows import SeedRows
from harness.running.pool import InProcess, Job


def _square(x: int) -> int:
    return x * x


def _fails(why: str) -> None:
    raise ValueError(why)


class _Stopped(KeyboardInterrupt):
    """A stop raised midway through a job, with what it had written (as an engine sets it)."""

    def __init__(self, rows: SeedRows) -> None:
        super().__init__()
        self.partial = _Result(rows)


class _Result:
    def __init__(self, rows: SeedRows) -> None:
        self.rows = rows


def _stops(rows: SeedRows) -> None:
    """A job writing rows (handed `rows=`, its part), stopped midway."""
    raise _Stopped(rows)


def _telling(steps: int, progress: Any = None) -> int:
    for step in range(1, steps + 1):
        progress(step / steps, None, step)
    return steps


def test_every_job_comes_back_with_its_value_or_the_error_it_failed_with():
    jobs = [Job(("trial", n), _square, (n,)) for n in range(3)]
    jobs.insert(1, Job("broken", _fails, ("no such node",)))
    done = list(InProcess().results(jobs))
    assert [d.job.key for d in done] == [("trial", 0), "broken", ("trial", 1), ("trial", 2)]
    assert [d.value for d in done if d.error is None] == [0, 1, 4]
    (failed,) = [d for d in done if d.error is not None]
    assert isinstance(failed.error, ValueError) and str(failed.error) == "no such node"
    assert "ValueError: no such node" in failed.trace
    assert not failed.remote and not failed.died  # raised here, by the job itself


def test_a_stop_is_raised_and_what_the_job_had_written_is_kept(tmp_path: Path):
    rows = SeedRows("stale", 0, tmp_path / "part")
    kept: list[Any] = []
    jobs = [Job(0, _square, (2,)), Job(1, _stops, (), rows), Job(2, _square, (3,))]
    results = InProcess().results(jobs, kept=kept.append)
    assert next(results).value == 4
    with pytest.raises(KeyboardInterrupt):
        next(results)
    assert [k.rows for k in kept] == [rows]  # the rows of the job stopped, not of another


def test_progress_is_told_per_job_and_its_end_before_its_outcome():
    told: list[tuple[Any, float | None, int]] = []

    def moved(key: Any, fraction: float | None, snapshot: Any, refused: int) -> None:
        told.append((key, fraction, refused))

    jobs = [Job(key, _telling, (2,)) for key in ("a", "b")]
    outcomes = [(d.job.key, d.value, len(told)) for d in InProcess().results(jobs, moved)]
    a, b = ([(key, 0.5, 1), (key, 1.0, 2), (key, None, 0)] for key in ("a", "b"))
    assert told == [*a, *b]
    assert outcomes == [("a", 2, 3), ("b", 2, 6)]


def test_an_engine_kept_in_this_process_is_handed_to_every_job():
    engine: Any = object()
    jobs = [Job(n, _engine_of) for n in range(2)]
    assert [d.value for d in InProcess(engine).results(jobs)] == [engine, engine]
    assert [d.value for d in InProcess().results(jobs)] == [None, None]


def _engine_of(engine: Any = None) -> Any:
    return engine
