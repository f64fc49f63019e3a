"""Generated configs (hypothesis strategies) and how to write and bound them."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from harness.config import Config
from harness.config import trace_file as trace
from harness.config.key_tables import defaults_table, entry_keys_table, fault_keys_table
from harness.model.cluster.faults import FAULT_KINDS
from harness.model.cluster.faults.fault_keys import keys_of
from harness.model.cluster.pools import SINGLE_POOL_KEYS
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.variety import INTEGER, QUANTITIES
from tests.support.configs import CONFIGS

SECTION_KEYS: dict[str, dict[str, str]] = {}
for dotted, default, _ in defaults_table():
    section, key = dotted.split(".")
    SECTION_KEYS.setdefault(section, {})[key] = default

FAULT_KEYS = {key.partition("].")[2]: default for key, default, _ in fault_keys_table()}
"""Every key a `[[faults]]` entry of some kind takes (common or a kind's own), its default."""

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


@functools.cache
def near(default: str) -> st.SearchStrategy:
    """Values of the key's own type around its valid range, or now and then anything. Made
    once per default, as every strategy drawn from example after example here (`sampled`,
    `some_of`, `value_of`): hypothesis validates a strategy object at its first draw, so one
    made anew for each draw is validated again each time. The same strategy drawn from the same
    choices gives the same values, so the examples are the same either way."""
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


@functools.cache
def sampled(values: tuple[Any, ...]) -> st.SearchStrategy:
    """One of `values` (made once per tuple: see `near`)."""
    return st.sampled_from(values)


@functools.cache
def some_of(values: tuple[Any, ...], max_size: int, unique: bool = False) -> st.SearchStrategy:
    """Lists of `values` (made once per tuple and size: see `near`)."""
    return st.lists(st.sampled_from(values), max_size=max_size, unique=unique)


@st.composite
def raw_configs(draw: st.DrawFn) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    for section in draw(some_of((*SECTION_KEYS, "extra"), 5)):
        keys = SECTION_KEYS.get(section, {"x": "1"})
        chosen = draw(some_of((*keys, *keys, "unknown_key"), 4))
        raw[section] = {
            key: draw(value_of(f"{section}.{key}", keys.get(key, "1"))) for key in chosen
        }
    if draw(st.integers(0, 2)):
        raw["faults"] = draw(_FAULT_LISTS)
    cluster = raw.get("cluster")
    if isinstance(cluster, dict) and "pools" in cluster and draw(st.integers(0, 3)):
        for key in SINGLE_POOL_KEYS:  # mostly without the keys pools replace: a valid mix
            cluster.pop(key, None)
    return raw


@functools.cache
def value_of(key: str, default: str) -> st.SearchStrategy:
    """A value for `key`: mostly one of its own kind (`KEY_VALUES`), else around its default
    (made once per key: see `near`)."""
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
    for key in draw(some_of(tuple(keys), 4, unique=True)):
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
    kind = draw(sampled(tuple(FAULT_KINDS)))
    keys = tuple(keys_of(FAULT_KINDS[kind])) if roll > 3 else (*FAULT_KEYS, "unknown_key")
    entry = {"kind": kind if roll != 1 else draw(sampled(tuple(WORDS)))}
    for key in draw(some_of(keys, 4, unique=True)):
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
_FAULT_LISTS = st.lists(fault_entries(), min_size=1, max_size=2)
"""A config's `[[faults]]` (made once: see `near`)."""


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
