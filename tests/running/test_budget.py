"""The budget: a scenario too big for the machine, or too long, is refused before anything runs
with one line naming the key that makes it so; --force goes on; every shipped scenario fits a
small machine."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys

import pytest

import harness.results.machine
import harness.running.runner
import harness.running.sweep_runner
from harness.cli import main
from harness.config import ConfigError, from_dict, load
from harness.config.sweep_file import load_sweep
from harness.engines.virtual import VirtualEngine
from harness.model.scheduling.strategies import STRATEGIES
from harness.results.machine import Machine
from harness.running import cost_check as budget
from harness.running.cost_check import check_run, check_sweep, seed_terms
from harness.wiring.demand_estimate import demand
from tests.support.configs import CONFIGS, SCENARIOS, SWEEPS, runnable, shipped

SMALL = Machine(memory_bytes=4e9, cpus=2)
"""A small machine: 4 GB available, 2 cores. Every shipped scenario must fit it."""
HERD = str(CONFIGS / "seed-herd.toml")


class Started(Exception):
    """The run or the sweep was started: the budget let it through."""


@pytest.fixture
def small_machine(monkeypatch):
    """The CLI sees `SMALL`, and starting a run or a sweep raises `Started` (nothing runs, so a
    scenario the budget wrongly lets through fails fast instead of filling the memory)."""

    def started(*args, **kwargs):
        raise Started

    # The CLI imports these inside its commands (a config error loads no data library).
    monkeypatch.setattr(harness.results.machine, "this_machine", lambda: SMALL)
    monkeypatch.setattr(harness.running.runner, "run", started)
    monkeypatch.setattr(harness.running.sweep_runner, "run_sweep", started)


@pytest.mark.parametrize(
    "args,key",
    [
        (["--set", "cluster.nodes=10000000"], "cluster.nodes"),
        (["--set", "cluster.nodes=2000000000"], "cluster.nodes"),
        (["--set", "workload.arrival=closed", "--set", "workload.clients=100000000"], "clients"),
        (["--set", "placement.replicas=1000000"], "placement.replicas"),
        (["--set", "run.duration_s=1e12"], "run.duration_s"),
        (["--seeds", "2000000000"], "run.seeds"),
        (["--set", "workload.rate_per_s=1e9"], "workload.rate_per_s"),
        (["--set", "workload.arrival=burst", "--set", "workload.burst=1000000000"], "burst"),
        (["--set", "heartbeat.interval_s=1e-9"], "heartbeat.interval_s"),
        (["--set", "heartbeat.interval_s=1e-9", "--seeds", "1"], "heartbeat.interval_s"),
        (["--set", "run.sample_interval_s=1e-9"], "run.sample_interval_s"),
        (["--engine", "ray", "--set", "ray.client_pools=40"], "ray.client_pools"),
        (["--engine", "ray", "--set", "run.duration_s=100000", "--seeds", "1"], "duration_s"),
        (["--compare", ",".join(STRATEGIES), "--seeds", "100000000"], "run.seeds"),
        (["--seeds", "64", "--set", "run.workers=64"], "run.workers"),
    ],
)
def test_a_scenario_too_big_or_too_long_is_refused_up_front(
    args, key, small_machine, tmp_path, capsys
):
    out = tmp_path / "out"
    assert main(["run", HERD, *args, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("harness: error: "), err
    named, reason = err.removeprefix("harness: error: ").split(": ", 1)
    assert named.endswith(key) and reason.startswith("too "), err
    assert "--force runs it anyway" in reason
    assert not out.exists()


def test_force_goes_on(small_machine, tmp_path):
    argv = ["run", HERD, "--set", "cluster.nodes=2000000000", "--out", str(tmp_path / "o")]
    with pytest.raises(Started):
        main([*argv, "--force"])


def test_a_sweep_too_big_is_refused_and_force_goes_on(small_machine, tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(f'[sweep]\nbase = "{HERD}"\n[grid]\n"cluster.nodes" = [10, 100000000]\n')
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error: cluster.nodes: too big for this machine: the sweep")
    assert err.count("\n") == 1 and not out.exists()
    with pytest.raises(Started):
        main(["sweep", str(path), "--out", str(out), "--quiet", "--force"])
    path.write_text(f'[sweep]\nbase = "{HERD}"\n[grid]\n"heartbeat.interval_s" = [20, 1e-9]\n')
    assert main(["sweep", str(path), "--out", str(out), "--quiet"]) == 2
    assert "heartbeat.interval_s: too long" in capsys.readouterr().err


@pytest.mark.parametrize("path", runnable(SCENARIOS))
def test_every_shipped_scenario_fits_a_small_machine(path):
    """Under every strategy at once, on either engine, with Ray here or on a cluster; a long
    one in brief (the hour of trace whole: `test_the_hour_of_alibaba_2018_fits_a_small_machine`)."""
    config = shipped(path)
    for engine in ("virtual", "ray"):
        for remote in (False, True):
            check_run(config.with_value("run.engine", engine), len(STRATEGIES), SMALL, remote)


@pytest.mark.slow
@pytest.mark.parametrize("path", runnable([CONFIGS / "alibaba-2018.toml"]))
def test_the_hour_of_alibaba_2018_fits_a_small_machine(path):
    """The whole hour (its 3,056,432 creates counted from its import) under three strategies,
    of one seed and of three, on either engine: a seed holds its model, the rows its logs hold
    until they flush and the passes' bounded structures, two at once in Ray workers, and the
    driver gathers and reports a row group and a batch at a time: about the same peak whatever
    the seeds, well within 4 GB. On a machine too small for two seeds at once beside Ray it is
    refused."""
    config = load(path)
    assert demand(config).creates == 3_056_432
    peaks = []
    for seeds in (1, 3):
        for engine in ("virtual", "ray"):
            run = config.with_values({"run.seeds": seeds, "run.engine": engine})
            peaks.append(check_run(run, 3, SMALL, remote=False).peak_bytes)
    # The same of one seed and of three but for the nodes table the report reads whole.
    assert peaks[2:] == pytest.approx(peaks[:2], rel=0.01)
    assert max(peaks) < 0.5 * SMALL.memory_bytes
    with pytest.raises(ConfigError, match=r"too big for this machine: the run, 2 seeds at once"):
        check_run(config, 3, Machine(memory_bytes=5e8, cpus=2), remote=False)


LONG = ["--set", "workload.rate_per_s=20000", "--set", "run.duration_s=100"]
LONG += ["--set", "workload.lifetime_s=0.1"]
"""seed-herd at 20,000 creates a second for 100 s, each living 0.1 s (within its cluster's
room): 20 seeds of some 4 million rows each."""
ESTIMATE = re.compile(
    r"harness: estimate: ~[\d.,]+ [kMG]?B at the peak \(2 seeds at once, each ~[\d.,]+ [kMG]?B, "
    r"and Ray\), ~[\d.,]+ (s|min|h) of computing on 2 cores\n"
)


def test_a_long_run_says_its_estimate_before_it_starts_and_a_short_one_does_not(
    small_machine, tmp_path, capsys
):
    """On the small machine (2 cores), a long run of seed-herd runs two seeds at once: one line
    on stderr says its peak, what each seed and Ray hold, and its computing, before the run
    starts (here stubbed); --force says it too, --quiet does not. seed-herd as shipped, a
    couple of seconds of computing, starts without a word."""
    out = str(tmp_path / "out")
    for force in ([], ["--force"]):
        with pytest.raises(Started):
            main(["run", HERD, *LONG, *force, "--out", out])
        assert ESTIMATE.fullmatch(capsys.readouterr().err)
    for quiet, args in ((["--quiet"], LONG), ([], [])):
        with pytest.raises(Started):
            main(["run", HERD, *args, "--out", out, *quiet])
        assert capsys.readouterr().err == ""


def test_a_long_sweep_says_its_estimate_before_it_starts(small_machine, tmp_path, capsys):
    path = tmp_path / "s.toml"
    grid = '"placement.strategy" = ["stale", "optimistic"]'
    path.write_text(f'[sweep]\nbase = "{HERD}"\n[grid]\n{grid}\n')
    with pytest.raises(Started):
        main(["sweep", str(path), *LONG, "--out", str(tmp_path / "out")])
    assert ESTIMATE.fullmatch(capsys.readouterr().err)
    path.write_text(f'[sweep]\nbase = "{HERD}"\nseeds = 2\n[grid]\n{grid}\n')
    with pytest.raises(Started):
        main(["sweep", str(path), "--out", str(tmp_path / "out")])
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.name)
def test_every_shipped_sweep_fits_a_small_machine(path):
    sweep = load_sweep(path)
    for remote in (False, True):
        check_sweep([cell.config for cell in sweep.cells], len(sweep.seeds), SMALL, remote)


def test_on_a_cluster_only_what_comes_back_is_counted():
    """With Ray at an address, the actors' memory is the cluster's: 40 client pools are
    refused here only when Ray would run on this machine."""
    config = load(HERD).with_values({"run.engine": "ray", "ray.client_pools": 40})
    with pytest.raises(ConfigError, match=r"ray\.client_pools: too big"):
        check_run(config, 1, SMALL, remote=False)
    check_run(config, 1, SMALL, remote=True)


@pytest.mark.parametrize(
    "raw",
    [
        {"workload": {"rate_per_s": 200.0, "lifetime_s": 2.0}, "run": {"sample_interval_s": 0}},
        {"cluster": {"nodes": 200}, "run": {"duration_s": 5.0, "sample_interval_s": 0.05}},
        {"workload": {"arrival": "burst", "burst": 3000, "lifetime_s": 1.0}},
        {
            "workload": {"arrival": "closed", "clients": 50, "lifetime_s": 0.5},
            "cluster": {"create_latency_ms": 20.0},
            "heartbeat": {"interval_s": 0.5, "phase": "staggered", "delay_ms": 200.0},
        },
        {
            "workload": {
                "arrival": "ramp",
                "profile_s": [0, 10, 20],
                "profile_rates": [0, 300, 100],
                "templates": [
                    {"template": "a", "lifetime_s": 1.0, "lifetime_dist": "lognormal"},
                    {"template": "b", "lifetime_s": 4.0, "lifetime_dist": "pareto"},
                ],
            }
        },
        {"workload": {"arrival": "steps", "profile_s": [0, 5], "profile_rates": [50, 200]}},
        {
            "workload": {
                "arrival": "diurnal",
                "rate_per_s": 100.0,
                "diurnal_period_s": 10.0,
                "lifetime_s": 2.0,
                "lifetime_dist": "exponential",
            }
        },
        {"workload": load(CONFIGS / "trace-replay.toml").to_dict()["workload"]},
    ],
)
def test_the_counts_estimated_are_those_a_run_records(raw):
    """The row counts behind the estimate match a run's within 10% (arrivals are exact; kills
    and closed-loop cycles are approximations), so the per-row costs apply to real counts."""
    config = from_dict({**raw, "placement": {"strategy": "optimistic"}})
    terms = {t.what: t.count for t in seed_terms(config)}
    result = VirtualEngine().run_seed(config, 0)
    assert terms["request rows"] == pytest.approx(result.requests.num_rows, rel=0.1)
    assert terms["timeline rows"] == result.timeline.num_rows


def test_a_sweep_of_too_many_seeds_is_refused(small_machine, tmp_path, capsys):
    sweep = str(CONFIGS / "sweep-reference.toml")
    argv = ["sweep", sweep, "--seeds", "2000000000", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error: sweep.seeds: too ") and err.count("\n") == 1


# -- the process's own limits -------------------------------------------------------------


MILLION = ["--seeds", "1", "--set", "cluster.nodes=1000000"]


def test_a_run_beyond_the_address_space_limit_is_refused_with_one_line_naming_it(tmp_path):
    """In a process run under `ulimit -v 3000000` (3 GB), a million nodes, which this machine
    could hold, are refused before anything runs, naming the limit; --force is offered."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 10**9, resource.RLIM_INFINITY))

    out = tmp_path / "never"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", HERD, *MILLION, "--quiet", "--out", str(out)],
        env={**os.environ, "PYTHONPATH": str(CONFIGS.parent)},
        preexec_fn=limited,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("harness: error: cluster.nodes: too big for this machine")
    assert "ulimit -v" in line and "--force" in line
    assert not out.exists()


