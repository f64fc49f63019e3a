"""The new ledger strategies, report ordering and the accounting-error summary, on scripted
sequences of reports and calls (no engine): each test states the race it replays."""

from __future__ import annotations

import contextlib
import json
from importlib.metadata import EntryPoint, EntryPoints

import pandas as pd
import pytest

from harness.config import ConfigError, from_dict, load
from harness.config.validation import set_dotted
from harness.model import registry
from harness.model.cluster.node import Node, Outcome
from harness.model.scheduling.placement.placement_keys import PlacementSpec
from harness.model.scheduling.plugin_settings import TtlSettings
from harness.model.scheduling.strategies import STRATEGIES, make_strategy
from harness.model.workload.request import CreateRequest, Shape
from harness.results.failures import InvariantError
from harness.results.statistics import cv_shift
from harness.running.runner import run
from tests.support.configs import CONFIGS


def _req(sandbox_id: int, node: int = 0, vcpu: float = 2.0) -> CreateRequest:
    req = CreateRequest(sandbox_id, Shape(vcpu, 1024.0, 1.0), 0.0, 30.0, client=0)
    req.node = node
    return req


def _node() -> Node:
    return Node(0, 64, 65536.0, 4.0, base_cpu=4.0)


def _ledger(name: str, node: Node, **ttl: float):
    """A one-node ledger that has applied the node's first report at t=0 (`ttl`: the ttl
    strategy's settings)."""
    rules = PlacementSpec(settings={"ttl": TtlSettings(**ttl)})
    ledger = make_strategy(name, [node.cpu_count], rules)
    ledger.apply_report(node.report(0.0, ledger.wants_sandbox_ids), 0.0)
    return ledger


def _answer(ledger, node: Node, t: float):
    """The node's fresh report sent back with an answer, for strategies that want one."""
    return node.report(t, ledger.wants_sandbox_ids) if ledger.wants_response_report else None


def _create(ledger, node: Node, req: CreateRequest, t: float) -> None:
    """The create RPC in full: started at t, done by the node at t+1, answered at t+2."""
    ledger.create_started(req, t)
    outcome = node.create(req.sandbox_id, req.shape)
    ledger.create_finished(req, outcome, t + 2, _answer(ledger, node, t + 1))


def _kill(ledger, node: Node, req: CreateRequest, t: float) -> None:
    """The kill RPC in full: sent at t, done by the node at t+1, answered at t+2."""
    outcome = node.kill(req.sandbox_id)
    ledger.kill_finished(req, outcome, t + 2, _answer(ledger, node, t + 1))


def test_registry_has_every_strategy_by_name() -> None:
    assert set(STRATEGIES) == {
        "stale",
        "in_progress",
        "optimistic",
        "optimistic_add_only",
        "optimistic_pre_rpc",
        "ttl",
        "sync_response",
        "reconcile",
    }
    assert all(name == cls.name for name, cls in STRATEGIES.items())


def test_an_installed_strategy_is_listed_after_the_built_ins_and_found_by_name(monkeypatch):
    """The example package's entry point, registered here as if it were installed: its name
    is listed (`--compare`, `harness plugins`) and resolves to its class. The rest of the suite
    sees built-ins only (tests/conftest.py)."""
    monkeypatch.syspath_prepend(str(CONFIGS.parent / "examples" / "idle-first-plugin" / "src"))
    installed = EntryPoint("optimistic_twice", "idle_first:OptimisticTwice", STRATEGIES.group)
    found = {STRATEGIES.group: EntryPoints([installed])}
    monkeypatch.setattr(registry, "entry_points", lambda group: found.get(group, EntryPoints()))
    assert list(STRATEGIES) == [*STRATEGIES.builtins, "optimistic_twice"]
    twice = STRATEGIES["optimistic_twice"]
    assert twice.__name__ == "OptimisticTwice" and twice.name == "optimistic_twice"


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_older_report_is_dropped_only_by_strategies_that_order_reports(name: str) -> None:
    node = _node()
    ledger = _ledger(name, node)
    old = node.report(1.0, ledger.wants_sandbox_ids)
    node.create(7, Shape(2.0, 1024.0, 1.0))
    new = node.report(2.0, ledger.wants_sandbox_ids)
    ledger.apply_report(new, 3.0)
    ledger.apply_report(old, 4.0)  # overtaken in transit
    expected = new if ledger.drops_old_reports else old
    assert ledger.views[0].seq == expected.seq
    assert ledger.believed_cpu(0, 4.0) == expected.cpu_allocated


