"""`harness search`: an Optuna searcher asks for trials, each trial (every strategy the
objective names x the search's seeds on the virtual engine) runs as one Ray task on every core
of this machine (or of the cluster at --address), and its objective is told back.

Optuna's ask-and-tell interface drives the loop rather than Ray Tune, whose overhead per trial
was many times a trial's work (docs/performance.md). Trials are asked for in batches of
`search.batch` and told back in trial order, so the searcher sees the same history whatever
order the tasks finish in: a fixed seed gives the same trials, and `--resume` replays the
stored ones to a new searcher (asking again, checking the same trials come back, telling their
stored results) and runs only those missing.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import optuna
import pandas as pd
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import TrialState

from harness import interrupts, testing_signals
from harness.config import Config, ConfigError
from harness.config.search_file import SEARCHERS, Dimension, Search
from harness.engines import get_engine, real_time
from harness.engines.ray_setup import plugin_sources
from harness.results.arrow_schemas import summary_table
from harness.results.failures import InvariantError, ResultsError
from harness.results.search_folder import COMPLETE, FAILED, SearchStore
from harness.results.thresholds import COLUMNS
from harness.running.pool import InProcess, Job, OnRay, Pool
from harness.running.seed_tasks import run_checked
from harness.wiring.demand_estimate import demand


class SearchProgress(Protocol):
    """What a search tells its progress display: trials done, the trial budget (None: none),
    the best objective so far (None: none yet) and trials per second; then, past the trials,
    the phase it is in (shrinking, confirming), which takes minutes of its own."""

    def __call__(self, done: int, limit: int | None, best: float | None, rate: float) -> None: ...

    def phase(self, what: str) -> None: ...


optuna.logging.set_verbosity(optuna.logging.WARNING)
BOOTSTRAP = 400
"""Resamples of the seeds for a confirmation's 95% interval."""


def run_trial(config: Config, strategies: list[str], seeds: list[int]) -> tuple[list[dict], float]:
    """The body of one trial, where it runs: every strategy on every seed, each checked
    (`harness.results.invariants`; a broken check fails the trial). Its summary rows, and the
    seconds it took there."""
    began = time.perf_counter()
    rows = []
    with closing(get_engine(config.run.engine)) as engine:  # stops what it kept between seeds
        for strategy in strategies:
            same = config.placement.strategy == strategy  # validating a config costs ~10 ms
            variant = config if same else config.with_value("placement.strategy", strategy)
            for seed in seeds:
                result, _, broken = run_checked(engine, variant, seed)
                if broken:
                    raise InvariantError(f"{strategy} seed {seed}", broken)
                rows.append(result.summary)
    return rows, time.perf_counter() - began


Trial = tuple[Any, Config]
"""A trial to run: its key (its number) and its scenario."""
Outcome = tuple[Any, list[dict] | None, float, str | None]
"""(key, summary rows or None, seconds, error or None)."""


def outcomes(
    pool: Pool, trials: list[Trial], strategies: list[str], seeds: list[int]
) -> Iterator[Outcome]:
    """Each trial as a job of `pool` (`run_trial`), its outcome as it finishes."""
    jobs = [Job(key, run_trial, (config, strategies, seeds)) for key, config in trials]
    for done in pool.results(jobs):
        if done.error is not None:
            yield done.job.key, None, 0.0, _describe(done.error)
        else:
            rows, wall = done.value
            yield done.job.key, rows, wall, None


def _describe(error: BaseException) -> str:
    return "".join(traceback.format_exception_only(error)).strip().splitlines()[-1]


def distributions(search: Search) -> dict[str, BaseDistribution]:
    """Each dimension of the space as the Optuna distribution it is."""
    return {key: _distribution(dim) for key, dim in search.space.items()}


def _distribution(dim: Dimension) -> BaseDistribution:
    if dim.kind == "choices":
        return CategoricalDistribution(list(dim.choices))
    if dim.kind == "int":
        return IntDistribution(int(dim.low), int(dim.high), log=dim.log, step=int(dim.step or 1))
    return FloatDistribution(dim.low, dim.high, log=dim.log, step=dim.step)


class _Grid(optuna.samplers.GridSampler):
    """Optuna's grid searcher, but for its stop of `study.optimize` once every point is asked:
    ask-and-tell has no such loop (Optuna raises instead), and this one ends at the grid's size."""

    def after_trial(self, *args: Any) -> None:
        pass


