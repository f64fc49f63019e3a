"""The runner owns the wiring: which engine, which strategies and seeds, where results go."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from harness import interrupts, testing_signals
from harness.config import Config
from harness.engines import Engine, EngineError, Snapshot, get_engine
from harness.engines.ray_setup import plugin_sources
from harness.model.cluster.faults.fault_keys import record as fault_record
from harness.model.scheduling.placement.record import placement_record
from harness.results.failures import InvariantError, ResultsError
from harness.results.folder_policy import check_out_dir
from harness.results.machine import this_machine
from harness.results.run_reader import resumable
from harness.results.run_writer import RunWriter
from harness.results.seed_result import SeedResult
from harness.results.thresholds import evaluate
from harness.results.time_keeping import run_verdict
from harness.running.cost_check import seed_seconds, workers
from harness.running.inputs import fingerprint, first_changed
from harness.running.pool import Done, InProcess, Job, OnRay, Pool
from harness.running.seed_tasks import broken_lines, run_unit

# progress(units_done, units_total, share of the running units done (their model time, added
# up), live snapshot or None, creates stuck in refusals in the running units)
RunProgress = Callable[[int, int, float, Snapshot | None, int], None]


def _plugins(config: Config, strategies: list[str]) -> dict[str, object]:
    """The plugins a run uses, as run.json keeps them (`plugins`): the placement's
    (`placement_record`) and, when it has faults, each entry's kind (`faults`)."""
    c = config
    found = placement_record(c.placement, strategies, c.cluster.node_count, c.external.active)
    if c.faults:
        found["faults"] = fault_record(c.faults)
    return found


def run(
    config: Config,
    strategies: list[str],
    out_dir: Path,
    progress: RunProgress | None = None,
    overwrite: bool = False,
    run_id: str | None = None,
    resume: bool = False,
    notice: Callable[[str], None] | None = None,
) -> Path:
    """Run every strategy on the same seeds; each finished (strategy, seed) is on disk at once.

    `out_dir` must be new or empty, or hold results and `overwrite` be given (ResultsError
    otherwise, raised before the engine starts). An exception or Ctrl-C still closes the
    files and marks run.json `completed: false`. Every (strategy, seed) is checked
    (`harness.results.invariants`); broken checks are written with the results, and the run then
    raises InvariantError. The config's thresholds are checked on the finished run and written
    to run.json; failing them is for the caller to act on. `run_id` is the id every table
    carries (`harness.results.folder_policy.new_run_id`), a new one if not given. With `resume`,
    `out_dir` holds this run unfinished (`harness.results.run_reader.resumable`): its finished
    seeds are kept and only the others run, so the files are those of a run never stopped; a
    damaged part is named in a line given to `notice` and its seed run again. A file the config
    names (`harness.running.inputs`) that changed since the run began refuses the resume.
    """
    testing_signals.at("start")
    inputs = fingerprint(config, strategies)
    if resume:
        recorded = resumable(out_dir, config.to_dict(), strategies).get("inputs", inputs)
        changed = first_changed(recorded, inputs)
        if changed is not None:
            raise ResultsError(f"{out_dir} was run with other inputs: {changed}")
    else:
        check_out_dir(out_dir, overwrite)
    engine = get_engine(config.run.engine)
    engine.prepare(config, strategies)
    interrupts.poll()  # a stop asked for so far: nothing is written yet
    seeds = config.run.seed_numbers
    # The scheduler processes' standard error, per seed and replica, kept with the results.
    logs = {}
    if config.external.command and not config.external.log_dir:
        logs = {"external.log_dir": str(out_dir / "scheduler")}
    total = len(strategies) * len(seeds)
    with (
        closing(engine),
        RunWriter(
            out_dir,
            config.to_dict(),
            strategies,
            seeds,
            engine.name,
            overwrite,
            resume,
            run_id,
            _plugins(config, strategies),
            notice,
            inputs,
        ) as writer,
    ):
        variants = {s: config.with_values({"placement.strategy": s, **logs}) for s in strategies}
        todo = [(s, seed) for s in strategies for seed in seeds if (s, seed) not in writer.done]
        jobs = (
            Job((s, seed), run_unit, (variants[s], seed), writer.seed_rows(s, seed))
            for s, seed in todo
        )
        done = len(writer.done)
        running: dict[Any, tuple[float, int]] = {}  # (strategy, seed) -> (share done, refused)

        def show(snapshot: Snapshot | None = None) -> None:
            if progress is not None:
                share = sum(f for f, _ in running.values())
                progress(done, total, share, snapshot, sum(r for _, r in running.values()))

        def moved(key: Any, fraction: float | None, snap: Snapshot | None, refused: int) -> None:
            if fraction is None:  # finished: counted in `done` once its result is in
                running.pop(key, None)
                return
            running[key] = (fraction, refused)
            show(snap)

        with _pool(config, engine, len(todo)) as pool:
            show()
            testing_signals.at("seed")
            for finished in pool.results(jobs, moved, _partial(writer)):
                if finished.error is not None:
                    raise _failure(finished)
                writer.add(*finished.value)
                done += 1
                show()
                if done < total:
                    testing_signals.at("seed")
        summaries = writer.summaries()
        writer.meta["time_keeping"] = run_verdict(summaries)
        writer.set_thresholds(evaluate(config.thresholds, summaries))
        broken = [
            f"{c['strategy']} seed {c['seed']}: {line}"
            for c in writer.meta["invariants"]
            for line in broken_lines([c])
        ]
    if broken:
        raise InvariantError(str(out_dir), broken)
    return out_dir


def _partial(writer: RunWriter) -> Callable[[SeedResult], None]:
    """What keeps a seed stopped midway: its rows so far, marked partial."""
    return lambda result: writer.add(result, partial=True)


def _failure(failed: Done) -> BaseException:
    """A unit's failure as the run raises it: as raised, in this process; from a task, an
    EngineError naming the unit (the task's exception is a copy from another process)."""
    assert failed.error is not None
    if not failed.remote:
        return failed.error
    strategy, seed = failed.job.key
    if failed.died:
        return EngineError(f"{strategy} seed {seed}: its task's process died ({failed.error})")
    cause = failed.error
    first = (str(cause).splitlines() or [""])[0]
    return EngineError(f"{strategy} seed {seed} failed: {type(cause).__name__}: {first}")


def _pool(config: Config, engine: Engine, units: int) -> Pool:
    """This process, on `engine`, or Ray tasks on every core (`workers`)."""
    estimate = seed_seconds(config) * units
    n = workers(config, units, estimate, this_machine().cpus)
    if n <= 1:
        return InProcess(engine)
    return OnRay(n, config.ray.address, plugin_sources([config]))
