"""The CI example of docs/guides/baseline.md works in a real repository: its workflow's steps,
read from the guide and run as GitHub Actions would run them (the `run` steps in bash, the
cache steps as a cache by key), against a scratch git repository of a few commits. A change on
a branch that makes placement worse fails the pull request's job (exit 99) against the
baseline of the branch's merge base, whatever `main` holds now; every shipped strategy is
gated; with no baseline the job passes with a notice and keeps one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from harness.model.scheduling.strategies import STRATEGIES

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "baseline.md"
SCRIPT = ROOT / "examples" / "ci-gate" / "gate.sh"
SETUP = ("actions/checkout", "actions/setup-python")
"""Steps the scratch repository has done already: it is checked out, the harness installed."""

SCENARIO = """[run]
duration_s = 3.0
seeds = 6

[cluster]
nodes = 8
cpu_count = 64

[heartbeat]
interval_s = 2.0

[placement]
strategy = "stale"
k = 3
filters = ["gate_plugin:Filter"]

[workload]
rate_per_s = 20.0
lifetime_s = 60.0
"""
"""A scenario of seconds whose filter the commits change: the code under test."""
NEUTRAL = """from harness.model.scheduling.placement.plugin import Filter as Base


class Filter(Base):
    name = "gate"

    def passes(self, scheduler, node, req, now):
        return True
"""
LOPSIDED = NEUTRAL.replace("return True", "return node % 4 != 0  # a quarter of the nodes idle")


def workflow() -> dict[str, Any]:
    """The workflow the guide shows."""
    text = GUIDE.read_text()
    block = re.search(r"```yaml\n(# \.github/workflows/.*?)```", text, re.S)
    assert block, "no workflow in the guide"
    return yaml.safe_load(block[1])


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def commit(repo: Path, plugin: str, message: str) -> str:
    (repo / "gate_plugin.py").write_text(plugin)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@dataclass
class Job:
    """One run of the workflow's job: its event, what each step printed, how it ended."""

    event: str
    code: int = 0
    notices: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    err: str = ""


def run_job(repo: Path, cache: Path, event: str, head: str) -> Job:
    """The workflow's job for `event` at commit `head`, as Actions runs it: each step whose
    `if` holds, in order, a failed step skipping those after but `always()` ones; the
    `${{ }}` expressions it uses evaluated; the cache a folder of keys."""
    for left in (".placement-baselines", "placement-run"):  # each job a fresh checkout
        shutil.rmtree(repo / left, ignore_errors=True)
    flow = workflow()
    job = next(iter(flow["jobs"].values()))
    github = {
        "event_name": event,
        "sha": head,
        "base_ref": "main" if event == "pull_request" else "",
        "event": {"pull_request": {"head": {"sha": head}}} if event == "pull_request" else {},
    }
    context: dict[str, Any] = {"github": github, "steps": {}, "env": {}}
    context["env"] = {k: expand(str(v), context) for k, v in job.get("env", {}).items()}
    env = {
        **os.environ,
        **context["env"],
        "HARNESS": f"{sys.executable} -m harness",
        "HARNESS_PURE": "1",
        "SCENARIO": "scenario.toml",
        "SEEDS": "6",  # the fewest a paired comparison can call anything on
        "GITHUB_ACTIONS": "true",
    }
    done = Job(event)
    for step in job["steps"]:
        condition = step.get("if", "success()")
        if not holds(condition, context, failed=done.code != 0):
            continue
        uses = step.get("uses", "")
        done.ran.append(step.get("name", uses or step.get("run", "")))
        if uses.startswith(SETUP) or step.get("run", "").startswith("pip install"):
            continue
        if uses.startswith("actions/cache/"):
            with_ = {k: expand(str(v), context) for k, v in step["with"].items()}
            stored, path = cache / with_["key"], repo / with_["path"]
            if uses.startswith("actions/cache/restore") and stored.is_dir():
                shutil.copytree(stored, path, dirs_exist_ok=True)
            elif uses.startswith("actions/cache/save") and path.is_dir() and not stored.exists():
                shutil.copytree(path, stored)
            continue
        if uses.startswith("actions/upload-artifact"):
            assert (repo / expand(step["with"]["path"], context)).is_dir()
            continue
        assert not uses, f"a step this test does not know: {uses}"
        output = repo.parent / "github_output"
        output.write_text("")
        script = expand(step["run"], context)
        proc = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=repo,
            env={**env, "GITHUB_OUTPUT": str(output)},
            capture_output=True,
            text=True,
            timeout=600,
        )
        done.notices += re.findall(r"^::notice[^:]*::(.*)$", proc.stdout, re.M)
        done.err += proc.stderr
        if "id" in step:
            lines = output.read_text().splitlines()
            context["steps"][step["id"]] = {"outputs": dict(x.split("=", 1) for x in lines)}
        if proc.returncode != 0:
            done.code = proc.returncode
    return done