def test_optimistic_double_counts_a_report_taken_during_the_rpc() -> None:
    node, req = _node(), _req(1)
    ledger = _ledger("optimistic", node)
    ledger.create_started(req, 1.0)
    node.create(1, Shape(2.0, 1024.0, 1.0))
    ledger.apply_report(node.report(1.5), 1.6)  # taken after the node acted, before the answer
    ledger.create_finished(req, Outcome.OK, 2.0, None)
    assert ledger.believed_cpu(0, 2.0) - node.cpu_allocated == 2.0


def test_pre_rpc_add_is_erased_by_a_report_taken_before_the_create() -> None:
    node, req = _node(), _req(1)
    ledger = _ledger("optimistic_pre_rpc", node)
    before = node.report(0.5)
    ledger.create_started(req, 1.0)
    assert ledger.believed_cpu(0, 1.0) == 6.0  # added before the RPC
    ledger.apply_report(before, 1.2)
    node.create(1, Shape(2.0, 1024.0, 1.0))
    ledger.create_finished(req, Outcome.OK, 2.0, None)
    assert ledger.believed_cpu(0, 2.0) - node.cpu_allocated == -2.0


def test_pre_rpc_takes_back_the_add_of_a_failed_create() -> None:
    node, req = _node(), _req(1)
    ledger = _ledger("optimistic_pre_rpc", node)
    ledger.create_started(req, 1.0)
    ledger.create_finished(req, Outcome.RESOURCE_EXHAUSTED, 2.0, None)
    assert ledger.believed_cpu(0, 2.0) == 4.0


def test_add_only_keeps_killed_sandboxes_until_the_next_report() -> None:
    node = _node()
    ledger = _ledger("optimistic_add_only", node)
    for i in range(3):
        req = _req(i)
        _create(ledger, node, req, 10.0 * i)
        _kill(ledger, node, req, 10.0 * i + 5)
    assert node.cpu_allocated == 4.0
    assert ledger.believed_cpu(0, 30.0) == 10.0
    ledger.apply_report(node.report(31.0), 31.0)
    assert ledger.believed_cpu(0, 31.0) == 4.0


def test_ttl_entries_survive_reports_and_expire_after_ttl() -> None:
    node = _node()
    ledger = _ledger("ttl", node, ttl_s=10.0)
    _create(ledger, node, _req(1), 0.0)  # entry +2 from t=2 to t=12
    assert ledger.believed_cpu(0, 2.0) == 6.0
    ledger.apply_report(node.report(3.0), 3.0)  # already counts the sandbox: overlap
    assert ledger.believed_cpu(0, 5.0) == 8.0
    assert ledger.believed_cpu(0, 11.9) == 8.0
    assert ledger.believed_cpu(0, 12.0) == 6.0
    _kill(ledger, node, _req(1), 20.0)  # entry -2 from t=22 to t=32
    assert ledger.believed_cpu(0, 22.0) == 4.0
    assert ledger.believed_cpu(0, 32.0) == 6.0


def test_sync_response_applies_the_answer_only_when_newer() -> None:
    node, req = _node(), _req(1)
    ledger = _ledger("sync_response", node)
    _create(ledger, node, req, 1.0)
    assert ledger.believed_cpu(0, 3.0) == node.cpu_allocated == 6.0
    older = node.report(3.5)
    node.create(2, Shape(2.0, 1024.0, 1.0))
    ledger.apply_report(node.report(4.0), 4.0)
    ledger.kill_finished(_req(9), Outcome.FAILED, 5.0, older)  # a slow answer, older numbers
    assert ledger.believed_cpu(0, 5.0) == node.cpu_allocated == 8.0


def test_reconcile_does_not_double_count_a_create_the_report_already_lists() -> None:
    node, req = _node(), _req(1)
    ledger = _ledger("reconcile", node)
    ledger.create_started(req, 1.0)
    node.create(1, Shape(2.0, 1024.0, 1.0))
    ledger.apply_report(node.report(1.5, with_ids=True), 1.6)
    ledger.create_finished(req, Outcome.OK, 2.0, None)
    assert ledger.believed_cpu(0, 2.0) == node.cpu_allocated


