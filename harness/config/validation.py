"""Validation of a raw scenario (a dict as TOML gives it) against the schema, section by section
(`checked_section`, `checked_faults`, `checked_placement`, `thresholds_table`), then across
sections (`cross_check`); `harness.config.config.from_dict` builds a `Config` of them.

A generic part checks every key against its field's declared type and bounds; the cross-checks
test what no single key can say (say, K against the cluster's size). Every error names the
dotted key and the reason; nothing unknown is silently ignored.
"""

from __future__ import annotations

import difflib
import functools
import sys
import types
from dataclasses import fields, is_dataclass, replace
from typing import Any, Union, get_args, get_origin, get_type_hints

from harness.config.sections import SECTIONS, Sections
from harness.config.traces import TRACE_FORMATS
from harness.external import spec as external
from harness.model.cluster.faults import FAULT_KINDS, FaultSpec, SlowNodes
from harness.model.cluster.faults.fault_keys import COMMON, keys_of
from harness.model.cluster.pools import SINGLE_POOL_KEYS, ClusterSpec, PoolSpec
from harness.model.registry import RegistryError
from harness.model.scheduling.placement import PluginError, resolve
from harness.model.scheduling.placement.algorithms import ALGORITHMS
from harness.model.scheduling.placement.filters.memory_overcommit import MemoryOvercommit
from harness.model.scheduling.placement.registries import old_keys, parse_weighted, with_settings
from harness.model.scheduling.scheduler import PlacementSpec
from harness.model.tunables import ConfigError, allows, choice_names
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.distributions import DRAWS, LIFETIMES
from harness.model.workload.variety import MEAN_KEY, QUANTITIES, varied
from harness.model.workload.workload_keys import SandboxSpec
from harness.results.thresholds import Threshold, ThresholdError, parse

INT_LIMIT = 2**31 - 1
"""The largest integer a key takes (as a 32-bit signed integer): results keep counts as Arrow
integers, and sums and products of keys (vCPUs of every node) must still fit 64 bits."""


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
    if tp is int and not -INT_LIMIT <= value <= INT_LIMIT:
        shown = f"{value:,}" if abs(value) < 10**15 else f"{value:.3g}"
        raise ConfigError(key, f"must be an integer within +-{INT_LIMIT:,}, got {shown}")
    return float(value) if tp is float else value


def _check_range(key: str, value: Any, meta: dict[str, Any]) -> None:
    values = value if isinstance(value, list) else [value]
    for v in values:
        if v is None or isinstance(v, str | bool):
            continue
        if v != v or v in (float("inf"), float("-inf")):
            raise ConfigError(key, f"must be a finite number, got {v}")
        if meta.get("ge") is not None and v < meta["ge"]:
            raise ConfigError(key, f"must be >= {meta['ge']:g}, got {v:g}")
        if meta.get("gt") is not None and v <= meta["gt"]:
            raise ConfigError(key, f"must be > {meta['gt']:g}, got {v:g}")
        if meta.get("le") is not None and v > meta["le"]:
            raise ConfigError(key, f"must be <= {meta['le']:g}, got {v:g}")
    if meta.get("registry") is not None:
        try:
            meta["registry"].resolve(value)
        except RegistryError as e:
            raise ConfigError(key, str(e)) from None
        return
    if not allows(meta, value):
        raise ConfigError(key, f"must be one of {', '.join(choice_names(meta))}; got {value!r}")


def unknown_key(key: str, known: list[str]) -> ConfigError:
    leaf = key.rsplit(".", 1)[-1]
    close = difflib.get_close_matches(leaf, known, n=1)
    prefix = key.rsplit(".", 1)[0] + "." if "." in key else ""
    hint = f"; did you mean {prefix}{close[0]}?" if close else f"; known: {', '.join(known)}"
    return ConfigError(key, "unknown key" + hint)


def not_a_table(name: str, raw: Any, header: str) -> ConfigError:
    """A section TOML gave as something else: a scalar, an array or an array of tables."""
    tables = isinstance(raw, list) and raw and all(isinstance(v, dict) for v in raw)
    got = "an array of tables" if tables else repr(raw)
    return ConfigError(name, f"must be a table ({header}), got {got}")


