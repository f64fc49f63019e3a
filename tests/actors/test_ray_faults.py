"""Faults of Ray itself: processes of node groups, replicas and client pools killed at every
moment of a seed, the driver interrupted (the fault scenarios' own checks run on Ray in
tests/engines/test_conformance.py). On the embedded Ray the tests share (tests/conftest.py); runs
are short (time_scale 0.1 to 0.25, a few model seconds)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import ray

from actors.engine import RaySeedRun
from harness import testing_signals
from harness.cli import main
from harness.config import load
from harness.engines import EngineError
from harness.results.run_reader import load_run
from harness.running.runner import run
from tests.support.configs import CONFIGS
from tests.support.processes import Tree
from tests.support.ray_runs import skip_unless_kept_time

FAST = {"run.time_scale": 0.1, "run.sample_interval_s": 0.0, "run.engine": "ray"}

# Accounting and exits, not timing: they hold under load.
pytestmark = [pytest.mark.ray, pytest.mark.shares_machine, pytest.mark.usefixtures("local_ray")]


@pytest.fixture
def seed_runs(monkeypatch):
    """Every RaySeedRun made during the test, so a test can reach its actors to kill one."""
    runs: list[RaySeedRun] = []
    init = RaySeedRun.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        runs.append(self)

    monkeypatch.setattr(RaySeedRun, "__init__", spy)
    return runs


def kill9(actor, restarted: bool = False) -> None:
    """kill -9 the process of `actor`, as the OOM killer or a user would (`ray.kill` warns Ray
    first), once Ray has it up (again, if `restarted`: after a kill before this one; bounded
    wait). The actor says which process it is (`__ray_call__`, Ray's public way to run a
    function on an actor, queued by Ray while it restarts the actor)."""

    def own_process(_actor) -> tuple[int, bool]:
        """In the actor's process (a nested function, so Ray ships it by value): its pid, and
        whether Ray restarted the actor."""
        return os.getpid(), bool(ray.get_runtime_context().was_current_actor_reconstructed)

    deadline = time.time() + 60
    while True:
        try:
            pid, again = ray.get(actor.__ray_call__.remote(own_process), timeout=10)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as error:
            pid, again = 0, error  # dead and not yet restarted: asked again
        if pid and again is restarted:
            try:
                os.kill(pid, signal.SIGKILL)
                return
            except ProcessLookupError:
                pass
        assert time.time() < deadline, again
        time.sleep(0.05)


def killer(runs: list[RaySeedRun], at: float, actor: str):
    """A progress callback that kills the first actor of kind `actor` once `at` of the run
    has passed (the runner calls it on every poll of the driver)."""
    killed = []

    def progress(done, total, fraction, snapshot, refused=0):
        if not killed and fraction >= at and runs:
            killed.append(getattr(runs[-1], actor)[0])
            ray.kill(killed[0], no_restart=False)

    return progress, killed


CHURN = {
    **FAST,
    "run.duration_s": 20.0,
    "run.time_scale": 0.25,
    "run.seeds": 1,
    "cluster.nodes": 10,
    "ray.node_groups": 2,
    "workload.lifetime_s": 6.0,
    "placement.strategy": "optimistic",
}
SHORT = {**CHURN, "run.duration_s": 8.0, "workload.ramp_s": 2.0, "run.sample_interval_s": 1.0}
"""A churn seed of 2 wall seconds, sampled, for the kills at chosen moments."""


def ground_truth(seed_run: RaySeedRun, frames: dict) -> int:
    """Every acknowledged create not killed is on its node and on no other, or its node's
    process died (what it held is unknown); none killed is still anywhere. Returns how many
    are gone with a process, which the summary must count as `unknown_sandboxes`."""
    rows, nodes = frames["requests"], frames["nodes"]
    placed = rows.query("kind == 'create' and outcome == 'placed'")
    killed = set(rows.query("kind == 'kill' and outcome == 'killed'")["sandbox_id"])
    where: dict[int, int] = {}
    for node, ids in enumerate(seed_run.sandbox_ids):
        for sandbox in ids:
            assert sandbox not in where, f"sandbox {sandbox} on nodes {where[sandbox]}, {node}"
            where[sandbox] = node
    unknown_nodes = set(nodes.loc[nodes["lost_unknown"], "node_id"])
    gone = 0
    for sandbox, node in zip(placed["sandbox_id"], placed["node_id"], strict=True):
        if sandbox in killed:
            assert sandbox not in where
        elif where.get(sandbox) != node:
            assert sandbox not in where and node in unknown_nodes, (sandbox, node)
            gone += 1
    return gone


def test_every_node_group_killed_twice_leaves_every_acknowledged_sandbox_accounted(
    tmp_path, seed_runs
):
    """Kill -9 of node-group processes during churn, twice each."""
    config = load(CONFIGS / "churn.toml").with_values({**CHURN, "run.sample_interval_s": 1.0})
    rounds: list[float] = []

    def progress(done, total, fraction, snapshot, refused=0):
        if seed_runs and len(rounds) < 2 and fraction >= 0.3 * (len(rounds) + 1):
            for group in seed_runs[-1].groups:
                kill9(group, restarted=bool(rounds))
            rounds.append(fraction)

    out = run(config, ["optimistic"], tmp_path / "groups", progress)
    meta, frames = load_run(out)
    if len(rounds) < 2:  # the driver's polls, which kill, came too late in the seed
        # A loaded machine can hold the driver's first poll until the seed's end.
        skip_unless_kept_time(frames["summary"], "the driver polled too late to kill twice: ")
        pytest.fail(f"kills at {rounds} of the seed only, on a machine keeping time")
    assert meta["completed"] and all(c["ok"] for c in meta["invariants"])
    (s,) = frames["summary"].to_dict("records")
    nodes = frames["nodes"]
    assert s["fault_crashes"] == 2 * 10  # each death crashed every node of its group
    assert nodes["lost_unknown"].all()
    assert s["lost_sandboxes"] == nodes["lost"].sum()
    assert s["unknown_sandboxes"] == ground_truth(seed_runs[-1], frames) > 0
    assert s["placed"] + s["failed"] == s["requests"]


def _kill_group_at(moment: str, runs: list[RaySeedRun], monkeypatch):
    """Arranges for node group 0's process to be killed at `moment`; returns the progress
    callback to run with (or None)."""
    done: list[bool] = []

    def kill_once(seed_run: RaySeedRun) -> None:
        if not done:
            done.append(True)
            kill9(seed_run.groups[0])

    if moment == "at t = 0":  # the driver's first poll, right after start

        def progress(done_, total, fraction, snapshot, refused=0):
            if runs:
                kill_once(runs[-1])

        return progress
    name = "_sample" if moment == "while sampling" else "_play"
    original = getattr(RaySeedRun, name)

    def wrapped(self, *args):
        if moment != "during the drain":
            kill_once(self)
        result = original(self, *args)
        kill_once(self)  # after _play: the driver collects next
        return result

    monkeypatch.setattr(RaySeedRun, name, wrapped)
    return None


@pytest.mark.parametrize(
    "moment", ["before start", "at t = 0", "while sampling", "during the drain"]
)
def test_a_node_group_killed_at_any_moment_is_restarted_and_the_seed_completes(
    tmp_path, seed_runs, monkeypatch, moment
):
    """A node group killed early, or while the driver samples or
    collects the seed, is restarted and the seed completes, accounted."""
    config = load(CONFIGS / "churn.toml").with_values(SHORT)
    progress = _kill_group_at(moment, seed_runs, monkeypatch)
    out = run(config, ["optimistic"], tmp_path / "group", progress)
    meta, frames = load_run(out)
    assert meta["completed"] and all(c["ok"] for c in meta["invariants"])
    (s,) = frames["summary"].to_dict("records")
    nodes = frames["nodes"]
    unknown = nodes["lost_unknown"].tolist()
    if moment == "before start" and s["fault_crashes"] == 0:
        # Ray had the new process up before `start` reached it: nothing had happened yet,
        # so the group was set up again like the others, and nothing is unknown.
        assert unknown == [False] * 10
    else:
        assert s["fault_crashes"] == 5 and unknown == [True] * 5 + [False] * 5
    assert s["unknown_sandboxes"] == ground_truth(seed_runs[-1], frames)
    assert s["lost_sandboxes"] == nodes["lost"].sum() == 0
    assert s["placed"] + s["failed"] == s["requests"] > 0


def test_a_node_group_process_killed_mid_run_is_restarted_and_the_run_goes_on(tmp_path, seed_runs):
    config = load(CONFIGS / "churn.toml").with_values(CHURN)
    progress, killed = killer(seed_runs, 0.4, "groups")
    out = run(config, ["optimistic"], tmp_path / "group", progress)
    assert killed
    meta, frames = load_run(out)
    assert meta["completed"] and all(c["ok"] for c in meta["invariants"])
    (s,) = frames["summary"].to_dict("records")
    assert s["fault_crashes"] == 5  # the group's nodes, 0-4
    # What the dead process held is not known: counted apart, not inferred from the requests
    # (which is what the invariant checks), and only on the group's own nodes.
    nodes = frames["nodes"]
    assert nodes["lost_unknown"].tolist() == [True] * 5 + [False] * 5
    assert s["unknown_sandboxes"] > 0 and s["invariants_ok"]
    assert nodes["lost"].sum() == s["lost_sandboxes"] == 0
    assert s["placed"] + s["failed"] == s["requests"]
    creates = frames["requests"].query("kind == 'create' and outcome == 'placed'")
    after = creates[creates.done_at > 0.4 * 20.0 + 2.0]
    assert (after.node_id < 5).any()  # the restarted group's nodes take sandboxes again


def test_the_scheduler_dying_ends_the_run_keeping_every_request_answered(tmp_path, seed_runs):
    """The rows the client pools recorded after the driver's last poll
    are kept too (the replica dies 0.2 s wall, 0.8 model s, after a poll)."""
    config = load(CONFIGS / "churn.toml").with_values(CHURN)
    polled: list[float] = []

    def progress(done, total, fraction, snapshot, refused=0):
        if not polled and fraction >= 0.3 and seed_runs:
            polled.append(fraction * config.run.duration_s)
            threading.Timer(0.2, kill9, [seed_runs[-1].replicas[0]]).start()

    out = tmp_path / "replica"
    with pytest.raises(EngineError, match="scheduler replica 0 died") as stopped:
        run(config, ["optimistic"], out, progress)
    assert "\n" not in str(stopped.value)
    meta, frames = load_run(out)
    assert meta["completed"] is False and "replica 0 died" in meta["error"]
    assert meta["partial"] == [["optimistic", 0]] and meta["finished"] == []
    assert frames["requests"]["done_at"].max() > polled[0] + 0.4
    assert frames["summary"].empty  # half a seed is no summary row (nor checked)


def test_a_replica_killed_while_the_driver_collects_keeps_the_seed_as_partial(
    tmp_path, seed_runs, monkeypatch
):
    """A death during the drain no longer loses the whole seed."""
    config = load(CONFIGS / "churn.toml").with_values(SHORT)
    play = RaySeedRun._play

    def then_kill(self, *args):
        play(self, *args)
        kill9(self.replicas[0])

    monkeypatch.setattr(RaySeedRun, "_play", then_kill)
    out = tmp_path / "drain"
    with pytest.raises(EngineError, match="scheduler replica 0 died"):
        run(config, ["optimistic"], out, None)
    meta, frames = load_run(out)
    assert meta["completed"] is False and meta["partial"] == [["optimistic", 0]]
    assert len(frames["requests"]) > 0 and len(frames["timeline"]) > 0


def test_a_client_pool_dying_ends_the_run_with_one_line_and_the_rows_that_arrived(
    tmp_path, seed_runs, monkeypatch, capsys
):
    """What a pool's death does (README, "Ray faults"): the seed ends,
    partial, with every row that arrived; `harness run` says so in one line, exit 1."""
    rows = RaySeedRun._rows
    killed: list[bool] = []

    def kill_once_rows_arrived(self, requests, meter):
        """After the first poll that brought rows, if the seed goes on: not at a fixed poll,
        which on a busy machine (each poll slower) came after the seed's end."""
        finished = rows(self, requests, meter)
        if meter.creates + meter.kills and not finished and not killed:
            killed.append(True)
            kill9(self.pools[0])
        return finished

    monkeypatch.setattr(RaySeedRun, "_rows", kill_once_rows_arrived)
    out = tmp_path / "pool"
    settings = [f"--set={key}={value}" for key, value in SHORT.items()]
    code = main(["run", str(CONFIGS / "churn.toml"), *settings, "--quiet", "--out", str(out)])
    captured = capsys.readouterr()
    if not killed:  # the driver's first rows came with the seed's end: no moment to kill in
        skip_unless_kept_time(load_run(out, ["summary"])[1]["summary"])
        pytest.fail("the seed was over at the first poll with rows, on a machine keeping time")
    assert code == 1 and "Traceback" not in captured.out + captured.err
    (line,) = captured.err.strip().splitlines()
    assert "client pool 0 died" in line and "completed: false" in line
    meta, frames = load_run(out)
    assert meta["completed"] is False and meta["partial"] == [["optimistic", 0]]
    assert len(frames["requests"]) > 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_driver_flushes_and_marks_the_run_incomplete(tmp_path, signum):
    """(SIGTERM matters: ray.init installs a handler of its own that exits on the spot.) The
    driver signals itself once the seed's first rows are spooled (phase `rows`). Nothing is
    left running."""
    out = tmp_path / "signal"
    cmd = [sys.executable, "-m", "harness", "run", str(CONFIGS / "churn.toml"), "--engine", "ray"]
    cmd += ["--set", "run.duration_s=120", "--seeds", "1", "--quiet", "--out", str(out)]
    name = signal.Signals(signum).name.removeprefix("SIG")
    env = {
        **os.environ,
        "PYTHONPATH": str(CONFIGS.parent),
        testing_signals.SIGNAL_AT: f"rows={name}",
    }
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tree = Tree(proc)
    _, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 128 + signum, stderr.decode()[-2000:]  # 130, 143
    assert b"Traceback" not in stderr
    meta, frames = load_run(out)
    said = "interrupted" if signum == signal.SIGINT else "terminated"
    assert meta["completed"] is False and meta["error"] == said
    assert meta["partial"] == [["optimistic", 0]]  # the seed in progress, as far as it got
    assert len(frames["requests"]) > 0
    assert tree.left() == []
