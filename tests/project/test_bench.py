"""Every script in bench/ still runs: each in its `--tiny` mode (the smallest run of every part;
its figures mean nothing), so the performance page's commands keep working as the code under
them changes. A new script needs its line here (`ENDS`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.configs import CONFIGS

ROOT = CONFIGS.parent
BENCH = ROOT / "bench"
ENDS = {
    "baseline_compare.py": ([], "CV change  paired  unpaired"),
    "budget.py --part seeds --part driver": ([], "the report, per nodes row"),
    "budget.py --part ray": ([], "Ray's own processes"),
    "config_error.py": ([], '"median_s"'),
    "external_throughput.py": ([], '"path": "python server, framed"'),
    "make_trace.py": (["--out", "{tmp}/trace.csv"], "trace.csv: 100 rows"),
    "ray_throughput.py": ([], "load average at the end"),
    "real_traffic.py": ([], "s of trace"),
    "report_memory.py": ([], "harness report: peak"),
    "report_speed.py": ([], "seed-burst.toml: the report's own CPU"),
    "search_speed.py": ([], "the search's own cost"),
    "suite_profile.py": ([], "CPU seconds by kind of process"),
    "sweep_scaling.py": ([], "1 worker(s):"),
    "time_keeping.py": ([], "as measured, reports 2 s late"),
    "trace_replay.py": ([], "poisson"),
    "virtual_engine.py": ([], "goal: >= 10x real time"),
}
"""Per script, its name with the arguments that name its parts (a script whose parts need Ray and
need none runs as two tests, so that only one waits for the Ray tests' turn): its other
arguments beside --tiny, and what the last part it runs prints."""
SHARED = {"bench_args.py"}
"""What the scripts share (their parser, with --tiny): a module, not a script."""
RAY = {"budget.py --part ray", "ray_throughput.py", "search_speed.py", "sweep_scaling.py"}
"""The runs that start Ray."""

pytestmark = pytest.mark.slow  # a fresh process per script, some of them several


def _marked(name: str) -> pytest.param:
    ray = [pytest.mark.ray, pytest.mark.shares_machine] if name in RAY else []
    return pytest.param(name, marks=ray, id=name)


def test_every_script_is_run_here():
    scripts = {run.split()[0] for run in ENDS}
    assert sorted(p.name for p in BENCH.glob("*.py") if p.name not in SHARED) == sorted(scripts)


@pytest.mark.parametrize("script", [_marked(name) for name in sorted(ENDS)])
def test_a_bench_script_runs_in_its_tiny_mode(script, tmp_path):
    args, end = ENDS[script]
    name, *parts = script.split()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, str(BENCH / name), "--tiny", *parts]
    argv += [arg.format(tmp=tmp_path) for arg in args]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert end in done.stdout, done.stdout[-3000:]
    if script == "external_throughput.py":  # every path placed every create
        placed = [json.loads(line) for line in done.stdout.splitlines()[1:]]
        assert [p["placed"] for p in placed] == [50] * 3, placed
        assert all(p["per_s"] > 0 and p["wall_s"] > 0 for p in placed), placed  # never negative
