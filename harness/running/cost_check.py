"""What a scenario will cost, estimated from its config before anything runs, and the rule
that refuses what this machine cannot do: `harness run` and `harness sweep` check it before any
results folder exists, and `--force` goes on anyway.

The estimate is arithmetic on the config: how many nodes, scheduler views, request rows
(creates and kills, from the arrival kind and the templates; a trace's rows are counted),
sandboxes alive at once, closed-loop clients, reports in flight, timeline rows and heartbeat
reports one seed has, each times a cost per unit measured on this code. A run is refused
when one seed (or, for a sweep, the seeds that run at once) needs more memory than is
available now, or when the whole run needs more than `LIMIT_S` of computing. The estimate
leaves out what the config cannot say (create retries, failed creates of a closed loop), so it
errs low: only what is surely too big is refused."""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.config import Config, ConfigError, RayConfig
from harness.engines import ENGINES
from harness.model.workload.arrivals import ARRIVALS
from harness.wiring.demand_estimate import demand

# Costs per unit, from `bench/budget.py` (one seed of `harness.running.runner.run` per scenario,
# each in a fresh process: peak RSS above its size before the run, and CPU time); the figures
# measured and how are on the performance page (docs/performance.md, "The cost model's
# figures"). Bytes are rounded up and CPU seconds down: the estimate errs low, refusing only
# what is surely too big.
NODE_BYTES = 1_200
"""Per node, one replica's view of it included."""
VIEW_BYTES = 550
"""Per node for each replica beyond the first."""
REQUEST_ROW_BYTES = 700
"""Per create or kill row."""
LIVE_SANDBOX_BYTES = 550
"""Per sandbox alive at the peak, with its pending kill."""
CLIENT_BYTES = 3_500
"""Per closed-loop client with its first create's row and sandbox: each has its own lifetime
stream."""
PENDING_REPORT_BYTES = 220
"""Per report in flight."""
TIMELINE_ROW_BYTES = 450
"""Per timeline row."""
REQUEST_RESULT_BYTES = 120
"""Per request row in the seed's Arrow table, what a driver collecting results holds of it."""
TIMELINE_RESULT_BYTES = 90
"""Per timeline row in the Arrow table."""
REPLICA_BYTES = 2_000
"""Per replica, beyond its view of the nodes."""
REQUEST_FRAME_BYTES = 160
TIMELINE_FRAME_BYTES = 120
"""Per request and timeline row read back into pandas (`load_run`), on top of the Arrow table
read: what printing the tables and drawing the report hold, for every seed of every strategy at
once."""
RAY_ACTOR_BYTES = 175e6
"""Per actor (or sweep worker) process of an embedded Ray."""
RAY_BASE_BYTES = 400e6
"""The driver, GCS and raylet of an embedded Ray."""

NODE_S = 10e-6
"""CPU per node (setup, the pre-run sync, the drain, the end state)."""
VIEW_S = 5e-6
"""Per node for each replica beyond the first."""
REQUEST_ROW_S = 10e-6
"""Per create or kill row."""
CLIENT_S = 30e-6
"""Per closed-loop client started (its lifetime stream is seeded)."""
REPORT_S = 1e-6
"""Per report delivered."""
TIMELINE_ROW_S = 2e-6
"""Per timeline row."""
RAY_START_S = 2.5
"""Wall seconds to start a seed's actors on Ray (docs, "A Ray cluster")."""

OVER_ROOM = 1.25
"""How far the workload's peak must exceed the cluster's room before `over_capacity` says so:
the estimate is rough (a trace's rows are counted, not their own lifetimes and sizes), and a
peak a little over the room is often met by sandboxes ending."""
LIMIT_S = 24 * 3600.0
"""Longest run (or sweep) accepted without --force: a day of computing, by the estimate's
floor. The longest shipped scenario takes minutes; a day is a typo's order of magnitude."""


@dataclass(frozen=True)
class Machine:
    """What the estimate is held against: memory available now, and cores; `bound` says what
    sets the memory (free memory, a cgroup's limit, the address-space limit)."""

    memory_bytes: float
    cpus: int
    bound: str = "free memory"


CGROUP = Path("/sys/fs/cgroup")
CGROUP_LIMITS = (
    ("memory.max", "memory.current"),
    ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"),
)
"""A cgroup's memory limit and use: v2, then v1 (a v1 limit of no limit is a huge number)."""


