"""Fault scenarios: what each must show, on either engine (`EXPECT`)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow.compute as pc

from harness.config import Config
from harness.results.invariants import check
from harness.results.seed_result import SeedResult
from tests.support.configs import CONFIGS

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
