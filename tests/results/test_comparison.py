"""`harness compare` and `harness run --baseline`: verdicts per summary column against a baseline
run, paired seed by seed where the two runs saw the same creates, unpaired otherwise."""

from __future__ import annotations

import functools
import io
import json
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cli import NOT_JUDGED, THRESHOLD_FAILED, main
from harness.engines import real_time
from harness.model.scheduling.placement.plugin import Filter
from harness.presentation.comparison_view import WIDTH, comparison_lines
from harness.results.comparison import (
    ALPHA,
    CompareError,
    compare,
    load_side,
    noise_bands,
    paired_test,
    ranks,
    unpaired_test,
)
from harness.results.machine import code_commit
from harness.results.summary_columns import FAITHFUL, OVERLOADED, SUMMARY_COLUMNS, Pace
from harness.results.time_keeping import run_verdict
from tests.support.configs import CONFIGS

pytestmark = pytest.mark.xdist_group("comparison")
"""One worker's (`-n`, `--dist loadgroup`): the module's runs (`runs`) are made once, not once
per worker that takes one of its tests."""

HERD = str(CONFIGS / "seed-herd.toml")
SEEDS = ["--seeds", "8"]
LOPSIDED = 'placement.filters=["tests.results.test_comparison:Lopsided"]'


class Lopsided(Filter):
    """A planted regression: a quarter of the nodes never take a sandbox (the balance gets
    worse) and one create in 25 finds no node at all (failures)."""

    name = "lopsided"

    def passes(self, scheduler, node, req, now):
        return node % 4 != 0 and req.sandbox_id % 25 != 7