def this_machine(cgroup: Path = CGROUP, status: Path = Path("/proc/self/status")) -> Machine:
    """Memory this process can still have: the least of what is available now (MemAvailable),
    what its cgroup's limit leaves (v2 or v1) and what its address-space limit (RLIMIT_AS,
    `ulimit -v`) leaves beyond the address space it maps already; and the cores."""
    available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except OSError:
        pass
    bounds = {"free memory": float(available)}
    for limit_file, used_file in CGROUP_LIMITS:
        try:
            limit = (cgroup / limit_file).read_text().strip()
            used = int((cgroup / used_file).read_text())
        except (OSError, ValueError):
            continue
        if limit.isdigit():
            bounds["the cgroup's memory limit"] = float(int(limit) - used)
            break
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        bounds["the address-space limit, ulimit -v"] = float(soft - _mapped(status))
    bound = min(bounds, key=bounds.__getitem__)
    return Machine(max(0.0, bounds[bound]), os.cpu_count() or 1, bound)


def _mapped(status: Path) -> int:
    """Bytes of address space this process maps now (VmSize), which RLIMIT_AS counts."""
    try:
        for line in status.read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


@dataclass(frozen=True)
class Term:
    """One part of a seed's cost: `count` units of `what`, their memory and CPU time, and the
    keys that drive it, each with how far it is beyond its default (the largest is named)."""

    what: str
    count: float
    memory: float
    seconds: float
    keys: dict[str, float]
    results: float = 0.0
    """Bytes of the seed's result tables: on Ray and in sweeps they come back to the driver."""


_D = Config()
"""The defaults, the yardstick for how far a key has moved."""


def _up(value: float, default: float) -> float:
    return value / default


def _down(value: float, default: float) -> float:
    return default / value if value > 0 else math.inf


def _requests(config: Config) -> tuple[float, float, float, dict[str, float]]:
    """(creates, kills, sandboxes alive at the peak, the keys that drive them)."""
    w, duration = config.workload, config.run.duration_s
    d = demand(config)
    arrival = ARRIVALS[w.arrival]
    if arrival.closed:
        keys = {
            "workload.clients": _up(w.clients, _D.workload.clients),
            "run.duration_s": _up(duration, _D.run.duration_s),
            "workload.lifetime_s": _down(d.cycle, _D.workload.lifetime_s),
        }
    elif arrival.at_once:
        keys = {arrival.rate_key: _up(d.creates, arrival.expected(_D.workload, duration))}
    else:
        keys = {
            arrival.rate_key: _up(d.creates / duration, _D.workload.rate_per_s),
            "run.duration_s": _up(duration, _D.run.duration_s),
        }
    return d.creates, d.kills, d.alive, keys


def seed_terms(config: Config) -> list[Term]:
    """The cost of one seed of `config` on the virtual engine, part by part."""
    c, h, run = config.cluster, config.heartbeat, config.run
    nodes, replicas, duration = c.node_count, config.placement.replicas, run.duration_s
    nodes_key = "cluster.pools" if c.pools else "cluster.nodes"
    views = nodes * (replicas - 1)
    creates, kills, alive, request_keys = _requests(config)
    rows = creates + kills
    beats = math.floor(duration / h.interval_s) + 1
    reports = nodes * replicas * (beats + 1)  # the pre-run sync, the beats, the drain
    late = (h.delay_ms + h.jitter_ms) / 1000.0
    in_flight = nodes * replicas * min(beats, math.ceil(late / h.interval_s)) if late else 0
    samples = math.floor(duration / run.sample_interval_s) + 1 if run.sample_interval_s else 0
    timeline = nodes * replicas * samples
    spread = {
        nodes_key: _up(nodes, _D.cluster.nodes),
        "placement.replicas": _up(replicas, _D.placement.replicas),
        "run.duration_s": _up(duration, _D.run.duration_s),
    }
    terms = [
        Term(
            "nodes",
            nodes,
            nodes * NODE_BYTES,
            nodes * NODE_S,
            {nodes_key: spread[nodes_key]},
        ),
        Term(
            "replicas",
            replicas,
            replicas * REPLICA_BYTES,
            0.0,
            {"placement.replicas": spread["placement.replicas"]},
        ),
        Term(
            "views of the extra replicas",
            views,
            views * VIEW_BYTES,
            views * VIEW_S,
            {k: spread[k] for k in ("placement.replicas", nodes_key)},
        ),
        Term(
            "request rows",
            rows,
            rows * REQUEST_ROW_BYTES,
            rows * REQUEST_ROW_S,
            request_keys,
            results=rows * REQUEST_RESULT_BYTES,
        ),
        Term("sandboxes alive at once", alive, alive * LIVE_SANDBOX_BYTES, 0.0, request_keys),
        Term(
            "heartbeat reports",
            reports,
            in_flight * PENDING_REPORT_BYTES,
            reports * REPORT_S,
            {"heartbeat.interval_s": _down(h.interval_s, _D.heartbeat.interval_s), **spread},
        ),
        Term(
            "timeline rows",
            timeline,
            timeline * TIMELINE_ROW_BYTES,
            timeline * TIMELINE_ROW_S,
            {"run.sample_interval_s": _down(run.sample_interval_s, 1.0), **spread},
            results=timeline * TIMELINE_RESULT_BYTES,
        ),
    ]
    if ARRIVALS[config.workload.arrival].closed:
        clients = config.workload.clients
        terms.append(
            Term(
                "closed-loop clients",
                clients,
                clients * CLIENT_BYTES,
                clients * CLIENT_S,
                {"workload.clients": _up(clients, _D.workload.clients)},
            )
        )
    return terms


