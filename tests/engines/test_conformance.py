"""Cross-engine conformance: every shipped scenario whose Ray run fits in a
few seconds, played on both engines; what the model decides must agree within stated bands.

The virtual engine plays the scenario over `VIRTUAL_SEEDS` seeds to know the spread of each
figure (once per case, before the test waits for the machine: `before_the_machine`); Ray
plays one seed, `RAY_SEED`, at the scenario's `run.time_scale`. Both run the same config,
timeline off (the Ray driver's sampling loads the machine; the time scale means nothing to
the virtual engine).

What is compared, and the general bands (each scenario's numbers and reasons are in `PLANS`):

- **CV** of the final sandboxes per node: Ray's within the virtual engine's [min - m, max + m]
  over the seeds, `m` per scenario. Where the seed alone fixes every placement whatever the
  interleaving, also within a small distance of the virtual CV of the same seed.
- **Requests** issued: open-loop arrivals are a pure function of the seed, so the same count as
  the virtual engine's same seed, exactly. (Both closed-loop scenarios are skipped: `SKIPS`.)
- **Failures** (`failed`, each `failed_<reason>`): exactly 0 where the virtual engine has 0 on
  every seed; otherwise within 4 binomial standard deviations of the virtual mean rate per
  request, applied to Ray's requests. `kills_failed` the same per kill where kill RPCs fail at
  random; where they fail because a crash took the sandbox, see `poisson_band`.
- **Injected faults**: 0 where the virtual engine has 0 on every seed. Crashes are scheduled,
  and lost reports are drawn per report in a fixed order (one node group holds the cluster
  here, and fault streams are keyed alike on both engines): both equal the same seed's count
  exactly. Random RPC faults: within 4 binomial standard deviations of the virtual mean rate
  per RPC sent. RPCs sent to a down node: `spread_band` (creates), `poisson_band` (kills).
- **Sandboxes never killed** (`placed - kills`, open loop): a kill is sent at placement +
  lifetime if that is before the end, so these are the sandboxes placed in the last lifetime
  before it (100 or 160 in the virtual engine, whatever fails earlier). Ray places later than
  the model (its own call time), so a few more kills fall past the end: within [virtual min
  (less 2 sd where random failures near the end move it), virtual max + (1 s + the Ray run's
  own p99 placement latency) of arrivals at the seed's mean rate].
- **A fault scenario's own checks** (tests/support/faults.py `EXPECT`, which every virtual seed
  passes in tests/model/cluster/test_faults.py): on the Ray seed as well, invariants among them.
- **Placement latency**: the model's latency is a floor Ray only adds to, so Ray's p50 is at
  least the virtual engine's smallest, overall and on each node (a slow node's included).

What this catches, tried as Ray-only breaks in a scratch copy of actors/host.py: reports never
reaching the replica after the pre-run sync (seed-herd CV 0.96 every time; faults-crash
0.416-0.446, out of its band in 2 of 4 runs); lifetimes doubled on the client pools (186-321
sandboxes never killed against bands ending at 121-180, in every fault scenario); creates in
progress left out of the score (seed-burst+optimistic CV 1.067). What it does not: the node
group ignoring `heartbeat.delay_ms` (only race-* have a delay, and there it shows in the
accounting error, not in the CV, failures or counts compared here).

Beside a CPU hog, some cases are played again, and seeds 0-2 of a few (`HOG_SEEDS`) are
played to check the time keeping itself: every seed it calls faithful must agree within these
bands (seed by seed, until one of every case was overloaded by far: `FAR_OVER`). A seed both
ask for is played once (`beside_a_hog`).

Cases of one actor layout share one set of actors (`ray_engines`), reset for each case as a
run's strategies are: actor start-up is most of the file's time. The runs behind each band, and
the file's own time, are on the performance page (docs/performance.md, "Conformance bands")."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc
import pytest

from actors.engine import Layout, RayEngine, layout
from harness.config import Config, load
from harness.engines.virtual import VirtualEngine
from harness.results.seed_result import SeedResult
from harness.results.summary_columns import OVERLOADED
from tests.support.configs import CONFIGS, SCENARIOS
from tests.support.faults import EXPECT
from tests.support.ray_runs import cpu_hog, skip_unless_kept_time

pytestmark = [pytest.mark.conformance, pytest.mark.ray]

VIRTUAL_SEEDS = 20
RAY_SEED = 0
BINOMIAL_SDS = 4.0
"""A correct engine leaves a 4-sd binomial band about once in 15,000 draws."""
SPREAD_SDS = 2.0
"""Creates sent to a down node: the virtual [min, max] widened by this many sd."""
POISSON_SDS = 4.0
"""Sandboxes a crash took: the virtual mean +- this many sqrt(mean)."""
KILL_LAG_S = 1.0
"""Model seconds of arrivals whose kills may fall past the end on Ray (placed late)."""


@dataclass(frozen=True)
class Plan:
    time_scale: float
    """`run.time_scale` of the Ray run."""
    cv_margin: float
    """Ray's CV within [virtual min - cv_margin, virtual max + cv_margin]."""
    same_seed_cv: float | None = None
    """Ray's CV within this of the virtual CV of the same seed (only where the seed fixes
    every placement)."""
    failures_in_episodes: bool = False
    """Failed creates come in episodes (no node has room while the cluster is full), whose
    number the seed's arrivals decide, not as a coin per create: compared with the same
    seed's count, within counting noise (`poisson_band`), rather than a binomial band about
    the mean over seeds."""


