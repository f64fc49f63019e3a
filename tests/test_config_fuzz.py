"""Generated configs: the harness either runs them or refuses with a ConfigError naming a key.

Never a traceback: any other exception here is a bug. Values are drawn around the valid
ranges (negative, zero, wrong types, unknown keys) and runs are kept small.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.config import Config, ConfigError, from_dict
from harness.config.keys import defaults_table, fault_keys_table
from harness.engine.virtual import VirtualEngine
from harness.faults import FAULT_KINDS

SECTION_KEYS: dict[str, dict[str, str]] = {}
for dotted, default, _ in defaults_table():
    section, key = dotted.split(".")
    SECTION_KEYS.setdefault(section, {})[key] = default

FAULT_KEYS = {key.removeprefix("faults[]."): default for key, default, _ in fault_keys_table()}

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
        raw[section] = {key: draw(near(keys.get(key, "1"))) for key in chosen}
    if draw(st.integers(0, 2)):
        raw["faults"] = draw(st.lists(fault_entries(), min_size=1, max_size=2))
    return raw


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


def small(config: Config) -> bool:
    """Cheap enough to run: bounded requests (see `bounded` for the RPCs per request)."""
    w = config.workload
    return (
        config.cluster.nodes <= 12
        and config.run.duration_s <= 30
        and w.rate_per_s * config.run.duration_s <= 2000
        and w.clients <= 200
        and w.burst <= 500
        and config.run.sample_interval_s in (0, *range(1, 31))
        and (w.lifetime_s is None or w.lifetime_s >= 0.05)
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


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(raw_configs())
def test_generated_configs_run_or_name_a_key(raw):
    try:
        config = from_dict(raw)
    except ConfigError as e:
        assert e.key and e.reason and "\n" not in str(e)
        event("refused")
        return
    event("valid")
    if small(config):
        event("ran" if not config.faults else "ran with faults")
        s = VirtualEngine().run_seed(bounded(config), seed=0).summary
        assert s["placed"] + s["failed"] == s["requests"]


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
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


def seeds_from_the_command_line(raw: dict[str, Any]) -> dict[str, Any]:
    """`raw` as `harness run ... --seeds 1` validates it: the override replaces run.seeds
    before validation, so a bad run.seeds in the file is not an error there."""
    return {**raw, "run": {**raw.get("run", {}), "seeds": 1}}


@settings(max_examples=30, deadline=None, derandomize=True)
@given(raw_configs())
def test_the_cli_exits_0_on_a_valid_config_and_2_with_one_line_on_an_invalid_one(
    tmp_path_factory, raw
):
    """The test knows which exit code is right: 0 when the config validates (and then runs),
    2 when it does not, with exactly one `harness: error:` line on stderr and no traceback."""
    tmp = tmp_path_factory.mktemp("fuzz")
    path = tmp / "c.toml"
    write_config(raw, path)
    try:
        config = from_dict(seeds_from_the_command_line(raw))
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