def sampler(search: Search) -> optuna.samplers.BaseSampler:
    """The searcher `search.searcher` names, seeded with `search.seed`."""
    cls = getattr(optuna.samplers, SEARCHERS[search.searcher])
    if search.searcher == "grid":
        space = {key: dim.grid() for key, dim in search.space.items()}
        return _Grid(space, seed=search.seed)
    if search.searcher == "cmaes":
        return cls(seed=search.seed, warn_independent_sampling=False)
    return cls(seed=search.seed)


def summaries(rows: list[dict]) -> pd.DataFrame:
    """Summary rows as a run's folder holds them (every column, its type), so an objective
    here is the objective of the same scenario's `harness run`."""
    return summary_table(rows).to_pandas()


def trial_row(
    search: Search, number: int, values: dict[str, Any], outcome: Outcome
) -> dict[str, Any]:
    """A trials.parquet row: number, state, objective, error, seconds, the searched keys, and
    each strategy's mean of every summary column over the trial's seeds."""
    _, rows, wall, error = outcome
    frame = summaries(rows) if rows else None
    objective = search.objective.value(frame) if frame is not None else math.nan
    row: dict[str, Any] = {
        "trial": number,
        "state": COMPLETE if error is None else FAILED,
        "objective": objective,
        "error": error,
        "wall_s": wall,
        **values,
    }
    numbers = list(COLUMNS)
    table = None if frame is None else frame[numbers].to_numpy(dtype=float, na_value=math.nan)
    for strategy in search.objective.strategies:
        if table is None:
            means = [math.nan] * len(numbers)
        else:
            means = table[(frame["strategy"] == strategy).to_numpy()].mean(axis=0).tolist()
        row.update({f"{strategy}.{c}_mean": m for c, m in zip(numbers, means, strict=True)})
    return row


def _trials(search: Search, todo: list[tuple[int, dict[str, Any]]]) -> tuple[list[Trial], list]:
    """The trials whose values make a valid scenario within the constraint (`max_creates`), to
    run; the others as failed outcomes."""
    jobs, invalid = [], []
    for number, values in todo:
        try:
            config = search.config(values)
        except ConfigError as e:
            invalid.append((number, None, 0.0, f"ConfigError: {e}"))
            continue
        creates = demand(config).creates
        if search.max_creates is not None and creates > search.max_creates:
            why = f"over max_creates: about {creates:.0f} creates a seed"
            invalid.append((number, None, 0.0, why))
            continue
        jobs.append((number, config))
    return jobs, invalid


def run_search(
    search: Search,
    out_dir: Path,
    progress: SearchProgress | None = None,
    address: str | None = None,
    on_ray: bool = True,
    resume: bool = False,
) -> SearchStore:
    """Search until the budget is spent, then shrink the best trial and confirm both on fresh
    seeds; every finished trial is on disk at once. On Ray (the one running in this process if
    any, else one started and stopped here) or, without `on_ray`, in this process."""
    engine = search.base.run.engine
    if real_time(engine):
        raise ConfigError(
            "search.base",
            f"a search needs an engine that keeps model time (as virtual does): {engine} runs "
            "in real time, where no trial could be repeated",
        )
    testing_signals.at("start")
    interrupts.poll()  # a stop asked for so far: nothing is written yet
    store = SearchStore(out_dir, search, resume)
    completed = False
    try:
        sources = plugin_sources([search.base], search.objective.strategies)
        with OnRay(None, address, sources) if on_ray else InProcess() as pool:
            search_loop(store, pool, progress)
            finish(store, pool, progress)
        completed = True
    finally:
        store.close(completed)
    return store


