"""`harness search`: the searcher finds what a grid finds for less, best.toml reproduces its
objective, shrinking drops what does not matter, a resumed search is the uninterrupted one,
Ray (a two-node cluster) gives the trials of the plain loop, and every bad key is one line."""

from __future__ import annotations

import io
import itertools
import json
import math
import re
import shutil
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from harness import testing_signals
from harness.cli import main
from harness.config import ConfigError
from harness.config.search_file import load_search
from harness.presentation.search_report import bias_text
from harness.results.run_reader import load_run
from harness.results.search_folder import load_search_results
from harness.running.search_runner import run_search, run_trial, summaries
from tests.support.configs import CONFIGS
from tests.support.ray_runs import ray_cluster

SEARCHES = sorted((CONFIGS / "searches").glob("*.toml"))
HERD = CONFIGS / "seed-herd.toml"
REPLICAS = '"placement.replicas" = { int = [1, 8] }\n'


def search_file(
    tmp_path: Path,
    space: str,
    head: str = "",
    name: str = "s",
    objective: str = "maximize optimistic.cv_mean",
) -> Path:
    """A search over seed-herd made small: 8 model seconds, two seeds a trial."""
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[search]\nbase = "{HERD}"\nobjective = "{objective}"\nseeds = 2\n'
        f"confirm_seeds = 3\n{head}\n"
        f'[set]\n"run.duration_s" = 8.0\n[space]\n{space}\n'
    )
    return path


def quiet(argv: list[str]) -> tuple[int, str]:
    """`harness` with `argv`, its stdout swallowed: the exit code and stderr."""
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


def deterministic(trials: pd.DataFrame) -> pd.DataFrame:
    """trials.parquet without the columns of time taken, which no two runs share."""
    return trials.drop(columns=[c for c in trials if "wall_s" in c])


GRID_SPACE = (
    '"placement.replicas" = { int = [1, 6] }\n'
    '"heartbeat.interval_s" = { choices = [2.0, 5.0, 10.0, 20.0] }\n'
    '"workload.rate_per_s" = { choices = [10.0, 20.0, 40.0] }\n'
)


@pytest.mark.slow  # 96 trials
def test_the_default_searcher_reaches_95_percent_of_the_grid_maximum_in_a_third_of_its_trials(
    tmp_path,
):
    grid = load_search(search_file(tmp_path, GRID_SPACE, 'searcher = "grid"'))
    points = list(itertools.product(*(d.grid() for d in grid.space.values())))
    assert len(points) == 72
    best = -1.0
    for point in points:  # the maximum by brute force, without the searcher
        values = dict(zip(grid.space, point, strict=True))
        rows, _ = run_trial(grid.config(values), ["optimistic"], grid.seeds)
        best = max(best, grid.objective.value(summaries(rows)))
    budget = len(points) // 3
    path = search_file(tmp_path, GRID_SPACE, f"trials = {budget}", name="tpe")
    search = load_search(path)
    assert search.searcher == "tpe" and search.seed == 0  # the defaults
    out = tmp_path / "out"
    run_search(search, out, on_ray=False)
    meta, trials = load_search_results(out)
    assert len(trials) == budget
    assert meta["best"]["objective"] >= 0.95 * best, (meta["best"], best)


def test_best_toml_run_by_harness_run_gives_the_objective_the_search_recorded_exactly(tmp_path):
    space = f'{REPLICAS}"heartbeat.interval_s" = {{ low = 1.0, high = 30.0 }}\n'
    difference = "maximize optimistic.cv_mean - in_progress.cv_mean"
    path = search_file(tmp_path, space, "trials = 6", objective=difference)
    out = tmp_path / "out"
    assert quiet(["search", str(path), "--out", str(out), "--in-process", "--no-report"])[0] == 0
    meta, _ = load_search_results(out)
    for name, recorded in (
        ("best", meta["best"]["objective"]),
        ("minimal", meta["minimal"]["objective"]),
    ):
        run = tmp_path / name
        argv = ["run", str(out / f"{name}.toml"), "--compare", "optimistic,in_progress"]
        assert quiet([*argv, "--out", str(run), "--quiet", "--no-report"])[0] == 0
        _, frames = load_run(run)
        assert load_search(path).objective.value(frames["summary"]) == recorded