def entry_class(tp: Any) -> type | None:
    """The class of the entries of a key declared `tuple[Entry, ...]` (a list of tables in
    the file, such as `[[workload.templates]]`); None for any other key."""
    args = get_args(tp)
    if get_origin(tp) is tuple and args and is_dataclass(args[0]):
        return args[0]
    return None


@functools.cache
def key_types(cls: type) -> dict[str, Any]:
    """The type of each key of a section's class, read once: its annotations are strings, and
    evaluating them again for every section of every config loaded is wasted work."""
    return get_type_hints(cls)


def checked_section(name: str, cls: type, raw: Any, header: str) -> Any:
    if not isinstance(raw, dict):
        raise not_a_table(name, raw, header)
    hints = key_types(cls)
    known = {f.name: f for f in fields(cls) if not f.metadata.get("plugin_tables")}
    values = {}
    for key, value in raw.items():
        dotted = f"{name}.{key}"
        if key not in known:
            raise unknown_key(dotted, list(known))
        entry = entry_class(hints[key])
        if entry is not None:
            values[key] = _entries(dotted, entry, value, f"[[{dotted}]]")
            continue
        coerced = _coerce(dotted, value, hints[key])
        _check_range(dotted, coerced, known[key].metadata)
        values[key] = coerced
    return cls(**values)


def _entries(name: str, cls: type, raw: Any, header: str) -> tuple[Any, ...]:
    """A list of tables (`header`), each entry checked like a section."""
    if not isinstance(raw, list | tuple):
        raise ConfigError(name, f"must be a list of tables ({header}), got {raw!r}")
    return tuple(
        checked_section(f"{name}[{i}]", cls, entry, f"one {header} entry")
        for i, entry in enumerate(raw)
    )


def checked_faults(raw: Any) -> tuple[FaultSpec, ...]:
    """`[[faults]]` entries: the common keys (`COMMON`) checked like a section, then the rest
    against the kind's own (its `Settings`), written flat beside them."""
    if not isinstance(raw, list | tuple):
        raise ConfigError("faults", f"must be a list of tables ([[faults]]), got {raw!r}")
    return tuple(_fault(f"faults[{i}]", entry) for i, entry in enumerate(raw))


def _fault(name: str, raw: Any) -> FaultSpec:
    if not isinstance(raw, dict):
        raise not_a_table(name, raw, "one [[faults]] entry")
    common = {k: v for k, v in raw.items() if k in COMMON}
    try:
        fault = checked_section(name, FaultSpec, common, "one [[faults]] entry")
    except RegistryError as e:  # an installed kind that does not import
        raise ConfigError(f"{name}.kind", str(e)) from None
    kind = FAULT_KINDS[fault.kind]
    own = {k: v for k, v in raw.items() if k not in COMMON}
    for key in own:
        if key not in kind.Settings.__dataclass_fields__:
            known = keys_of(kind)
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {name}.{close[0]}?" if close else f"; takes {', '.join(known)}"
            raise ConfigError(f"{name}.{key}", f"does not apply to kind {fault.kind}{hint}")
    settings = checked_section(
        name, kind.Settings, own, f"one [[faults]] entry of kind {fault.kind}"
    )
    return replace(fault, settings=settings)


_NOTICED: set[str] = set()
"""Old keys already named in a notice: a config is validated again at every change."""


def _notice(old: str, new: str) -> None:
    """One line on stderr, once per old key: it still works, under its new name."""
    if old not in _NOTICED:
        _NOTICED.add(old)
        print(
            f"notice: {old} is now {new}; the old key works until the next release", file=sys.stderr
        )