def _run(out: Path, *more: str) -> Path:
    with redirect_stdout(io.StringIO()):
        code = main(["run", HERD, *SEEDS, "--out", str(out), "--quiet", "--no-report", *more])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A baseline, the same run again, the planted regression, and a run on other seeds."""
    root = tmp_path_factory.mktemp("compare")
    return {
        "base": _run(root / "base"),
        "again": _run(root / "again"),
        "worse": _run(root / "worse", "--set", LOPSIDED),
        "other_seeds": _run(root / "other", "--set", "run.first_seed=100"),
    }


def _compare(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["compare", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_error_line(err: str, *parts: str) -> None:
    assert err.startswith("harness: error: ") and err.count("\n") == 1, err
    for part in parts:
        assert part in err, (part, err)


def test_the_same_config_and_seeds_again_is_unchanged_everywhere(runs, capsys):
    code, out, err = _compare(capsys, runs["base"], runs["again"], "--fail-on", "worse")
    assert code == 0, err
    assert "paired by (strategy, seed)" in out
    rows = pd.read_parquet(runs["again"] / "comparison.parquet")
    assert len(rows) > 20 and set(rows["verdict"]) == {"~"}
    assert set(rows["test"]) == {"paired"}
    assert "engine_wall_s" not in set(rows["column"])  # wall time only when asked
    assert all(len(line) <= WIDTH for line in out.splitlines()[:-1]), out


def test_a_planted_regression_is_worse_in_balance_and_failures(runs, capsys):
    code, out, err = _compare(capsys, runs["base"], runs["worse"])
    assert code == 2  # the configs differ, and nothing allowed it
    _one_error_line(err, "placement.filters", "--allow-diff")
    code, out, err = _compare(
        capsys,
        runs["base"],
        runs["worse"],
        "--allow-diff",
        "placement.filters",
        "--fail-on",
        "worse",
    )
    assert code == THRESHOLD_FAILED
    assert "worse than the baseline" in err and "cv (stale)" in err
    assert "+filter:tests.results.test_comparison:Lopsided" in out  # the plugins that ran, compared
    rows = pd.read_parquet(runs["worse"] / "comparison.parquet").set_index("column")
    for column in ("cv", "failed_frac", "failed_no_candidate", "max_count"):
        assert rows.loc[column, "verdict"] == "worse", column
        assert rows.loc[column, "p"] < ALPHA
        assert rows.loc[column, "change_lo"] > 0  # the whole interval on the worse side
    assert rows.loc["placed", "verdict"] == "worse"  # higher is better: fewer placed
    # The verdicts come first, the unchanged folded into a count.
    table = out.splitlines()
    first = next(i for i, line in enumerate(table) if line.startswith("column "))
    assert table[first + 1].split()[-1] == "worse"
    assert any(line.endswith("columns unchanged (~)") for line in table)
    # Only the columns named trip --fail-on.
    code, _, _ = _compare(
        capsys, runs["base"], runs["worse"], "--allow-diff", "placement", "--fail-on", "cv"
    )
    assert code == THRESHOLD_FAILED
    code, _, _ = _compare(
        capsys,
        runs["base"],
        runs["worse"],
        "--allow-diff",
        "placement",
        "--fail-on",
        "p50_place_ms",
    )
    assert code == 0


def test_a_wide_noise_band_calls_the_regression_unchanged(runs, capsys):
    code, _, _ = _compare(
        capsys,
        runs["base"],
        runs["worse"],
        "--allow-diff",
        "placement.filters",
        "--columns",
        "cv",
        "--min-effect",
        "cv=200%",
        "--fail-on",
        "worse",
    )
    assert code == 0


def test_other_seeds_are_compared_unpaired(runs, capsys):
    """Which seeds ran is not a difference of config: no --allow-diff is needed."""
    code, out, err = _compare(capsys, runs["base"], runs["other_seeds"])
    assert code == 0, err
    assert "run.first_seed" not in out
    assert "unpaired: the two runs have other seeds" in out
    rows = pd.read_parquet(runs["other_seeds"] / "comparison.parquet")
    assert set(rows["test"]) == {"unpaired"}


def test_ray_runs_are_compared_unpaired_and_the_output_says_why(runs, tmp_path, capsys):
    ray = tmp_path / "ray"
    shutil.copytree(runs["again"], ray)
    meta = json.loads((ray / "run.json").read_text())
    meta["engine"] = "ray"
    (ray / "run.json").write_text(json.dumps(meta))
    code, out, _ = _compare(capsys, runs["base"], ray)
    assert code == 0
    assert "unpaired: the ray engine runs in real time" in out
    assert set(pd.read_parquet(ray / "comparison.parquet")["test"]) == {"unpaired"}


def test_bad_input_is_one_line_and_exit_2(runs, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    damaged = tmp_path / "damaged"
    shutil.copytree(runs["again"], damaged)
    (damaged / "summary.parquet").write_bytes(b"not parquet")
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(
        json.dumps(
            {"name": "s", "keys": [], "grid_keys": [], "seeds": [0], "identity": {}, "cells": []}
        )
    )
    burst = tmp_path / "burst"
    with redirect_stdout(io.StringIO()):
        args = ["run", str(CONFIGS / "seed-burst.toml"), "--seeds", "1", "--quiet"]
        assert main([*args, "--no-report", "--out", str(burst)]) == 0
    base = runs["base"]
    cases = [
        ((tmp_path / "missing", base), "is not a folder"),
        ((empty, base), "not a results folder"),
        ((base, damaged), "summary.parquet"),
        ((base, sweep), "holds a run"),
        ((base, burst), "the configs differ in"),
        ((base, runs["again"], "--columns", "cv,nope"), "nope"),
        ((base, runs["again"], "--columns", "strategy"), "not a result"),
        ((base, runs["again"], "--fail-on", "nope"), "nope"),
        ((base, runs["again"], "--min-effect", "cv=lots"), "--min-effect"),
    ]
    for args, says in cases:
        code, _, err = _compare(capsys, *args)
        assert code == 2, (args, err)
        _one_error_line(err, says)


def test_run_with_a_baseline_compares_once_it_has_run(runs, tmp_path, capsys):
    out = tmp_path / "new"
    args = ["run", HERD, *SEEDS, "--out", str(out), "--quiet", "--no-report"]
    code = main([*args, "--baseline", str(runs["base"]), "--fail-on", "worse"])
    assert code == 0
    assert "verdicts: " in capsys.readouterr().out
    assert (out / "comparison.parquet").is_file()
    worse = tmp_path / "worse"
    args = ["run", HERD, *SEEDS, "--out", str(worse), "--quiet", "--no-report", "--set", LOPSIDED]
    more = ["--baseline", str(runs["base"]), "--allow-diff", "placement.filters"]
    assert main([*args, *more, "--fail-on", "failed_frac"]) == THRESHOLD_FAILED
    # A bad baseline is refused before anything runs.
    never = tmp_path / "never"
    args = ["run", HERD, *SEEDS, "--out", str(never), "--quiet", "--baseline", str(tmp_path)]
    assert main(args) == 2
    assert not never.exists()
    capsys.readouterr()


def test_a_run_and_itself_compare_in_80_columns(runs):
    result = compare(
        load_side(runs["base"]), load_side(runs["worse"]), allow=["placement"], real_time=real_time
    )
    lines = comparison_lines(result)
    assert all(len(line) <= WIDTH for line in lines), [line for line in lines if len(line) > WIDTH]


def test_configs_that_differ_without_leave_are_refused(runs):
    with pytest.raises(CompareError, match=r"configs differ in placement\.filters"):
        compare(load_side(runs["base"]), load_side(runs["worse"]), real_time=real_time)


def test_the_paired_test_finds_a_shift_the_unpaired_one_cannot():
    """A small shift under a large spread between seeds: seed by seed it is plain, between
    two groups it is lost in the spread."""
    rng = np.random.default_rng(1)
    base = rng.normal(0.6, 0.05, 20)
    new = base + 0.005 + rng.normal(0, 0.001, 20)
    assert paired_test(base, new)[2] < 0.001
    assert unpaired_test(base, new)[2] > ALPHA
    lo, hi, _ = paired_test(base, new)
    assert lo < 0.005 < hi


def test_identical_values_have_p_1_and_an_empty_interval():
    same = np.array([1.0, 2.0, 3.0])
    assert paired_test(same, same) == (0.0, 0.0, 1.0)
    assert unpaired_test(np.ones(4), np.ones(5)) == (0.0, 0.0, 1.0)


def test_ranks_share_ties():
    assert ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_noise_bands_default_per_kind_and_are_replaced_by_flags():
    bands = noise_bands([])
    assert (bands["cv"].value, bands["cv"].relative) == (0.01, True)
    assert (bands["failed_frac"].value, bands["failed_frac"].relative) == (0.001, False)
    bands = noise_bands(["5%", "failed_frac=0.01"])
    assert (bands["cv"].value, bands["cv"].relative) == (0.05, True)
    assert (bands["failed_frac"].value, bands["failed_frac"].relative) == (0.01, False)


def test_run_json_records_the_machine(runs):
    machine = json.loads((runs["base"] / "run.json").read_text())["machine"]
    assert machine["cpu_count"] >= 1 and machine["memory_bytes"] > 0 and machine["cpu_model"]
    assert machine["harness_path"] in ("compiled", "pure Python")
    assert {"python", "ray", "numpy", "pyarrow", "harness", "harness_location"} <= set(machine)


def test_time_based_columns_are_compared_with_a_warning_across_machines(runs, tmp_path, capsys):
    moved = tmp_path / "moved"
    shutil.copytree(runs["again"], moved)
    meta = json.loads((moved / "run.json").read_text())
    meta["machine"]["cpu_model"] = "another CPU"
    (moved / "run.json").write_text(json.dumps(meta))
    # The virtual engine's figures are simulated: no warning but for wall time, when asked.
    code, out, _ = _compare(capsys, runs["base"], moved)
    assert code == 0 and "warning" not in out
    assert not pd.read_parquet(moved / "comparison.parquet")["machine_warning"].any()
    code, out, _ = _compare(capsys, runs["base"], moved, "--columns", "cv,engine_wall_s")
    assert "warning: machines differ (cpu_model" in out
    rows = pd.read_parquet(moved / "comparison.parquet").set_index("column")
    assert rows.loc["engine_wall_s", "machine_warning"] and not rows.loc["cv", "machine_warning"]
    # On Ray, every time in model time is the machine's too.
    base, moved = _as_ray(runs["base"], tmp_path / "base"), _as_ray(moved, tmp_path / "on_ray")
    assert _compare(capsys, base, moved)[0] == 0
    rows = pd.read_parquet(moved / "comparison.parquet").set_index("column")
    assert rows.loc["p99_place_ms", "machine_warning"] and not rows.loc["cv", "machine_warning"]


@pytest.mark.slow  # draws the whole report
def test_the_report_of_a_compared_run_shows_the_changes(runs, tmp_path, capsys):
    from harness.presentation.html_report import write_report

    compared = tmp_path / "compared"
    shutil.copytree(runs["worse"], compared)
    _compare(capsys, runs["base"], compared, "--allow-diff", "placement.filters")
    page = write_report(compared).read_text()
    section = page.split("<h2>Against the baseline</h2>", 1)[1]
    assert 'alt="changes from the baseline"' in section
    assert "configs differ, as allowed, in placement.filters" in section
    assert "<td>worse</td>" in section.split("<h2>", 1)[0]


def test_a_baseline_of_another_config_is_refused_before_the_run(runs, tmp_path, capsys):
    never = tmp_path / "never"
    args = ["run", HERD, *SEEDS, "--out", str(never), "--quiet", "--set", LOPSIDED]
    assert main([*args, "--baseline", str(runs["base"])]) == 2
    _one_error_line(capsys.readouterr().err, "placement.filters")
    assert not never.exists()


def test_a_baseline_from_an_older_harness_is_compared_on_what_both_have(runs, tmp_path, capsys):
    """A key or summary column added since the baseline ran is noted, not held against it."""
    older = tmp_path / "older"
    shutil.copytree(runs["base"], older)
    meta = json.loads((older / "run.json").read_text())
    del meta["config"]["placement"]["alpha"]
    (older / "run.json").write_text(json.dumps(meta))
    summary = pd.read_parquet(older / "summary.parquet").drop(columns=["util_cv"])
    summary.to_parquet(older / "summary.parquet")
    code, out, err = _compare(capsys, older, runs["again"], "--fail-on", "worse")
    assert code == 0, err
    assert "keys in one config only" in out and "placement.alpha" in out
    assert "util_cv" not in set(pd.read_parquet(runs["again"] / "comparison.parquet")["column"])
    assert "columns in one run only, not compared: util_cv" in " ".join(out.split())


def test_the_rank_test_approximation_agrees_with_permutations():
    """From NORMAL_FROM values a group, the normal approximation's p-value is within a few
    hundredths of the permutation test's (what a smaller group uses)."""
    from harness.results import comparison

    rng = np.random.default_rng(3)
    for shift in (0.0, 0.3, 0.8):
        base, new = rng.normal(0, 1, 12), rng.normal(shift, 1, 12)
        normal = unpaired_test(base, new)[2]
        comparison.NORMAL_FROM, saved = 100, comparison.NORMAL_FROM
        try:
            permuted = unpaired_test(base, new)[2]
        finally:
            comparison.NORMAL_FROM = saved
        assert abs(normal - permuted) < 0.03, (shift, normal, permuted)


