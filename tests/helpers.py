"""Helpers the test modules share, in one place: no test module imports another, and
tests/conftest.py holds only fixtures and hooks (pytest imports it under a name of its own, so
importing it again from a test would load a second copy).

Sections: shipped configs and small scenarios; plugins of other packages; tiers; messages;
Ray; runs on two pools; accounting error beyond the calls in flight; fault scenarios' checks;
process trees; generated configs."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pytest
from hypothesis import strategies as st

from harness.config import Config, ConfigError, from_dict
from harness.config import trace_file as trace
from harness.config.key_tables import defaults_table, entry_keys_table, fault_keys_table
from harness.engines.virtual import VirtualEngine
from harness.model import protocol
from harness.model.cluster.faults import FAULT_KINDS
from harness.model.cluster.node import NodeInfo
from harness.model.cluster.pools import SINGLE_POOL_KEYS, registrations
from harness.model.protocol import Kind
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.request import CreateRequest, Shape
from harness.model.workload.variety import INTEGER, QUANTITIES
from harness.results.invariants import check
from harness.results.seed_result import SeedResult
from harness.results.time_keeping import OVERLOADED, line, run_verdict
from harness.wiring import scenario as sc

# --- shipped configs and small scenarios ----------------------------------------------------

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _is_sweep(path: Path) -> bool:
    return "sweep" in tomllib.loads(path.read_text(encoding="utf-8"))


SWEEPS = [p for p in sorted(CONFIGS.glob("*.toml")) if _is_sweep(p)]
"""Every shipped sweep file (a [sweep] table; tests/test_sweep.py)."""
SCENARIOS = [p for p in sorted(CONFIGS.glob("*.toml")) if not _is_sweep(p)]
"""Every shipped scenario."""


def refused(key: str, reason: str, **sections: dict[str, Any]) -> None:
    """`scenario(**sections)` is refused with one line naming `key` and giving `reason`."""
    with pytest.raises(ConfigError) as caught:
        scenario(**sections)
    assert caught.value.key == key and reason in caught.value.reason
    assert "\n" not in str(caught.value)


def ask(vcpu: float = 1.0, excluded: set[int] | None = None) -> CreateRequest:
    """A create of `vcpu` vCPUs (excluding `excluded`), to ask a scheduler where it goes."""
    req = CreateRequest(0, Shape(vcpu, 512.0, 0.0), 0.0, 30.0, 0)
    req.excluded = excluded
    return req


def registered(cpu_counts: list[int], memory_mib: float = 524288.0) -> list[NodeInfo]:
    """Nodes of these vCPUs (and `memory_mib` each), as a scheduler learns them at start-up."""
    return [NodeInfo(cpus, memory_mib) for cpus in cpu_counts]


def scenario(**sections: dict[str, Any]) -> Config:
    """A validated config: `scenario(cluster={"nodes": 5}, run={"duration_s": 2})`."""
    return from_dict(sections)


# --- plugins of other packages ---------------------------------------------------------------

PROJECT = tomllib.loads((CONFIGS.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
"""This project's [project] table: its distribution's name."""


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def own_entry_points(**select: Any) -> metadata.EntryPoints:
    """`importlib.metadata.entry_points(**select)` less those other installed distributions
    declare: what the registries find in a test process (tests/conftest.py), so that a plugin
    installed beside the harness (the README's example one) changes no test."""
    own = _normal(PROJECT["name"])
    return metadata.EntryPoints(
        ep
        for ep in metadata.entry_points(**select)
        if ep.dist is not None and _normal(ep.dist.name) == own
    )


# --- tiers: what runs in the fast tier (`-m "not slow"`) and what only in the full suite ------

HEAVY = {"churn", "replicas"}
"""The shipped scenarios that take several times longer than the others (thousands of
sandboxes; four replicas): a test run on each scenario runs these two in the slow tier only."""


def heavy(stem: str) -> list[pytest.MarkDecorator]:
    """The marks of a test parameter that runs the shipped scenario `stem`."""
    return [pytest.mark.slow] if stem in HEAVY else []


def tiered(paths: list[Path]) -> list[Any]:
    """Shipped scenarios as parameters of a test, the heavy ones marked slow."""
    return [pytest.param(p, marks=heavy(p.stem), id=p.stem) for p in paths]


def examples(fast: int, full: int) -> pytest.MarkDecorator:
    """Parametrizes `examples`, a generated test's count: `fast` in the fast tier, and `full`
    (the count the test was written for) in the slow tier."""
    return pytest.mark.parametrize(
        "examples", [fast, pytest.param(full, marks=pytest.mark.slow)], ids=["fast", "full"]
    )


# --- messages ---------------------------------------------------------------------------------

Message = tuple[float, int, int, Any]


class Sink(protocol.Sink):
    """A sink that records messages; `take()` hands over (and forgets) what was sent."""

    def __init__(self) -> None:
        self.sent: list[Message] = []

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        self.sent.append((at, kind, key, payload))

    def take(self) -> list[Message]:
        sent, self.sent = self.sent, []
        return sent


def clients(index: int = 0, hosts: int = 1, seed: int = 0, **workload: Any) -> tuple:
    """(ClientHost, its sink) for a 3 s run with 2 replicas."""
    config = scenario(workload=workload, placement={"replicas": 2}, run={"duration_s": 3.0})
    sink = Sink()
    return sc.client_host(config, seed, index, hosts, sink), sink


def open_loop(host: Any, sink: Sink) -> list[Message]:
    """Start the host and follow its ARRIVAL timers, each handled on time; every message."""
    host.start()
    sent = []
    while sink.sent:
        at, kind, key, payload = message = sink.sent.pop(0)
        sent.append(message)
        if kind == Kind.ARRIVAL:
            host.on_arrival(key, payload, at)
    return sent


# --- Ray --------------------------------------------------------------------------------------


@contextlib.contextmanager
def ray_cluster(nodes: int = 2) -> Iterator[Any]:
    """A local Ray cluster of `nodes` nodes (one CPU each) for tests that join one with
    --address; the driver must join it, not an instance another module started (the shared
    one, `local_ray`, is stopped first)."""
    import ray
    from ray.cluster_utils import Cluster

    from harness.engines.ray_setup import stop_ray

    stop_ray()
    ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def skip_unless_kept_time(run: SeedResult | dict[str, Any] | pd.DataFrame) -> None:
    """A Ray run compared with the virtual engine is judged only on numbers it calls faithful:
    when its own time-keeping verdict (`harness.results.time_keeping`) is `overloaded`, the
    test skips with that verdict as the reason, neither failing a band on the machine's pace
    nor passing on numbers the run disowns. `run`: a seed's result, its summary row, or a
    run's summary frame."""
    summary = run.summary if isinstance(run, SeedResult) else run
    frame = summary if isinstance(summary, pd.DataFrame) else pd.DataFrame([summary])
    verdict = run_verdict(frame)
    assert verdict is not None, "not a run in real time: no time-keeping verdict"
    if verdict["verdict"] == OVERLOADED:
        pytest.skip(line(verdict))


@contextlib.contextmanager
def cpu_hog(processes: int | None = None) -> Iterator[list[int]]:
    """Busy loops beside a test, one per core unless told (a shared CI runner, a laptop in
    use): their process ids while the block runs; each ended by its id afterwards."""
    count = processes or os.cpu_count() or 1
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield [h.pid for h in hogs]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


# --- a run on two pools with the memory filter (tests/test_pools.py, tests/test_ray_engine.py) -

GIB = 1024.0


def memory_run(strategy: str, engine: str = "virtual") -> Config:
    """20 creates/s of 4 GiB for 10 s, never killed, onto a small pool (3 x 16 GiB) and a large
    one (2 x 64 GiB): 200 creates, room for 3 x 4 + 2 x 16 = 44 at M = 1. Reports every 2 s."""
    return scenario(
        run={"duration_s": 10.0, "seeds": 1, "sample_interval_s": 0, "engine": engine},
        cluster={
            "pools": [
                {"count": 3, "cpu_count": 16, "memory_mib": 16 * GIB},
                {"count": 2, "cpu_count": 16, "memory_mib": 64 * GIB},
            ]
        },
        heartbeat={"interval_s": 2.0},
        placement={"strategy": strategy, "memory_overcommit": {"ratio": 1.0}, "k": 2},
        workload={"memory_mib": 4 * GIB, "lifetime_s": None},
    )


def memory_in_use(config: Config, seed: int = 0) -> tuple[list[float], list[float], int]:
    """(allocated memory per node at the end, each node's M x total, creates placed)."""
    result = VirtualEngine().run_seed(config, seed)
    counts = result.nodes.column("sandboxes").to_pylist()
    limits = [info.memory_mib for info in registrations(config.cluster)]
    return [4 * GIB * n for n in counts], limits, result.summary["placed"]


# --- accounting error beyond the calls in flight --------------------------------------------


def beyond_in_flight(tl: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(over-count, under-count) of believed minus true vCPUs per timeline sample, beyond what
    the replica's own calls in flight can explain, both >= 0.

    A call in flight can leave the view off either way, depending on the ledger: a create the
    node has done whose answer is not in yet is missing from a ledger that counts on the
    answer, while one counted before its RPC (`optimistic_pre_rpc`) is over until the node has
    done it; a kill likewise. So the slack is the vCPUs of the creates and the kills in flight
    together, whatever the strategy. (The one-sided bound, short by at most the creates and
    over by at most the kills, holds only for ledgers that change on answers alone;
    tests/test_races.py checks it for those.)"""
    slack = tl["in_progress_cpu"] + tl["kill_in_progress_cpu"]
    over = (tl["cpu_error"] - slack).clip(lower=0)
    under = (-tl["cpu_error"] - slack).clip(lower=0)
    return over, under


# --- fault scenarios: what each must show, on either engine ----------------------------------

FAULT_CONFIGS = sorted(p.stem for p in CONFIGS.glob("faults-*.toml"))


def within(observed: float, n: int, p: float) -> bool:
    """`observed` successes of `n` draws of probability `p`, within 4 standard deviations."""
    return abs(observed - n * p) <= 4 * math.sqrt(n * p * (1 - p)) + 1


def creates(result: SeedResult) -> dict[str, np.ndarray]:
    r = result.requests.filter(pc.equal(result.requests["kind"], "create"))
    return {name: r.column(name).to_numpy(zero_copy_only=False) for name in r.column_names}


def kills(result: SeedResult) -> dict[str, np.ndarray]:
    r = result.requests.filter(pc.equal(result.requests["kind"], "kill"))
    return {name: r.column(name).to_numpy(zero_copy_only=False) for name in r.column_names}


def failed_create_rpcs(c: dict[str, np.ndarray]) -> int:
    """Create RPCs that failed other than by ResourceExhausted: every attempt but the one
    that placed."""
    return int(c["attempts"].sum() - (c["outcome"] == "placed").sum())


def expect_no_loss(config: Config, result: SeedResult) -> None:
    """Every request is in the results and every end-of-run check holds."""
    s = result.summary
    checks = check(config, result)
    assert s["invariants_ok"], [c for c in checks if not c["ok"]]
    assert s["placed"] + s["failed"] == s["requests"] > 0
    reasons = s["failed_no_candidate"] + s["failed_attempts_exhausted"] + s["failed_deadline"]
    assert reasons == s["failed"]


def expect_crash(config: Config, result: SeedResult) -> None:
    check(config, result)
    s, c, k = result.summary, creates(result), kills(result)
    assert s["fault_crashes"] == 2
    assert failed_create_rpcs(c) == s["fault_down_creates"] > 0
    down = result.nodes.column("down").to_pylist()
    assert down == [i == 7 for i in range(10)]  # node 3 came back, node 7 did not
    assert result.sandbox_ids[7] == []
    lost = set(result.lost_ids)
    assert len(lost) == s["lost_sandboxes"] > 0
    placed_on = dict(zip(c["sandbox_id"], c["node_id"], strict=True))
    assert {placed_on[i] for i in lost} <= {3, 7}
    # A kill fails exactly when its sandbox was lost (to a down node, or gone after the restart).
    failed_kills = set(k["sandbox_id"][k["outcome"] == "failed"].tolist())
    assert failed_kills == lost & set(k["sandbox_id"].tolist())
    assert s["fault_down_kills"] <= s["kills_failed"] == len(failed_kills)
    # Nothing is placed on a node while it is down (an answer acted on before the crash may
    # arrive after it: a second of slack covers Ray's overhead at a small time_scale).
    done, node = c["done_at"], c["node_id"]
    placed = c["outcome"] == "placed"
    assert not (placed & (node == 7) & (done > 16.0)).any()
    assert not (placed & (node == 3) & (done > 11.0) & (done < 20.0)).any()
    expect_no_loss(config, result)


def expect_rpc_error(config: Config, result: SeedResult) -> None:
    s, c = result.summary, creates(result)
    assert failed_create_rpcs(c) + s["kills_failed"] == s["fault_rpc_failed"]
    assert c["skips"].sum() == s["fault_rpc_exhausted"]  # no node is ever really full here
    assert s["failed"] == s["failed_attempts_exhausted"]
    # In the window an RPC fails with 0.5, answers ResourceExhausted with 0.5 * 0.2 (a skip:
    # drawn again); a request fails when 3 counted attempts in a row fail.
    # Whole seconds off the window's edges: on Ray a request is sent (and retried) later than
    # it is issued, by engine overhead that is large in model time at a small time_scale.
    in_window = (c["issued_at"] >= 5.0) & (c["issued_at"] < 24.0)
    p_fail = (0.5 / (0.5 + 0.5 * 0.8)) ** 3
    failed = int((c["outcome"][in_window] == "failed").sum())
    assert within(failed, int(in_window.sum()), p_fail), (failed, in_window.sum(), p_fail)
    assert not (c["outcome"][c["issued_at"] < 4.0] == "failed").any()
    kills_sent = s["kills"]
    assert within(s["kills_failed"], kills_sent, 0.1)
    expect_no_loss(config, result)


def expect_timeout(config: Config, result: SeedResult) -> None:
    check(config, result)
    s, c = result.summary, creates(result)
    assert failed_create_rpcs(c) == s["fault_timeouts"]
    assert s["orphans"] == s["fault_timeouts"]  # every timed-out create did create (no node full)
    rpcs = int(c["rpcs"].sum())
    assert within(s["fault_timeouts"], rpcs, 0.2)
    assert within(s["failed"], s["requests"], 0.2**3)
    retried = c["attempts"] > 1
    assert (c["latency_ms"][retried] >= 200.0 * 0.99).all()  # waited out the timeout first
    expect_no_loss(config, result)


def expect_lost_reports(config: Config, result: SeedResult) -> None:
    s = result.summary
    reports = 10 * 30  # the initial sync and a report per second and node before the end
    assert within(s["fault_lost_reports"], reports, 0.5)
    assert s["failed"] == 0
    checks = check(config, result)
    assert any(c["check"] == "reconcile_drained" and c["ok"] for c in checks)
    expect_no_loss(config, result)


def expect_slow_node(config: Config, result: SeedResult) -> None:
    c = creates(result)
    placed = c["outcome"] == "placed"
    on_slow = placed & (c["node_id"] == 2) & (c["issued_at"] > 5.0)
    assert on_slow.sum() > 0
    assert (c["latency_ms"][on_slow] >= 50.0).all()
    # Half the extra 50 ms as the margin: on Ray the base latency is engine overhead, noisy.
    before = placed & (c["issued_at"] < 4.9)
    assert np.median(c["latency_ms"][on_slow]) >= np.median(c["latency_ms"][before]) + 25.0
    expect_no_loss(config, result)


EXPECT = {
    "faults-crash": expect_crash,
    "faults-rpc-error": expect_rpc_error,
    "faults-timeout": expect_timeout,
    "faults-lost-reports": expect_lost_reports,
    "faults-slow-node": expect_slow_node,
}


# --- the example schedulers (examples/) -------------------------------------------------------

EXAMPLES = CONFIGS.parent / "examples"
PYTHON_SCHEDULER = [sys.executable, str(EXAMPLES / "python-scheduler" / "scheduler.py")]
GO = EXAMPLES / "go-scheduler"
GO_MISSING = [
    tool
    for tool in ("go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc")
    if not shutil.which(tool)
]
"""The Go example's tools not on PATH: its tests are skipped, naming them."""


def go_scheduler() -> list[str]:
    """The Go example's command, built first (examples/go-scheduler/build.sh) under a lock:
    tests on two workers may build it at once, and both write the same files."""
    GO.joinpath(".cache").mkdir(exist_ok=True)
    with open(GO / ".cache" / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run([str(GO / "build.sh")], check=True, capture_output=True)
    return [str(GO / "bin" / "scheduler")]


# --- process trees ----------------------------------------------------------------------------


def _psutil() -> Any:
    """The psutil that ships with Ray (importing Ray puts it on the path), imported when a
    tree is first watched: the helpers do not import Ray for every test module."""
    import ray  # noqa: F401

    return importlib.import_module("psutil")


def paused(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Whether `proc` stops itself (SIGSTOP: `harness.results.phase_hooks.SIGNAL_AT`) within
    `timeout_s`; False if it exits or the time passes first."""
    deadline = time.time() + timeout_s
    while proc.poll() is None and time.time() < deadline:
        try:
            state = Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return False
        if state in ("T", "t"):
            return True
        time.sleep(0.05)
    return False


class Tree:
    """The processes under `proc` (and their temp folders), listed every 50 ms while it runs:
    after it has exited, `left()` is those still running."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.psutil = _psutil()
        self.seen: dict[tuple[int, float], str] = {}
        self.folders: set[Path] = set()
        self._watch = threading.Thread(target=self._list, daemon=True)
        self._watch.start()

    def _list(self) -> None:
        while self.proc.poll() is None:
            try:
                children = self.psutil.Process(self.proc.pid).children(recursive=True)
            except self.psutil.Error:
                return
            for child in children:
                try:
                    self.seen[(child.pid, child.create_time())] = child.name()
                    for arg in child.cmdline():
                        if arg.startswith(("--temp-dir=", "--temp_dir=")):
                            self.folders.add(Path(arg.split("=", 1)[1]))
                except self.psutil.Error:
                    pass
            time.sleep(0.05)

    def left(self, wait_s: float = 10.0) -> list[str]:
        """Processes seen under it that still run (waiting up to `wait_s` for them to end),
        and Ray temp folders left behind; each is killed or reported."""
        self._watch.join(timeout=5)
        deadline = time.time() + wait_s
        while True:
            alive = []
            for (pid, created), name in self.seen.items():
                try:
                    p = self.psutil.Process(pid)
                    if p.create_time() == created and p.status() != self.psutil.STATUS_ZOMBIE:
                        alive.append((p, name))
                except self.psutil.Error:
                    pass
            if not alive or time.time() > deadline:
                break
            time.sleep(0.2)
        for p, _ in alive:  # do not leave them to the next test
            p.kill()
        private = [str(f) for f in self.folders if f.exists() and "harness-ray-" in str(f)]
        return [f"{p.pid} {name}" for p, name in alive] + private


# --- generated configs (tests/test_config_fuzz.py, tests/test_cli_fuzz.py) --------------------

SECTION_KEYS: dict[str, dict[str, str]] = {}
for dotted, default, _ in defaults_table():
    section, key = dotted.split(".")
    SECTION_KEYS.setdefault(section, {})[key] = default

FAULT_KEYS = {key.removeprefix("faults[]."): default for key, default, _ in fault_keys_table()}

ENTRY_KEYS: dict[str, dict[str, str]] = {}
"""The keys of each list of tables (`workload.templates`, `cluster.pools`) and their defaults."""
for dotted, default, _ in entry_keys_table():
    table, _, key = dotted.partition("[].")
    ENTRY_KEYS.setdefault(table, {})[key] = default
TEMPLATE_KEYS = ENTRY_KEYS["workload.templates"]

WORDS = [
    "none",
    "stale",
    "optimistic",
    "in_progress",
    "closed",
    "burst",
    "poisson",
    "constant",
    "staggered",
    "aligned",
    "exponential",
    "fixed",
    "bogus",
    "crash",
    "create",
    "kill",
    "failed",
    "resource_exhausted",
    "steps",
    "ramp",
    "diurnal",
    "trace",
    "lognormal",
    "pareto",
    "small",
    "uniform",
    "normal",
    "own",
    "bench_double_count",
]
anything = st.one_of(
    st.integers(-3, 12),
    st.floats(-1.0, 12.0),
    st.sampled_from([float("nan"), float("inf")]),
    st.booleans(),
    st.sampled_from(WORDS),
    st.lists(st.integers(-1, 6), max_size=4),
)


def near(default: str) -> st.SearchStrategy:
    """Values of the key's own type around its valid range, or now and then anything."""
    if default in ("true", "false"):
        typed = st.booleans()
    elif default.startswith("["):
        typed = st.lists(st.integers(-1, 6), max_size=3)
    elif default.startswith('"'):
        typed = st.sampled_from(WORDS)
    elif "." in default:
        typed = st.floats(-0.5, 30.0)
    else:
        typed = st.integers(-1, 12)
    return st.one_of(typed, typed, typed, anything)


@st.composite
def raw_configs(draw: st.DrawFn) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    for section in draw(st.lists(st.sampled_from([*SECTION_KEYS, "extra"]), max_size=5)):
        keys = SECTION_KEYS.get(section, {"x": "1"})
        chosen = draw(st.lists(st.sampled_from([*keys, *keys, "unknown_key"]), max_size=4))
        raw[section] = {
            key: draw(value_of(f"{section}.{key}", keys.get(key, "1"))) for key in chosen
        }
    if draw(st.integers(0, 2)):
        raw["faults"] = draw(st.lists(fault_entries(), min_size=1, max_size=2))
    cluster = raw.get("cluster")
    if isinstance(cluster, dict) and "pools" in cluster and draw(st.integers(0, 3)):
        for key in SINGLE_POOL_KEYS:  # mostly without the keys pools replace: a valid mix
            cluster.pop(key, None)
    return raw


def value_of(key: str, default: str) -> st.SearchStrategy:
    """A value for `key`: mostly one of its own kind (`KEY_VALUES`), else around its default."""
    own = KEY_VALUES.get(key)
    return near(default) if own is None else st.one_of(own, own, own, near(default))


@st.composite
def entries(draw: st.DrawFn, table: str, values: str) -> Any:
    """An entry of the list of tables `table` (`[[workload.templates]]`, `[[cluster.pools]]`):
    mostly a few of its keys with values around their ranges (`KEY_VALUES` under `values`; a
    template's ID from a short list, so that IDs clash now and then), now and then an unknown
    key or not a table at all."""
    if draw(st.integers(0, 19)) == 0:
        return draw(anything)
    known = ENTRY_KEYS[table]
    keys = [*known, "unknown_key"] if draw(st.integers(0, 5)) == 0 else list(known)
    entry = {}
    for key in draw(st.lists(st.sampled_from(keys), max_size=4, unique=True)):
        own = KEY_VALUES.get(f"{values}.{key}")
        entry[key] = draw(own if own is not None else near(known.get(key, "1")))
    return entry


SYNTHETIC = CONFIGS / "traces" / "synthetic.csv"
KEY_VALUES = {
    "workload.template": st.sampled_from(["", "a", "b", "small", "medium", "large"]),
    "workload.templates": st.lists(
        entries("workload.templates", "workload"), min_size=1, max_size=3
    ),
    "workload.trace": st.sampled_from(
        [str(SYNTHETIC), str(SYNTHETIC.parent), str(CONFIGS / "seed-herd.toml"), "no.csv", ""]
    ),
    "workload.profile_s": st.lists(st.floats(0.0, 40.0), max_size=4).map(lambda v: [0.0, *v]),
    "workload.profile_rates": st.lists(st.floats(-1.0, 80.0), max_size=5),
    "workload.labels": st.lists(st.sampled_from(["gpu", "ssd", ""]), max_size=2),
    "workload.cpu_family": st.sampled_from(["", "x86", "arm"]),
    "workload.vcpu": st.floats(0.05, 8.0),  # larger ones fill the nodes: retries until deadline
    **{
        f"workload.{q}_clip": st.one_of(
            st.just([]), st.lists(st.floats(-1.0, 8.0), max_size=3).map(sorted), anything
        )
        for q in QUANTITIES
    },
    **{f"workload.{q}_integer": st.one_of(st.booleans(), anything) for q in INTEGER},
    "cluster.pools": st.lists(entries("cluster.pools", "pool"), min_size=1, max_size=3),
    "pool.count": st.integers(-1, 5),
    "pool.initial_cpu_allocated": st.one_of(
        st.just([0, 2]), st.lists(st.integers(-1, 6), max_size=3)
    ),
    "pool.labels": st.lists(st.sampled_from(["gpu", "ssd", ""]), max_size=2),
    "pool.cpu_family": st.sampled_from(["", "x86", "arm"]),
    # Never a scheduler that could be reached: a run would then need one.
    "external.address": st.sampled_from(
        ["", "none", "127.0.0.1", "localhost:70000", "[::1]:0", ":5000", "localhost:x"]
    ),
    "external.command": st.sampled_from(
        [[], ["no-such-scheduler-program"], ["", "--port"], ["python3", "a\0b"]]
    ),
}
"""Values of the keys whose default ("", []) says little about what they take: the workload's
(and its templates'), the cluster's pools and their keys (`pool.`)."""


@st.composite
def fault_entries(draw: st.DrawFn) -> Any:
    """A `[[faults]]` entry: mostly a kind with some of its own keys (so that some are valid),
    sometimes any keys, now and then not a table at all."""
    roll = draw(st.integers(0, 19))
    if roll == 0:
        return draw(anything)
    kind = draw(st.sampled_from(list(FAULT_KINDS)))
    keys = list(FAULT_KINDS[kind].keys) if roll > 3 else [*FAULT_KEYS, "unknown_key"]
    entry = {"kind": kind if roll != 1 else draw(st.sampled_from(WORDS))}
    for key in draw(st.lists(st.sampled_from(keys), max_size=4, unique=True)):
        typed = FAULT_VALUES.get(key) if roll > 3 else None
        entry[key] = draw(typed if typed is not None else near(FAULT_KEYS.get(key, "1")))
    return entry


FAULT_VALUES = {
    "node": st.one_of(st.integers(-1, 4), st.just("none")),
    "until_s": st.one_of(st.floats(-1.0, 30.0), st.just("none")),
    "fraction": st.floats(-0.2, 1.2),
    "at_s": st.floats(-1.0, 20.0),
}
"""Values around the valid range of the fault keys whose default ("none", 1.0) says little."""


def creates_sent(config: Config) -> float:
    """How many creates an open-loop config sends (0 for closed loop: `clients` bounds it)."""
    w, arrival = config.workload, ARRIVALS[config.workload.arrival]
    if arrival.closed:
        return 0.0
    return trace.check(config) if arrival.replay else arrival.expected(w, config.run.duration_s)


def small(config: Config) -> bool:
    """Cheap enough to run: bounded requests (see `bounded` for the RPCs per request); a
    closed loop only with lifetimes whose median is near their mean (a heavy tail of mean
    0.05 s is mostly far shorter, and each client would cycle every few ms)."""
    w = config.workload
    short = any(s.lifetime_s is not None and s.lifetime_s < 0.05 for s in w.sandboxes)
    tails = any(
        s.lifetime_dist not in ("fixed", "exponential") or s.lifetime_draw != "fixed"
        for s in w.sandboxes
    )
    return (
        config.cluster.node_count <= 12
        and config.run.duration_s <= 30
        and creates_sent(config) <= 2000
        and w.clients <= 200
        and w.burst <= 500
        and config.run.sample_interval_s in (0, *range(1, 31))
        and not short
        and not (w.arrival == "closed" and tails)
        and config.cluster.create_latency_ms >= 1.0
    )


def bounded(config: Config) -> Config:
    """Caps the retries: a request that keeps meeting full nodes sends a create RPC every
    create latency until its deadline, and a failing closed-loop client retries every
    failure_backoff_s. Generated values of those two could make one example run for minutes."""
    return config.with_values(
        {
            "placement.deadline_s": min(config.placement.deadline_s, 2.0),
            "workload.failure_backoff_s": max(config.workload.failure_backoff_s, 0.1),
        }
    )


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table: a template or pool entry
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and value != value:
        return "nan"
    if value == float("inf"):
        return "inf"
    return repr(value)


def write_config(raw: dict[str, Any], path: Path) -> None:
    """`raw` (from `raw_configs`) as the TOML file that `tomllib` reads back as `raw`."""
    lines = []
    tables = [(f"[{name}]", entries) for name, entries in raw.items() if name != "faults"]
    faults = raw.get("faults", [])
    if isinstance(faults, list) and all(isinstance(f, dict) for f in faults):
        tables += [("[[faults]]", entry) for entry in faults]
    elif "faults" in raw:
        lines.append(f"faults = {toml_value(faults)}")
    for header, entries in tables:
        lines.append(header)
        for key, value in entries.items():
            lines.append(f"{key} = {toml_value(value)}")
    path.write_text("\n".join(lines) + "\n")


# --- distributions, checked against their theory (Kolmogorov-Smirnov) ---------------------

KS_999 = 1.95
"""Kolmogorov-Smirnov: sqrt(n) D exceeds 1.95 with probability 0.001 for a correct CDF."""
COUNT_SDS = 4.0


def normal_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def theory_cdf(dist: str, mean: float, sigma: float = 1.0, alpha: float = 2.0):
    """P(lifetime <= x) of each distribution with the documented parameterisation, written
    out here rather than taken from harness.model.workload.lifetimes."""
    if dist == "exponential":
        return lambda x: 1.0 - math.exp(-x / mean)
    if dist == "lognormal":
        mu = math.log(mean) - sigma**2 / 2
        return lambda x: normal_cdf((math.log(x) - mu) / sigma) if x > 0 else 0.0
    if dist == "pareto":
        scale = mean * (alpha - 1) / alpha
        return lambda x: 1.0 - (scale / x) ** alpha if x >= scale else 0.0
    raise AssertionError(dist)


def ks_distance(sample: list[float], cdf) -> float:
    """sqrt(n) times the largest gap between the sample's CDF and `cdf`."""
    xs = sorted(sample)
    n = len(xs)
    gap = max(max((i + 1) / n - cdf(x), cdf(x) - i / n) for i, x in enumerate(xs))
    return math.sqrt(n) * gap