def checked_placement(raw: Any) -> PlacementSpec:
    """`[placement]`: its own keys, then each plugin's table (`[placement.<table>]`, checked
    against the plugin's `Settings` like a section); an old key a plugin's setting replaced
    (`old_keys`) is read as that setting, with a notice."""
    if not isinstance(raw, dict):
        raise not_a_table("placement", raw, "[placement]")
    own = {k: v for k, v in raw.items() if not isinstance(v, dict)}
    tables = {k: dict(v) for k, v in raw.items() if isinstance(v, dict)}
    for old, (table, leaf) in old_keys().items():
        if old in own:
            if leaf in tables.get(table, {}):
                raise ConfigError(
                    f"placement.{old}", f"and placement.{table}.{leaf} both given: keep the second"
                )
            tables.setdefault(table, {})[leaf] = own.pop(old)
            _notice(f"placement.{old}", f"placement.{table}.{leaf} ([placement.{table}] {leaf})")
    spec = checked_section("placement", PlacementSpec, own, "[placement]")
    if not tables:
        return spec
    plugins = with_settings(spec)
    settings = {}
    for table, values in tables.items():
        key = f"placement.{table}"
        if table not in plugins:
            known = [f.name for f in fields(PlacementSpec) if not f.metadata.get("plugin_tables")]
            raise ConfigError(
                key,
                "neither a [placement] key nor a plugin with settings (those with some: "
                f"{', '.join(sorted(plugins))}; keys: {', '.join(known)})",
            )
        settings[table] = checked_section(key, plugins[table].Settings, values, f"[{key}]")
    return replace(spec, settings=settings)


def flatten(table: dict[str, Any], prefix: str = "", leaf: str | None = None) -> dict[str, Any]:
    """`{"a": {"b": 1}}` and `{"a.b": 1}` both give `{"a.b": 1}`; a sub-table holding `leaf`
    is a value, not a level (the inline tables of a sweep's [linked])."""
    flat = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and (leaf is None or leaf not in value):
            flat.update(flatten(value, dotted + ".", leaf))
        else:
            flat[dotted] = value
    return flat


def parse_threshold(text: str, key: str) -> Threshold:
    """One threshold expression; a mistake is a ConfigError naming `key` (or the flag)."""
    try:
        return parse(text, origin=key)
    except ThresholdError as e:
        raise ConfigError(key, str(e)) from None


def thresholds_table(raw: Any) -> tuple[Threshold, ...]:
    """A `[thresholds]` table: `"optimistic.cv_median" = "< 0.05"`, or a list of conditions
    (`"*.cv" = ["> 0", "< 0.1"]`); a bare dotted key (`optimistic.cv_median = ...`) works too."""
    if not isinstance(raw, dict):
        raise ConfigError("thresholds", f'must be a table of "SELECTOR" = "OP NUMBER", got {raw!r}')
    found = []
    for selector, conditions in flatten(raw).items():
        key = f"thresholds.{selector}"
        listed = [conditions] if isinstance(conditions, str) else conditions
        if not (isinstance(listed, list) and listed and all(isinstance(c, str) for c in listed)):
            raise ConfigError(
                key, f'must be a condition such as "< 0.05", or a list of them; got {conditions!r}'
            )
        found += [parse_threshold(f"{selector} {c}", key) for c in listed]
    return tuple(found)


NAME_MAX_BYTES = 200
"""Longest name a results folder may start with: a file name may have 255 bytes, and a run's
folder adds its time and run id (`-YYYYmmdd-HHMMSS-1a2b3c`) to the name."""


def check_folder_name(key: str, name: str) -> None:
    """`name` names a folder under results/, so it must be one plain file name there: no
    path (it would write elsewhere), nothing unprintable (a NUL cannot be in a path at all, a
    newline is a trap in every listing), and short enough for the file system."""
    if not name:
        raise ConfigError(key, "must not be empty")
    if not name.isprintable():
        raise ConfigError(key, f"has a control character (such as a newline or NUL), got {name!r}")
    if "/" in name or "\\" in name or name in (".", ".."):
        raise ConfigError(
            key, f"must be a file name, without / or \\ and not . or .., got {name!r}"
        )
    size = len(name.encode())
    if size > NAME_MAX_BYTES:
        raise ConfigError(key, f"must be at most {NAME_MAX_BYTES} bytes, got {size}")


def _nodes_named(c: ClusterSpec) -> str:
    """How messages name the cluster's size: its key, or the pools' sum."""
    return "the pools' count" if c.pools else "cluster.nodes"