def read_back(config: Config, runs: int) -> Term:
    """The run's tables read back once it ends (`harness.results.run_reader.load_run`), to print
    them and draw the report: every seed of every strategy at once."""
    terms = {t.what: t for t in seed_terms(config)}
    rows, samples = terms["request rows"], terms["timeline rows"]
    held = (
        rows.count * (REQUEST_RESULT_BYTES + REQUEST_FRAME_BYTES)
        + samples.count * (TIMELINE_RESULT_BYTES + TIMELINE_FRAME_BYTES)
    ) * runs
    worst = max((rows, samples), key=lambda t: t.count)
    keys = {**worst.keys, "run.seeds": _up(config.run.seeds, _D.run.seeds)}
    return Term("rows of the run read back", (rows.count + samples.count) * runs, held, 0.0, keys)


def ray_actors(config: Config, cpus: int) -> Term:
    """The actor processes a seed on the Ray engine starts (see `RayConfig.sizes`)."""
    groups, pools = config.ray.sizes(config.cluster.node_count, cpus)
    replicas = config.placement.replicas
    actors = groups + replicas + pools
    auto = RayConfig().sizes(config.cluster.node_count, cpus)
    keys = {
        "ray.node_groups": _up(groups, auto[0]),
        "placement.replicas": _up(replicas, _D.placement.replicas),
        "ray.client_pools": _up(pools, auto[1]),
    }
    return Term("Ray actor processes", actors, actors * RAY_ACTOR_BYTES, 0.0, keys)


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def _duration(s: float) -> str:
    if s < 2 * 3600:
        return f"{s / 60:.3g} min"
    if s < 3 * 86400:
        return f"{s / 3600:.3g} h"
    if s < 3 * 365 * 86400:
        return f"{s / 86400:.3g} days"
    return f"{s / (365 * 86400):.3g} years"


def _named(term: Term, extra: dict[str, float] | None = None) -> str:
    """The key furthest beyond its default among those driving `term` (and `extra`)."""
    keys = {**term.keys, **(extra or {})}
    return max(keys, key=keys.__getitem__)


def _memory(t: Term) -> float:
    return t.memory


def _results(t: Term) -> float:
    return t.results


def _refuse_memory(
    need: float, terms: list[Term], machine: Machine, who: str, part: Callable[[Term], float]
) -> None:
    """Refuse when `need` bytes exceed what is available, naming the key behind the largest
    `part` of `terms`."""
    if need <= machine.memory_bytes:
        return
    worst = max(terms, key=part)
    raise ConfigError(
        _named(worst),
        f"too big for this machine: {who} needs ~{_size(need)} of memory "
        f"({worst.count:.3g} {worst.what}: ~{_size(part(worst))}), "
        f"{_size(machine.memory_bytes)} is available ({machine.bound}); --force runs it anyway",
    )


def _refuse_time(seconds: float, worst: Term, how: str, extra: dict[str, float]) -> None:
    """Refuse when `seconds` exceed `LIMIT_S`, naming the key behind `worst` (or `extra`,
    when that is further beyond its default)."""
    if seconds <= LIMIT_S:
        return
    raise ConfigError(
        _named(worst, extra),
        f"too long: ~{_duration(seconds)} of computing at the least ({worst.count:.3g} "
        f"{worst.what} per seed, {how}), over the limit of {_duration(LIMIT_S)}; "
        "--force runs it anyway",
    )