def search_loop(store: SearchStore, pool: Pool, progress: SearchProgress | None) -> None:
    """Ask, run and tell, a batch at a time, until the budget is spent (the stored trials
    replayed, not run)."""
    search = store.search
    study = optuna.create_study(direction=search.objective.direction, sampler=sampler(search))
    dists = distributions(search)
    limit = search.trials
    if search.searcher == "grid":
        limit = min(limit or math.inf, search.grid_size() or 0)
    began, before = time.monotonic(), float(store.meta["searched_s"])
    ran = 0
    number = 0
    while limit is None or number < limit:
        n = search.batch if limit is None else int(min(search.batch, limit - number))
        batch = [study.ask(dists) for _ in range(n)]
        stored = [t for t in batch if t.number in store.trials]
        for t in stored:
            old = {key: store.trials[t.number][key] for key in search.space}
            if old != t.params:
                raise ResultsError(
                    f"{store.out_dir}: trial {t.number} was {old}, the searcher now asks "
                    f"{t.params}; the folder was written by another version"
                )
        todo = [(t.number, t.params) for t in batch if t.number not in store.trials]
        elapsed = before + time.monotonic() - began
        if todo and search.wall_s is not None and elapsed >= search.wall_s:
            break
        trials, invalid = _trials(search, todo)
        params = dict(todo)
        ran_now = outcomes(pool, trials, search.objective.strategies, search.seeds)
        for outcome in [*invalid, *ran_now]:
            store.add_trial(trial_row(search, outcome[0], params[outcome[0]], outcome))
            ran += 1
            if progress is not None:
                rate = ran / max(time.monotonic() - began, 1e-9)
                progress(len(store.trials), limit, _best_value(store), rate)
        for t in batch:
            value = store.trials[t.number]["objective"]
            if store.trials[t.number]["state"] == COMPLETE and not math.isnan(value):
                study.tell(t, value)
            else:
                study.tell(t, state=TrialState.FAIL)
        number += n
        store.update(searched_s=round(before + time.monotonic() - began, 3))
    if progress is not None:
        progress(len(store.trials), limit, _best_value(store), 0.0)


def _complete(store: SearchStore) -> list[dict[str, Any]]:
    return [
        r
        for n, r in sorted(store.trials.items())
        if r["state"] == COMPLETE and not math.isnan(r["objective"])
    ]


def _best_value(store: SearchStore) -> float | None:
    best = best_trial(store)
    return None if best is None else best["objective"]


def best_trial(store: SearchStore) -> dict[str, Any] | None:
    """The finished trial with the best objective (the first of equals), or None."""
    rows = _complete(store)
    if not rows:
        return None
    sign = store.search.objective.sign
    return max(rows, key=lambda r: (sign * r["objective"], -r["trial"]))


def evaluate(
    search: Search, pool: Pool, candidates: list[dict[str, Any]], seeds: list[int]
) -> list[float]:
    """The objective of each scenario of `candidates` (values of the space) on `seeds`; NaN
    for one that is not valid or fails."""
    results = [math.nan] * len(candidates)
    jobs = []
    for i, values in enumerate(candidates):
        try:
            config = search.config(values)
        except ConfigError:
            continue
        jobs.append((i, config))
    for i, rows, _, error in outcomes(pool, jobs, search.objective.strategies, seeds):
        if error is None:
            results[i] = search.objective.value(summaries(rows))
    return results


def toward(dim: Dimension, value: Any, base: Any) -> list[Any]:
    """Values from the base towards `value`, nearest the base first: the base itself, then a
    quarter, half and three quarters of the way (on a log scale for a log range; rounded for
    an int). A choice moves only to the base."""
    if dim.kind == "choices" or not isinstance(base, int | float) or isinstance(base, bool):
        return [base]
    out: list[Any] = []
    for f in (0.0, 0.25, 0.5, 0.75):
        if f == 0.0:
            x = base
        elif dim.log and base > 0 and value > 0:
            x = math.exp(math.log(base) + f * (math.log(value) - math.log(base)))
        else:
            x = base + f * (value - base)
        x = round(x) if dim.kind == "int" else x
        if x != value and x not in out:
            out.append(x)
    return out


def shrink(
    search: Search, pool: Pool, values: dict[str, Any], objective: float
) -> tuple[dict[str, Any], float, list[dict[str, Any]], dict[str, float]]:
    """Move each key of `values`, in the space's order, as near its base value as keeps the
    objective within `search.shrink_tolerance` of `objective` (as hypothesis shrinks a failing
    example); then put back at its base any key still moved that the shrunk scenario no longer
    needs (a key kept early may have mattered only beside one moved back later). The shrunk
    values, their objective, each step taken, and for each key still moved the objective with
    that key alone back at its base (NaN: not a valid scenario): beyond the tolerance for
    every one, by construction, so a key the shrunk scenario needs always shows it matters."""
    sign = search.objective.sign
    floor = sign * objective - search.shrink_tolerance * abs(objective)
    base = search.base_values()
    current, current_objective = dict(values), objective
    steps = []

    def step(key: str, option: Any, score: float) -> None:
        nonlocal current_objective
        steps.append({"key": key, "from": current[key], "to": option, "objective": score})
        current[key], current_objective = option, score

    for key, dim in search.space.items():
        if current[key] == base[key]:
            continue
        options = toward(dim, current[key], base[key])
        scores = evaluate(search, pool, [{**current, key: v} for v in options], search.seeds)
        for option, score in zip(options, scores, strict=True):
            if not math.isnan(score) and sign * score >= floor:
                step(key, option, score)
                break
    while True:
        moved = [key for key in search.space if current[key] != base[key]]
        scores = evaluate(search, pool, [{**current, k: base[k]} for k in moved], search.seeds)
        back = [k for k, s in zip(moved, scores, strict=True) if sign * s >= floor]  # NaN: no
        if not back:
            return current, current_objective, steps, dict(zip(moved, scores, strict=True))
        step(back[0], base[back[0]], scores[moved.index(back[0])])