def test_reconcile_keeps_a_create_a_late_report_does_not_list() -> None:
    node, req = _node(), _req(1)
    ledger = _ledger("reconcile", node)
    before = node.report(0.5, with_ids=True)
    _create(ledger, node, req, 1.0)
    ledger.apply_report(before, 3.5)  # erase attempt: taken before the create
    assert ledger.believed_cpu(0, 3.5) == node.cpu_allocated
    ledger.apply_report(node.report(4.0, with_ids=True), 4.0)  # confirms it
    assert ledger.creates[0] == {}
    assert ledger.believed_cpu(0, 4.0) == node.cpu_allocated


def test_reconcile_kill_waits_for_a_report_taken_after_it() -> None:
    """A sandbox created and killed between two reports: the report taken while it lived
    arrives after the kill and lists it; the kill must still be subtracted."""
    node, req = _node(), _req(1)
    ledger = _ledger("reconcile", node)
    _create(ledger, node, req, 1.0)
    while_alive = node.report(4.0, with_ids=True)
    _kill(ledger, node, req, 5.0)  # answered at t=7
    assert ledger.believed_cpu(0, 7.0) == node.cpu_allocated == 4.0
    ledger.apply_report(while_alive, 8.0)
    assert ledger.believed_cpu(0, 8.0) == 4.0
    ledger.apply_report(node.report(6.5, with_ids=True), 9.0)  # before the answer: not proof
    assert 1 in ledger.kills[0]
    ledger.apply_report(node.report(10.0, with_ids=True), 10.0)
    assert ledger.kills[0] == {}
    assert ledger.believed_cpu(0, 10.0) == 4.0


def test_reconcile_forgets_creates_lost_in_a_crash() -> None:
    """A crash takes unconfirmed creates with it. Their kills fail (the node is down), which
    proves nothing (a transient error fails a kill too); the first report taken after their
    answers, which does not list them, does."""
    node = _node()
    ledger = _ledger("reconcile", node)
    one, two = _req(1), _req(2)
    _create(ledger, node, one, 1.0)  # answered at t=3
    _create(ledger, node, two, 2.0)  # answered at t=4
    assert ledger.believed_cpu(0, 4.0) == node.cpu_allocated == 8.0
    node.crash()  # t=5: both sandboxes and the base load are gone
    _kill(ledger, node, one, 6.0)  # answered FAILED at t=8
    assert ledger.believed_cpu(0, 8.0) == 8.0  # a failed kill subtracts nothing
    node.restart()
    ledger.apply_report(node.report(10.0, with_ids=True), 10.0)  # back empty
    assert ledger.creates[0] == {}
    assert ledger.believed_cpu(0, 10.0) == node.cpu_allocated == 0.0
    _kill(ledger, node, two, 11.0)  # its kill fails too, and changes nothing
    assert ledger.believed_cpu(0, 13.0) == node.cpu_allocated == 0.0
    ledger.apply_report(node.report(14.0, with_ids=True), 14.0)
    assert ledger.believed_cpu(0, 14.0) == node.cpu_allocated == 0.0


def test_reconcile_keeps_a_sandbox_whose_kill_failed_on_a_live_node() -> None:
    """A kill that fails without the node acting (a transient RPC error) leaves the sandbox
    running: nothing is subtracted, and the next report confirms it."""
    node, req = _node(), _req(1)
    ledger = _ledger("reconcile", node)
    _create(ledger, node, req, 1.0)  # answered at t=3
    ledger.kill_finished(req, Outcome.FAILED, 6.0, None)
    assert ledger.believed_cpu(0, 6.0) == node.cpu_allocated == 6.0
    ledger.apply_report(node.report(7.0, with_ids=True), 7.0)
    assert ledger.creates[0] == {} and ledger.kills[0] == {}
    assert ledger.believed_cpu(0, 7.0) == node.cpu_allocated == 6.0