def _check_pools(c: Sections) -> None:
    """The pools, or the single-pool keys, each with its own initial load; never both."""
    cluster = c.cluster
    if cluster.pools:
        default = ClusterSpec()
        for name in SINGLE_POOL_KEYS:
            if getattr(cluster, name) != getattr(default, name):
                raise ConfigError(
                    "cluster.pools",
                    f"cannot be used with cluster.{name}: each pool has its own count, "
                    "cpu_count, memory_mib and initial_cpu_*",
                )
    prefixes = [f"cluster.pools[{i}]" for i in range(len(cluster.pools))] or ["cluster"]
    for prefix, pool in zip(prefixes, cluster.node_pools(), strict=True):
        _check_pool(prefix, pool, c.placement.r)


def _check_pool(prefix: str, pool: PoolSpec, r: float) -> None:
    lo_hi = pool.initial_cpu_allocated
    if len(lo_hi) != 2 or lo_hi[0] < 0 or lo_hi[0] > lo_hi[1]:
        raise ConfigError(
            f"{prefix}.initial_cpu_allocated", f"must be [lo, hi] with 0 <= lo <= hi, got {lo_hi}"
        )
    per_node = pool.initial_cpu_per_node
    if per_node and len(per_node) != pool.count:
        raise ConfigError(
            f"{prefix}.initial_cpu_per_node", f"has {len(per_node)} values for {pool.count} nodes"
        )
    if any(v < 0 for v in per_node):
        raise ConfigError(f"{prefix}.initial_cpu_per_node", "values must be >= 0")
    capacity = r * pool.cpu_count
    if max([lo_hi[1], *per_node]) > capacity:
        raise ConfigError(
            f"{prefix}.initial_cpu_allocated",
            f"exceeds a node's capacity R * cpu_count = {capacity:g}",
        )


def cross_check(c: Sections) -> None:
    """What no single key can say: raises ConfigError naming the first key that disagrees."""
    check_folder_name("run.name", c.run.name)
    _check_pools(c)
    nodes = c.cluster.node_count
    if c.placement.k > nodes:
        raise ConfigError(
            "placement.k", f"{c.placement.k} exceeds {_nodes_named(c.cluster)} {nodes}"
        )
    _check_workload(c)
    if c.cluster.create_warm_ms > c.cluster.create_cold_ms:
        raise ConfigError(
            "cluster.create_warm_ms",
            f"{c.cluster.create_warm_ms:g} exceeds cluster.create_cold_ms "
            f"{c.cluster.create_cold_ms:g}: a cached template cannot make a create slower",
        )
    if c.cluster.create_latency_ms == 0 and c.placement.retry_refused:
        raise ConfigError(
            "cluster.create_latency_ms",
            "is 0 while placement.retry_refused is true: a create refused by a full node would "
            "be placed again and again without time passing; set placement.retry_refused = "
            "false (as upstream's benchmarks fail it) or a latency above 0",
        )
    for i, fault in enumerate(c.faults):
        _check_fault(f"faults[{i}]", fault, c)
    _check_placement(c.placement)
    _check_external(c)
    slow = SlowNodes(c.faults).slowest_ms()
    slowest = c.cluster.create_latency_ms + c.cluster.create_cold_ms + slow
    if c.placement.rpc_timeout_ms <= slowest:
        raise ConfigError(
            "placement.rpc_timeout_ms",
            f"{c.placement.rpc_timeout_ms:g} is not above the slowest create round trip "
            f"({slowest:g} ms with a cold create and slow nodes, overlapping entries of a node "
            "added up): the timeout models lost answers, not slow ones",
        )
    if ARRIVALS[c.workload.arrival].replay:  # last: a format that reads with Arrow loads it
        TRACE_FORMATS[c.workload.trace_format].check(c.workload)


NEVER = "no node could ever take a sandbox"


