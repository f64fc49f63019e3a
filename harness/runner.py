"""The runner owns the wiring: which engine, which strategies and seeds, where results go."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

from harness import interrupts
from harness.config import Config
from harness.engine import Engine, Progress, Snapshot, get_engine
from harness.invariants import InvariantError, check
from harness.run_store import RunWriter, check_out_dir, resumable
from harness.seed_result import SeedResult
from harness.thresholds import evaluate

# progress(units_done, units_total, fraction_of_current_unit, live snapshot or None)
RunProgress = Callable[[int, int, float, Snapshot | None], None]


def default_out_dir(config: Config, root: Path = Path("results")) -> Path:
    """`results/<name>-<time>-<run id>`: the time sorts runs, the random id keeps apart two
    runs started in the same second (a run claims its folder under a lock regardless, see
    `harness.run_store`, so a clash refuses the second run rather than mixing the two)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return root / f"{config.run.name}-{stamp}-{secrets.token_hex(3)}"


def seeds_of(config: Config) -> list[int]:
    return list(range(config.run.first_seed, config.run.first_seed + config.run.seeds))


def run_checked(
    engine: Engine, config: Config, seed: int, progress: Progress | None = None
) -> tuple[SeedResult, list[dict[str, Any]], list[str]]:
    """One seed on `engine`, then its invariant checks (`harness.invariants`): the result, the
    checks, and a line for each broken one."""
    result = engine.run_seed(config, seed, progress)
    checks = check(config, result)
    return result, checks, broken_lines(checks)


def broken_lines(checks: list[dict[str, Any]]) -> list[str]:
    """A line for each broken one of invariant `checks`."""
    return [f"{c['check']} ({c['detail']})" for c in checks if not c["ok"]]


def run(
    config: Config,
    strategies: list[str],
    out_dir: Path,
    progress: RunProgress | None = None,
    overwrite: bool = False,
    resume: bool = False,
) -> Path:
    """Run every strategy on the same seeds; each finished (strategy, seed) is on disk at once.

    `out_dir` must be new or empty, or hold results and `overwrite` be given (ResultsError
    otherwise, raised before the engine starts). An exception or Ctrl-C still closes the
    files and marks run.json `completed: false`. Every (strategy, seed) is checked
    (`harness.invariants`); broken checks are written with the results, and the run then
    raises InvariantError. The config's thresholds are checked on the finished run and written
    to run.json; failing them is for the caller to act on. With `resume`, `out_dir` holds
    this run unfinished (`harness.run_store.resumable`): its finished seeds are kept and only
    the others run, so the files are those of a run never stopped.
    """
    interrupts.at("start")
    if resume:
        resumable(out_dir, config.to_dict(), strategies)
    else:
        check_out_dir(out_dir, overwrite)
    engine = get_engine(config.run.engine)
    engine.prepare(config, strategies)
    seeds = seeds_of(config)
    total = len(strategies) * len(seeds)
    with (
        closing(engine),
        RunWriter(
            out_dir, config.to_dict(), strategies, seeds, engine.name, overwrite, resume
        ) as writer,
    ):
        done = len(writer.done)
        for strategy in strategies:
            variant = config.with_value("placement.strategy", strategy)
            for seed in seeds:
                if (strategy, seed) in writer.done:
                    continue
                interrupts.at("seed")

                def tick(t: float, snapshot: Snapshot | None = None, done: int = done) -> None:
                    if progress is not None:
                        progress(done, total, t / config.run.duration_s, snapshot)

                try:
                    result, checks, _ = run_checked(engine, variant, seed, tick)
                except BaseException as e:
                    partial = getattr(e, "partial", None)
                    if partial is not None:
                        writer.add(partial, partial=True)
                    raise
                writer.add(result, checks)
                done += 1
                if progress is not None:
                    progress(done, total, 0.0, None)
        writer.set_thresholds(evaluate(config.thresholds, writer.summaries()))
        broken = [
            f"{c['strategy']} seed {c['seed']}: {line}"
            for c in writer.meta["invariants"]
            for line in broken_lines([c])
        ]
    if broken:
        raise InvariantError(str(out_dir), broken)
    return out_dir