PLANS = {
    # Each scenario's bands, with the why; the Ray runs they rest on (CVs, time scales, load
    # averages) are on the performance page (docs/performance.md, "Conformance bands").
    # `stale` on a view that changes once, at the 20 s report: the seed fixes every choice in
    # issue order. Ray may hand the replica creates out of issue order (two client pools send
    # alternate arrivals; one late by a few ms wall is enough), and the draws then go to the
    # other create: on a static view that only swaps which sandbox gets which node (same counts
    # per node, same CV), except across the 20 s report, where a create scored on the other
    # view lands elsewhere. One sandbox moved shifts the CV by up to ~0.006 at ~50 per node, so
    # 0.02 allows about 3. Without the 20 s report the CV is 0.96 (the reports-never-arrive
    # break). Not 0.1: more reordering than at 0.2.
    "seed-herd": Plan(0.2, cv_margin=0.05, same_seed_cv=0.02),
    # The herd with `optimistic`, which counts creates in flight and adds each on its answer:
    # ~50 sandboxes on every node, virtual CV 0.009-0.024 over 20 seeds (0.009-0.034 over 300).
    # A create answered after the 20 s report is applied counts twice until the end, so its
    # CV depends on answers within a gap of 50 ms, which the time keeping judges; 0.01 covers
    # the model's own spread, and the same seed's CV moves by one or two sandboxes when a
    # Ray hop reorders a create with the report (0.02, as `stale`'s).
    "seed-herd+optimistic": Plan(0.2, cv_margin=0.01, same_seed_cv=0.02),
    # 500 creates at t = 0 on 5 nodes, `stale`, no report before the end: the seed fixes every
    # placement whatever the interleaving; the time scale only stretches the 5 s of waiting.
    "seed-burst": Plan(0.1, cv_margin=0.05, same_seed_cv=1e-9),
    # With `optimistic` an answer moves a create's vCPUs from in progress to the view, the
    # same weight in the score, and nothing else changes the view during the burst: the seed
    # fixes every placement here too. With the creates in progress left out of the score on
    # Ray only (a scratch break): `stale`'s figure.
    "seed-burst+optimistic": Plan(0.1, cv_margin=0.03, same_seed_cv=1e-9),
    # The fault scenarios, 30 s at 0.1: 3 s of run. Ray's own call time at that scale puts
    # placement far above the 1-3 ms modelled, so more creates are in flight and the 20 s
    # report is applied later than in the model (creates and kills answered in between count
    # twice or not at all until the end). With ~10 live sandboxes per node at the end, one
    # sandbox off is ~0.1 of CV: these CV bands are loose, and the failure, fault and kill
    # counts carry these scenarios' conformance. Slower time scales gave the same spread for
    # seconds more each. Node 7 down for good makes the CV at least 1/3.
    # faults-crash at 0.3, 9 s of run: at 0.1 the create RPCs (`optimistic` counts what is in
    # flight) and the 20 s report come late enough that the time keeping calls most seeds
    # overloaded, and one it called faithful before it judged the report's delivery left the
    # band (CV 0.483: docs/performance.md, "Time keeping"). At 0.3 it keeps time, and its CV
    # is within a sandbox of the virtual engine's same seed (at 0.5, equal to it).
    "faults-crash": Plan(0.3, cv_margin=0.05),
    # `reconcile`, half the reports lost.
    "faults-lost-reports": Plan(0.1, cv_margin=0.04),
    "faults-rpc-error": Plan(0.1, cv_margin=0.04),
    # Node 2 +50 ms. On Ray a batch of RPCs to a node group waits for its slowest node, and one
    # group holds all 10 nodes here, so answers from every node come late when node 2 is in
    # the batch: more creates in flight, and the CV runs higher than the model's. At 0.15, not
    # 0.1: its checks (tests/support/faults.py `EXPECT`) compare latencies, and engine overhead in
    # model time grows as 1 / scale.
    "faults-slow-node": Plan(0.15, cv_margin=0.08),
    "faults-timeout": Plan(0.1, cv_margin=0.05),
    # 60 s at 0.1: 6 s of run. Poisson 40/s, nothing killed, ~240 sandboxes per node: the CV
    # is tiny on both engines, as the races show in the accounting, not the balance (README).
    # Ray places far later than the 100 ms modelled, and a node group wakes for beats at most
    # every 10 ms wall, so reports are handled up to 100 model ms late. At ~240 per node one
    # sandbox moved between two nodes moves the CV by ~0.002: 0.01 is five sandboxes (the CV
    # is not what this scenario is for).
    "race-double-count": Plan(0.1, cv_margin=0.01),
    # 200 ms create RPC, reports 100-300 ms late, `optimistic_pre_rpc`: an add is erased by
    # every report taken before the node acted and applied after the add, a window that
    # Ray's call time lengthens, the more so on a loaded machine: hence 0.02.
    "race-erase": Plan(0.1, cv_margin=0.02),
    # 60 s at 0.1: 6 s of run. 3,000 rows of a trace at ~50/s, three templates (1, 2, 8 vCPU)
    # and heavy-tailed lifetimes: each client pool reads the file itself, so the requests
    # (the rows before the end) are the virtual engine's exactly. Ray falls behind at 500
    # creates and kills per wall second, so the balance is looser, as in the fault scenarios.
    "trace-replay": Plan(0.1, cv_margin=0.05),
    # 60 s at 0.1: 6 s of run. Two pools, two templates, the memory filter, `stale`, Poisson
    # 20/s with 30-60 s lifetimes. Creates fail (`no_candidate`) while the memory view says
    # every eligible node is full, 0 to ~90 a seed on the virtual engine, which a binomial band
    # about the mean does not describe.
    "heterogeneous": Plan(0.1, cv_margin=0.05, failures_in_episodes=True),
    # Upstream's second benchmark: 60 s at 0.2, 12 s of run; 0 ms RPCs (Ray's own call time
    # only), sizes, usage and lifetimes drawn per create from the seed (the same requests on
    # both engines), kills on 100 ms cleanup ticks, exact views (sync_response), ~7 sandboxes
    # per node at the end: one sandbox elsewhere moves the CV by ~0.02. No create fails on
    # either engine (29% mean utilisation, far from R = 4).
    "upstream-comparison": Plan(0.2, cv_margin=0.08),
}

