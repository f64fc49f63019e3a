"""Every shipped fault scenario in the virtual engine: what the scheduler saw matches what was
injected, no request is dropped, and the end-of-run invariants hold. The `expect_*` checks
(tests/support/) are shared with the Ray engine's tests (tests/actors/test_ray_faults.py).

Random fractions are checked against their expectation with a tolerance of 4 standard
deviations (binomial), so a correct engine fails one of these checks about once in 15,000.
"""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pyarrow.compute as pc
import pytest

from harness.cli import main
from harness.config import Config, ConfigError, from_dict, load
from harness.engines.virtual import VirtualEngine
from harness.model.cluster.faults import Faults, SlowNodes
from harness.results.run_reader import load_run
from tests.support.configs import CONFIGS
from tests.support.faults import EXPECT, FAULT_CONFIGS, creates, expect_no_loss


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

    def losing(self, config, seed, progress=None, rows=None):
        result = run_seed(self, config, seed, progress, rows)
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
