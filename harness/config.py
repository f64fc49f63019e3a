"""Scenario configuration: TOML in, validated dataclasses out.

Every key is declared once, as a dataclass field with its type, default, constraint and help.
Validation names the dotted key and the reason; nothing unknown is silently ignored.
"""

from __future__ import annotations

import difflib
import tomllib
import types
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from harness.ledgers import LEDGERS


class ConfigError(ValueError):
    """A user mistake in a config file or override; the CLI prints it and exits with 2."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}" if key else reason)
        self.key = key
        self.reason = reason


def _opt(
    default: Any,
    help: str,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    choices: tuple[str, ...] | None = None,
) -> Any:
    meta = {"help": help, "ge": ge, "gt": gt, "le": le, "choices": choices}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class RunConfig:
    name: str = _opt("run", "Names the output folder; a config file defaults it to its own name.")
    duration_s: float = _opt(25.0, "Arrivals, heartbeats and samples stop at this time.", gt=0)
    seeds: int = _opt(20, "How many seeds to run, from first_seed on.", ge=1)
    first_seed: int = _opt(0, "The first seed.", ge=0)
    engine: str = _opt(
        "virtual",
        "virtual: deterministic, in simulated time; ray: real time, on Ray actors.",
        choices=("virtual", "ray"),
    )
    time_scale: float = _opt(
        1.0,
        "Ray engine: wall seconds per model second (0.2 runs 5x faster, rates 5x higher).",
        gt=0,
    )
    sample_interval_s: float = _opt(
        1.0, "Timeline sampling period; 0 turns the timeline off.", ge=0
    )


@dataclass(frozen=True)
class ClusterConfig:
    nodes: int = _opt(10, "Number of simulated nodes.", ge=1)
    cpu_count: int = _opt(192, "vCPUs per node.", ge=1)
    memory_mib: float = _opt(524288.0, "Memory per node (MiB).", gt=0)
    initial_cpu_allocated: list[int] = _opt(
        [0, 0], "Pre-existing allocated vCPUs per node, drawn uniformly from [lo, hi]."
    )
    initial_cpu_per_node: list[float] = _opt(
        [], "Explicit pre-existing vCPUs, one per node (overrides initial_cpu_allocated)."
    )
    create_latency_ms: float = _opt(
        1.0, "Round trip of the create RPC; the node acts at its midpoint.", gt=0
    )
    kill_latency_ms: float = _opt(1.0, "Round trip of the kill RPC.", gt=0)


@dataclass(frozen=True)
class HeartbeatConfig:
    interval_s: float = _opt(20.0, "Seconds between two reports of a node.", gt=0)
    phase: str = _opt(
        "aligned",
        "aligned: all nodes report together; staggered: random phase.",
        choices=("aligned", "staggered"),
    )
    delay_ms: float = _opt(0.0, "Delivery delay between taking a report and applying it.", ge=0)
    jitter_ms: float = _opt(
        0.0,
        "Extra delivery delay drawn uniformly from [0, jitter_ms] per report and replica; "
        "above the interval, reports of a node arrive out of order.",
        ge=0,
    )


@dataclass(frozen=True)
class PlacementConfig:
    strategy: str = _opt("stale", "Ledger strategy.", choices=tuple(LEDGERS))
    k: int = _opt(3, "Candidates sampled per placement (Best-of-K).", ge=1)
    r: float = _opt(4.0, "CPU over-commit ratio.", gt=0)
    alpha: float = _opt(0.5, "Weight of actual CPU usage in the score.", ge=0)
    too_many_starting: bool = _opt(False, "Skip nodes with more than max_starting in progress.")
    max_starting: int = _opt(3, "In-progress creates above which a node is skipped.", ge=0)
    max_attempts: int = _opt(
        3, "Failed create RPCs (other than ResourceExhausted) per request.", ge=1
    )
    deadline_s: float = _opt(30.0, "A create still unplaced this long after issue fails.", gt=0)
    rpc_timeout_ms: float = _opt(
        1000.0, "The scheduler gives up on an unanswered create RPC after this long.", gt=0
    )
    replicas: int = _opt(1, "Scheduler replicas, each with its own view and in-progress map.", ge=1)
    ttl_s: float = _opt(20.0, "How long an optimistic entry of the ttl strategy counts.", gt=0)


@dataclass(frozen=True)
class WorkloadConfig:
    arrival: str = _opt(
        "constant",
        "constant, poisson, burst (open loop) or closed (clients).",
        choices=("constant", "poisson", "burst", "closed"),
    )
    rate_per_s: float = _opt(20.0, "Creates per second (constant, poisson).", gt=0)
    burst: int = _opt(500, "Creates issued at once (burst).", ge=1)
    burst_at_s: float = _opt(0.0, "When the burst is issued.", ge=0)
    clients: int = _opt(100, "Concurrent closed-loop clients (closed).", ge=1)
    ramp_s: float = _opt(0.0, "Closed-loop clients start uniformly over this window.", ge=0)
    think_s: float = _opt(0.0, "Pause of a closed-loop client between kill and next create.", ge=0)
    failure_backoff_s: float = _opt(
        1.0, "Pause of a closed-loop client after a failed create.", gt=0
    )
    vcpu: float = _opt(1.0, "vCPUs per sandbox.", gt=0)
    memory_mib: float = _opt(1024.0, "Memory per sandbox (MiB).", ge=0)
    usage: float = _opt(1.0, "Fraction of its vCPUs a sandbox keeps busy.", ge=0, le=1)
    lifetime_s: float | None = _opt(60.0, 'Sandbox lifetime before its kill; "none": never.', gt=0)
    lifetime_dist: str = _opt(
        "fixed", "fixed, or exponential with mean lifetime_s.", choices=("fixed", "exponential")
    )


@dataclass(frozen=True)
class RayConfig:
    address: str = _opt(
        "", "Ray cluster to join (host:port); empty: RAY_ADDRESS, else an embedded local Ray."
    )
    node_groups: int = _opt(
        0, "Node-group actors hosting the nodes; 0: sized to the cluster.", ge=0
    )
    client_pools: int = _opt(0, "Client-pool actors running the clients; 0: one per CPU.", ge=0)


FAULT_KINDS = {
    "crash": ("node", "at_s", "until_s"),
    "rpc_error": ("rpc", "error", "fraction", "node", "at_s", "until_s"),
    "timeout": ("fraction", "node", "at_s", "until_s"),
    "lost_reports": ("fraction", "node", "at_s", "until_s"),
    "slow_node": ("node", "latency_ms", "at_s", "until_s"),
}
"""The keys each fault kind takes besides `kind`; any other key is refused, so a typo or a
key meant for another kind cannot be silently ignored."""


@dataclass(frozen=True)
class FaultConfig:
    kind: str = _opt(
        "crash",
        "crash, rpc_error, timeout (create RPCs), lost_reports or slow_node.",
        choices=tuple(FAULT_KINDS),
    )
    at_s: float = _opt(0.0, "When the fault starts (model seconds).", ge=0)
    until_s: float | None = _opt(
        None, 'When it ends; a crashed node comes back empty then; "none": never.', ge=0
    )
    node: int | None = _opt(
        None, 'Target node (required for crash and slow_node); "none": every node.', ge=0
    )
    rpc: str = _opt(
        "create", "rpc_error: which RPC fails, create or kill.", choices=("create", "kill")
    )
    error: str = _opt(
        "failed",
        "rpc_error: failed (transient: exclude, attempt + 1) or resource_exhausted (skip).",
        choices=("failed", "resource_exhausted"),
    )
    fraction: float = _opt(
        1.0, "Share of the RPCs (or reports) in the window that fail, drawn per RPC.", ge=0, le=1
    )
    latency_ms: float = _opt(10.0, "slow_node: extra round trip of every RPC to it.", gt=0)


@dataclass(frozen=True)
class Config:
    run: RunConfig = field(default_factory=RunConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    heartbeat: HeartbeatConfig = field(default_factory=HeartbeatConfig)
    placement: PlacementConfig = field(default_factory=PlacementConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    faults: tuple[FaultConfig, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        raw = asdict(self)
        # As a config file has them: a list of tables, each with only its kind's keys.
        raw["faults"] = [
            {k: v for k, v in entry.items() if k == "kind" or k in FAULT_KINDS[entry["kind"]]}
            for entry in raw["faults"]
        ]
        return raw

    def with_value(self, key: str, value: Any) -> Config:
        """A copy with one dotted key changed and the whole config validated again."""
        return self.with_values({key: value})

    def with_values(self, values: dict[str, Any]) -> Config:
        """A copy with several dotted keys changed at once, validated once: keys that must
        agree (say cluster.nodes and cluster.initial_cpu_per_node) can change together."""
        raw = self.to_dict()
        for key, value in values.items():
            _set_dotted(raw, key, value)
        return from_dict(raw)


_SECTION_TYPES = {k: v for k, v in get_type_hints(Config).items() if k != "faults"}


def _type_name(tp: Any) -> str:
    if get_origin(tp) is list:
        return f"a list of {_type_name(get_args(tp)[0])}"
    if get_origin(tp) in (Union, types.UnionType):
        return " or ".join(_type_name(a) if a is not type(None) else '"none"' for a in get_args(tp))
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}[tp]


def _coerce(key: str, value: Any, tp: Any) -> Any:
    """Check `value` against the declared type; ints are accepted where floats are."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() == "none"):
            return None
        (inner,) = [a for a in get_args(tp) if a is not type(None)]
        try:
            return _coerce(key, value, inner)
        except ConfigError:
            raise ConfigError(key, f"must be {_type_name(tp)}, got {value!r}") from None
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(key, f"must be {_type_name(tp)}, got {value!r}")
        (inner,) = get_args(tp)
        return [_coerce(f"{key}[{i}]", v, inner) for i, v in enumerate(value)]
    ok = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, int | float) and not isinstance(value, bool),
        str: isinstance(value, str),
    }[tp]
    if not ok:
        raise ConfigError(key, f"must be {_type_name(tp)}, got {value!r}")
    return float(value) if tp is float else value