VARIANTS = {
    # Not a shipped file: seed-burst with the merged fix. 500 choices at t = 0, before any
    # answer, so counting the creates in progress is all that spreads them (virtual CV
    # 0.006-0.023 over 20 seeds; `stale` ~1.04): the one case here where a ledger that forgets
    # in-progress creates shows in the balance.
    "seed-burst+optimistic": ("seed-burst", {"placement.strategy": "optimistic"}),
    # The herd as the reference fixed it: what a late answer moves (see its plan).
    "seed-herd+optimistic": ("seed-herd", {"placement.strategy": "optimistic"}),
}

SKIPS = {
    # 400 closed-loop clients cycling every ~5 s are ~80 creates and kills per model second:
    # at a time scale that fits, Ray cannot keep up and the loop slows down (Ray's own time
    # is part of every cycle).
    "churn": "Ray run does not fit: 120 s of model time; at a time scale that fits, fewer "
    "requests are issued than on the virtual engine (docs/performance.md)",
    "replicas": "Ray run does not fit: 120 s of model time, 4 replicas; at a time scale that "
    "fits, fewer requests are issued than on the virtual engine (docs/performance.md)",
    # An hour of a production trace on 552 nodes: hundreds of creates a second from its first
    # second. Its bands on Ray, if any, are yet to be measured (docs/performance.md).
    "alibaba-2018": "Ray run not compared: an hour of trace on 552 nodes, whose Ray bands are "
    "not measured yet (docs/performance.md)",
}

