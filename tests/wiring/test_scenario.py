"""The wiring of a scenario (`harness.wiring.scenario`): what it builds from a config and how,
such as whether nodes report only changes."""

from __future__ import annotations

import pytest

from harness.wiring.scenario import quiet_allowed, quiet_nodes
from tests.support.configs import scenario


@pytest.mark.parametrize(
    ("nodes", "rate", "quiet"),
    [(10_000, 2000.0, False), (100_000, 2000.0, True), (10_000, 100.0, True)],
)
def test_nodes_are_quiet_where_the_cluster_reports_more_often_than_it_changes(
    nodes, rate, quiet
) -> None:
    """Quiet (`auto`) only where it is cheaper: fewer creates and kills a second (2,000
    creates with 30 s lifetimes over 30 s: about 3,300) than reports (nodes / 20 s). `stale`
    allows it; `heartbeat.quiet_nodes` forces it on or off, on only where allowed."""
    config = scenario(
        cluster={"nodes": nodes},
        heartbeat={"interval_s": 20.0},
        run={"duration_s": 30.0},
        workload={"rate_per_s": rate, "lifetime_s": 30.0, "lifetime_dist": "exponential"},
    )
    assert quiet_allowed(config)
    assert quiet_nodes(config) is quiet
    assert quiet_nodes(config.with_value("heartbeat.quiet_nodes", "on"))
    assert not quiet_nodes(config.with_value("heartbeat.quiet_nodes", "off"))
    optimistic = config.with_value("placement.strategy", "optimistic")
    assert not quiet_nodes(optimistic)
    assert not quiet_nodes(optimistic.with_value("heartbeat.quiet_nodes", "on"))  # not allowed