@pytest.mark.slow  # 60 seeds and 100 comparisons; bench/baseline_compare.py runs the full one
def test_unpaired_comparisons_of_the_same_code_rarely_call_anything_worse(tmp_path):
    """A/A on disjoint seeds: the share of `worse` verdicts stays under the nominal 2.5%
    (p < 0.05, two-sided), even with no noise band."""
    from harness.results.comparison import Side

    pool = _run(tmp_path / "pool", "--seeds", "60")
    summary = pd.read_parquet(pool / "summary.parquet")
    meta = {"engine": "virtual", "machine": {}, "plugins": []}
    rng = np.random.default_rng(0)
    verdicts = []

    @functools.cache  # whether a column varies is the pool's, the same in every draw
    def varies(column: str) -> bool:
        return summary[column].nunique() > 1

    for _ in range(100):
        drawn = rng.permutation(summary["seed"].to_numpy())
        a, b = (summary[summary["seed"].isin(drawn[i * 15 : (i + 1) * 15])] for i in (0, 1))
        sides = [Side(Path(n), "run", meta, s, {}) for n, s in (("a", a), ("b", b))]
        rows = compare(*sides, min_effect=["0"], real_time=real_time).rows
        varying = [c for c in rows["column"] if varies(c)]
        verdicts += list(rows[rows["column"].isin(varying)]["verdict"])
    assert len(verdicts) >= 500
    assert sum(v == "worse" for v in verdicts) / len(verdicts) <= 0.025


