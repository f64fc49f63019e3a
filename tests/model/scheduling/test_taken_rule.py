"""One rule for what a replica counts as taken (`ReplicaState.in_progress_cpu`, `reserved`):
every registered scorer and filter sees creates in flight only where the strategy counts them."""

from __future__ import annotations

import random

import pytest

from harness.model.scheduling.placement.registries import FILTERS, SCORERS
from harness.model.scheduling.placement.scorers.cpu_usage import CpuUsage
from harness.model.scheduling.plugin_settings import MemoryOvercommitSettings, StartingCapSettings
from harness.model.scheduling.scheduler import PlacementSpec, Scheduler
from harness.model.scheduling.strategies import make_strategy
from tests.support.configs import ask, registered

CPUS = [8, 8, 16, 4]
SPEC = PlacementSpec(
    r=1.0,
    alpha=0.5,
    settings={
        "memory_overcommit": MemoryOvercommitSettings(ratio=1.0),
        "starting_cap": StartingCapSettings(max_starting=1),
    },
)
IN_FLIGHT = [3.0, 0.0, 6.0, 1.0]


def _replica(in_flight: list[float], counts: bool) -> Scheduler:
    """A replica of the `in_progress` strategy whose view is loaded node by node, with two
    creates in progress on every node of `in_flight` vCPUs; `counts` as the strategy's flag."""
    ledger = make_strategy("in_progress", CPUS)
    for node, view in enumerate(ledger.views):
        view.cpu_allocated, view.cpu_percent = 2.0 * node, 150.0 * node
        view.memory_total_mib, view.memory_allocated_mib = 8192.0, 1024.0 * node
    scheduler = Scheduler(registered(CPUS), SPEC, ledger, random.Random(0))
    scheduler.counts_in_progress = counts
    for node, vcpus in enumerate(in_flight):
        scheduler.starting[node], scheduler.pending_cpu[node] = 2, vcpus
    return scheduler


def _answers(plugin: object, scheduler: Scheduler) -> list:
    req, nodes = ask(2.0), list(range(len(CPUS)))
    if plugin in SCORERS.builtins.values():
        return plugin(SPEC).scores(scheduler, nodes, req, 0.0)
    return [plugin(SPEC).passes(scheduler, n, req, 0.0) for n in nodes]


PLUGINS = [*SCORERS.builtins.values(), *FILTERS.builtins.values()]


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda c: c.name)
def test_creates_in_flight_weigh_only_where_the_strategy_counts_them(plugin):
    """Under a strategy that does not count creates in progress (`stale`), their vCPUs change
    no scorer's score and no filter's answer: none adds them by a rule of its own."""
    counted_nowhere = _answers(plugin, _replica([0.0] * len(CPUS), counts=False))
    assert _answers(plugin, _replica(IN_FLIGHT, counts=False)) == counted_nowhere


def test_the_rule_counts_them_where_the_strategy_does():
    counting, not_counting = _replica(IN_FLIGHT, counts=True), _replica(IN_FLIGHT, counts=False)
    nodes = range(len(CPUS))
    assert [counting.in_progress_cpu(n) for n in nodes] == IN_FLIGHT
    assert [not_counting.in_progress_cpu(n) for n in nodes] == [0.0] * len(CPUS)
    assert [counting.reserved(n, 0.0) - not_counting.reserved(n, 0.0) for n in nodes] == IN_FLIGHT
    with_them = CpuUsage(SPEC).scores(counting, list(nodes), ask(), 0.0)
    without = CpuUsage(SPEC).scores(not_counting, list(nodes), ask(), 0.0)
    assert [a - b for a, b in zip(with_them, without, strict=True)] == IN_FLIGHT