def check_run(config: Config, strategies: int, machine: Machine, remote: bool) -> None:
    """Refuse (a ConfigError naming the dominant key) a run of `config` under `strategies`
    strategies that this machine cannot hold or that would take over `LIMIT_S`. `remote`: Ray
    on another machine (an address), which then holds all but the results."""
    terms = seed_terms(config)
    runs = config.run.seeds * strategies
    how = f"{runs} seeds" if strategies == 1 else f"{runs} seeds of {strategies} strategies"
    seeds_key = {"run.seeds": _up(config.run.seeds, _D.run.seeds)}
    back = read_back(config, runs)
    _refuse_memory(back.memory, [back], machine, "reading the run back for its report", _memory)
    if not ENGINES[config.run.engine].on_ray:
        _refuse_memory(sum(map(_memory, terms)), terms, machine, "one seed", _memory)
        worst = max(terms, key=lambda t: t.seconds)
        _refuse_time(sum(t.seconds for t in terms) * runs, worst, how, seeds_key)
        return
    if remote:
        need = sum(map(_results, terms))
        _refuse_memory(need, terms, machine, "collecting one seed from Ray", _results)
    else:
        terms.append(ray_actors(config, machine.cpus))
        need = RAY_BASE_BYTES + sum(map(_memory, terms))
        _refuse_memory(need, terms, machine, "one seed on an embedded Ray", _memory)
    per_seed = config.run.duration_s * config.run.time_scale + RAY_START_S
    wall = Term("model seconds in real time", config.run.duration_s, 0.0, per_seed, {})
    keys = {"run.duration_s": _up(config.run.duration_s, _D.run.duration_s), **seeds_key}
    _refuse_time(per_seed * runs, wall, how, keys)


def check_sweep(configs: list[Config], seeds: int, machine: Machine, remote: bool) -> None:
    """Refuse a sweep of cells `configs` x `seeds` that this machine cannot hold or that would
    take over `LIMIT_S` on its cores. Each worker runs one seed at a time; the driver keeps a
    cell's results until its last seed is in. `remote`: the workers are on a Ray cluster,
    whose size is not known here, so only the driver's share (and no time) is checked."""
    cells = [seed_terms(config) for config in configs]
    held = max(cells, key=lambda terms: sum(map(_results, terms)))
    driver = seeds * sum(map(_results, held))
    seeds_key = {"sweep.seeds": _up(seeds, _D.run.seeds)}
    collected = Term(
        "seeds of a cell's results",
        seeds,
        driver,
        0.0,
        {**max(held, key=_results).keys, **seeds_key},
        results=driver,
    )
    if remote:
        _refuse_memory(driver, [collected], machine, "collecting a cell's seeds", _results)
        return
    workers = min(machine.cpus, len(configs) * seeds)
    biggest = max(cells, key=lambda terms: sum(map(_memory, terms)))
    need = RAY_BASE_BYTES + workers * (RAY_ACTOR_BYTES + sum(map(_memory, biggest))) + driver
    terms = [*biggest, collected]
    _refuse_memory(need, terms, machine, f"the sweep, {workers} seeds at once,", _memory)
    slowest = max(cells, key=lambda terms: sum(t.seconds for t in terms))
    worst = max(slowest, key=lambda t: t.seconds)
    seconds = seeds * sum(t.seconds for terms in cells for t in terms) / workers
    how = f"{seeds} seeds x {len(configs)} cells on {workers} cores"
    _refuse_time(seconds, worst, how, seeds_key)


def over_capacity(config: Config) -> str | None:
    """One line when the workload asks for more sandboxes alive at once than the cluster has
    room for (`harness.wiring.demand_estimate.Demand`: `wanted` over `room`), else None. A
    create beyond the room is refused by a full node and, as upstream, placed again and again
    until its deadline: a storm of refusals, which made a run of a second take minutes. Said
    before the run, not refused: a full cluster may be what is studied."""
    d = demand(config)
    if d.wanted <= OVER_ROOM * d.room:
        return None
    cpus = sum(p.count * p.cpu_count for p in config.cluster.node_pools())
    p = config.placement
    if p.retry_refused:
        then = (
            "placed again until placement.deadline_s passes, which can make the run far "
            "longer (placement.max_asks caps the asks per create)"
        )
    else:
        then = "failed at once (placement.retry_refused is false)"
    return (
        f"{config.run.name} asks for more room than its cluster has: about {d.wanted:,.0f} "
        f"sandboxes alive at once at its peak, room for about {d.room:,.0f} ({cpus:,} vCPUs "
        f"x placement.r {p.r:g}); creates beyond it are refused by full nodes and {then}"
    )


def cells_over_capacity(configs: list[Config]) -> str | None:
    """`over_capacity` for a sweep's cells: how many, and the first one's line."""
    said = [(i, line) for i, c in enumerate(configs) if (line := over_capacity(c)) is not None]
    if not said:
        return None
    first, line = said[0]
    return f"{len(said)} of {len(configs)} cells, the first cell {first}: {line}"
