"""Best-of-K as the reference describes it: sampler, score, tie-break, and the herd it causes."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from harness.engines.virtual import VirtualEngine
from harness.model.scheduling.placement.filters.fits import Fits
from harness.model.scheduling.placement.samplers.best_of_k import _Shuffle, sample
from harness.model.scheduling.placement.scorers.bin_pack import BinPack
from harness.model.scheduling.placement.scorers.reference import Reference
from harness.model.scheduling.scheduler import PlacementSpec, Scheduler
from harness.model.scheduling.strategies import make_strategy
from harness.results.statistics import rank_shares
from tests.support.configs import ask, registered, scenario


def original_sample(draw, n, k, eligible):
    """The original's algorithm, literally: partial Fisher-Yates over a full index array."""
    idx = list(range(n))
    chosen = []
    for i in range(n):
        if len(chosen) == k:
            break
        span = n - i
        j = i + min(int(draw() * span), span - 1)
        idx[i], idx[j] = idx[j], idx[i]
        if eligible is None or eligible(idx[i]):
            chosen.append(idx[i])
    return chosen


@pytest.mark.parametrize(
    "n,k", [(1, 3), (5, 3), (10, 3), (10, 10), (1000, 2), (7, 1), (1000, 40), (50, 50)]
)  # the last two move more positions than `SHORT`
def test_sampler_matches_the_original_draw_for_draw(n, k):
    blocked = {i for i in range(n) if i % 3 == 1}
    for eligible in (None, lambda node: node not in blocked):
        for seed in range(200):
            a = sample(random.Random(seed).random, n, k, eligible)
            b = original_sample(random.Random(seed).random, n, k, eligible)
            assert a == b


def test_a_sampler_reusing_its_scratch_draws_as_with_a_fresh_one():
    """A sampler keeps one `_Shuffle` and clears it for each placement. Placements that move
    more positions than its vectors hold (and take its dict) and placements that do not,
    interleaved, draw exactly what a fresh `_Shuffle` each would."""
    shared = _Shuffle()
    blocked = {i for i in range(1000) if i % 3 == 1}
    cases = [(10, 3), (1000, 40), (7, 1), (50, 50), (1000, 2), (10, 10)]
    filters = [None, lambda node: node not in blocked] * 3
    for seed in range(100):
        for (n, k), eligible in zip(cases, filters, strict=True):
            fresh = sample(random.Random(seed).random, n, k, eligible)
            assert sample(random.Random(seed).random, n, k, eligible, shared) == fresh
            assert fresh == original_sample(random.Random(seed).random, n, k, eligible)


def test_sampler_is_without_replacement_and_uniform():
    rng = random.Random(1)
    n, k, draws = 10, 3, 30000
    first = Counter()
    for _ in range(draws):
        picked = sample(rng.random, n, k, None)
        assert len(picked) == k == len(set(picked))
        first.update(picked)
    expected = draws * k / n
    # each node appears with probability k/n; 5 standard deviations of a binomial count
    tol = 5 * math.sqrt(draws * (k / n) * (1 - k / n))
    assert all(abs(c - expected) < tol for c in first.values())


def test_sampler_cost_does_not_grow_with_nodes():
    calls = 0

    def draw():
        nonlocal calls
        calls += 1
        return 0.5

    sample(draw, 10_000_000, 3, None)
    assert calls == 3


def test_sampler_gives_fewer_than_k_when_few_are_eligible():
    assert sorted(sample(random.Random(0).random, 10, 3, lambda n: n == 7)) == [7]
    assert sample(random.Random(0).random, 10, 3, lambda n: False) == []


def test_score_formula_and_empty_node():
    """(vcpu + reserved + alpha * cpu_percent / 100) / (R * cpu_count); a node reporting no
    CPUs scores infinity."""
    cpus = [192, 0]
    ledger = make_strategy("stale", cpus)
    ledger.views[0].cpu_allocated, ledger.views[0].cpu_percent = 10.0, 400.0
    spec = PlacementSpec(r=4.0, alpha=0.5)
    scheduler = Scheduler(registered(cpus), spec, ledger, random.Random(0))
    scores = Reference(spec).scores(scheduler, [0, 1], ask(1.0), 0.0)
    assert scores == [pytest.approx((1 + 10 + 2) / 768), math.inf]