def _sweep(out: Path, *overrides: str) -> Path:
    """A two-cell sweep of seed-herd (K of 2 and 3) written as `harness sweep` writes one,
    each seed run here rather than as a Ray task."""
    from harness.config.sweep_file import load_sweep
    from harness.results.sweep_folder import SweepStore
    from harness.running.sweep_runner import run_seed

    file = out.parent / f"{out.name}.toml"
    file.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\n\n[grid]\n"placement.k" = [2, 3]\n'
    )
    sweep = load_sweep(file, list(overrides), seeds=6)  # the fewest a sign-flip test can call
    store = SweepStore(out, sweep)
    for cell in sweep.cells:
        store.add_cell(cell, [run_seed(cell.config, s)[0] for s in sweep.seeds], 0.0)
    store.close()
    return out


def test_sweeps_are_compared_cell_by_cell(tmp_path, capsys):
    base, again = _sweep(tmp_path / "base"), _sweep(tmp_path / "again")
    worse = _sweep(tmp_path / "worse", LOPSIDED)
    code, out, err = _compare(capsys, base, again, "--fail-on", "worse")
    assert code == 0, err
    rows = pd.read_parquet(again / "comparison.parquet")
    assert set(rows["cell_values"]) == {"placement.k=2", "placement.k=3"}
    assert set(rows["verdict"]) == {"~"} and set(rows["test"]) == {"paired"}
    code, out, err = _compare(capsys, base, worse, "--fail-on", "cv")
    assert code == 2
    _one_error_line(err, "placement.filters")
    code, out, err = _compare(
        capsys, base, worse, "--allow-diff", "placement.filters", "--fail-on", "cv"
    )
    assert code == THRESHOLD_FAILED
    assert "cell placement.k=2: stale" in out and "cell placement.k=3: stale" in out
    cv = pd.read_parquet(worse / "comparison.parquet").query("column == 'cv'")
    assert list(cv["verdict"]) == ["worse", "worse"]


