"""The workload against theory: template mixes and lifetime distributions on the virtual engine,
rate profiles counted over many seeds, and the config's checks of the new keys.

Every figure is drawn from seeded streams, so each test gives the same numbers every run; the
tolerances say how far a correct implementation may fall from theory with these seeds (4
standard deviations for counts, the 99.9% Kolmogorov-Smirnov bound for distributions), and a
wrong one (a weight or a parameter off by a few per cent) falls outside.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import numpy as np
import pytest

from harness.engines.virtual import VirtualEngine
from harness.model.protocol import Kind
from harness.model.random_streams import Streams
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.distributions import LIFETIMES
from harness.model.workload.templates import Templates, lifetime
from harness.model.workload.workload_keys import SandboxSpec, WorkloadSpec
from tests.support.configs import refused, scenario
from tests.support.distributions import COUNT_SDS, KS_999, ks_distance, theory_cdf
from tests.support.messages import clients, open_loop

# --- lifetimes ----------------------------------------------------------------------------

LIFETIME_CASES = [
    ("exponential", {}),
    ("lognormal", {"lifetime_sigma": 0.5}),
    ("lognormal", {"lifetime_sigma": 1.5}),
    ("pareto", {"lifetime_alpha": 1.5}),
    ("pareto", {"lifetime_alpha": 3.0}),
]


@pytest.mark.parametrize("dist,params", LIFETIME_CASES)
def test_each_lifetime_distribution_has_its_documented_shape_and_mean(dist, params):
    """20,000 draws, mean 8 s: within the KS bound of the CDF written from the docs. The mean
    itself: the lognormal's and the Pareto's with alpha 3 have a finite variance, so the
    sample mean is held to 4 standard errors; the Pareto with alpha 1.5 has none (its sample
    mean converges slowly), so only the shape is held there."""
    spec = SandboxSpec(lifetime_s=8.0, lifetime_dist=dist, **params)
    draw, rng = lifetime(spec).draw, random.Random(1)
    sample = [draw(rng) for _ in range(20_000)]
    cdf = theory_cdf(dist, 8.0, params.get("lifetime_sigma", 1.0), params.get("lifetime_alpha", 2))
    assert ks_distance(sample, cdf) < KS_999
    if dist != "pareto" or params["lifetime_alpha"] > 2:
        assert abs(np.mean(sample) - 8.0) < COUNT_SDS * np.std(sample) / math.sqrt(len(sample))


def test_a_wrong_parameter_fails_the_same_check():
    """The KS check has teeth: lognormal draws with sigma 1.05 against the CDF of sigma 1, and
    a Pareto of alpha 1.6 against 1.5, are both refused."""
    rng = random.Random(1)
    wider = lifetime(SandboxSpec(lifetime_s=8.0, lifetime_dist="lognormal", lifetime_sigma=1.1))
    assert ks_distance([wider.draw(rng) for _ in range(20_000)], theory_cdf("lognormal", 8.0)) > 3
    pareto = lifetime(SandboxSpec(lifetime_s=8.0, lifetime_dist="pareto", lifetime_alpha=1.6))
    sample = [pareto.draw(rng) for _ in range(20_000)]
    assert ks_distance(sample, theory_cdf("pareto", 8.0, alpha=1.5)) > 3


def test_fixed_and_never_draw_nothing():
    rng = random.Random(1)
    state = rng.getstate()
    assert lifetime(SandboxSpec(lifetime_s=3.0)).draw(rng) == 3.0
    assert lifetime(SandboxSpec(lifetime_s=None)).draw(rng) is None
    assert rng.getstate() == state
    assert set(LIFETIMES) == {"fixed", "exponential", "lognormal", "pareto"}


# --- templates on the virtual engine ------------------------------------------------------

MIX_RUN = {
    "run": {"duration_s": 60.0, "sample_interval_s": 0.0},
    "cluster": {"nodes": 20, "cpu_count": 192},
    "placement": {"strategy": "optimistic"},
}


@pytest.mark.parametrize("dist,params", LIFETIME_CASES[:2] + LIFETIME_CASES[3:4])
def test_templates_mix_by_weight_and_live_their_own_lifetimes_on_the_virtual_engine(dist, params):
    """100 creates/s for 60 s, two templates, weights 3 : 1: `small` (1 vCPU, lifetimes mean
    2 s of the given distribution) and `big` (3 vCPU, never killed). Every kill is a small
    one, so at the end big = (vCPUs allocated - sandboxes alive) / 2: the share of big
    creates is within 4 binomial sd of 1/4. The lifetimes (a kill's issue time minus its
    create's answer) of the smalls placed before 40 s and living under 20 s are exactly the
    distribution cut at 20 s: within the KS bound."""
    small = {"template": "small", "weight": 3.0, "vcpu": 1.0, "lifetime_s": 2.0}
    small |= {"lifetime_dist": dist, **params}
    big = {"template": "big", "weight": 1.0, "vcpu": 3.0, "lifetime_s": "none"}
    workload = {"rate_per_s": 100.0, "templates": [small, big]}
    result = VirtualEngine().run_seed(scenario(**MIX_RUN, workload=workload), seed=2)
    s, nodes = result.summary, result.nodes.to_pandas()
    assert s["failed"] == 0 and s["requests"] == 6000
    bigs = (nodes["cpu_allocated"].sum() - nodes["sandboxes"].sum()) / 2
    sd = math.sqrt(6000 * 0.25 * 0.75)
    assert abs(bigs - 1500) < COUNT_SDS * sd, bigs

    reqs = result.requests.to_pandas()
    creates = reqs[reqs["kind"] == "create"].set_index("sandbox_id")
    kills = reqs[reqs["kind"] == "kill"].set_index("sandbox_id")
    life = kills["issued_at"] - creates.loc[kills.index, "done_at"]
    cohort = life[(creates.loc[kills.index, "done_at"] < 40.0) & (life < 20.0)]
    full = theory_cdf(dist, 2.0, params.get("lifetime_sigma", 1.0), params.get("lifetime_alpha", 2))
    assert len(cohort) > 2500
    assert ks_distance(cohort.tolist(), lambda x: full(x) / full(20.0)) < KS_999


def test_one_template_draws_nothing_more_and_shares_one_shape():
    """A workload of one template draws what the [workload] keys alone do: the same times and
    lifetimes, and no draw from the `template` stream; every create carries the one Shape."""
    keys = {"arrival": "poisson", "rate_per_s": 5.0, "lifetime_dist": "exponential"}
    entry = {"template": "only", "vcpu": 2.0, "lifetime_s": 60.0, "lifetime_dist": "exponential"}

    def creates(**workload: Any) -> list[tuple]:
        host, sink = clients(**keys, **workload)
        sent = open_loop(host, sink)
        return [p for _, kind, _, p in sent if kind == Kind.SUBMIT_CREATE]

    plain, templated = creates(), creates(templates=[entry])
    assert len(plain) > 5
    assert [(p[3], p[4]) for p in plain] == [(p[3], p[4]) for p in templated]
    assert {id(p[2]) for p in templated} == {id(templated[0][2])}
    assert templated[0][2].template == "only" and templated[0][2].vcpu == 2.0


def test_templates_pick_from_their_own_stream_and_change_no_other_draw():
    """Two templates with the same lifetimes: the same times and lifetimes as one template;
    the i-th create's template is the i-th draw of the `template` stream."""
    keys = {"arrival": "poisson", "rate_per_s": 20.0, "lifetime_dist": "exponential"}
    a = {"template": "a", "weight": 1.0, "lifetime_dist": "exponential"}
    b = {"template": "b", "weight": 2.0, "vcpu": 2.0, "lifetime_dist": "exponential"}

    def creates(**workload: Any) -> list[tuple]:
        host, sink = clients(**keys, **workload)
        return [p for _, kind, _, p in open_loop(host, sink) if kind == Kind.SUBMIT_CREATE]

    one, two = creates(), creates(templates=[a, b])
    assert [(p[3], p[4]) for p in one] == [(p[3], p[4]) for p in two]
    rng = Streams(0).templates()
    expected = ["a" if rng.random() * 3.0 < 1.0 else "b" for _ in two]
    assert [p[2].template for p in two] == expected and len(set(expected)) == 2


@pytest.mark.parametrize("arrival", ["poisson", "closed"])
def test_two_client_hosts_pick_the_same_templates_as_one(arrival):
    """Open loop: the i-th arrival's template is the same whichever host sends it; closed
    loop: a client's templates come from its own stream."""
    workload = {
        "arrival": arrival,
        "rate_per_s": 5.0,
        "clients": 7,
        "lifetime_s": 4.0,
        "templates": [{"template": "a"}, {"template": "b", "weight": 2.0}],
    }

    def creates(index: int, hosts: int) -> list[tuple]:
        host, sink = clients(index, hosts, seed=3, **workload)
        if arrival != "closed":
            sent = open_loop(host, sink)
        else:
            host.start()
            for _ in range(3):  # three cycles of every client
                for at, _, client, _ in sink.take():
                    host.on_client_start(client, at, at)
            sent = sink.take()
        return sorted((p[0], p[3], p[2].template) for _, k, _, p in sent if k == Kind.SUBMIT_CREATE)

    one = creates(0, 1)
    assert len({t for *_, t in one}) == 2
    assert sorted(creates(0, 2) + creates(1, 2)) == one


def test_template_weights_are_drawn_in_proportion():
    """The pick alone, 40,000 times, weights 1 : 2 : 5: each share within 4 binomial sd."""
    spec = WorkloadSpec(
        templates=tuple(
            scenario(workload={"templates": [{"template": n, "weight": w}]}).workload.templates[0]
            for n, w in (("a", 1.0), ("b", 2.0), ("c", 5.0))
        )
    )
    templates, rng, n = Templates(spec), random.Random(4), 40_000
    counts = {"a": 0, "b": 0, "c": 0}
    for _ in range(n):
        counts[templates.pick(rng).shape.template] += 1
    for name, weight in (("a", 1.0), ("b", 2.0), ("c", 5.0)):
        p = weight / 8.0
        assert abs(counts[name] - n * p) < COUNT_SDS * math.sqrt(n * p * (1 - p)), counts


# --- rate profiles ------------------------------------------------------------------------

SEEDS = 300


def counts_per_bin(workload: dict[str, Any], duration: float, edges: list[float]) -> np.ndarray:
    """Arrivals per bin, one row per seed, from the arrival kind's own times."""
    spec = scenario(workload=workload, run={"duration_s": duration}).workload
    times = ARRIVALS[spec.arrival].times
    return np.array(
        [
            np.histogram(list(times(spec, duration, Streams(s).workload())), edges)[0]
            for s in range(SEEDS)
        ]
    )


def assert_rates(counts: np.ndarray, expected: list[float]) -> None:
    """Each bin's total over the seeds within 4 Poisson sd of seeds x its expected count."""
    for got, want in zip(counts.sum(axis=0), expected, strict=True):
        band = COUNT_SDS * math.sqrt(SEEDS * want) + 1e-9
        assert abs(got - SEEDS * want) <= band, (got, SEEDS * want, band)


def test_steps_hold_each_rate_until_the_next_point():
    """10/s for 10 s, 50/s for 5 s, then 0, then 20/s to the end (30 s): bins of 2.5 s; and
    within a step the counts are Poisson: variance over mean within [0.75, 1.3]."""
    workload = {"arrival": "steps", "profile_s": [0, 10, 15, 20], "profile_rates": [10, 50, 0, 20]}
    edges = [i * 2.5 for i in range(13)]
    counts = counts_per_bin(workload, 30.0, edges)
    rate = [10] * 4 + [50] * 2 + [0] * 2 + [20] * 4
    assert_rates(counts, [r * 2.5 for r in rate])
    window = counts[:, 4]  # 10-12.5 s at 50/s
    assert 0.75 < window.var(ddof=1) / window.mean() < 1.3
    assert ARRIVALS["steps"].expected(
        scenario(workload=workload, run={"duration_s": 30}).workload, 30.0
    ) == pytest.approx(100 + 250 + 0 + 200)


def test_a_ramp_runs_straight_between_points_then_holds():
    """0/s at 0 rising to 100/s at 20 s, then 100/s to 30 s: bins of 2 s hold the integral of
    the line (the trapezoid) and then 200."""
    workload = {"arrival": "ramp", "profile_s": [0, 20], "profile_rates": [0, 100]}
    edges = [2.0 * i for i in range(16)]
    counts = counts_per_bin(workload, 30.0, edges)
    line = [(5 * a + 5 * b) / 2 * 2 for a, b in itertools.pairwise(edges[:11])]
    assert_rates(counts, line + [200.0] * 5)
    spec = scenario(workload=workload, run={"duration_s": 30}).workload
    assert ARRIVALS["ramp"].expected(spec, 30.0) == pytest.approx(1000 + 1000)


def test_a_ramp_down_and_a_jump_up():
    """60/s falling to 10/s over 10 s, then up to 40/s over 10 s (thinning on both slopes)."""
    workload = {"arrival": "ramp", "profile_s": [0, 10, 20], "profile_rates": [60, 10, 40]}
    edges = [2.0 * i for i in range(11)]
    counts = counts_per_bin(workload, 20.0, edges)

    def rate(t: float) -> float:
        return 60 - 5 * t if t <= 10 else 10 + 3 * (t - 10)

    assert_rates(counts, [(rate(a) + rate(b)) / 2 * 2 for a, b in itertools.pairwise(edges)])


def test_diurnal_follows_its_cosine():
    """Mean 40/s, amplitude 0.8, period 20 s, peak at 5 s, 40 s: bins of 1 s hold the integral
    of 40 (1 + 0.8 cos(2 pi (t - 5) / 20)); the busiest bin is beside a peak."""
    workload = {
        "arrival": "diurnal",
        "rate_per_s": 40.0,
        "diurnal_amplitude": 0.8,
        "diurnal_period_s": 20.0,
        "diurnal_peak_s": 5.0,
    }
    edges = [float(i) for i in range(41)]
    counts = counts_per_bin(workload, 40.0, edges)
    w = 2 * math.pi / 20.0

    def integral(t: float) -> float:
        return 40.0 * (t + 0.8 * math.sin(w * (t - 5.0)) / w)

    expected = [integral(b) - integral(a) for a, b in itertools.pairwise(edges)]
    assert_rates(counts, expected)
    assert int(np.argmax(counts.sum(axis=0))) in (4, 5, 24, 25)  # either side of a peak
    spec = scenario(workload=workload, run={"duration_s": 40}).workload
    assert ARRIVALS["diurnal"].expected(spec, 40.0) == pytest.approx(integral(40) - integral(0))


def test_poisson_is_the_one_piece_case():
    """The rate-profile machinery draws a constant rate exactly as the plain Poisson kind."""
    spec = WorkloadSpec(arrival="steps", profile_s=[0.0], profile_rates=[7.0], rate_per_s=7.0)
    steps = list(ARRIVALS["steps"].times(spec, 10.0, Streams(0).workload()))
    poisson = list(ARRIVALS["poisson"].times(spec, 10.0, Streams(0).workload()))
    assert steps == poisson and len(steps) > 40


# --- config checks of the new keys ---------------------------------------------------------

TEMPLATE = {"template": "a"}


@pytest.mark.parametrize(
    "workload,key,reason",
    [
        ({"arrival": "steps"}, "workload.profile_s", "needs the times"),
        (
            {"arrival": "ramp", "profile_s": [0, 5], "profile_rates": [1]},
            "workload.profile_rates",
            "has 1 rates for the 2 points",
        ),
        (
            {"arrival": "steps", "profile_s": [1, 5], "profile_rates": [1, 2]},
            "workload.profile_s",
            "must start at 0",
        ),
        (
            {"arrival": "ramp", "profile_s": [0, 5, 5], "profile_rates": [1, 2, 3]},
            "workload.profile_s",
            "must increase",
        ),
        (
            {"arrival": "steps", "profile_s": [0, 30], "profile_rates": [0, 5]},
            "workload.profile_rates",
            "the run would send nothing",
        ),
        ({"profile_rates": [1, -1]}, "workload.profile_rates", "must be >= 0"),
        ({"diurnal_amplitude": 1.5}, "workload.diurnal_amplitude", "must be <= 1"),
        ({"lifetime_alpha": 1.0}, "workload.lifetime_alpha", "must be > 1"),
        ({"lifetime_sigma": 0}, "workload.lifetime_sigma", "must be > 0"),
        ({"lifetime_dist": "weibull"}, "workload.lifetime_dist", "must be one of"),
        ({"arrival": "trace"}, "workload.trace", "needs a file"),
        ({"templates": {"vcpu": 1}}, "workload.templates", "must be a list of tables"),
        ({"templates": [3]}, "workload.templates[0]", "must be a table"),
        ({"templates": [{"size": 1}]}, "workload.templates[0].size", "unknown key"),
        ({"templates": [TEMPLATE, {"weight": 0}]}, "workload.templates[1].weight", "must be > 0"),
        ({"templates": [TEMPLATE, TEMPLATE]}, "workload.templates[1].template", "already the ID"),
        ({"templates": [{}, {}]}, "workload.templates[1].template", "already the ID"),
        ({"templates": [{"vcpu": 500}]}, "workload.templates[0].vcpu", "exceeds cluster.cpu_count"),
        (
            {"arrival": "closed", "templates": [TEMPLATE, {"lifetime_s": "none"}]},
            "workload.templates[1].lifetime_s",
            "closed-loop",
        ),
        (
            {"templates": [{"lifetime_alpha": 0.5}]},
            "workload.templates[0].lifetime_alpha",
            "must be > 1",
        ),
    ],
)
def test_a_bad_workload_is_one_line_naming_the_key(workload, key, reason):
    refused(key, reason, workload=workload)


def test_templates_survive_a_round_trip_through_the_results_metadata():
    """A config is written to run.json as a dict and read back (reports, sweeps' cells); a
    template that requires a label needs a pool of nodes that carry it."""
    config = scenario(
        cluster={"pools": [{"count": 4, "labels": ["gpu"]}, {"count": 6}]},
        workload={"templates": [{"template": "a", "labels": ["gpu"]}, {"template": "b"}]},
    )
    again = config.with_value("workload.rate_per_s", 3.0)
    assert again.workload.templates == config.workload.templates
    assert again.workload.templates[0].labels == ["gpu"]
    assert again.cluster.pools == config.cluster.pools