def _check_range(key: str, value: Any, meta: dict[str, Any]) -> None:
    values = value if isinstance(value, list) else [value]
    for v in values:
        if v is None or isinstance(v, str | bool):
            continue
        if v != v or v in (float("inf"), float("-inf")):
            raise ConfigError(key, f"must be a finite number, got {v}")
        if meta["ge"] is not None and v < meta["ge"]:
            raise ConfigError(key, f"must be >= {meta['ge']:g}, got {v:g}")
        if meta["gt"] is not None and v <= meta["gt"]:
            raise ConfigError(key, f"must be > {meta['gt']:g}, got {v:g}")
        if meta["le"] is not None and v > meta["le"]:
            raise ConfigError(key, f"must be <= {meta['le']:g}, got {v:g}")
    if meta["choices"] and value not in meta["choices"]:
        raise ConfigError(key, f"must be one of {', '.join(meta['choices'])}; got {value!r}")


def _unknown(key: str, known: list[str]) -> ConfigError:
    leaf = key.rsplit(".", 1)[-1]
    close = difflib.get_close_matches(leaf, known, n=1)
    prefix = key.rsplit(".", 1)[0] + "." if "." in key else ""
    hint = f"; did you mean {prefix}{close[0]}?" if close else f"; known: {', '.join(known)}"
    return ConfigError(key, "unknown key" + hint)