def _check_placeable(prefix: str, sandbox: SandboxSpec, c: Sections) -> None:
    """Some node could take the sandbox, else every create of it fails: a pool with the
    labels and CPU family it requires (when those filters are on), its vCPUs, and with the
    memory filter on, its memory within M x the pool's."""
    pools = c.cluster.node_pools()
    p = c.placement
    filters = p.filters or ALGORITHMS[p.algorithm].filters
    if "labels" in filters:
        pools = [pool for pool in pools if set(sandbox.labels) <= set(pool.labels)]
        if not pools:
            raise ConfigError(
                f"{prefix}.labels", f"{sandbox.labels}: no pool has them all: {NEVER}"
            )
    if "cpu_family" in filters and sandbox.cpu_family:
        pools = [pool for pool in pools if pool.cpu_family == sandbox.cpu_family]
        if not pools:
            raise ConfigError(
                f"{prefix}.cpu_family", f"{sandbox.cpu_family!r}: no pool of it takes it: {NEVER}"
            )
    cpus = max(pool.cpu_count for pool in pools)
    if sandbox.vcpu > cpus:
        where = "the largest pool's cpu_count" if c.cluster.pools else "cluster.cpu_count"
        raise ConfigError(f"{prefix}.vcpu", f"{sandbox.vcpu:g} exceeds {where} {cpus}: {NEVER}")
    m = p.settings_of(MemoryOvercommit).ratio
    limit = m * max(pool.memory_mib for pool in pools if pool.cpu_count >= sandbox.vcpu)
    if m and sandbox.memory_mib > limit:
        raise ConfigError(
            f"{prefix}.memory_mib",
            f"{sandbox.memory_mib:g} exceeds placement.memory_overcommit.ratio x the memory_mib of "
            f"every pool that could take it (at most {limit:g}): {NEVER}",
        )


def _check_workload(c: Sections) -> None:
    w = c.workload
    arrival = ARRIVALS[w.arrival]
    prefixes = [f"workload.templates[{i}]" for i in range(len(w.templates))] or ["workload"]
    ids: dict[str, str] = {}
    for prefix, sandbox in zip(prefixes, w.sandboxes, strict=True):
        if arrival.closed and sandbox.lifetime_s is None:
            raise ConfigError(
                f"{prefix}.lifetime_s",
                "must be a number for closed-loop clients (they kill, then create)",
            )
        _check_placeable(prefix, sandbox, c)
        _check_variety(prefix, sandbox)
        if w.templates and sandbox.template in ids:
            raise ConfigError(
                f"{prefix}.template",
                f"{sandbox.template!r} is already the ID of {ids[sandbox.template]}: "
                "each template needs an ID of its own",
            )
        ids[sandbox.template] = prefix
    arrival.check(w, c.run.duration_s)
    instant = c.cluster.create_latency_ms + c.cluster.kill_latency_ms == 0
    drawn = any(DRAWS[s.lifetime_draw].varies for s in w.sandboxes)
    if arrival.closed and drawn and instant and not (w.think_s or w.cleanup_tick_s):
        raise ConfigError(
            "workload.think_s",
            "is 0 with RPCs of 0 ms and a drawn lifetime that may be non-positive (killed at "
            "once): a closed-loop client would cycle without time passing; set think_s or "
            "cleanup_tick_s",
        )


def _check_variety(prefix: str, sandbox: SandboxSpec) -> None:
    """Each varied quantity: clip bounds [lo, hi], a lifetime drawn one way only, and every
    value a draw can take within its key's bounds (a normal draw of vCPUs needs a clip or
    truncation, a usage ratio stays in [0, 1]); a lifetime may be anything (a non-positive
    one is killed at once)."""
    bounds = {f.name: f.metadata for f in fields(SandboxSpec)}
    for quantity in QUANTITIES:
        clip = getattr(sandbox, f"{quantity}_clip")
        if clip and (len(clip) != 2 or clip[0] > clip[1]):
            raise ConfigError(
                f"{prefix}.{quantity}_clip", f"must be [lo, hi] with lo <= hi, got {clip}"
            )
        kind = getattr(sandbox, f"{quantity}_draw")
        if not DRAWS[kind].varies:
            continue
        if quantity == "lifetime":
            if sandbox.lifetime_s is None:
                raise ConfigError(
                    f"{prefix}.lifetime_draw", "needs lifetime_s, the mean, not none (never killed)"
                )
            if LIFETIMES[sandbox.lifetime_dist].varies:
                raise ConfigError(
                    f"{prefix}.lifetime_draw",
                    f"{kind} and lifetime_dist {sandbox.lifetime_dist} both draw the lifetime: "
                    "keep one, the other fixed",
                )
            continue
        draw = varied(sandbox, quantity)
        assert draw is not None
        lo, hi = draw.support()
        meta = bounds[MEAN_KEY[quantity]]
        low_ok = (meta["gt"] is None or lo > meta["gt"]) and (
            meta["ge"] is None or lo >= meta["ge"]
        )
        if not low_ok or (meta["le"] is not None and hi > meta["le"]):
            limits = " and ".join(
                f"{op} {meta[name]:g}"
                for name, op in (("gt", ">"), ("ge", ">="), ("le", "<="))
                if meta[name] is not None
            )
            raise ConfigError(
                f"{prefix}.{quantity}_draw",
                f"{kind} can draw {lo:g} to {hi:g}, but "
                f"{MEAN_KEY[quantity]} must be {limits}: set {quantity}_clip"
                + (f" or {quantity}_integer" if hasattr(sandbox, f"{quantity}_integer") else ""),
            )