@pytest.mark.parametrize("strategy", ["stale", "in_progress"])
def test_reference_fits_and_bin_pack_weigh_one_reserved(strategy):
    """`reserved` is one rule (`ReplicaState.reserved`): the believed allocation, plus creates
    in progress where the strategy counts them. The reference score, the `fits` filter and the
    `bin_pack` score all weigh exactly it; in_progress counts the pending vCPUs, stale not."""
    cpus = [8, 8, 16]
    ledger = make_strategy(strategy, cpus)
    for node, (load, percent) in enumerate([(2.0, 100.0), (5.0, 300.0), (1.0, 50.0)]):
        ledger.views[node].cpu_allocated, ledger.views[node].cpu_percent = load, percent
    spec = PlacementSpec(r=1.0, alpha=0.5)
    scheduler = Scheduler(registered(cpus), spec, ledger, random.Random(0))
    scheduler.pending_cpu[0], scheduler.pending_cpu[1] = 3.0, 2.0
    reserved = [scheduler.reserved(n, 0.0) for n in range(3)]
    counts = strategy == "in_progress"
    assert reserved == ([5.0, 7.0, 1.0] if counts else [2.0, 5.0, 1.0])
    req, nodes = ask(2.0), [0, 1, 2]
    views = ledger.views
    assert Reference(spec).scores(scheduler, nodes, req, 0.0) == [
        (2.0 + reserved[n] + 0.5 * views[n].cpu_percent / 100.0) / (1.0 * cpus[n]) for n in nodes
    ]
    assert BinPack(spec).scores(scheduler, nodes, req, 0.0) == [
        -reserved[n] / (1.0 * cpus[n]) for n in nodes
    ]
    fits = [Fits(spec).passes(scheduler, n, req, 0.0) for n in nodes]
    assert fits == [reserved[n] + 2.0 <= cpus[n] for n in nodes] == [True, not counts, True]


def test_lowest_score_wins_and_first_sampled_wins_a_tie():
    """Scheduler.choose on 10 nodes, K = 3: the sample is the sampler's with the same stream;
    the least loaded of them wins, and among equal loads the first sampled."""
    cpus = [192] * 10

    def chooser(loads: list[float]) -> tuple[Scheduler, list[int]]:
        ledger = make_strategy("stale", cpus)
        for node, load in enumerate(loads):
            ledger.views[node].cpu_allocated = load
        drawn = sample(random.Random(5).random, 10, 3, None)
        return Scheduler(registered(cpus), PlacementSpec(k=3), ledger, random.Random(5)), drawn

    scheduler, drawn = chooser([0.0] * 10)
    assert scheduler.choose(ask(), 0.0) == drawn[0]  # a three-way tie
    loads = [0.0] * 10
    loads[drawn[0]] = 2.0
    loads[drawn[1]] = loads[drawn[2]] = 1.0
    scheduler, _ = chooser(loads)
    assert scheduler.choose(ask(), 0.0) == drawn[1]  # drawn[1] ties drawn[2], sampled first
    loads[drawn[1]] = 1.5
    scheduler, _ = chooser(loads)
    assert scheduler.choose(ask(), 0.0) == drawn[2]


@pytest.mark.parametrize("n,k", [(10, 3), (5, 3), (8, 2)])
def test_static_scores_give_the_binomial_rank_shares(n, k):
    """Reports never arrive after the initial sync: node of rank i wins C(n-i,K-1)/C(n,K)."""
    requests = 20_000
    config = scenario(
        run={"duration_s": 10.0, "seeds": 1, "sample_interval_s": 0},
        cluster={"nodes": n, "cpu_count": 100_000, "initial_cpu_per_node": list(range(n))},
        heartbeat={"interval_s": 1e6},
        placement={"strategy": "stale", "k": k},
        workload={"rate_per_s": requests / 10.0, "lifetime_s": "none"},
    )
    result = VirtualEngine().run_seed(config, seed=3)
    counts = result.nodes.column("sandboxes").to_pylist()  # node i has initial load i: rank i+1
    assert sum(counts) == requests
    for i, (count, share) in enumerate(zip(counts, rank_shares(n, k), strict=True)):
        sigma = math.sqrt(requests * share * (1 - share))
        assert abs(count - requests * share) <= 4 * sigma + 1, (i, count, requests * share)