def fresh_seeds(search: Search) -> list[int]:
    """Seeds the search never ran: the `confirm_seeds` after its own."""
    first = max(search.seeds) + 1
    return list(range(first, first + search.confirm_seeds))


def confirm(search: Search, pool: Pool, values: dict[str, Any], searched: float) -> dict[str, Any]:
    """`values` rerun on fresh seeds: the objective there, its 95% interval (bootstrap over
    seeds), and how far the searched value lies above it (the winner's curse)."""
    seeds = fresh_seeds(search)
    config = search.config(values).with_values(
        {"run.first_seed": seeds[0], "run.seeds": len(seeds)}
    )
    ((_, rows, _, error),) = list(outcomes(pool, [(0, config)], search.objective.strategies, seeds))
    if error is not None:
        return {"seeds": seeds, "error": error}
    frame = summaries(rows)
    value = search.objective.value(frame)
    rng = np.random.default_rng(search.seed)
    # Each resample is the rows of the seeds drawn, taken by position: a frame built from
    # pieces (pd.concat) for each of the resamples was most of a confirmation's time.
    column = frame["seed"].to_numpy()
    rows_of = {seed: np.flatnonzero(column == seed) for seed in seeds}
    draws = []
    for _ in range(BOOTSTRAP):
        picked = rng.choice(seeds, size=len(seeds))
        draws.append(
            search.objective.value(frame.take(np.concatenate([rows_of[s] for s in picked])))
        )
    lo, hi = np.nanpercentile(draws, [2.5, 97.5])
    bias = searched - value
    return {
        "seeds": seeds,
        "searched": searched,
        "fresh": value,
        "lo": float(lo),
        "hi": float(hi),
        "bias": bias,
        "bias_frac": bias / abs(value) if value else math.nan,
    }


def finish(store: SearchStore, pool: Pool, progress: SearchProgress | None = None) -> None:
    """After the search: best.toml, the shrunk minimal.toml with what each key it needs
    matters, and both confirmed on fresh seeds (each phase told to `progress`). An objective
    the same on every finished trial has no worst case: that is recorded (`constant`) and
    nothing is shrunk or confirmed."""
    search = store.search
    done = _complete(store)
    if not done or (len(done) > 1 and len({r["objective"] for r in done}) == 1):
        store.update(best=None, constant=done[0]["objective"] if done else None)
        return
    best = best_trial(store)
    values = {key: best[key] for key in search.space}
    store.update(best={"trial": best["trial"], "objective": best["objective"], "values": values})
    _write(store, "best.toml", values, f"trial {best['trial']}: {best['objective']!r}")
    if progress is not None:
        progress.phase(f"shrinking trial {best['trial']} towards the base scenario")
    minimal, objective, steps, without = shrink(search, pool, values, best["objective"])
    store.update(
        minimal={
            "objective": objective,
            "values": minimal,
            "needs": list(without),
            "without": without,
            "steps": steps,
        }
    )
    _write(store, "minimal.toml", minimal, f"shrunk from trial {best['trial']}: {objective!r}")
    if progress is not None:
        progress.phase(f"confirming best and minimal on {search.confirm_seeds} fresh seeds")
    store.update(
        confirmed={
            "best": confirm(search, pool, values, best["objective"]),
            "minimal": confirm(search, pool, minimal, objective),
        }
    )


def _write(store: SearchStore, name: str, values: dict[str, Any], what: str) -> None:
    search = store.search
    strategies = search.objective.strategies
    command = f"harness run {name}"
    if len(strategies) > 1:
        command += f" --compare {','.join(strategies)}"
    moved = ", ".join(f"{k} = {v!r}" for k, v in values.items())
    header = (
        f"Search {search.name}, {search.objective}\n{what}\n{moved}\n"
        f"{command} reproduces it on the search's seeds {search.seeds[0]}..{search.seeds[-1]}"
    )
    store.write_scenario(name, search.config(values).to_dict(), header)