def _section(name: str, cls: type, raw: Any) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(name, f"must be a table, got {raw!r}")
    hints = get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}
    values = {}
    for key, value in raw.items():
        dotted = f"{name}.{key}"
        if key not in known:
            raise _unknown(dotted, list(known))
        coerced = _coerce(dotted, value, hints[key])
        _check_range(dotted, coerced, known[key].metadata)
        values[key] = coerced
    return cls(**values)


def _faults(raw: Any) -> tuple[FaultConfig, ...]:
    """`[[faults]]` entries, each checked like a section and against its kind's keys."""
    if not isinstance(raw, list):
        raise ConfigError("faults", f"must be a list of tables ([[faults]]), got {raw!r}")
    entries = []
    for i, entry in enumerate(raw):
        name = f"faults[{i}]"
        fault = _section(name, FaultConfig, entry)
        for key in entry:
            if key != "kind" and key not in FAULT_KINDS[fault.kind]:
                raise ConfigError(f"{name}.{key}", f"does not apply to kind {fault.kind}")
        entries.append(fault)
    return tuple(entries)


def from_dict(raw: dict[str, Any]) -> Config:
    """Build and validate a Config; raises ConfigError naming the first bad key."""
    sections: dict[str, Any] = {}
    for name, value in raw.items():
        if name == "faults":
            sections[name] = _faults(value)
            continue
        if name not in _SECTION_TYPES:
            raise _unknown(name, [*_SECTION_TYPES, "faults"])
        sections[name] = _section(name, _SECTION_TYPES[name], value)
    config = Config(**sections)
    _cross_check(config)
    return config


