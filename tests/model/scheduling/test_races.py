"""The races of the reference's section 6, measured end to end in the virtual engine.

Every claim is checked over several seeds of a shipped scenario. "Beyond the calls in flight"
means the part of believed-minus-true that the scheduler's own unanswered creates and kills
cannot explain: that part is what a race leaves behind."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import harness.wiring.scenario as scenario
from harness.config import Config, load
from harness.engines.virtual import VirtualEngine
from harness.model.scheduling.strategies.optimistic import OptimisticStrategy
from harness.results.seed_result import SeedResult
from harness.results.statistics import cv_shift
from tests.support.accounting import beyond_in_flight
from tests.support.configs import CONFIGS, SCENARIOS, runnable, shipped

TOL = 1e-9
pytestmark = pytest.mark.xdist_group("races")
"""One worker's (`-n`, `--dist loadgroup`): the seeds the tests share (`SHARED_SEEDS`) are kept
in that worker, run once rather than once per worker."""


def _config(name: str, strategy: str, *overrides: str) -> Config:
    return load(CONFIGS / f"{name}.toml", [f"placement.strategy={strategy}", *overrides])


SHARED_SEEDS = 6
"""Seeds below this are kept once run, per config: several tests run the same scenario and
strategy on their first seeds (churn's, race-erase's, race-double-count's and replicas'
optimistic, and reconcile), and a seed gives the same result every time it runs."""
_kept: dict[tuple[str, int], tuple[Config, SeedResult]] = {}


def _runs(config: Config, seeds: int) -> list[SeedResult]:
    key = json.dumps(config.to_dict(), sort_keys=True, default=str)
    results = []
    for seed in range(seeds):
        kept, result = _kept.get((key, seed), (None, None))
        if kept != config or result is None:
            result = VirtualEngine().run_seed(config, seed)
        if seed < SHARED_SEEDS:
            _kept[(key, seed)] = (config, result)
        results.append(result)
    return results


def _timeline(results: list[SeedResult]) -> pd.DataFrame:
    return pd.concat([r.timeline.to_pandas() for r in results], ignore_index=True)


def _cv_shift(base: list[SeedResult], other: list[SeedResult]) -> tuple[float, float, float]:
    """(mean, lo, hi) of the per-seed CV difference other - base, paired by seed even when
    the two ran different strategies."""
    base_summary, other_summary = (
        pd.DataFrame([r.summary for r in results]).assign(strategy="paired")
        for results in (base, other)
    )
    (row,) = cv_shift(base_summary, other_summary).itertuples()
    return row.shift, row.shift_lo, row.shift_hi


def test_optimistic_double_counts_on_churn_with_report_delay() -> None:
    results = _runs(_config("churn", "optimistic"), 3)
    over, _ = beyond_in_flight(_timeline(results))
    assert max(r.summary["err_over_max"] for r in results) > 0
    assert over.max() >= 2.0  # at least one whole sandbox counted twice


def test_double_count_scenario_isolates_the_add_after_the_rpc() -> None:
    """Nothing is killed there and reports arrive faster than the create RPC: only the
    merged fix double counts; the two thorough fixes never exceed their calls in flight."""
    over = {
        s: beyond_in_flight(_timeline(_runs(_config("race-double-count", s), 4)))[0]
        for s in ("optimistic", "sync_response", "reconcile")
    }
    assert (over["optimistic"] > 0).mean() > 0.02
    assert over["sync_response"].max() == over["reconcile"].max() == 0


def test_pre_rpc_under_counts_on_churn_with_report_delay() -> None:
    results = _runs(_config("churn", "optimistic_pre_rpc"), 3)
    _, under = beyond_in_flight(_timeline(results))
    assert max(r.summary["err_under_max"] for r in results) > 0
    assert under.max() >= 2.0  # at least one whole sandbox erased


def test_adding_before_the_rpc_erases_more_than_after_it() -> None:
    share = {
        s: (beyond_in_flight(_timeline(_runs(_config("race-erase", s), 4)))[1] > 0).mean()
        for s in ("optimistic", "optimistic_pre_rpc", "reconcile")
    }
    assert share["optimistic_pre_rpc"] > 1.3 * share["optimistic"] > 0
    assert share["reconcile"] == 0


@pytest.mark.slow  # a paired CV shift over 5 seeds of two strategies
def test_add_only_over_count_grows_between_reports_and_skews_load() -> None:
    # Aligned reports (every 20 s, delivered 50 ms later) so "time since the last report" is t.
    config = _config("churn", "optimistic_add_only", "heartbeat.phase=aligned")
    results = _runs(config, 5)
    tl = _timeline(results)
    phase = tl["t"] % config.heartbeat.interval_s
    early = tl.loc[(phase >= 1) & (phase <= 5), "cpu_error"].mean()
    late = tl.loc[phase >= 15, "cpu_error"].mean()
    assert late > 3 * early > 0
    baseline = _runs(_config("churn", "optimistic", "heartbeat.phase=aligned"), 5)
    _, lo, _ = _cv_shift(baseline, results)
    assert lo > 0, "add_only's CV is not above optimistic's"


@pytest.mark.parametrize("strategy", ["reconcile", "sync_response"])
@pytest.mark.parametrize("scenario", ["churn", "race-double-count", "race-erase"])
def test_one_replica_errs_only_by_its_calls_in_flight(strategy: str, scenario: str) -> None:
    """At every sample: -(creates in flight) <= believed - true <= kills in flight. A create
    the node has done but not answered may be missing; a kill likewise may still count."""
    config = _config(scenario, strategy, "run.duration_s=30", "run.sample_interval_s=0.01")
    tl = _timeline(_runs(config, 2))
    assert (tl["replica"] == 0).all()
    assert (tl["cpu_error"] >= -tl["in_progress_cpu"] - TOL).all()
    assert (tl["cpu_error"] <= tl["kill_in_progress_cpu"] + TOL).all()
    assert (tl["cpu_error"] != 0).any(), "the bound was never exercised"


def test_the_in_flight_bound_catches_the_merged_fix() -> None:
    """The same check fails for `optimistic`, so it has teeth."""
    config = _config("churn", "optimistic", "run.duration_s=30", "run.sample_interval_s=0.01")
    over, under = beyond_in_flight(_timeline(_runs(config, 2)))
    assert over.max() > 0 or under.max() > 0


MIN_SEEDS = 20
"""Seeds of a paired CV comparison, at least. Over the 3 seeds of the fault scenarios the 95%
bootstrap interval is exactly [min, max] of the three differences (each extreme is a resample
mean with probability 1/27 > 2.5%), so it lies above 0 only if every seed worsens. With 20
seeds its half-width is about 1.96 sd / sqrt(20) ~ 0.44 sd of the per-seed CV differences:
measured on every shipped scenario, at most 0.012 in CV and under 10% of optimistic's mean CV.
That is the tolerance: a mean worsening beyond it puts the whole interval above 0."""


@pytest.mark.slow
@pytest.mark.parametrize("path", runnable(SCENARIOS))
def test_reconcile_cv_is_no_worse_than_optimistic(path: Path) -> None:
    """Paired over the scenario's seeds, at least MIN_SEEDS of them (in brief where it is
    long): the 95% interval of CV(reconcile) - CV(optimistic) must not lie wholly above zero."""
    seeds = max(load(path).run.seeds, MIN_SEEDS)
    optimistic, reconcile = (
        _runs(shipped(path, [f"placement.strategy={s}"]), seeds)
        for s in ("optimistic", "reconcile")
    )
    # CV is NaN only when the nodes end with no sandbox at all (mean 0), and the interval
    # silently leaves NaN seeds out: every seed must end with sandboxes, so all of them pair.
    for results in (optimistic, reconcile):
        assert all(sum(r.nodes.column("sandboxes").to_pylist()) > 0 for r in results)
        assert all(np.isfinite(r.summary["cv"]) for r in results)
    mean, lo, hi = _cv_shift(optimistic, reconcile)
    assert lo <= 0, f"reconcile worse by {mean:.4f} [{lo:.4f}, {hi:.4f}] over {seeds} seeds"


@pytest.mark.slow
def test_every_replica_hears_every_report_and_optimistic_degrades_with_replicas() -> None:
    four = _runs(_config("replicas", "optimistic"), 6)
    tl = _timeline(four)
    assert sorted(tl["replica"].unique()) == [0, 1, 2, 3]
    one = _runs(_config("replicas", "optimistic", "placement.replicas=1"), 6)
    _, lo, _ = _cv_shift(one, four)
    assert lo > 0


def test_jitter_delivers_reports_out_of_order_reproducibly(monkeypatch) -> None:
    """With jitter above the interval, a node's reports overtake each other; the same seed
    gives the same arrival order."""
    arrivals: list[list[tuple[int, int]]] = []

    class Probe(OptimisticStrategy):
        def apply_report(self, report, now):
            arrivals[-1].append((report.node_id, report.seq))
            super().apply_report(report, now)

    monkeypatch.setattr(scenario, "make_strategy", lambda name, counts, options: Probe(counts))
    config = _config("race-erase", "optimistic", "heartbeat.jitter_ms=3000", "run.duration_s=20")
    for _ in range(2):
        arrivals.append([])
        VirtualEngine().run_seed(config, 0)
    assert arrivals[0] == arrivals[1]
    seen: dict[int, int] = {}
    overtaken = 0
    for node, seq in arrivals[0]:
        overtaken += seq < seen.get(node, 0)
        seen[node] = max(seq, seen.get(node, 0))
    assert overtaken > 0
