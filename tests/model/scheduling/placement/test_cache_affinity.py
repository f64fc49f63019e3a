"""Template caches on the nodes, warm and cold creates, and the `cache_affinity` scorer: each
against a hand-computed case, then affinity raising the warm-hit rate of a run."""

from __future__ import annotations

import random
from typing import Any

import pytest

import harness.wiring.scenario as sc
from harness.config import Config, ConfigError
from harness.engines.virtual import VirtualEngine
from harness.model.cluster.node import Node, Outcome
from harness.model.protocol import Kind
from harness.model.scheduling.placement.scorers.cache_affinity import CacheAffinity
from harness.model.scheduling.scheduler import Scheduler, Step
from harness.model.scheduling.strategies import make_strategy
from harness.model.workload.request import CreateRequest, Shape
from tests.support.configs import registered, scenario
from tests.support.messages import Sink


def test_a_node_caches_the_templates_of_its_most_recent_creates():
    node = Node(0, 8, 1024.0, 4.0, cache_size=2)
    assert [node.cache(t) for t in "aba"] == [False, False, True]
    assert list(node.templates) == ["b", "a"]  # least recently used first
    assert node.cache("c") is False and list(node.templates) == ["a", "c"]  # b dropped
    assert [node.cache(t) for t in "bc"] == [False, True]
    node.crash()
    assert node.templates == {} and node.cache("c") is False
    uncached = Node(0, 8, 1024.0, 4.0, cache_size=0)
    assert [uncached.cache(t) for t in "aa"] == [False, False]


def shape(template: str, vcpu: float = 1.0) -> Shape:
    return Shape(vcpu, 1024.0, 1.0, template)


def timed(faults: list[dict[str, Any]] = (), **cluster: Any) -> Config:
    """One node of 2 vCPUs (R = 4: 8 fit); a create takes 2 ms of round trip, plus 30 ms on the
    node cold and 4 ms warm; the node caches one template."""
    return scenario(
        faults=list(faults),
        cluster={
            "nodes": 1,
            "cpu_count": 2,
            "create_latency_ms": 2.0,
            "create_cold_ms": 30.0,
            "create_warm_ms": 4.0,
            "template_cache": 1,
            **cluster,
        },
        placement={"k": 1, "rpc_timeout_ms": 100.0},
    )


def answer_times(config: Config, creates: list[Shape], start: float = 1.0) -> list[tuple]:
    """(answer due - arrival, outcome) of node 0's answer to each create, arriving 1 s apart
    from `start`."""
    sink = Sink()
    host = sc.node_host(config, 0, sc.nodes(config, 0), sink)
    times = []
    for sandbox_id, what in enumerate(creates):
        now = start + sandbox_id
        host.on_create(0, (sandbox_id, what, 0), now)
        ((at, kind, _, (_, outcome, _)),) = [m for m in sink.take() if m[1] != Kind.BEAT]
        assert kind == Kind.CREATE_ANSWER
        times.append((round(at - now, 9), outcome))
    return times


def test_a_create_answers_after_the_node_side_time_cold_or_warm():
    """Answer leg 1 ms; + 30 ms cold, + 4 ms warm. A cache of one template: b evicts a. A
    refused create takes no node time."""
    ok, full = Outcome.OK, Outcome.RESOURCE_EXHAUSTED
    creates = [shape("a"), shape("a"), shape("b"), shape("a"), shape("a", vcpu=5.0)]
    assert answer_times(timed(), creates) == [
        (0.031, ok),
        (0.005, ok),
        (0.031, ok),
        (0.031, ok),
        (0.001, full),
    ]


def test_a_lost_answer_still_comes_at_the_timeout_and_the_node_still_caches():
    """The first create's answer is lost (a timeout fault until t = 1.5): the caller hears at
    its 100 ms timeout, less the first 1 ms leg. The node did create it, so a is warm next."""
    config = timed(faults=[{"kind": "timeout", "until_s": 1.5}])
    times = answer_times(config, [shape("a"), shape("a")])
    assert times == [(0.099, Outcome.TIMEOUT), (0.005, Outcome.OK)]


def test_without_node_side_times_a_create_answers_after_its_leg_alone():
    config = timed(create_cold_ms=0.0, create_warm_ms=0.0)
    assert answer_times(config, [shape("a"), shape("a")]) == [(0.001, Outcome.OK)] * 2


def test_a_warm_create_cannot_be_slower_than_a_cold_one_and_the_timeout_covers_a_cold_one():
    with pytest.raises(ConfigError, match=r"cluster\.create_warm_ms: 40 exceeds"):
        timed(create_warm_ms=40.0)
    with pytest.raises(
        ConfigError, match=r"placement\.rpc_timeout_ms: 100 is not above .*\(102 ms"
    ):
        timed(create_cold_ms=100.0, create_warm_ms=0.0)


# --- the scorer -------------------------------------------------------------------------------