def _cross_check(c: Config) -> None:
    lo_hi = c.cluster.initial_cpu_allocated
    if len(lo_hi) != 2 or lo_hi[0] < 0 or lo_hi[0] > lo_hi[1]:
        raise ConfigError(
            "cluster.initial_cpu_allocated", f"must be [lo, hi] with 0 <= lo <= hi, got {lo_hi}"
        )
    per_node = c.cluster.initial_cpu_per_node
    if per_node and len(per_node) != c.cluster.nodes:
        raise ConfigError(
            "cluster.initial_cpu_per_node",
            f"has {len(per_node)} values for {c.cluster.nodes} nodes",
        )
    if any(v < 0 for v in per_node):
        raise ConfigError("cluster.initial_cpu_per_node", "values must be >= 0")
    capacity = c.placement.r * c.cluster.cpu_count
    if max([lo_hi[1], *per_node]) > capacity:
        raise ConfigError(
            "cluster.initial_cpu_allocated",
            f"exceeds a node's capacity R * cpu_count = {capacity:g}",
        )
    if c.placement.k > c.cluster.nodes:
        raise ConfigError("placement.k", f"{c.placement.k} exceeds cluster.nodes {c.cluster.nodes}")
    if c.workload.arrival == "closed" and c.workload.lifetime_s is None:
        raise ConfigError(
            "workload.lifetime_s",
            "must be a number for closed-loop clients (they kill, then create)",
        )
    if c.workload.vcpu > c.cluster.cpu_count:
        raise ConfigError(
            "workload.vcpu",
            f"{c.workload.vcpu:g} exceeds cluster.cpu_count "
            f"{c.cluster.cpu_count}: no node could ever take a sandbox",
        )
    if c.workload.arrival == "burst" and c.workload.burst_at_s >= c.run.duration_s:
        raise ConfigError(
            "workload.burst_at_s",
            f"{c.workload.burst_at_s:g} is not before run.duration_s {c.run.duration_s:g}: "
            "the run would send nothing",
        )
    for i, fault in enumerate(c.faults):
        _check_fault(f"faults[{i}]", fault, c)


def _check_fault(name: str, fault: FaultConfig, c: Config) -> None:
    if fault.node is None and fault.kind in ("crash", "slow_node"):
        raise ConfigError(f"{name}.node", f"a {fault.kind} needs a target node")
    if fault.node is not None and fault.node >= c.cluster.nodes:
        raise ConfigError(
            f"{name}.node", f"{fault.node} is not a node (cluster.nodes = {c.cluster.nodes})"
        )
    if fault.until_s is not None and fault.until_s <= fault.at_s:
        raise ConfigError(f"{name}.until_s", f"must be after at_s ({fault.at_s:g})")
    if fault.at_s >= c.run.duration_s:
        raise ConfigError(
            f"{name}.at_s", f"{fault.at_s:g} is not before run.duration_s {c.run.duration_s:g}"
        )


def _set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    if key.startswith("faults"):
        raise ConfigError(key, "faults are set in the config file ([[faults]]), not with --set")
    parts = key.split(".")
    if len(parts) != 2 or not all(parts):
        raise ConfigError(key, "must be section.key, e.g. placement.k")
    section, leaf = parts
    if section not in _SECTION_TYPES:
        raise _unknown(section, list(_SECTION_TYPES))
    known = [f.name for f in fields(_SECTION_TYPES[section])]
    if leaf not in known:
        raise _unknown(key, known)
    raw.setdefault(section, {})[leaf] = value


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value`; the value is read as TOML (numbers, booleans, lists), else as a string."""
    key, sep, value_text = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError("--set", f"expected key=value, got {text!r}")
    try:
        value = tomllib.loads(f"v = {value_text}")["v"]
    except tomllib.TOMLDecodeError:
        value = value_text.strip()
    return key.strip(), value


def load(path: str | Path, overrides: list[str] = ()) -> Config:
    """Read a TOML config, apply `--set` overrides, validate."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError("", f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError("", f"config file {path} is a directory") from None
    except UnicodeDecodeError as e:
        raise ConfigError("", f"config file {path} is not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise ConfigError("", f"cannot read config file {path}: {e.strerror}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError("", f"{path} is not valid TOML: {e}") from None
    raw.setdefault("run", {}).setdefault("name", path.stem)
    for text in overrides:
        _set_dotted(raw, *parse_override(text))
    return from_dict(raw)


def _toml(value: Any) -> str:
    """A default as it would be written in a config file."""
    if value is None:
        return '"none"'
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def defaults_table() -> list[tuple[str, str, str]]:
    """(dotted key, default, help) for every key: the README's reference comes from here."""
    rows = []
    for section, cls in _SECTION_TYPES.items():
        for f in fields(cls):
            default = f.default if f.default is not MISSING else f.default_factory()
            rows.append((f"{section}.{f.name}", _toml(default), f.metadata["help"]))
    return rows


def fault_keys_table() -> list[tuple[str, str, str]]:
    """(key of a `[[faults]]` entry, default, help), for the README."""
    return [
        (f"faults[].{f.name}", _toml(f.default), f.metadata["help"]) for f in fields(FaultConfig)
    ]
