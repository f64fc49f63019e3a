"""Generated configs: the harness either runs them or refuses with a ConfigError naming a key.

Never a traceback: any other exception here is a bug. Values are drawn around the valid
ranges (negative, zero, wrong types, unknown keys) and runs are kept small.
"""

from __future__ import annotations

import functools
import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import fields
from typing import Any

import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.config import Config, ConfigError, from_dict
from harness.config import trace_file as trace
from harness.config.search_file import load_search
from harness.config.sections import WorkloadConfig
from harness.config.validation import key_types
from harness.engines.virtual import VirtualEngine
from harness.model.tunables import choice_names
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.workload_keys import TemplateSpec
from tests.support.cli_in_process import parser_built_once, pictures_drawn_once
from tests.support.configs import CONFIGS
from tests.support.generated_configs import (
    KEY_VALUES,
    SECTION_KEYS,
    SYNTHETIC,
    TEMPLATE_KEYS,
    anything,
    bounded,
    near,
    raw_configs,
    sampled,
    small,
    write_config,
)
from tests.support.tiers import examples


@functools.cache
def in_range(cls: type, name: str) -> st.SearchStrategy:
    """Values of a key of `cls` that its declaration allows (its bounds, its choices), or the
    key's own kind (`KEY_VALUES`): most of what `workloads` draws passes the key checks, so the
    cross-checks and the runs of the new keys are reached. Made once per key, as every
    strategy drawn from example after example here (tests/support/generated_configs.py
    `near` says why)."""
    own = KEY_VALUES.get(f"workload.{name}")
    if own is not None:
        return own
    meta = next(f.metadata for f in fields(cls) if f.name == name)
    names = choice_names(meta)
    if names:
        return st.sampled_from(names)
    tp = key_types(cls)[name]
    lo = meta["ge"] if meta["ge"] is not None else 0
    if meta["gt"] is not None:
        lo = meta["gt"] + 0.05
    hi = meta["le"] if meta["le"] is not None else lo + 30.0
    if tp is int:
        return st.integers(int(lo), int(hi))
    numbers = st.floats(lo, hi)
    return numbers if tp is float else st.one_of(numbers, st.just("none"))


def some_keys(draw: st.DrawFn, cls: type, defaults: dict[str, str]) -> dict[str, Any]:
    """Each key of `defaults` with probability 0.4; its value in range 19 times in 20, else
    around its default."""
    chosen = {}
    for name, default in defaults.items():
        if draw(st.integers(0, 4)) < 2:
            wild = draw(st.integers(0, 19)) == 19
            chosen[name] = draw(near(default) if wild else in_range(cls, name))
    return chosen


@st.composite
def profiles(draw: st.DrawFn) -> dict[str, list[float]]:
    """The points of a steps or ramp profile: from 0, increasing, a rate each."""
    gaps = draw(st.lists(st.floats(0.5, 8.0), max_size=3))
    times = [sum(gaps[:i]) for i in range(len(gaps) + 1)]
    rates = draw(st.lists(st.floats(0.0, 60.0), min_size=len(times), max_size=len(times)))
    return {"profile_s": times, "profile_rates": rates}


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    """A small config whose [workload] is aimed at the new keys: every arrival kind with what
    it needs nine times in ten (a profile's points, the shipped trace and its templates' IDs),
    some of the other keys (lifetimes of each distribution among them) and mostly templates,
    nearly all values within their declared ranges, so that the cross-checks and the runs are
    reached."""
    arrival = draw(sampled(tuple(ARRIVALS)))
    keys = {k: v for k, v in SECTION_KEYS["workload"].items() if k not in ("arrival", "templates")}
    workload = {"arrival": arrival, **some_keys(draw, WorkloadConfig, keys)}
    coherent = draw(st.integers(0, 9)) > 0
    if coherent and arrival in ("steps", "ramp"):
        workload |= draw(profiles())
    if coherent and arrival == "trace":
        workload["trace"] = str(SYNTHETIC)
        ids = ["small", "medium", "large"]  # the IDs its rows name
    else:
        ids = draw(OTHER_IDS)
    if draw(st.integers(0, 3)) or len(ids) == 3:
        keys = {k: v for k, v in TEMPLATE_KEYS.items() if k != "template"}
        workload["templates"] = [
            {"template": i, **some_keys(draw, TemplateSpec, keys)} for i in ids
        ]
    run = {"duration_s": draw(st.floats(1.0, 10.0)), "sample_interval_s": 0}
    return {"run": run, "cluster": {"nodes": draw(st.integers(3, 8))}, "workload": workload}