def _check_placement(p: PlacementSpec) -> None:
    """Every plugin the placement names resolves to a plugin of its kind."""
    refs = {
        "placement.sampler": ("samplers", [p.sampler] if p.sampler else []),
        "placement.filters": ("filters", p.filters),
        "placement.scorers": ("scorers", p.scorers),
        "placement.selector": ("selectors", [p.selector] if p.selector else []),
    }
    for key, (kind, entries) in refs.items():
        for entry in entries:
            try:
                name = parse_weighted(entry)[0] if kind == "scorers" else entry
                resolve(kind, name)
            except PluginError as e:
                raise ConfigError(key, str(e)) from None


def _check_external(c: Sections) -> None:
    """Where the external scheduler is, when placement has one (`harness.external.spec`)."""
    found = external.problem(c.external)
    if found is not None:
        raise ConfigError(*found)


def _check_fault(name: str, fault: FaultSpec, c: Sections) -> None:
    if fault.node is None and FAULT_KINDS[fault.kind].needs_node:
        raise ConfigError(f"{name}.node", f"a {fault.kind} needs a target node")
    nodes = c.cluster.node_count
    if fault.node is not None and fault.node >= nodes:
        raise ConfigError(
            f"{name}.node", f"{fault.node} is not a node ({_nodes_named(c.cluster)} = {nodes})"
        )
    if fault.until_s is not None and fault.until_s <= fault.at_s:
        raise ConfigError(f"{name}.until_s", f"must be after at_s ({fault.at_s:g})")
    if fault.at_s >= c.run.duration_s:
        raise ConfigError(
            f"{name}.at_s", f"{fault.at_s:g} is not before run.duration_s {c.run.duration_s:g}"
        )


def set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    """Put `value` at the dotted `key` of a raw config, refusing keys the schema lacks."""
    if key.startswith("faults"):
        raise ConfigError(key, "faults are set in the config file ([[faults]]), not with --set")
    if key.startswith("thresholds"):
        raise ConfigError(key, "thresholds are set in [thresholds] or with --threshold, not --set")
    parts = key.split(".")
    if parts[0] == "placement" and len(parts) == 3 and all(parts):  # a plugin's setting
        table = raw.setdefault("placement", {})
        if not isinstance(table, dict):
            raise not_a_table("placement", table, "[placement]")
        own = table.setdefault(parts[1], {})
        if not isinstance(own, dict):
            raise ConfigError(f"placement.{parts[1]}", f"is a key, not a plugin's table: {key}")
        own[parts[2]] = value
        return
    if len(parts) != 2 or not all(parts):
        raise ConfigError(key, "must be section.key, e.g. placement.k")
    section, leaf = parts
    if section not in SECTIONS:
        raise unknown_key(section, list(SECTIONS))
    known = [f.name for f in fields(SECTIONS[section]) if not f.metadata.get("plugin_tables")]
    if leaf not in known and not (section == "placement" and leaf in old_keys()):
        raise unknown_key(key, known)
    table = raw.setdefault(section, {})
    if not isinstance(table, dict):
        raise not_a_table(section, table, f"[{section}]")
    table[leaf] = value
