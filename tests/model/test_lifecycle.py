"""The run's lifecycle, one rule for both engines: when samples fall, when the run is over, and
when a client host is done (`harness.model.lifecycle`, `ClientHost.done`)."""

from __future__ import annotations

import pytest

from harness.engines.virtual import VirtualEngine
from harness.model.lifecycle import Lifecycle
from harness.wiring import scenario as sc
from tests.support.messages import Sink


def test_samples_fall_every_interval_up_to_the_duration_and_not_when_off():
    life = Lifecycle(2.5, 1.0)
    samples, t = [], life.first_sample()
    while t is not None:
        samples.append(t)
        t = life.sample_after(t)
    assert samples == [0.0, 1.0, 2.0]
    off = Lifecycle(2.5, 0.0)
    assert off.first_sample() is None and off.sample_after(0.0) is None


@pytest.mark.parametrize(
    "now,clients_done,sample,over",
    [
        (3.0, True, None, True),
        (2.0, True, None, False),  # before the duration
        (3.0, False, None, False),  # a client still waits or has a timer
        (3.0, True, 3.0, False),  # a sample is still due
    ],
)
def test_a_run_is_over_only_when_all_three_hold(now, clients_done, sample, over):
    assert Lifecycle(3.0, 1.0).over(now, clients_done, sample) is over


@pytest.mark.parametrize("workload", [{"rate_per_s": 5.0}, {"arrival": "closed", "clients": 3}])
def test_a_client_host_is_done_only_once_its_timers_and_answers_are_all_in(make_config, workload):
    config = make_config(
        run={"duration_s": 2.0, "seeds": 1}, workload={**workload, "lifetime_s": 0.5}
    )
    sink = Sink()
    host = sc.client_host(config, 0, 0, 1, sink)
    assert host.done  # nothing set yet
    host.start()
    assert not host.done and host.timers > 0 and host.waiting == 0


def test_a_virtual_run_ends_with_its_clients_done(make_config):
    """The virtual engine stops when nothing is left to deliver and checks that the rule agrees
    (it raises otherwise; the golden scenarios run the same check on every shipped config)."""
    config = make_config(run={"duration_s": 5.0, "seeds": 1}, workload={"lifetime_s": 1.0})
    result = VirtualEngine().run_seed(config, 0)
    assert result.summary["requests"] > 0