def _as_ray(run: Path, out: Path, overloaded: tuple[int, ...] = (), slower: float = 1.0) -> Path:
    """A copy of a virtual run as a Ray run would have written it: its engine, and a real
    summary with its time-keeping verdict per seed (`overloaded` those seeds, their model-time
    figures `slower` times the virtual engine's, as a stalled machine makes them); run.json's
    verdict read from that summary, as the runner reads it."""
    shutil.copytree(run, out)
    summary = pd.read_parquet(out / "summary.parquet")
    over = summary["seed"].isin(overloaded)
    summary["engine"] = "ray"
    summary["time_keeping"] = np.where(over, OVERLOADED, FAITHFUL)
    summary["overload_figure"] = np.where(over, "report_lateness_ms", None)
    summary["overload_value"] = np.where(over, 2500.0, np.nan)
    summary["overload_limit"] = np.where(over, 250.0, np.nan)
    summary["fitting_time_scale"] = np.where(over, 10.0, np.nan)
    summary["time_scale"] = 1.0
    paced = [c.name for c in SUMMARY_COLUMNS if c.kind.pace is Pace.REAL_TIME and c.name in summary]
    for column in paced:
        summary.loc[over, column] = summary.loc[over, column].astype(float) * slower
    summary.to_parquet(out / "summary.parquet")
    meta = json.loads((out / "run.json").read_text())
    meta["engine"] = meta["config"]["run"]["engine"] = "ray"
    meta["time_keeping"] = run_verdict(summary)
    (out / "run.json").write_text(json.dumps(meta))
    return out