OTHER_IDS = st.lists(st.sampled_from(["a", "b", "c", ""]), min_size=1, max_size=2)
"""Template IDs of a workload without the shipped trace, few so that they clash now and then
(made once, as `in_range` says)."""


def validated(raw: dict[str, Any]) -> Config:
    """`raw` checked as `harness run` checks a config: the keys, then a trace's rows."""
    config = from_dict(raw)
    trace.check(config)
    return config


def generated(examples: int, drawn: st.SearchStrategy[dict[str, Any]]) -> None:
    """`run_or_name_a_key` on `examples` configs drawn from `drawn`, the same ones each time."""

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(drawn)
    def one(raw: dict[str, Any]) -> None:
        run_or_name_a_key(raw)

    one()


@examples(fast=100, full=200)
def test_generated_configs_run_or_name_a_key(examples):
    generated(examples, raw_configs())


@examples(fast=40, full=150)
def test_generated_workloads_run_or_name_a_key(examples):
    """The same contract on workloads aimed at the templates, lifetimes, rate profiles and
    traces."""
    generated(examples, workloads())


def run_or_name_a_key(raw: dict[str, Any]) -> None:
    try:
        config = validated(raw)
    except ConfigError as e:
        assert e.key and e.reason and "\n" not in str(e)
        event("refused")
        return
    event("valid")
    if config.cluster.pools:
        event("valid, with pools")
    if small(config):
        event("ran" if not config.faults else "ran with faults")
        event(f"ran: arrival {config.workload.arrival}")
        if config.workload.templates:
            event("ran with templates")
        s = VirtualEngine().run_seed(bounded(config), seed=0).summary
        assert s["placed"] + s["failed"] == s["requests"]


def seeds_from_the_command_line(raw: dict[str, Any]) -> dict[str, Any]:
    """`raw` as `harness run ... --seeds 1` validates it: the override replaces run.seeds
    before validation, so a bad run.seeds in the file is not an error there."""
    return {**raw, "run": {**raw.get("run", {}), "seeds": 1}}


@examples(fast=5, full=30)
def test_the_cli_exits_0_on_a_valid_config_and_2_with_one_line_on_an_invalid_one(
    examples, tmp_path_factory, monkeypatch
):
    """The test knows which exit code is right: 0 when the config validates (and then runs),
    2 when it does not, with exactly one `harness: error:` line on stderr and no traceback."""
    parser_built_once(monkeypatch)
    pictures_drawn_once(monkeypatch)

    @settings(max_examples=examples, deadline=None, derandomize=True)
    @given(raw_configs())
    def one(raw: dict[str, Any]) -> None:
        tmp = tmp_path_factory.mktemp("fuzz")
        path = tmp / "c.toml"
        write_config(raw, path)
        try:
            config = validated(seeds_from_the_command_line(raw))
        except ConfigError:
            config = None
        caps = []
        if config is not None:
            if not small(config):
                event("valid, too big to run")
                return
            b = bounded(config)
            caps = [
                "--set",
                f"placement.deadline_s={b.placement.deadline_s}",
                "--set",
                f"workload.failure_backoff_s={b.workload.failure_backoff_s}",
            ]
        argv = ["run", str(path), "--seeds", "1", "--out", str(tmp / "out"), "--quiet", *caps]
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = main(argv)
        err = err.getvalue()
        if config is None:
            event("exit 2")
            assert code == 2, err
            assert err.startswith("harness: error:") and err.count("\n") == 1, err
            assert "Traceback" not in err
        else:
            event("exit 0")
            assert code == 0, err
            assert err == ""

    one()


# -- search files (harness search) ---------------------------------------------------------------

OBJECTIVES = [
    "maximize optimistic.cv_mean",
    "minimize stale.p99_place_ms_p95",
    "maximize optimistic.cv_mean - sync_response.cv_mean",
    "maximize optimistic.cv_max / stale.cv_median",
    "maximize optimistic.cv",
    "maximise optimistic.cv_mean",
    "maximize nosuch.cv_mean",
    "maximize optimistic.cv_mean -",
]
SPACE_KEYS = [
    "placement.k",
    "placement.replicas",
    "heartbeat.interval_s",
    "workload.rate_per_s",
    "placement.replicas",
    "heartbeat.interval_s",
    "placement.nosuch",
    "nosuch.k",
    "run.seeds",
    "k",
]