@pytest.mark.parametrize(
    "table,key",
    [
        ("[placement]\nreplicas = 1000000\n", "placement.replicas"),
        ("[heartbeat]\ninterval_s = 1e-9\n", "heartbeat.interval_s"),
    ],
)
def test_the_two_huge_scenarios_are_refused_and_force_runs_them(
    table, key, tmp_path, monkeypatch, capsys
):
    """As written in a scenario file on this very machine (its real memory): refused with
    one line naming the key; --force lets them start (the start is stubbed)."""
    config = tmp_path / "huge.toml"
    config.write_text(f'[run]\nname = "huge"\n{table}')
    assert main(["run", str(config), "--quiet", "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"harness: error: {key}: too ") and err.count("\n") == 1
    assert not (tmp_path / "never").exists()

    def started(*args, **kwargs):
        raise Started

    monkeypatch.setattr(harness.running.runner, "run", started)
    with pytest.raises(Started):
        main(["run", str(config), "--force", "--quiet", "--out", str(tmp_path / "never")])


def test_a_scenario_asking_for_more_than_its_cluster_holds_is_foreseen_in_one_line():
    """seed-herd at 200 creates a second for 60 s, each living 60 s: 12,000 sandboxes wanted
    at once where 7,680 fit (10 nodes x 192 vCPUs x placement.r 4). It ran for minutes in a
    storm of refusals, and the cost check foresaw nothing; at 120 a second it fits."""
    keys = ["run.duration_s=60", "workload.lifetime_s=60"]
    full = load(HERD, [*keys, "workload.rate_per_s=200"])
    said = budget.over_capacity(full)
    assert said is not None and "\n" not in said
    for part in ("about 12,000 sandboxes alive at once", "room for about 7,680", "max_asks"):
        assert part in said, said
    assert budget.over_capacity(load(HERD, [*keys, "workload.rate_per_s=120"])) is None
    failing = full.with_value("placement.retry_refused", False)
    assert "failed at once (placement.retry_refused is false)" in budget.over_capacity(failing)
    cells = budget.cells_over_capacity([load(HERD), full, full])
    assert cells is not None and cells.startswith("2 of 3 cells, the first cell 1: seed-herd ")


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_no_shipped_scenario_is_said_to_ask_for_more_than_its_cluster_holds(path):
    assert budget.over_capacity(load(str(path))) is None