def affinity(**settings: Any) -> tuple[Scheduler, CacheAffinity]:
    """A replica over 4 idle 192-vCPU nodes scanned in order, and its cache_affinity part
    with `settings` (`[placement.cache_affinity]`)."""
    config = scenario(
        cluster={"nodes": 4},
        placement={
            "sampler": "every_node",
            "scorers": ["reference", "cache_affinity=0.02"],
            "cache_affinity": settings,
        },
    )
    rules = config.placement
    s = Scheduler(registered([192] * 4), rules, make_strategy("stale", [192] * 4), random.Random(0))
    (scorer,) = [part for part, _ in s.pipeline.scorers if isinstance(part, CacheAffinity)]
    return s, scorer


def place(s: Scheduler, template: str, node: int, now: float) -> None:
    """A create of `template` this replica placed on `node`, answered OK at `now`."""
    req = CreateRequest(0, shape(template), now, now + 30.0, 0)
    req.node = node
    s.starting[node] += 1  # its create in progress there, as start_create leaves it
    s.pending_cpu[node] += req.vcpu
    assert s.finish_create(req, Outcome.OK, now) is Step.PLACED


def test_cache_affinity_counts_placements_capped_over_the_top_nodes_until_the_ttl():
    """max_hits 2, top_nodes 2, ttl 10 s. a on node 0 three times (capped at 2: -1), once on 1
    (-0.5); b once on 2. A third node for a evicts the fewest placements, then the lowest ID."""
    s, scorer = affinity(max_hits=2, top_nodes=2, ttl_s=10.0)
    for node, template in [(0, "a"), (0, "a"), (0, "a"), (1, "a"), (2, "b")]:
        place(s, template, node, 1.0)
    req = CreateRequest(1, shape("a"), 2.0, 32.0, 0)
    assert scorer.scores(s, [0, 1, 2, 3], req, 2.0) == [-1.0, -0.5, 0.0, 0.0]
    place(s, "a", 3, 4.0)  # nodes 1 and 3 have one each: node 1 makes way
    assert scorer.scores(s, [0, 1, 2, 3], req, 5.0) == [-1.0, 0.0, 0.0, -0.5]
    assert scorer.scores(s, [0, 1, 2, 3], req, 13.9) == [-1.0, 0.0, 0.0, -0.5]
    assert scorer.scores(s, [0, 1, 2, 3], req, 14.0) == [0.0] * 4  # 10 s after the last
    b = CreateRequest(2, shape("b"), 5.0, 35.0, 0)
    assert scorer.scores(s, [2], b, 5.0) == [-0.5]


def test_the_bonus_is_its_weight_at_most_against_the_reference_score():
    """Node 0 idle, node 1 with 10 vCPUs allocated: reference (1 + 0) / 768 and (1 + 10) / 768,
    0.0130 apart. Ten placements of a on node 1 earn the full bonus, the weight: 0.02 beats the
    gap, 0.01 does not. Template b gets none."""
    for weight, winner in ((0.02, 1), (0.01, 0)):
        s, _ = affinity()
        s.pipeline.scorers[1] = (s.pipeline.scorers[1][0], weight)
        s.strategy.views[1].cpu_allocated = 10.0
        for _ in range(12):
            place(s, "a", 1, 1.0)
        assert s.choose(CreateRequest(1, shape("a"), 2.0, 32.0, 0), 2.0) == winner
        assert s.choose(CreateRequest(2, shape("b"), 2.0, 32.0, 0), 2.0) == 0


# --- warm hits in a run -------------------------------------------------------------------------

WARM_MS = 10.0
"""Creates answered within this many ms were warm: 1 ms round trip + 2 (warm) or 20 (cold)."""


def warm_share(config: Config, seeds: int = 2) -> float:
    latencies = []
    for seed in range(seeds):
        requests = VirtualEngine().run_seed(config, seed).requests.to_pandas()
        latencies += requests.loc[requests.outcome == "placed", "latency_ms"].tolist()
    assert len(latencies) > 500
    return sum(ms < WARM_MS for ms in latencies) / len(latencies)


def two_templates(*scorers: str) -> Config:
    """Templates a and b at even odds onto 10 nodes caching one template each, 50 creates/s
    for 12 s living ~2 s, K = 3, optimistic accounting: nodes never fill, so the sample and the
    scores alone decide where each goes."""
    template = {"weight": 1.0, "lifetime_s": 2.0}
    return scenario(
        run={"duration_s": 12.0, "sample_interval_s": 0},
        cluster={
            "nodes": 10,
            "cpu_count": 16,
            "create_cold_ms": 20.0,
            "create_warm_ms": 2.0,
            "template_cache": 1,
        },
        placement={
            "strategy": "optimistic",
            "scorers": list(scorers),
            "cache_affinity": {"top_nodes": 3},
        },
        workload={
            "arrival": "poisson",
            "rate_per_s": 50.0,
            "templates": [{"template": "a", **template}, {"template": "b", **template}],
        },
    )


def test_cache_affinity_raises_the_warm_hit_rate_of_two_templates():
    """Without affinity a node's one cached template is the one of its last create, a or b at
    even odds: about half the creates are warm. With it, each template keeps to the nodes of its
    record whenever one is among the 3 sampled (3 of 10: 1 - C(7,3)/C(10,3) = 71% of the time),
    so those nodes stay warm for it."""
    baseline = warm_share(two_templates())
    favoured = warm_share(two_templates("reference", "cache_affinity=1"))
    assert baseline == pytest.approx(0.5, abs=0.05)
    assert favoured > baseline + 0.15