FAILURES = (
    "failed",
    "failed_no_candidate",
    "failed_attempts_exhausted",
    "failed_deadline",
    "failed_refused",
)
RPC_FAULTS = ("fault_rpc_failed", "fault_rpc_exhausted", "fault_timeouts")
SAME_SEED_FAULTS = ("fault_crashes", "fault_lost_reports")


@pytest.fixture(scope="module")
def ray_engines(local_ray: None) -> Iterator[dict[Layout, RayEngine]]:
    """One `RayEngine` per actor layout, for the module: the cases of a layout (the fault
    scenarios, the races and seed-herd; trace-replay and heterogeneous; the seed-burst pair)
    run on one set of actors, reset for each case as for each seed and strategy of a run,
    instead of each starting its own (seconds each)."""
    engines: dict[Layout, RayEngine] = {}
    yield engines
    for engine in engines.values():
        engine.close()


def rpcs_sent(result: SeedResult) -> int:
    """Create RPCs (every attempt and skip) plus kill RPCs: what an RPC fault draws on."""
    r = result.requests
    creates = r.filter(pc.equal(r["kind"], "create"))
    return int(pc.sum(creates["rpcs"]).as_py() or 0) + result.summary["kills"]


def binomial_band(n: int, rates: list[float]) -> tuple[float, float]:
    """Where a count of successes in `n` draws at the virtual engine's mean rate falls."""
    p = float(np.mean(rates))
    sd = math.sqrt(n * p * (1 - p))
    return n * p - BINOMIAL_SDS * sd - 1, n * p + BINOMIAL_SDS * sd + 1


def spread_band(values: list[float]) -> tuple[float, float]:
    """How often a stale view picks a node that is down: no coin per create (the virtual
    engine's own spread is about twice Poisson's), so its [min, max] over the seeds, widened."""
    sd = float(np.std(values, ddof=1))
    return min(values) - SPREAD_SDS * sd, max(values) + SPREAD_SDS * sd


def poisson_band(values: list[float]) -> tuple[float, float]:
    """How many sandboxes were on a node when it crashed (and were killed later): it varies
    with the balance at that moment, which is looser on Ray (see the CV), so not the virtual
    engine's narrow spread but counting noise about its mean."""
    mean = float(np.mean(values))
    return mean - POISSON_SDS * math.sqrt(mean) - 1, mean + POISSON_SDS * math.sqrt(mean) + 1


class Checks:
    """Every comparison of one scenario; all are made, and the test lists every miss."""

    def __init__(self) -> None:
        self.misses: list[str] = []
        self.lines: list[str] = []

    def within(self, what: str, x: float, lo: float, hi: float) -> None:
        ok = lo <= x <= hi
        self.lines.append(f"  {what}: ray {x:.4g} in [{lo:.4g}, {hi:.4g}]{'' if ok else ' MISS'}")
        if not ok:
            self.misses.append(f"{what}: ray {x:.6g} outside [{lo:.6g}, {hi:.6g}]")

    def equal(self, what: str, x: float, expected: float) -> None:
        self.within(what, x, expected, expected)