_INTS = st.lists(st.integers(-2, 12), min_size=0, max_size=3)
SPACE_ENTRY = st.one_of(
    st.fixed_dictionaries({"int": st.sampled_from([[1, 4], [2, 8]])}),
    st.fixed_dictionaries({"low": st.just(1.0), "high": st.floats(2.0, 30.0)}),
    st.fixed_dictionaries({"int": _INTS}, optional={"step": near("1"), "log": near("true")}),
    st.fixed_dictionaries(
        {"low": near("1.0"), "high": near("20.0")},
        optional={"log": near("false"), "step": near("0.5"), "int": _INTS},
    ),
    st.fixed_dictionaries({"choices": st.lists(near("3"), max_size=3)}),
    anything,
)
"""What `space_entries` draws (made once, as `in_range` says)."""


@st.composite
def space_entries(draw: st.DrawFn) -> Any:
    """One [space] entry: an int range, a float range, choices, or anything, each near valid.
    A composite of its own around `SPACE_ENTRY`: hypothesis mutates an example along the
    nesting of what it drew, so drawing `SPACE_ENTRY` bare would draw other examples."""
    return draw(SPACE_ENTRY)


# What `search_files` draws from (made once, as `in_range` says).
SPACE_ENTRIES = space_entries()
SOME_SPACE_KEYS = st.lists(st.sampled_from(SPACE_KEYS), min_size=1, max_size=3, unique=True)
SEARCH_VALUES = {  # key: (valid values, values around them)
    "objective": (st.sampled_from(OBJECTIVES[:4]), st.sampled_from(OBJECTIVES[4:])),
    "seeds": (st.integers(1, 3), near("5")),
    "trials": (st.integers(1, 50), near("5")),
    "wall_s": (st.floats(0.5, 100.0), near("1.0")),
    "searcher": (st.sampled_from(["tpe", "cmaes", "random", "grid"]), st.just("hill")),
    "seed": (st.integers(0, 99), near("0")),
    "batch": (st.integers(1, 8), near("4")),
    "shrink_tolerance": (st.floats(0.0, 0.9), near("0.1")),
    "confirm_seeds": (st.integers(1, 30), near("3")),
    "max_creates": (st.floats(100.0, 1e6), near("100.0")),
    "name": (st.just("ok"), st.sampled_from(["a/b", ""])),
}
"""Each [search] key's values."""


@st.composite
def search_files(draw: st.DrawFn) -> dict[str, Any]:
    """A search over seed-herd: each [search] key with probability 0.5, its value nine times
    in ten a valid one, else near its valid range; a few [space] entries; now and then an
    unknown key or section."""
    head: dict[str, Any] = {"base": str(CONFIGS / "seed-herd.toml")}
    for key, (valid, wild) in SEARCH_VALUES.items():
        if draw(st.booleans()) or key == "objective":
            head[key] = draw(wild if draw(st.integers(0, 9)) == 9 else valid)
    if draw(st.integers(0, 19)) == 19:
        head["colour"] = "red"
    keys = draw(SOME_SPACE_KEYS)
    raw = {"search": head, "space": {key: draw(SPACE_ENTRIES) for key in keys}}
    if draw(st.integers(0, 19)) == 19:
        raw["grid"] = {}
    return raw


@examples(fast=60, full=300)
def test_generated_search_files_load_or_name_a_key_and_exit_2_with_one_line(
    examples, tmp_path_factory, monkeypatch
):
    """Every key of a search file, valid or not: the file loads, or a ConfigError names a key
    in one line, and `harness search` says that line and exits 2 before anything runs."""
    parser_built_once(monkeypatch)

    @settings(max_examples=examples, deadline=None, derandomize=True)
    @given(search_files())
    def one(raw: dict[str, Any]) -> None:
        path = tmp_path_factory.mktemp("search") / "s.toml"
        path.write_text(tomli_w.dumps(raw))
        try:
            load_search(path)
        except ConfigError as e:
            assert e.key and e.reason and "\n" not in str(e)
            event(f"refused: {e.key.split('.')[0]}")
        else:
            event("valid")
            return
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = main(["search", str(path), "--in-process", "--quiet"])
        err = err.getvalue()
        assert code == 2, err
        assert err.startswith("harness: error:") and err.count("\n") == 1, err

    one()
