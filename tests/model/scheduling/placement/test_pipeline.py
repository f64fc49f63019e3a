"""The placement pipeline: plugins by name or import path, weights, and the built-in parts."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pandas as pd
import pytest

from harness.config import Config, ConfigError, load
from harness.engines.virtual import VirtualEngine
from harness.model.scheduling.placement import Scorer
from harness.model.scheduling.scheduler import Scheduler
from harness.model.scheduling.strategies import make_strategy
from harness.model.scheduling.strategies.optimistic import OptimisticStrategy
from harness.model.workload.request import CreateRequest
from harness.wiring.scenario import quiet_allowed
from tests.support.configs import CONFIGS, ask, registered, scenario

CONFIG_HERD = CONFIGS / "seed-herd.toml"


class PreferHighIds(Scorer):
    """A user's scorer, named by import path in the tests below: lower for higher node IDs."""

    def scores(
        self, scheduler: Scheduler, candidates: Sequence[int], req: CreateRequest, now: float
    ) -> list[float]:
        return [-float(node) for node in candidates]


class PreferFreshReports(PreferHighIds):
    """A user's scorer that reads when views were reported, and says so."""

    reads_report_times = True


NOT_A_SCORER = object()


def _scheduler(loads: list[float], strategy: str = "stale", **placement) -> Scheduler:
    """A replica whose view has `loads` allocated vCPUs on 192-vCPU nodes."""
    config = scenario(cluster={"nodes": len(loads)}, placement=placement)
    cpus = [192] * len(loads)
    ledger = make_strategy(strategy, cpus)
    for node, allocated in enumerate(loads):
        ledger.views[node].cpu_allocated = allocated
    return Scheduler(registered(cpus), config.placement, ledger, random.Random(0))


def test_every_node_with_the_reference_score_always_picks_the_least_loaded() -> None:
    """Perfect choice: scan every node, lowest score; a tie goes to the first in node order."""
    loads = [5.0, 3.0, 9.0, 3.0, 4.0]
    scheduler = _scheduler(loads, sampler="every_node")
    assert [scheduler.choose(ask(), 0.0) for _ in range(20)] == [1] * 20
    assert scheduler.choose(ask(excluded={1}), 0.0) == 3  # the excluded filter still applies


def test_a_scorer_named_by_import_path_is_used() -> None:
    scheduler = _scheduler([0.0] * 6, sampler="every_node", scorers=[f"{__name__}:PreferHighIds"])
    assert scheduler.choose(ask(), 0.0) == 5


@pytest.mark.parametrize(
    ("placement", "quiet"),
    [
        ({}, True),
        ({"strategy": "optimistic"}, False),
        ({"scorers": ["reference", f"{__name__}:PreferHighIds"]}, True),
        ({"scorers": ["reference", f"{__name__}:PreferFreshReports"]}, False),
    ],
)
def test_nodes_skip_unchanged_reports_only_if_no_part_needs_them(placement, quiet) -> None:
    """A strategy that applies every report, or one plugin that reads report times, keeps
    every node reporting at every beat."""
    assert quiet_allowed(scenario(placement=placement)) is quiet


def test_weighted_scorers_add_up() -> None:
    """reference = (1 + load) / 768 on idle-usage nodes; with PreferHighIds at weight w the
    score is (1 + load) / 768 - w * node: a small weight leaves the least loaded node first, a
    large one hands the choice to the highest ID."""
    loads = [0.0, 50.0, 100.0]
    path = f"{__name__}:PreferHighIds"
    small = _scheduler(loads, sampler="every_node", scorers=["reference", f"{path}=0.0001"])
    assert small.choose(ask(), 0.0) == 0  # 0.0013 vs 0.0663 - 0.0001 vs 0.1315 - 0.0002
    large = _scheduler(loads, sampler="every_node", scorers=["reference", f"{path}=1"])
    assert large.choose(ask(), 0.0) == 2


@pytest.mark.parametrize(
    ("placement", "message"),
    [
        ({"sampler": "no_such"}, "placement.sampler: unknown sampler 'no_such'; known: best_of_k"),
        ({"scorers": ["nowhere.at_all:X"]}, "placement.scorers: cannot import 'nowhere.at_all'"),
        ({"scorers": [f"{__name__}:Missing"]}, f"placement.scorers: '{__name__}' has no"),
        ({"scorers": [f"{__name__}:NOT_A_SCORER"]}, "is not a Scorer"),
        ({"filters": [f"{__name__}:PreferHighIds"]}, "is not a Filter"),
        ({"scorers": ["reference=heavy"]}, "the weight after = must be a number"),
        ({"algorithm": "bogus"}, "placement.algorithm: unknown algorithm 'bogus'"),
    ],
)
def test_a_plugin_that_does_not_resolve_is_refused_with_its_key(placement, message) -> None:
    with pytest.raises(ConfigError, match=None) as error:
        scenario(placement=placement)
    assert message in str(error.value)