def test_shrinking_returns_a_key_that_does_not_matter_to_its_base_value(tmp_path):
    space = (
        '"placement.replicas" = { int = [2, 8] }\n'
        '"run.sample_interval_s" = { low = 0.25, high = 5.0 }\n'  # planted: sampling only
    )
    search = load_search(search_file(tmp_path, space, "trials = 6"))
    out = tmp_path / "out"
    run_search(search, out, on_ray=False)
    meta = json.loads((out / "search.json").read_text())
    assert meta["best"]["values"]["run.sample_interval_s"] != 1.0
    assert meta["minimal"]["values"]["run.sample_interval_s"] == 1.0  # seed-herd's
    assert "run.sample_interval_s" not in meta["minimal"]["needs"]
    assert meta["minimal"]["objective"] == meta["best"]["objective"]


def test_an_interrupted_search_resumed_gives_the_trials_of_an_uninterrupted_one(
    tmp_path, monkeypatch
):
    space = f'{REPLICAS}"heartbeat.interval_s" = {{ low = 1.0, high = 30.0, log = true }}\n'
    path = search_file(tmp_path, space, "trials = 12\nbatch = 4")
    straight = tmp_path / "straight"
    argv = ["search", str(path), "--in-process", "--quiet", "--no-report"]
    assert quiet([*argv, "--out", str(straight)])[0] == 0
    stopped = tmp_path / "stopped"
    monkeypatch.setattr(testing_signals, "_seen", {})
    monkeypatch.setenv(testing_signals.SIGNAL_AT, "trial#6=INT")  # mid-way through the second batch
    assert quiet([*argv, "--out", str(stopped)])[0] == 130
    meta, trials = load_search_results(stopped)
    assert len(trials) == 6 and not meta["completed"]
    monkeypatch.delenv(testing_signals.SIGNAL_AT)
    shown = io.StringIO()
    with redirect_stdout(shown):
        assert main(["report", str(stopped)]) == 0
    assert "the search stopped before it chose its best" in shown.getvalue()
    resume = ["search", "--resume", str(stopped), "--in-process", "--quiet", "--no-report"]
    assert quiet(resume)[0] == 0
    meta, trials = load_search_results(stopped)
    straight_meta, straight_trials = load_search_results(straight)
    assert meta["completed"] and len(trials) == 12
    pd.testing.assert_frame_equal(deterministic(trials), deterministic(straight_trials))
    for key in ("best", "minimal", "confirmed"):
        assert meta[key] == straight_meta[key]
    assert (stopped / "best.toml").read_text() == (straight / "best.toml").read_text()


@pytest.mark.ray
@pytest.mark.own_ray
@pytest.mark.shares_machine  # equal trials, not timing
def test_a_search_on_a_two_node_ray_cluster_gives_the_trials_of_the_plain_loop(tmp_path):
    space = '"placement.replicas" = { int = [1, 8] }\n"placement.k" = { choices = [2, 3, 5] }\n'
    search = load_search(search_file(tmp_path, space, "trials = 8"))
    plain = tmp_path / "plain"
    run_search(search, plain, on_ray=False)
    with ray_cluster(2) as cluster:
        on_ray = tmp_path / "ray"
        run_search(search, on_ray, address=cluster.address)
    _, ray_trials = load_search_results(on_ray)
    _, plain_trials = load_search_results(plain)
    pd.testing.assert_frame_equal(deterministic(ray_trials), deterministic(plain_trials))


