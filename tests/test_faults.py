"""Every shipped fault scenario in the virtual engine: what the scheduler saw matches what was
injected, no request is dropped, and the end-of-run invariants hold. The `expect_*` checks
are shared with the Ray engine's tests (tests/test_ray_faults.py).

Random fractions are checked against their expectation with a tolerance of 4 standard
deviations (binomial), so a correct engine fails one of these checks about once in 15,000.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import numpy as np
import pyarrow.compute as pc
import pytest

from harness.cli import main
from harness.config import Config, ConfigError, from_dict, load
from harness.engines.virtual import VirtualEngine
from harness.model.cluster.faults import Faults, SlowNodes
from harness.results.invariants import check
from harness.results.run_folder import load_run
from harness.results.seed_result import SeedResult
from tests.conftest import CONFIGS

FAULT_CONFIGS = sorted(p.stem for p in CONFIGS.glob("faults-*.toml"))


def within(observed: float, n: int, p: float) -> bool:
    """`observed` successes of `n` draws of probability `p`, within 4 standard deviations."""
    return abs(observed - n * p) <= 4 * math.sqrt(n * p * (1 - p)) + 1


def creates(result: SeedResult) -> dict[str, np.ndarray]:
    r = result.requests.filter(pc.equal(result.requests["kind"], "create"))
    return {name: r.column(name).to_numpy(zero_copy_only=False) for name in r.column_names}


def kills(result: SeedResult) -> dict[str, np.ndarray]:
    r = result.requests.filter(pc.equal(result.requests["kind"], "kill"))
    return {name: r.column(name).to_numpy(zero_copy_only=False) for name in r.column_names}


def failed_create_rpcs(c: dict[str, np.ndarray]) -> int:
    """Create RPCs that failed other than by ResourceExhausted: every attempt but the one
    that placed."""
    return int(c["attempts"].sum() - (c["outcome"] == "placed").sum())


def expect_no_loss(config: Config, result: SeedResult) -> None:
    """Every request is in the results and every end-of-run check holds."""
    s = result.summary
    checks = check(config, result)
    assert s["invariants_ok"], [c for c in checks if not c["ok"]]
    assert s["placed"] + s["failed"] == s["requests"] > 0
    reasons = s["failed_no_candidate"] + s["failed_attempts_exhausted"] + s["failed_deadline"]
    assert reasons == s["failed"]


def expect_crash(config: Config, result: SeedResult) -> None:
    check(config, result)
    s, c, k = result.summary, creates(result), kills(result)
    assert s["fault_crashes"] == 2
    assert failed_create_rpcs(c) == s["fault_down_creates"] > 0
    down = result.nodes.column("down").to_pylist()
    assert down == [i == 7 for i in range(10)]  # node 3 came back, node 7 did not
    assert result.sandbox_ids[7] == []
    lost = set(result.lost_ids)
    assert len(lost) == s["lost_sandboxes"] > 0
    placed_on = dict(zip(c["sandbox_id"], c["node_id"], strict=True))
    assert {placed_on[i] for i in lost} <= {3, 7}
    # A kill fails exactly when its sandbox was lost (to a down node, or gone after the restart).
    failed_kills = set(k["sandbox_id"][k["outcome"] == "failed"].tolist())
    assert failed_kills == lost & set(k["sandbox_id"].tolist())
    assert s["fault_down_kills"] <= s["kills_failed"] == len(failed_kills)
    # Nothing is placed on a node while it is down (an answer acted on before the crash may
    # arrive after it: a second of slack covers Ray's overhead at a small time_scale).
    done, node = c["done_at"], c["node_id"]
    placed = c["outcome"] == "placed"
    assert not (placed & (node == 7) & (done > 16.0)).any()
    assert not (placed & (node == 3) & (done > 11.0) & (done < 20.0)).any()
    expect_no_loss(config, result)


def expect_rpc_error(config: Config, result: SeedResult) -> None:
    s, c = result.summary, creates(result)
    assert failed_create_rpcs(c) + s["kills_failed"] == s["fault_rpc_failed"]
    assert c["skips"].sum() == s["fault_rpc_exhausted"]  # no node is ever really full here
    assert s["failed"] == s["failed_attempts_exhausted"]
    # In the window an RPC fails with 0.5, answers ResourceExhausted with 0.5 * 0.2 (a skip:
    # drawn again); a request fails when 3 counted attempts in a row fail.
    # Whole seconds off the window's edges: on Ray a request is sent (and retried) later than
    # it is issued, by engine overhead that is large in model time at a small time_scale.
    in_window = (c["issued_at"] >= 5.0) & (c["issued_at"] < 24.0)
    p_fail = (0.5 / (0.5 + 0.5 * 0.8)) ** 3
    failed = int((c["outcome"][in_window] == "failed").sum())
    assert within(failed, int(in_window.sum()), p_fail), (failed, in_window.sum(), p_fail)
    assert not (c["outcome"][c["issued_at"] < 4.0] == "failed").any()
    kills_sent = s["kills"]
    assert within(s["kills_failed"], kills_sent, 0.1)
    expect_no_loss(config, result)


def expect_timeout(config: Config, result: SeedResult) -> None:
    check(config, result)
    s, c = result.summary, creates(result)
    assert failed_create_rpcs(c) == s["fault_timeouts"]
    assert s["orphans"] == s["fault_timeouts"]  # every timed-out create did create (no node full)
    rpcs = int(c["rpcs"].sum())
    assert within(s["fault_timeouts"], rpcs, 0.2)
    assert within(s["failed"], s["requests"], 0.2**3)
    retried = c["attempts"] > 1
    assert (c["latency_ms"][retried] >= 200.0 * 0.99).all()  # waited out the timeout first
    expect_no_loss(config, result)


def expect_lost_reports(config: Config, result: SeedResult) -> None:
    s = result.summary
    reports = 10 * 30  # the initial sync and a report per second and node before the end
    assert within(s["fault_lost_reports"], reports, 0.5)
    assert s["failed"] == 0
    checks = check(config, result)
    assert any(c["check"] == "reconcile_drained" and c["ok"] for c in checks)
    expect_no_loss(config, result)


def expect_slow_node(config: Config, result: SeedResult) -> None:
    c = creates(result)
    placed = c["outcome"] == "placed"
    on_slow = placed & (c["node_id"] == 2) & (c["issued_at"] > 5.0)
    assert on_slow.sum() > 0
    assert (c["latency_ms"][on_slow] >= 50.0).all()
    # Half the extra 50 ms as the margin: on Ray the base latency is engine overhead, noisy.
    before = placed & (c["issued_at"] < 4.9)
    assert np.median(c["latency_ms"][on_slow]) >= np.median(c["latency_ms"][before]) + 25.0
    expect_no_loss(config, result)


EXPECT = {
    "faults-crash": expect_crash,
    "faults-rpc-error": expect_rpc_error,
    "faults-timeout": expect_timeout,
    "faults-lost-reports": expect_lost_reports,
    "faults-slow-node": expect_slow_node,
}


def test_every_fault_kind_has_a_scenario_and_a_check():
    assert sorted(EXPECT) == FAULT_CONFIGS
    kinds = {f.kind for name in FAULT_CONFIGS for f in load(CONFIGS / f"{name}.toml").faults}
    assert kinds == {"crash", "rpc_error", "timeout", "lost_reports", "slow_node"}


@pytest.mark.parametrize("name", FAULT_CONFIGS)
def test_fault_scenario_in_the_virtual_engine(name):
    config = load(CONFIGS / f"{name}.toml")
    for seed in range(config.run.seeds):
        EXPECT[name](config, VirtualEngine().run_seed(config, seed))


def test_faults_are_deterministic_and_leave_other_draws_alone():
    config = load(CONFIGS / "faults-rpc-error.toml")
    a = VirtualEngine().run_seed(config, 1)
    b = VirtualEngine().run_seed(config, 1)
    assert a.requests.equals(b.requests)
    plain = VirtualEngine().run_seed(replace(config, faults=()), 1)
    first = a.requests.filter(pc.less(a.requests["issued_at"], 5.0))
    same = plain.requests.filter(pc.less(plain.requests["issued_at"], 5.0))
    assert first.equals(same)  # before the window the run is the fault-free one


def test_a_broken_invariant_fails_the_run_loudly(tmp_path, monkeypatch, capsys):
    """An engine that loses a sandbox (simulated here) must not produce a quiet result."""
    run_seed = VirtualEngine.run_seed

    def losing(self, config, seed, progress=None):
        result = run_seed(self, config, seed, progress)
        busiest = max(range(len(result.sandbox_ids)), key=lambda n: len(result.sandbox_ids[n]))
        result.sandbox_ids[busiest] = result.sandbox_ids[busiest][1:]
        return result

    monkeypatch.setattr(VirtualEngine, "run_seed", losing)
    out = tmp_path / "run"
    code = main(["run", str(CONFIGS / "faults-crash.toml"), "--seeds", "1", "--out", str(out)])
    assert code == 1
    err = capsys.readouterr().err
    assert "invariant broken" in err and "acknowledged_sandboxes" in err
    assert len(err.strip().splitlines()) == 1
    meta, frames = load_run(out)
    assert not frames["summary"]["invariants_ok"].any()
    assert [c["ok"] for c in meta["invariants"] if c["check"] == "acknowledged_sandboxes"] == [
        False
    ]


@pytest.mark.parametrize(
    "faults,key,reason",
    [
        ({"kind": "crash"}, "faults[1].node", "needs a target node"),
        ({"kind": "crash", "node": 10}, "faults[1].node", "is not a node"),
        ({"kind": "crash", "node": 1, "fraction": 0.5}, "faults[1].fraction", "does not apply"),
        ({"kind": "rpc_error", "fraction": 1.5}, "faults[1].fraction", "<= 1"),
        ({"kind": "timeout", "at_s": 5, "until_s": 5}, "faults[1].until_s", "after at_s"),
        ({"kind": "lost_reports", "at_s": 99}, "faults[1].at_s", "before run.duration_s"),
        ({"kind": "slow_node", "node": 1, "latncy_ms": 5}, "faults[1].latncy_ms", "latency_ms"),
        ({"kind": "meteor"}, "faults[1].kind", "must be one of"),
        (3, "faults[1]", "must be a table"),
    ],
)
def test_bad_fault_entries_name_the_entry_and_key(faults, key, reason):
    with pytest.raises(ConfigError) as e:
        from_dict({"faults": [{"kind": "timeout"}, faults]})
    assert e.value.key == key and reason in str(e.value)


def test_faults_must_be_a_list_and_are_not_set_on_the_command_line():
    with pytest.raises(ConfigError, match="list of tables"):
        from_dict({"faults": {"kind": "crash"}})
    with pytest.raises(ConfigError, match="config file"):
        load(CONFIGS / "faults-crash.toml", ["faults.node=1"])


def test_a_config_with_faults_survives_the_round_trip_through_run_json():
    config = load(CONFIGS / "faults-rpc-error.toml")
    assert from_dict(config.to_dict()) == config


def crash_config(*windows: tuple[float, float | None], strategy: str = "stale") -> Config:
    """seed-herd's load on 10 nodes with node 3 down over each window; `stale` keeps choosing a
    down node (its view never learns), so every window is visited by creates."""
    faults = [
        {"kind": "crash", "node": 3, "at_s": at, "until_s": "none" if until is None else until}
        for at, until in windows
    ]
    return from_dict(
        {
            "run": {"duration_s": 30.0, "sample_interval_s": 0},
            "heartbeat": {"interval_s": 2.0},
            "placement": {"strategy": strategy},
            "workload": {"rate_per_s": 40.0, "lifetime_s": 4.0},
            "faults": faults,
        }
    )


@pytest.mark.parametrize(
    "windows,down",
    [
        ([(5.0, 15.0), (10.0, 20.0)], [(5.0, 20.0)]),
        ([(10.0, 20.0), (5.0, 15.0)], [(5.0, 20.0)]),
        ([(5.0, 10.0), (10.0, 15.0)], [(5.0, 15.0)]),
        ([(5.0, 15.0), (8.0, 12.0)], [(5.0, 15.0)]),
        ([(5.0, 15.0), (10.0, None)], [(5.0, None)]),
        ([(5.0, 8.0), (12.0, 15.0)], [(5.0, 8.0), (12.0, 15.0)]),
    ],
)
def test_overlapping_crash_windows_of_a_node_compose(windows, down):
    """A node is down over the union of its crash windows: one crash per stretch of down time,
    not a comeback at the end of the first window while another still holds it down."""
    config = crash_config(*windows)
    events = Faults(config.faults, random.Random(0), range(10)).crash_events()
    expected = []
    for at, until in down:
        expected.append((at, 3, True))
        if until is not None:
            expected.append((until, 3, False))
    assert events == expected
    result = VirtualEngine().run_seed(config, 0)
    assert result.summary["fault_crashes"] == len(down)
    expect_no_loss(config, result)
    c = creates(result)
    on_3 = (c["node_id"] == 3) & (c["outcome"] == "placed")
    acted = (c["issued_at"] + c["done_at"]) / 2  # within one RPC of when node 3 acted
    for at, until in down:
        inside = (acted > at + 0.01) & (acted < (30.0 if until is None else until) - 0.01)
        assert not (on_3 & inside).any(), "a create placed on node 3 while it was down"
    assert result.nodes.column("down").to_pylist()[3] == (down[-1][1] is None)


def test_overlapping_slow_node_entries_add_up():
    """Two slow_node entries on one node: over their overlap an RPC pays both extra delays."""
    config = from_dict(
        {
            "run": {"duration_s": 30.0, "sample_interval_s": 0},
            "workload": {"rate_per_s": 40.0, "lifetime_s": 4.0},
            "placement": {"strategy": "optimistic"},
            "faults": [
                {"kind": "slow_node", "node": 2, "latency_ms": 50.0, "at_s": 5.0, "until_s": 20.0},
                {"kind": "slow_node", "node": 2, "latency_ms": 30.0, "at_s": 10.0},
            ],
        }
    )
    slow = SlowNodes(config.faults)
    assert [slow.extra_leg(2, t) * 2000 for t in (4.0, 6.0, 12.0, 25.0)] == [0, 50, 80, 30]
    assert slow.extra_leg(1, 12.0) == 0.0
    c = creates(VirtualEngine().run_seed(config, 0))
    on_2 = (c["node_id"] == 2) & (c["outcome"] == "placed")
    both = on_2 & (c["issued_at"] > 10.0) & (c["issued_at"] < 19.9)
    assert both.sum() > 0
    assert np.allclose(c["latency_ms"][both], 81.0)


@pytest.mark.parametrize(
    "second,refused",
    [({"at_s": 10.0}, True), ({"at_s": 20.0}, False), ({"at_s": 0.0, "until_s": 5.0}, False)],
)
def test_the_rpc_timeout_is_checked_against_overlapping_slow_nodes(second, refused):
    """The timeout models lost answers: it must exceed the slowest round trip, which is the sum
    of the slow_node entries of a node that overlap, not the largest one."""
    raw = {
        "placement": {"rpc_timeout_ms": 1000.0},
        "faults": [
            {"kind": "slow_node", "node": 1, "latency_ms": 600.0, "at_s": 5.0, "until_s": 20.0},
            {"kind": "slow_node", "node": 1, "latency_ms": 600.0, **second},
        ],
    }
    if not refused:
        from_dict(raw)
        return
    with pytest.raises(ConfigError) as e:
        from_dict(raw)
    assert e.value.key == "placement.rpc_timeout_ms" and "1201 ms" in e.value.reason
