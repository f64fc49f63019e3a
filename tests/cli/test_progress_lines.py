"""Long work is never silent where stderr is not a terminal (a CI log, a pipe): `harness` in a
subprocess, its stderr a pipe, prints a plain progress line at a steady interval (made short
here with `HARNESS_PROGRESS_S`) through every phase: seeds, the run's tables, the report, a
search's trials, its shrinking and confirmation; a Ray run's tasks report their model time
while they run. A scenario asking for more than its cluster holds is said before it runs, its
storm of refusals named with the key that caps it, and the headline says why creates failed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.presentation.progress import PROGRESS_ENV
from tests.support.configs import CONFIGS

ROOT = Path(__file__).resolve().parents[2]
HERD = str(CONFIGS / "seed-herd.toml")


def _harness(
    args: list[str], every_s: float = 0.1, timeout: float = 300, address: str | None = None
) -> tuple[str, str]:
    """`harness ARGS` with stdout and stderr pipes, joining the Ray at `address` if given: what
    each got (exit 0 checked)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), PROGRESS_ENV: str(every_s)}
    if address is not None:
        env["RAY_ADDRESS"] = address
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


SEEDS = re.compile(r"^harness: seed-herd: ([\d.]+) of 3 seeds, elapsed \d+:\d\d, ETA (\S+)$", re.M)


def test_a_run_piped_prints_progress_lines_through_every_phase(tmp_path):
    """With stderr not a terminal, the bar redrawn in place printed nothing until the end: a
    run of an hour of trace said nothing in its log for 15 minutes. A line every 20 ms: a seed
    may take well under a second, and lines must come from within one."""
    out = tmp_path / "run"
    args = ["run", HERD, "--seeds", "3", "--set", "run.duration_s=300", "--out", str(out)]
    _, err = _harness(args, every_s=0.02)
    seeds = [float(done) for done, _ in SEEDS.findall(err)]
    assert len(seeds) >= 3, err
    assert seeds == sorted(seeds) and any(d % 1 > 0 for d in seeds), seeds  # within a seed
    assert any(eta != "-:--" for _, eta in SEEDS.findall(err)), err
    assert f"harness: drawing {out / 'report.html'}, elapsed " in err, err


STORM = [
    *("--seeds", "1", "--no-report", "--set", "run.duration_s=6", "--set", "cluster.nodes=3"),
    *("--set", "cluster.cpu_count=2", "--set", "workload.rate_per_s=30"),
    *("--set", "workload.lifetime_s=60", "--set", "placement.deadline_s=2"),
]
"""Room for 24 sandboxes, 180 asked for at once: every create beyond the room is refused by a
full node and placed again, without a cap (`placement.max_asks` 0, as upstream), until its
deadline: seconds of refusals even on the compiled path, so a line every 0.05 s shows them."""


def test_a_storm_of_refusals_is_foreseen_named_and_explained(tmp_path):
    """`--set workload.rate_per_s=200` on seed-herd filled the cluster and took minutes: the
    cost check foresaw nothing, nothing named the storm, and the headline said only 'failed
    creates 4341 per seed'."""
    out, err = _harness(["run", HERD, *STORM, "--out", str(tmp_path / "run")], every_s=0.05)
    lines = err.splitlines()
    assert lines[0].startswith(
        "harness: seed-herd asks for more room than its cluster has: about 180 sandboxes alive "
        "at once at its peak, room for about 24"
    ), err
    stormed = [line for line in lines if "storm of refusals" in line]
    assert len(stormed) == 1 and "placement.max_asks" in stormed[0], err
    assert re.search(r"seed-herd: [\d.]+ of 1 seeds, \d+ creates refused 10\+ times", err), err
    assert re.search(
        r"failed creates \d+ per seed, all deadline \(still unplaced at placement.deadline_s\)",
        " ".join(out.split()),
    ), out


@pytest.mark.slow  # a search of six trials, shrunk and confirmed
def test_a_search_piped_says_its_trials_then_its_shrinking_and_confirmation(tmp_path):
    """A search said nothing for the minutes it shrank and confirmed its best trial."""
    search = tmp_path / "s.toml"
    search.write_text(
        f'[search]\nbase = "{HERD}"\nobjective = "maximize stale.cv_mean"\nseeds = 2\n'
        'trials = 6\nbatch = 3\nconfirm_seeds = 8\n[set]\n"run.duration_s" = 60.0\n'
        '[space]\n"placement.replicas" = { int = [1, 4] }\n'
        '"heartbeat.interval_s" = { low = 1.0, high = 20.0, log = true }\n'
    )
    args = ["search", str(search), "--in-process", "--no-report", "--out", str(tmp_path / "o")]
    _, err = _harness(args, every_s=0.05)
    assert re.search(r"^harness: s: \d of 6 trials, best \S+, elapsed \d+:\d\d, ETA ", err, re.M)
    for phase in ("shrinking trial \\d+ towards the base scenario", "confirming best and "):
        assert re.search(rf"^harness: s: {phase}.*, for \d+:\d\d, elapsed ", err, re.M), err


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.shares_machine  # lines said, not their timing
def test_a_run_on_ray_tasks_reports_the_model_time_of_its_seeds_while_they_run(
    tmp_path, ray_address
):
    """Seeds run as Ray tasks said nothing until each ended: the tasks now tell a small actor
    how far their seeds have gone, which the driver reads while it waits. On the shared Ray
    (RAY_ADDRESS): the lines are the claim, not Ray's start-up."""
    out = tmp_path / "run"
    args = ["run", HERD, "--seeds", "2", "--set", "run.workers=2", "--set"]
    args += ["run.duration_s=6000", "--no-report", "--out", str(out)]
    _, err = _harness(args, 0.5, address=ray_address)
    done = [float(d) for d in re.findall(r"^harness: seed-herd: ([\d.]+) of 2 seeds", err, re.M)]
    assert any(0 < d < 1 for d in done), err  # before either seed ended