@pytest.mark.slow  # two trials, the shrink, and the confirmation of two scenarios
@pytest.mark.parametrize("path", SEARCHES, ids=[p.stem for p in SEARCHES])
def test_every_shipped_search_runs(path, tmp_path):
    """On a budget of two trials, two seeds each, confirmed on five fresh seeds rather than
    its 200, in this process: the file, its base and its space are valid and every step
    (search, shrink, confirmation, report) runs."""
    text = path.read_text()
    assert re.search(r"^confirm_seeds = \d+", text, re.M)
    copy = tmp_path / "searches" / path.name
    copy.parent.mkdir()
    copy.write_text(re.sub(r"^confirm_seeds = \d+", "confirm_seeds = 5", text, flags=re.M))
    shutil.copy(HERD, tmp_path / HERD.name)  # the base, where the file names it
    out = tmp_path / "out"
    argv = ["search", str(copy), "--trials", "2", "--in-process"]
    argv += ["--set", "run.seeds=2", "--set", "run.duration_s=5"]
    code, err = quiet([*argv, "--out", str(out), "--quiet"])
    assert code == 0, err
    meta, trials = load_search_results(out)
    assert meta["completed"] and len(trials) == 2 and (out / "report.html").is_file()


BAD = [
    ("search.base", 'base = "nowhere.toml"', "does not exist"),
    ("search.objective", 'objective = "maximise optimistic.cv_mean"', "must be"),
    ("search.objective", 'objective = "maximize nosuch.cv_mean"', "nosuch"),
    ("search.objective", 'objective = "maximize optimistic.nosuch_mean"', "unknown metric"),
    ("search.objective", 'objective = "maximize optimistic.cv"', "needs an aggregate"),
    (
        "search.objective",
        'objective = "maximize optimistic.cv_mean / optimistic.cv_mean"',
        "itself",
    ),
    ("search.seeds", "seeds = 0", ""),
    ("search.trials", "trials = 0", "above 0"),
    ("search.trials", 'trials = "many"', "integer"),
    ("search.wall_s", "wall_s = -1", "above 0"),
    ("search.searcher", 'searcher = "hill"', "unknown searcher"),
    ("search.seed", "seed = -1", "at least 0"),
    ("search.batch", "batch = 0", "at least 1"),
    ("search.shrink_tolerance", "shrink_tolerance = 1.5", "[0, 1)"),
    ("search.confirm_seeds", "confirm_seeds = 0", "at least 1"),
    ("search.name", 'name = "a/b"', ""),
    ("search.max_creates", "max_creates = 0", "above 0"),
    ("search.colour", 'colour = "red"', "unknown key"),
]


def _file(tmp_path: Path, head: str = "", space: str = '"placement.k" = { int = [2, 5] }') -> Path:
    lines = {
        "base": f'base = "{HERD}"',
        "objective": 'objective = "maximize optimistic.cv_mean"',
        "trials": "trials = 4",
    }
    key = head.split("=")[0].strip()
    if key in lines:
        lines[key] = head
    elif head:
        lines["extra"] = head
    path = tmp_path / "bad.toml"
    path.write_text("[search]\n" + "\n".join(lines.values()) + f"\n[space]\n{space}\n")
    return path