def compare(
    config: Config, plan: Plan, virtual: list[SeedResult], got: SeedResult, seed: int = RAY_SEED
) -> Checks:
    """Every comparison of Ray's seed `seed` with the virtual engine's seeds."""
    v = [r.summary for r in virtual]
    s = got.summary
    same = v[seed]
    c = Checks()

    cvs = [r["cv"] for r in v]
    c.within("cv", s["cv"], min(cvs) - plan.cv_margin, max(cvs) + plan.cv_margin)
    if plan.same_seed_cv is not None:
        tol = plan.same_seed_cv
        c.within("cv vs same seed", s["cv"], same["cv"] - tol, same["cv"] + tol)

    closed = config.workload.arrival == "closed"
    assert not closed, "closed-loop scenarios would need a band for requests; none fits yet"
    c.equal("requests", s["requests"], same["requests"])
    c.equal("placed + failed", s["placed"] + s["failed"], s["requests"])

    for col in FAILURES:
        counts = [r[col] for r in v]
        if not any(counts):
            c.equal(col, s[col], 0)
        else:
            rates = [r[col] / r["requests"] for r in v]
            if plan.failures_in_episodes:
                c.within(f"{col} vs same seed", s[col], *poisson_band([same[col]]))
            else:
                c.within(col, s[col], *binomial_band(s["requests"], rates))
    kills_failed = [r["kills_failed"] for r in v]
    if not any(kills_failed):
        c.equal("kills_failed", s["kills_failed"], 0)
    elif any(f.kind == "rpc_error" and f.settings.rpc == "kill" for f in config.faults):
        rates = [r["kills_failed"] / max(r["kills"], 1) for r in v]
        c.within("kills_failed", s["kills_failed"], *binomial_band(s["kills"], rates))
    else:  # kills of sandboxes lost to a crash: how many, not a coin flip per kill
        c.within("kills_failed", s["kills_failed"], *poisson_band(kills_failed))

    for col in SAME_SEED_FAULTS:
        c.equal(col, s[col], same[col])
    sent = rpcs_sent(got)
    for col in RPC_FAULTS:
        if not any(r[col] for r in v):
            c.equal(col, s[col], 0)
        else:
            rates = [r[col] / rpcs_sent(res) for r, res in zip(v, virtual, strict=True)]
            c.within(col, s[col], *binomial_band(sent, rates))
    for col, band in (("fault_down_creates", spread_band), ("fault_down_kills", poisson_band)):
        counts = [r[col] for r in v]
        if not any(counts):
            c.equal(col, s[col], 0)
        else:
            c.within(col, s[col], *band(counts))

    if not any(r["kills"] for r in v):
        c.equal("kills", s["kills"], 0)
    else:
        unkilled = [r["placed"] - r["kills"] for r in v]
        lo = spread_band(unkilled)[0] if len(set(unkilled)) > 1 else unkilled[0]
        # Creates the Ray engine answers later than the model does get their kill later too,
        # past the run's end for the last ones: its own p99 placement latency widens the band.
        lag_s = KILL_LAG_S + s["p99_place_ms"] / 1000.0
        hi = max(unkilled) + lag_s * same["requests"] / config.run.duration_s  # mean rate
        c.within("placed - kills", s["placed"] - s["kills"], lo, hi)

    floor = min(r["p50_place_ms"] for r in v)
    c.within("p50_place_ms", s["p50_place_ms"], floor * (1 - 1e-9), math.inf)
    ray_p50 = node_p50_ms(got)
    floors = [node_p50_ms(r) for r in virtual]
    over = [p50 - min(f[node] for f in floors if node in f) for node, p50 in ray_p50.items()]
    c.within("node p50_place_ms over the virtual floor, least", min(over), -1e-9, math.inf)
    return c


def node_p50_ms(result: SeedResult) -> dict[int, float]:
    """Median latency of the creates placed on each node."""
    r = result.requests
    placed = r.filter(pc.and_(pc.equal(r["kind"], "create"), pc.equal(r["outcome"], "placed")))
    node = placed["node_id"].to_numpy()
    latency = placed["latency_ms"].to_numpy()
    return {int(n): float(np.median(latency[node == n])) for n in np.unique(node)}


CASES = {p.stem: (p, {}) for p in SCENARIOS} | {
    name: (CONFIGS / f"{base}.toml", values) for name, (base, values) in VARIANTS.items()
}


def case_config(name: str) -> Config:
    path, values = CASES[name]
    return load(path).with_values({**values, "run.sample_interval_s": 0.0})


@functools.cache
def virtual_runs(name: str) -> tuple[SeedResult, ...]:
    """The virtual engine's `VIRTUAL_SEEDS` seeds of case `name`. The same seed gives the same
    result, so they are played once for the case's tests (beside a CPU hog as well), and
    before the test waits for the machine (`before_the_machine`)."""
    config = case_config(name)
    return tuple(VirtualEngine().run_seed(config, seed) for seed in range(VIRTUAL_SEEDS))