def lookup(path: str, context: dict[str, Any]) -> Any:
    value: Any = context
    for part in path.split("."):
        value = value.get(part, "") if isinstance(value, dict) else ""
    return value


def value(term: str, context: dict[str, Any]) -> Any:
    """A term of an expression: 'a literal', or a context path, or `a || b`: the first truthy."""
    for option in term.split("||"):
        option = option.strip()
        found = option.strip("'") if option.startswith("'") else lookup(option, context)
        if found:
            return found
    return ""


def expand(text: str, context: dict[str, Any]) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(value(m[1], context)), text)


def holds(condition: str, context: dict[str, Any], failed: bool) -> bool:
    """An `if:` of the forms the workflow uses: `always()`, `success()`, `A == 'b'`."""
    condition = condition.strip()
    if condition == "always()":
        return True
    if condition == "success()":
        return not failed
    left, op, right = condition.partition("==")
    assert op, f"a condition this test does not know: {condition}"
    return not failed and value(left, context) == value(right, context)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A scratch project with the gate script at the path the workflow calls."""
    repo = tmp_path / "project"
    (repo / "examples" / "ci-gate").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "examples" / "ci-gate" / "gate.sh")
    (repo / "scenario.toml").write_text(SCENARIO)
    (repo / ".gitignore").write_text(".placement-baselines/\nplacement-run/\n__pycache__/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.com")
    git(repo, "config", "user.name", "ci")
    return repo


@pytest.mark.slow  # four runs of eight strategies on a scenario of seconds
def test_the_guides_workflow_gates_a_branch_on_its_merge_base(repo: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    cache.mkdir()
    fork = commit(repo, NEUTRAL, "the project")
    assert run_job(repo, cache, "push", fork).code == 0
    assert (cache / f"placement-baseline-{fork}" / "commit").read_text().strip() == fork

    # main moves on: the same worsening lands there, and main's baseline is run again.
    later = commit(repo, LOPSIDED, "main: a quarter of the nodes idle")
    assert run_job(repo, cache, "push", later).code == 0
    git(repo, "update-ref", "refs/remotes/origin/main", later)

    # A branch from the fork point makes placement worse: judged against the fork point's
    # run (where main's latest would see no change), it fails.
    git(repo, "checkout", "-q", "-b", "branch", fork)
    branch = commit(repo, LOPSIDED, "branch: a quarter of the nodes idle")
    job = run_job(repo, cache, "pull_request", branch)
    assert job.code == 99, job.err
    assert any(fork in n and "merge base" in n for n in job.notices), job.notices
    assert (repo / "placement-run" / "baseline-commit").read_text().strip() == fork
    assert "worse than the baseline: cv (stale)" in job.err
    rows = pd.read_parquet(repo / "placement-run" / "comparison.parquet")
    assert set(rows["strategy"]) == set(STRATEGIES.builtins)  # every strategy the harness ships
    worse = rows[rows["verdict"] == "worse"]
    watched = {"cv", "failed_frac", "p99_place_ms"}
    said = job.err.split("worse than the baseline: ", 1)[1]
    assert {c for c in worse["column"] if f"{c} (" in said} <= watched  # only these fail it
    assert not (cache / f"placement-baseline-{branch}").exists()  # a failed job keeps nothing
    assert "Keep the run, its report and its comparison" in job.ran  # always kept

    # No baseline of the merge base (the cache lost it): the job passes, says so, and keeps
    # the branch's run as its own commit's baseline.
    shutil.rmtree(cache / f"placement-baseline-{fork}")
    job = run_job(repo, cache, "pull_request", branch)
    assert job.code == 0, job.err
    assert any(f"no baseline of the merge base {fork}" in n for n in job.notices), job.notices
    assert (cache / f"placement-baseline-{branch}" / "run.json").is_file()