def test_harness_plugins_lists_every_plugin_one_line_each(capsys) -> None:
    from harness.cli import main

    assert main(["plugins"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines[0] == ["KIND", "NAME", "FROM"]
    assert ["scorer", "reference", "harness"] in lines
    assert ["scorer", "cache_affinity", "harness"] in lines
    for name in ("memory_overcommit", "labels", "cpu_family"):
        assert ["filter", name, "harness"] in lines
    assert ["sampler", "every_node", "harness"] in lines
    assert ["strategy", "reconcile", "harness"] in lines
    assert all(len(line) == 3 for line in lines)


def _placed(config: Config) -> pd.DataFrame:
    """The placed creates of seed 0, in answer order, with their node."""
    requests = VirtualEngine().run_seed(config, 0).requests.to_pandas()
    return requests[(requests.kind == "create") & (requests.outcome == "placed")]


def test_least_busy_under_stale_metrics_puts_every_create_between_two_reports_on_one_node():
    """seed-herd (20/s, 1 ms creates: nothing in progress when a create is placed): the
    reports say usage 0 everywhere at the sync (initial load is idle), so node 0 (first in scan
    order) takes all 400 creates before the 20 s report, which shows it busy; node 1 (the first
    of the still-idle ones) then takes the last 100."""
    config = load(CONFIGS / "seed-herd.toml", ["placement.algorithm=least_busy"])
    placed = _placed(config)
    before, after = placed[placed.issued_at < 20.0], placed[placed.issued_at >= 20.0]
    assert before.node_id.unique().tolist() == [0] and len(before) == 400
    assert after.node_id.unique().tolist() == [1] and len(after) == 100


def test_the_least_busy_quirk_compares_with_the_leaders_reported_usage_alone():
    """Node 0 reports 2 vCPUs busy with 3 creates of 1 vCPU in progress (5 with them); node 1
    reports 4. The quirk keeps node 0 as leader at its reported 2 and node 1 does not beat it
    (4 < 2 is false); corrected, node 1 (4) beats node 0 (5). Upstream counted its creates in
    progress: the `in_progress` strategy."""
    quirk = _scheduler([0.0, 0.0], "in_progress", algorithm="least_busy", k=1)
    corrected = _scheduler([0.0, 0.0], "in_progress", algorithm="least_busy_corrected", k=1)
    for scheduler in (quirk, corrected):
        scheduler.strategy.views[0].cpu_percent = 200.0
        scheduler.strategy.views[1].cpu_percent = 400.0
        scheduler.starting[0] = 3
        scheduler.pending_cpu[0] = 3.0
    assert quirk.choose(ask(), 0.0) == 0
    assert corrected.choose(ask(), 0.0) == 1


def test_best_of_k_with_k_1_places_exactly_as_random_does():
    """Same stream, one uniform draw per choice: the same node for every create; and random is
    uniform (500 creates on 10 nodes: each count within 4 binomial standard deviations of 50)."""
    herd = load(CONFIG_HERD)
    k1 = _placed(herd.with_values({"placement.k": 1})).node_id.tolist()
    rnd = _placed(herd.with_values({"placement.algorithm": "random"})).node_id.tolist()
    assert k1 == rnd
    counts = [rnd.count(n) for n in range(10)]
    sd = (500 * 0.1 * 0.9) ** 0.5
    assert all(abs(c - 50) <= 4 * sd for c in counts)


def test_bin_pack_fills_nodes_in_order_until_each_is_full():
    """3 nodes of 4 vCPUs at R = 1, 1 vCPU sandboxes every 0.1 s, never killed, optimistic
    accounting (the view sees each placement): node 0 takes the first 4, node 1 the next 4,
    node 2 the last 4; the 13th finds no node with room."""
    config = scenario(
        cluster={"nodes": 3, "cpu_count": 4},
        placement={"algorithm": "bin_pack", "r": 1.0, "strategy": "optimistic", "k": 1},
        workload={"rate_per_s": 10.0, "lifetime_s": None},
        run={"duration_s": 1.3},
    )
    requests = VirtualEngine().run_seed(config, 0).requests.to_pandas()
    creates = requests[requests.kind == "create"]
    assert creates.node_id.tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [-1]
    assert creates.reason.iloc[-1] == "no_candidate"


def test_round_robin_takes_nodes_in_turn_and_skips_excluded_ones():
    scheduler = _scheduler([0.0] * 4, algorithm="round_robin")
    assert [scheduler.choose(ask(), 0.0) for _ in range(6)] == [0, 1, 2, 3, 0, 1]
    assert scheduler.choose(ask(excluded={2, 3}), 0.0) == 0


class OwnOptimistic(OptimisticStrategy):
    """A user's ledger strategy, named by import path: optimistic under another name."""

    name = "own_optimistic"


def test_a_ledger_strategy_named_by_import_path_runs_as_a_built_in_one(tmp_path) -> None:
    """The same requests and placements as the built-in it copies; `--compare` takes it."""
    herd = load(CONFIG_HERD)
    own = _placed(herd.with_values({"placement.strategy": f"{__name__}:OwnOptimistic"}))
    builtin = _placed(herd.with_values({"placement.strategy": "optimistic"}))
    assert own.node_id.tolist() == builtin.node_id.tolist()
    from harness.cli import main

    out = tmp_path / "run"
    argv = ["run", str(CONFIG_HERD), "--seeds", "1", "--quiet", "--no-report", "--out", str(out)]
    assert main([*argv, "--compare", f"stale,{__name__}:OwnOptimistic"]) == 0
    summary = pd.read_parquet(out / "summary.parquet")
    assert summary.strategy.tolist() == ["stale", f"{__name__}:OwnOptimistic"]