def before_the_machine(item: pytest.Item) -> None:
    """Called by tests/conftest.py before a test of this module waits for the machine: the
    virtual side of its cases needs no quiet machine (seconds of CPU for some cases, the
    heterogeneous one's most), so it is played while other tests run, not while a worker
    idles beside the Ray run."""
    name = getattr(item, "callspec", None) and item.callspec.params.get("name")
    hogged = getattr(item, "originalname", None) == EVERY_FAITHFUL_SEED_TEST
    for case in HOG_SEEDS if hogged else [name] if name in PLANS else []:
        virtual_runs(case)


def play(name: str, engines: dict[Layout, RayEngine], seed: int = RAY_SEED) -> SeedResult:
    """Seed `seed` of case `name` on Ray at its plan's time scale, its time keeping printed."""
    ray_config = case_config(name).with_values(
        {"run.engine": "ray", "run.time_scale": PLANS[name].time_scale}
    )
    engine = engines.setdefault(layout(ray_config), RayEngine())
    got = engine.run_seed(ray_config, seed)
    s = got.summary
    print(
        f"\n{name} seed {seed} time keeping {s['time_keeping']}: heartbeat late p99 "
        f"{s['heartbeat_late_p99_ms']:.0f} ms, report late p99 {s['report_late_p99_ms']:.0f} ms, "
        f"create RPC p99 {s['create_rpc_p99_ms']:.0f} ms, send delay p99 "
        f"{s['send_delay_p99_ms']:.0f} ms, submit late p99 {s['submit_late_p99_ms']:.0f} ms, "
        f"driver CPU {s['driver_cpu']:.2f}, host load {s['host_load']:.2f} per core"
    )
    return got


def judge(name: str, got: SeedResult, seed: int = RAY_SEED) -> Checks:
    """Ray's seed `seed` of case `name` against the virtual engine's seeds, within the bands;
    a fault scenario's own checks too (tests/support/faults.py `EXPECT`, which the virtual
    engine's seeds pass)."""
    plan, config = PLANS[name], case_config(name)
    virtual = list(virtual_runs(name))
    c = compare(config, plan, virtual, got, seed)
    s = got.summary
    print(
        f"\n{name} seed {seed} scale {plan.time_scale} ray wall {s['engine_wall_s']:.2f}s cv "
        f"{s['cv']:.4f} (virtual {np.mean([r.summary['cv'] for r in virtual]):.4f}) "
        f"p50/p99 place {s['p50_place_ms']:.0f}/{s['p99_place_ms']:.0f} ms\n" + "\n".join(c.lines)
    )
    if name in EXPECT:
        ray_config = config.with_values({"run.engine": "ray", "run.time_scale": plan.time_scale})
        try:
            EXPECT[name](ray_config, got)
        except AssertionError as e:
            c.misses.append(f"{name}'s own checks: {e}")
    return c


BESIDE_A_HOG: dict[tuple[str, int], SeedResult] = {}
"""The Ray seeds played beside a CPU hog so far, by case and seed: the two tests beside a hog
ask for some of the same (faults-crash seed 0), which is played once for both."""


def beside_a_hog(name: str, engines: dict[Layout, RayEngine], seed: int = RAY_SEED) -> SeedResult:
    """Seed `seed` of case `name` on Ray with a busy loop on every core (`play`), once for the
    module (`BESIDE_A_HOG`)."""
    if (name, seed) not in BESIDE_A_HOG:
        with cpu_hog():
            BESIDE_A_HOG[name, seed] = play(name, engines, seed)
    return BESIDE_A_HOG[name, seed]


def agree(name: str, got: SeedResult) -> None:
    """Ray's seed `RAY_SEED` of case `name` against the virtual engine: a Ray run that could
    not keep the model's time skips with its own verdict (`skip_unless_kept_time`); one that
    kept it must agree within the bands."""
    skip_unless_kept_time(got)
    c = judge(name, got)
    assert not c.misses, f"{name}: " + "; ".join(c.misses)


ALONE: dict[str, SeedResult] = {}
"""Ray's seed `RAY_SEED` of each case played with the machine to itself so far, by case."""


@pytest.mark.parametrize("name", CASES)
def test_both_engines_agree(name, request):
    if name in SKIPS:
        pytest.skip(SKIPS[name])
    ALONE[name] = play(name, request.getfixturevalue("ray_engines"))  # no Ray for a skip
    agree(name, ALONE[name])


HOG_CASES = ("seed-burst", "faults-crash", "race-erase")
"""The cases run beside a CPU hog: a burst, a fault scenario, a race; every case when
HARNESS_HOG_ALL=1 (each costs a Ray seed, and the suite must stay under 10 minutes)."""


