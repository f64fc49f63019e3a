"""The placement pipeline: plugins by name or import path, weights, and the built-in parts."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from harness.config import ConfigError
from harness.ledgers import make_ledger
from harness.placement import Scorer
from harness.scheduler import Scheduler
from tests.conftest import scenario


class PreferHighIds(Scorer):
    """A user's scorer, named by import path in the tests below: lower for higher node IDs."""

    def scores(
        self, scheduler: Scheduler, candidates: Sequence[int], vcpu: float, now: float
    ) -> list[float]:
        return [-float(node) for node in candidates]


NOT_A_SCORER = object()


def _scheduler(loads: list[float], **placement) -> Scheduler:
    """A replica whose view has `loads` allocated vCPUs on 192-vCPU nodes."""
    config = scenario(cluster={"nodes": len(loads)}, placement=placement)
    cpus = [192] * len(loads)
    ledger = make_ledger("stale", cpus)
    for node, load in enumerate(loads):
        ledger.views[node].cpu_allocated = load
    return Scheduler(cpus, config.placement, ledger, random.Random(0))


def test_every_node_with_the_reference_score_always_picks_the_least_loaded() -> None:
    """Perfect choice: scan every node, lowest score; a tie goes to the first in node order."""
    loads = [5.0, 3.0, 9.0, 3.0, 4.0]
    scheduler = _scheduler(loads, sampler="every_node")
    assert [scheduler.choose(1.0, None, 0.0) for _ in range(20)] == [1] * 20
    assert scheduler.choose(1.0, {1}, 0.0) == 3  # the excluded filter still applies


def test_a_scorer_named_by_import_path_is_used() -> None:
    scheduler = _scheduler([0.0] * 6, sampler="every_node", scorers=[f"{__name__}:PreferHighIds"])
    assert scheduler.choose(1.0, None, 0.0) == 5


def test_weighted_scorers_add_up() -> None:
    """reference = (1 + load) / 768 on idle-usage nodes; with PreferHighIds at weight w the
    score is (1 + load) / 768 - w * node: a small weight leaves the least loaded node first, a
    large one hands the choice to the highest ID."""
    loads = [0.0, 50.0, 100.0]
    path = f"{__name__}:PreferHighIds"
    small = _scheduler(loads, sampler="every_node", scorers=["reference", f"{path}=0.0001"])
    assert small.choose(1.0, None, 0.0) == 0  # 0.0013 vs 0.0663 - 0.0001 vs 0.1315 - 0.0002
    large = _scheduler(loads, sampler="every_node", scorers=["reference", f"{path}=1"])
    assert large.choose(1.0, None, 0.0) == 2


@pytest.mark.parametrize(
    ("placement", "message"),
    [
        ({"sampler": "no_such"}, "placement.sampler: unknown sampler 'no_such'; known: best_of_k"),
        ({"scorers": ["nowhere.at_all:X"]}, "placement.scorers: cannot import 'nowhere.at_all'"),
        ({"scorers": [f"{__name__}:Missing"]}, f"placement.scorers: '{__name__}' has no"),
        ({"scorers": [f"{__name__}:NOT_A_SCORER"]}, "is not a Scorer"),
        ({"filters": [f"{__name__}:PreferHighIds"]}, "is not a Filter"),
        ({"scorers": ["reference=heavy"]}, "the weight after = must be a number"),
        ({"algorithm": "bogus"}, "placement.algorithm: must be one of best_of_k"),
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
    assert ["scorer", "reference", "harness"] in lines
    assert ["sampler", "every_node", "harness"] in lines
    assert ["strategy", "reconcile", "harness"] in lines
    assert all(len(line) == 3 for line in lines)
