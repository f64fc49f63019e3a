"""The example plugin package (examples/idle-first-plugin), installed apart from the harness and
named only in a config, runs on both engines and in a sweep on a two-node Ray cluster."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from tests.support.configs import CONFIGS
from tests.support.doc_blocks import blocks, difference
from tests.support.ray_runs import ray_cluster

ROOT = CONFIGS.parent
PACKAGE = ROOT / "examples" / "idle-first-plugin"
# pip installs the package, and every test runs `harness` in a subprocess; what they check
# holds under load
pytestmark = [pytest.mark.slow, pytest.mark.shares_machine]

PLUGINS = ["placement.scorers=['reference', 'idle_first=0.5']"]


@pytest.fixture(scope="module")
def site() -> Path:
    """A fresh folder with only the example package installed in it (its entry points
    included), put on PYTHONPATH below: the harness finds it as any installed package.
    Installed once for the session: in the folder every worker of `-n` shares (made in
    tests/conftest.py, removed at the end), by the first worker that needs it (this module's
    Ray tests run on a worker of their own), under a lock."""
    shared = Path(os.environ["HARNESS_TEST_LOCKS"])
    target = shared / "idle-first-site"
    with open(shared / "idle-first-site.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_dir():
            fresh = Path(tempfile.mkdtemp(dir=shared))  # named `target` once whole
            pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target"]
            subprocess.run([*pip, str(fresh), str(PACKAGE)], check=True)
            fresh.rename(target)
    return target


@pytest.fixture(scope="module")
def env(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}


def harness(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "harness", *argv]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_the_installed_plugins_are_listed(env) -> None:
    done = harness(env, "plugins")
    lines = [line.split() for line in done.stdout.splitlines()]
    assert ["scorer", "idle_first", "idle_first:IdleFirst"] in lines
    assert ["strategy", "optimistic_twice", "idle_first:OptimisticTwice"] in lines


@pytest.mark.parametrize("engine", ["virtual", pytest.param("ray", marks=pytest.mark.ray)])
def test_the_plugins_run_on_both_engines(env, engine, tmp_path) -> None:
    """The strategy plugin counts each placement twice, so it places differently from the
    optimistic one it derives from; both runs use the installed scorer."""
    out = tmp_path / engine
    args = ["run", str(CONFIGS / "seed-herd.toml"), "--engine", engine, "--seeds", "1"]
    args += ["--compare", "optimistic,optimistic_twice", "--quiet", "--out", str(out)]
    args += ["--set", PLUGINS[0], "--set", "run.time_scale=0.1"]
    done = harness(env, *args, "--no-report")
    assert done.returncode == 0, done.stderr[-2000:]
    nodes = pd.read_parquet(out / "nodes.parquet")
    by = nodes.groupby("strategy")["sandboxes"].apply(list)
    assert sum(by["optimistic"]) == sum(by["optimistic_twice"]) == 500
    assert by["optimistic"] != by["optimistic_twice"]


def test_the_scorer_brings_part_of_the_herd_back_under_optimistic(env, tmp_path) -> None:
    """The README's scenario: `idle_first` reads the reported usage, which `optimistic` does
    not move between reports, so its nodes end less even than plain `optimistic`'s; the run
    names the installed scorer."""
    ends = {}
    for name, scorers in (("plain", "['reference']"), ("idle", "['reference', 'idle_first']")):
        out = tmp_path / name
        args = ["run", str(CONFIGS / "seed-herd.toml"), "--compare", "optimistic", "--seeds"]
        args += ["3", "--set", f"placement.scorers={scorers}", "--out", str(out), "--quiet"]
        done = harness(env, *args, "--no-report")
        assert done.returncode == 0, done.stderr[-2000:]
        assert ("(from idle_first:IdleFirst)" in " ".join(done.stdout.split())) == (name == "idle")
        ends[name] = pd.read_parquet(out / "summary.parquet")["cv"]
    assert ends["idle"].min() > 3 * ends["plain"].max()  # 0.10 against 0.017 over 20 seeds


def test_the_readme_shows_what_the_scorer_run_prints(env, tmp_path) -> None:
    """The README's run with `idle_first` added, as written, prints what the README shows
    under it (at the 100 columns the README names)."""
    readme = PACKAGE / "README.md"
    found = blocks(readme)
    shown = next(b for b in found if b.marker == "prints")
    command = next(
        b for b in found if "idle_first" in b.code and b.lang == "bash" and "run" in b.code
    )
    argv = shlex.split(command.code.split("\n", 1)[1].replace("\\\n", " "))[1:]
    out = ["--quiet", "--no-report", "--out", str(tmp_path / "run")]
    done = harness({**env, "COLUMNS": "100"}, *argv, *out)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not difference(shown.code, done.stdout), difference(shown.code, done.stdout)


@pytest.fixture
def two_nodes(env, monkeypatch):
    """A two-node Ray cluster whose processes find the installed plugin package."""
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    with ray_cluster(2, driver_here=False) as cluster:  # `harness sweep` joins it
        yield cluster


@pytest.mark.ray
def test_a_sweep_on_a_two_node_cluster_uses_the_plugins(env, two_nodes, tmp_path) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\nseeds = 2\n'
        '[set]\n"placement.scorers" = ["reference", "idle_first=0.5"]\n'
        '"run.sample_interval_s" = 0\n'
        '[grid]\n"placement.strategy" = ["optimistic", "optimistic_twice"]\n'
    )
    out = tmp_path / "out"
    argv = ["sweep", str(sweep), "--address", two_nodes.address, "--out", str(out)]
    done = harness(env, *argv, "--no-report")
    assert done.returncode == 0, done.stderr[-2000:]
    summary = pd.read_parquet(out / "summary.parquet")
    assert sorted(summary["placement.strategy"].unique()) == ["optimistic", "optimistic_twice"]
    assert len(summary) == 4 and (summary["placed"] == 500).all()


def test_the_installed_plugins_own_setting_is_listed_validated_and_recorded(env, tmp_path) -> None:
    """`idle_first` declares `per_vcpu` (`[placement.idle_first]`): `harness keys` lists it,
    a wrong value is one line naming the key, and the run records the value it ran with."""
    keys = harness(env, "keys", "--markdown")
    assert "| `placement.idle_first.per_vcpu` | `true` |" in keys.stdout
    run = ["run", str(CONFIGS / "seed-herd.toml"), "--seeds", "1", "--set", PLUGINS[0]]
    run += ["--set", "run.duration_s=2", "--quiet", "--no-report"]
    bad = harness(env, *run, "--set", "placement.idle_first.per_vcpu=3", "--out", str(tmp_path))
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "harness: error: placement.idle_first.per_vcpu: must be true or false, got 3"
    ]
    out = tmp_path / "run"
    done = harness(env, *run, "--set", "placement.idle_first.per_vcpu=false", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    parts = json.loads((out / "run.json").read_text())["plugins"]["parts"]
    assert {
        "kind": "scorer",
        "name": "idle_first",
        "weight": 0.5,
        "from": "idle_first:IdleFirst",
        "settings": {"per_vcpu": False},
    } in parts