def test_reconcile_does_not_subtract_twice_a_create_gone_before_its_kill_answer() -> None:
    """The node kills a sandbox, a report taken then drops the unconfirmed create, and only
    then does the kill's answer arrive: it must not subtract the sandbox a second time."""
    node, req = _node(), _req(1)
    ledger = _ledger("reconcile", node)
    _create(ledger, node, req, 1.0)  # answered at t=3
    assert node.kill(1) is Outcome.OK  # the kill RPC: node acts at t=5
    ledger.apply_report(node.report(5.5, with_ids=True), 5.6)
    assert ledger.creates[0] == {}
    assert ledger.believed_cpu(0, 5.6) == node.cpu_allocated == 4.0
    ledger.kill_finished(req, Outcome.OK, 6.0, None)
    assert ledger.believed_cpu(0, 6.0) == node.cpu_allocated == 4.0
    ledger.apply_report(node.report(7.0, with_ids=True), 7.0)
    assert ledger.kills[0] == {}
    assert ledger.believed_cpu(0, 7.0) == node.cpu_allocated == 4.0


def test_reconcile_keeps_a_create_a_report_taken_before_its_answer_does_not_list() -> None:
    """Taken after the create's answer, absence proves the sandbox gone; taken before it (here
    before the node acted, applied after the answer), absence proves nothing."""
    node, req = _node(), _req(1)
    ledger = _ledger("reconcile", node)
    ledger.create_started(req, 1.0)
    before_the_node = node.report(1.2, with_ids=True)
    node.create(1, Shape(2.0, 1024.0, 1.0))  # t=2
    ledger.create_finished(req, Outcome.OK, 3.0, None)
    ledger.apply_report(before_the_node, 3.5)
    assert 1 in ledger.creates[0]
    assert ledger.believed_cpu(0, 3.5) == node.cpu_allocated == 6.0


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("heartbeat.jitter_ms", -1, "heartbeat.jitter_ms: must be >= 0"),
        ("placement.ttl.ttl_s", 0, "placement.ttl.ttl_s: must be > 0"),
        (
            "placement.strategy",
            "reconcil",
            r"unknown strategy 'reconcil'; did you mean reconcile\? known: stale",
        ),
    ],
)
def test_new_keys_are_validated(key: str, value: object, message: str) -> None:
    raw: dict = {}
    set_dotted(raw, key, value)
    with pytest.raises(ConfigError, match=message):
        from_dict(raw)


def test_cv_shift_pairs_runs_by_strategy_and_seed() -> None:
    base = pd.DataFrame(
        {"strategy": ["a", "a", "a", "b"], "seed": [0, 1, 2, 0], "cv": [0.1, 0.5, 0.3, 0.2]}
    )
    other = pd.DataFrame(  # same seeds in another order; strategy a moves by exactly +0.1
        {"strategy": ["a", "a", "a", "b"], "seed": [2, 0, 1, 0], "cv": [0.4, 0.2, 0.6, 0.2]}
    )
    shift = cv_shift(base, other).set_index("strategy")
    assert shift.loc["a", "shift"] == pytest.approx(0.1)
    assert shift.loc["a", "shift_lo"] == pytest.approx(0.1)
    assert shift.loc["a", "shift_hi"] == pytest.approx(0.1)
    assert shift.loc["a", "seeds"] == 3
    assert shift.loc["b", "shift"] == 0.0


def test_every_strategy_keeps_every_invariant_through_crashes(tmp_path) -> None:
    """faults-crash with every strategy: node 3 comes back empty, node 7 stays down; every
    end-of-run check of every (strategy, seed) holds, `reconcile_drained` included."""
    config = load(CONFIGS / "faults-crash.toml", ["run.seeds=3", "run.sample_interval_s=0"])
    with contextlib.suppress(InvariantError):  # the checks are in run.json either way
        run(config, list(STRATEGIES), tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert len(meta["finished"]) == 3 * len(STRATEGIES)
    checked = {(c["strategy"], c["seed"]) for c in meta["invariants"]}
    assert checked == {(name, seed) for name in STRATEGIES for seed in range(3)}
    drained = {c["seed"] for c in meta["invariants"] if c["check"] == "reconcile_drained"}
    assert drained == {0, 1, 2}
    broken = [
        f"{c['strategy']} seed {c['seed']}: {c['check']} ({c['detail']})"
        for c in meta["invariants"]
        if not c["ok"]
    ]
    assert broken == []