def _refused(path: Path, key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_search(path)
    assert caught.value.key == key and reason in caught.value.reason, caught.value
    code, err = quiet(["search", str(path), "--in-process"])
    assert code == 2 and err.startswith("harness: error:") and err.count("\n") == 1, err
    assert key in err and "Traceback" not in err


@pytest.mark.parametrize(("key", "line", "reason"), BAD, ids=[f"{k}:{line}" for k, line, _ in BAD])
def test_a_bad_search_key_is_one_line_naming_it_and_exit_2(tmp_path, key, line, reason):
    _refused(_file(tmp_path, line), key, reason)


BAD_SPACE = [
    ("space.placement.nosuch", '"placement.nosuch" = { int = [1, 2] }', "unknown"),
    ("space.placement.k", '"placement.k" = { int = [5, 2] }', "empty range"),
    ("space.placement.k", '"placement.k" = { int = [3, 3] }', "empty range"),
    ("space.placement.k", '"placement.k" = { int = [0, 3] }', "0"),
    ("space.placement.k", '"placement.k" = 3', "must be"),
    ("space.placement.k.int", '"placement.k" = { int = [1] }', "[LOW, HIGH]"),
    ("space.placement.k.step", '"placement.k" = { int = [1, 4], step = 9 }', "at most"),
    ("space.heartbeat.interval_s.high", '"heartbeat.interval_s" = { low = 1.0 }', "missing"),
    (
        "space.heartbeat.interval_s.log",
        '"heartbeat.interval_s" = { low = 0.0, high = 2.0, log = true }',
        "low > 0",
    ),
    (
        "space.heartbeat.interval_s.wide",
        '"heartbeat.interval_s" = { low = 1.0, high = 2.0, wide = 1 }',
        "unknown",
    ),
    ("space.placement.k.choices", '"placement.k" = { choices = [] }', "non-empty"),
    ("space.placement.k.choices", '"placement.k" = { choices = [2, 2] }', "repeated"),
    (
        "space.placement.strategy",
        '"placement.strategy" = { choices = ["stale"] }',
        "fixed by the search",
    ),
    ("space", "", "names no key"),
]


@pytest.mark.parametrize(("key", "line", "reason"), BAD_SPACE, ids=[k for k, _, _ in BAD_SPACE])
def test_a_bad_space_entry_is_one_line_naming_it_and_exit_2(tmp_path, key, line, reason):
    _refused(_file(tmp_path, space=line), key, reason)


def test_a_grid_search_needs_a_discrete_space_and_runs_it_all(tmp_path):
    space = '"heartbeat.interval_s" = { low = 1.0, high = 2.0 }'
    _refused(_file(tmp_path, 'searcher = "grid"', space), "space.heartbeat.interval_s", "grid")
    path = search_file(tmp_path, '"placement.k" = { int = [2, 4] }', 'searcher = "grid"')
    out = tmp_path / "out"
    run_search(load_search(path), out, on_ray=False)
    _, trials = load_search_results(out)
    assert sorted(trials["placement.k"]) == [2, 3, 4]


def test_resume_refuses_a_folder_of_another_search_and_a_plain_out_refuses_a_search(tmp_path):
    path = search_file(tmp_path, '"placement.k" = { int = [2, 4] }', "trials = 2")
    out = tmp_path / "out"
    run_search(load_search(path), out, on_ray=False)
    code, err = quiet(["search", str(path), "--out", str(out), "--in-process"])
    assert code == 2 and "holds a search" in err
    code, err = quiet(["search", "--resume", str(tmp_path), "--in-process"])
    assert code == 2 and "holds no search" in err
    assert quiet(["report", str(out)]) == (0, "")
    assert (out / "report.html").is_file()


def test_points_over_max_creates_fail_without_running(tmp_path):
    """seed-herd for 8 s: 8 x rate creates a seed; a cap of 400 lets rates to 50/s run."""
    space = '"workload.rate_per_s" = { low = 10.0, high = 100.0 }\n'
    search = load_search(search_file(tmp_path, space, "trials = 8\nmax_creates = 400"))
    out = tmp_path / "out"
    run_search(search, out, on_ray=False)
    _, trials = load_search_results(out)
    over = trials["workload.rate_per_s"] * 8.0 > 400
    assert over.any() and (~over).any()
    assert (trials.loc[over, "state"] == "failed").all()
    assert trials.loc[over, "error"].str.startswith("over max_creates").all()
    assert (trials.loc[~over, "state"] == "complete").all()
    assert trials.loc[over, "wall_s"].eq(0).all()


def test_a_search_whose_every_trial_fails_exits_1_with_the_first_failure(tmp_path):
    """Every trial's scheduler dies before it serves (a Python without grpc, say): the search
    says so in one line naming the first failure, and exits 1, never 0 on nothing."""
    script = tmp_path / "scheduler.py"
    script.write_text('import sys\nsys.exit("No module named grpc")\n')
    path = search_file(tmp_path, REPLICAS, "trials = 2")
    command = f'external.command=["{sys.executable}", "{script}"]'
    out = tmp_path / "out"
    argv = ["search", str(path), "--in-process", "--quiet", "--no-report", "--out", str(out)]
    code, err = quiet([*argv, "--set", command])
    assert code == 1, err
    assert err.count("\n") == 1 and err.startswith("harness: error: all 2 trials failed"), err
    assert "the first: trial 0:" in err and "No module named grpc" in err
    accepted = ["search", "--resume", str(out), "--in-process", "--quiet", "--no-report"]
    assert quiet([*accepted, "--accept-failed"])[0] == 1  # none finished: never accepted


def test_a_search_some_of_whose_trials_fail_says_how_many_and_exits_1_unless_accepted(tmp_path):
    space = '"workload.rate_per_s" = { low = 10.0, high = 100.0 }\n'
    path = search_file(tmp_path, space, "trials = 8\nmax_creates = 400")
    argv = ["search", str(path), "--in-process", "--quiet", "--no-report"]
    code, err = quiet([*argv, "--out", str(tmp_path / "out")])
    _, trials = load_search_results(tmp_path / "out")
    failed = int((trials["state"] == "failed").sum())
    assert 0 < failed < len(trials)
    assert code == 1
    assert err.startswith(f"harness: {failed} of 8 trials failed; the first: trial "), err
    assert "over max_creates" in err
    code, err = quiet([*argv, "--out", str(tmp_path / "accepted"), "--accept-failed"])
    assert code == 0 and f"{failed} of 8 trials failed" in err


def test_a_constant_objective_is_said_in_one_line(tmp_path):
    """Nothing fails on seed-herd: every trial scores 0, and the search says just that (no
    `nan%`, no share of importance per key, no warning from the searcher's library)."""
    path = search_file(
        tmp_path, REPLICAS, "trials = 3", objective="maximize optimistic.failed_mean"
    )
    out = tmp_path / "out"
    stdout = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, redirect_stdout(stdout):
        warnings.simplefilter("always")
        err = io.StringIO()
        with redirect_stderr(err):
            code = main(["search", str(path), "--in-process", "--quiet", "--out", str(out)])
    assert code == 0 and err.getvalue() == "" and not caught, (err.getvalue(), caught)
    said = stdout.getvalue().splitlines()
    assert said[1] == (
        "the objective was 0 on every one of 3 finished trials: no scenario of the space is "
        "worse than another, so there is nothing to shrink or confirm"
    ), said
    assert "nan" not in stdout.getvalue().lower() and "%" not in stdout.getvalue()
    assert not (out / "best.toml").exists()
    page = (out / "report.html").read_text()
    assert "the objective was 0 on every one of 3 finished trials" in page


def test_the_bias_reads_right_whichever_its_sign():
    entry = {"bias": -0.159, "bias_frac": -0.1}
    assert bias_text(entry) == "the search's value is 0.159 below (-10%)"
    assert bias_text({"bias": 0.159, "bias_frac": 0.1}) == "the search's value is 0.159 above (10%)"
    assert bias_text({"bias": 0.2, "bias_frac": math.nan}) == "the search's value is 0.2 above"
    assert bias_text({"bias": 0.0, "bias_frac": 0.0}) == "the search's value is equal"


def test_every_key_the_minimal_scenario_needs_is_shown_to_matter(tmp_path):
    """Each key still moved in minimal.toml, alone back at its base, loses more than the
    shrink's tolerance (measured on the minimal scenario itself), and the output says by how
    much: never 0%."""
    space = f'{REPLICAS}"heartbeat.interval_s" = {{ low = 1.0, high = 30.0, log = true }}\n'
    path = search_file(tmp_path, space, "trials = 6")
    out = tmp_path / "out"
    stdout = io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(io.StringIO()):
        assert main(["search", str(path), "--in-process", "--quiet", "--out", str(out)]) == 0
    meta, _ = load_search_results(out)
    minimal, best = meta["minimal"], meta["best"]["objective"]
    assert minimal["needs"] and set(minimal["without"]) == set(minimal["needs"])
    floor = best - load_search(path).shrink_tolerance * abs(best)
    for key in minimal["needs"]:
        assert minimal["without"][key] < floor, key  # a maximised objective
    line = next(x for x in stdout.getvalue().splitlines() if x.startswith("what matters"))
    for key in minimal["needs"]:
        assert f"{key} " in line and "->" in line.split(key, 1)[1].split(",")[0]
    assert not re.search(r": -?0%", line), line


def test_a_search_on_an_engine_in_real_time_is_refused_before_it_starts(tmp_path):
    path = search_file(tmp_path, REPLICAS, "trials = 2")
    out = tmp_path / "out"
    code, err = quiet(["search", str(path), "--set", "run.engine=ray", "--out", str(out)])
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("harness: error: search.base: ") and "real time" in err
    assert not out.exists()