@pytest.mark.shares_machine
@pytest.mark.parametrize(
    "name",
    [n for n in CASES if n not in SKIPS and (n in HOG_CASES or os.environ.get("HARNESS_HOG_ALL"))],
)
def test_beside_a_cpu_hog_both_engines_agree_or_the_run_says_it_was_overloaded(name, request):
    """With a busy loop on every core, as on a shared runner: each case agrees within its bands
    or skips with the Ray run's own verdict naming the figure that broke; never a band
    failure that reads like a bug. It shares the machine with other tests: a machine made busy
    is what it is about, and the tests beside it only add to the hog. A seed
    `test_beside_a_cpu_hog_every_seed_called_faithful_agrees` played already (faults-crash's)
    is judged again here, not played again (`beside_a_hog`). A case that was overloaded with the
    machine to itself (`test_both_engines_agree`, before it) is not played: a hog only makes
    it later, and an overloaded run is judged by nothing."""
    if name in ALONE:
        skip_unless_kept_time(ALONE[name], "with the machine to itself, so beside a hog too: ")
    agree(name, beside_a_hog(name, request.getfixturevalue("ray_engines")))


HOG_SEEDS = ("seed-herd", "seed-herd+optimistic", "faults-crash")
"""The cases whose seeds are played beside a CPU hog to check the time keeping itself: the
herd under a strategy whose view only reports move and one that acts on every answer, and a
fault scenario (a node back empty, one lost for good)."""
SEEDS_BESIDE_A_HOG = 3
FAR_OVER = 10.0
"""A seed's worst figure this many times its limit or more: overloaded by far (only a time
scale this many times slower would fit). The seeds of one case beside the hog are overloaded
by factors that differ by less than this: once a seed of every case in `HOG_SEEDS` is over by
far, their seeds after it would be overloaded too, judged by nothing, and are not played."""
EVERY_FAITHFUL_SEED_TEST = "test_beside_a_cpu_hog_every_seed_called_faithful_agrees"


@pytest.mark.shares_machine
def test_beside_a_cpu_hog_every_seed_called_faithful_agrees(request):
    """The time keeping's own promise (`harness.results.time_keeping`): a seed it calls
    faithful agrees with the virtual engine within the case's bands, the same seed's
    included, on a machine a busy loop per core makes late (and the tests beside it: it
    shares the machine, which only adds to the hog). Seeds 0-2 of each case in
    `HOG_SEEDS`, seed 0 of every case first; an overloaded one is not judged (its verdict names
    the figure that broke), so where every seed was overloaded there is nothing to judge and
    the test skips, saying so. Once a seed of every case was overloaded by far (`FAR_OVER`),
    so would the seeds after it be on that machine: they are not played."""
    engines = request.getfixturevalue("ray_engines")
    faithful, verdicts, misses = 0, [], []
    for seed in range(SEEDS_BESIDE_A_HOG):
        far = 0
        for name in HOG_SEEDS:
            got = beside_a_hog(name, engines, seed)
            s = got.summary
            # Every seed is compared, for the record; only a faithful one must agree.
            missed = judge(name, got, seed).misses
            over = s["overload_value"] / s["overload_limit"]
            figure = (
                f" ({s['overload_figure']} x{over:.1f})" if s["time_keeping"] == OVERLOADED else ""
            )
            verdicts.append(
                f"{name} seed {seed}: {s['time_keeping']}{figure}, cv {s['cv']:.4f}, "
                f"{len(missed)} misses"
            )
            if s["time_keeping"] != OVERLOADED:
                faithful += 1
                misses += [f"{name} seed {seed}: {miss}" for miss in missed]
            elif over >= FAR_OVER:
                far += 1
        if far == len(HOG_SEEDS):
            break
    print("\n" + "\n".join(verdicts))
    assert not misses, "seeds called faithful that do not agree: " + "; ".join(misses)
    if not faithful:
        pytest.skip("no seed kept the model's time beside the hog: " + "; ".join(verdicts))


def test_every_shipped_scenario_is_compared_or_skipped_with_a_reason():
    names = {p.stem for p in SCENARIOS} | set(VARIANTS)
    assert names == set(PLANS) | set(SKIPS)
    assert not set(PLANS) & set(SKIPS)