def test_an_overloaded_run_is_not_judged_and_its_seeds_are_named(runs, tmp_path, capsys):
    """A planted regression, but run on Ray in time in only half of its seeds: the columns of
    the overloaded strategy are not called worse (nor better), the seeds are named, and the
    exit code is its own; `--faithful-only` judges the seeds that kept time."""
    base = _as_ray(runs["base"], tmp_path / "base")
    worse = _as_ray(runs["worse"], tmp_path / "worse", overloaded=(1, 2, 4, 6), slower=1000.0)
    allow = ["--allow-diff", "placement.filters", "--fail-on", "worse"]
    code, out, err = _compare(capsys, base, worse, *allow)
    assert code == NOT_JUDGED, err
    assert "ran overloaded in stale seeds 1, 2, 4, 6" in err and "--faithful-only" in err
    assert "overloaded in stale seeds 1, 2, 4, 6" in " ".join(out.split())
    rows = pd.read_parquet(worse / "comparison.parquet")
    assert set(rows["verdict"]) == {"overloaded"}
    assert "worse than the baseline" not in err
    code, out, err = _compare(capsys, base, worse, *allow, "--faithful-only")
    assert code == THRESHOLD_FAILED, err  # the regression, on the four seeds that kept time
    rows = pd.read_parquet(worse / "comparison.parquet").set_index("column")
    assert set(rows["n_new"]) == {4} and set(rows["n_base"]) == {8}
    assert rows.loc["cv", "verdict"] == "worse"
    place = rows.loc["p50_place_ms"]
    assert place["new"] < 10 * place["base"]  # the thousandfold slower seeds are left out


def test_engine_bound_columns_are_not_compared_between_engines(runs, tmp_path, capsys):
    """A virtual run against a Ray run that kept time: its placement latencies and RPC times
    are the engine's pace, not a regression; counted figures are compared, unpaired."""
    ray = _as_ray(runs["again"], tmp_path / "ray", overloaded=(), slower=1.0)
    summary = pd.read_parquet(ray / "summary.parquet")
    paced = [c.name for c in SUMMARY_COLUMNS if c.kind.pace is not Pace.NEVER]
    for column in ("p50_place_ms", "p99_place_ms", "create_rpc_p99_ms"):
        if column in summary:
            summary[column] = summary[column].astype(float) * 1000 + 1.0
    summary.to_parquet(ray / "summary.parquet")
    code, out, err = _compare(
        capsys, runs["base"], ray, "--allow-diff", "run.engine", "--fail-on", "worse"
    )
    assert code == 0, err
    rows = pd.read_parquet(ray / "comparison.parquet")
    assert not set(rows["column"]) & set(paced)
    assert {"cv", "failed_frac"} <= set(rows["column"]) and set(rows["test"]) == {"unpaired"}
    assert "not compared, as one engine runs in real time" in " ".join(out.split())


def test_the_header_names_each_runs_commit(runs, tmp_path, capsys):
    """Two runs of the same version but other code are told apart by their commits."""
    other = tmp_path / "other"
    shutil.copytree(runs["again"], other)
    meta = json.loads((other / "run.json").read_text())
    meta["machine"] |= {"git_commit": "0123456789abcdef" * 2 + "01234567", "git_dirty": True}
    (other / "run.json").write_text(json.dumps(meta))
    code, out, _ = _compare(capsys, runs["base"], other)
    assert code == 0
    said = " ".join(out.split())
    assert "-> 0.1.0 (" in said and "at 0123456789ab with uncommitted changes" in said
    recorded = json.loads((runs["base"] / "run.json").read_text())["machine"]
    if recorded["git_commit"] is not None:  # this harness runs from a git checkout
        assert f"at {recorded['git_commit'][:12]}" in said


def test_the_code_commit_is_none_outside_a_git_checkout_or_without_git(tmp_path, monkeypatch):
    (tmp_path / "__init__.py").write_text("")
    assert code_commit(tmp_path) == (None, None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no git to be found
    assert code_commit() == (None, None)
