"""Builds the protocol's parties for one (config, seed), the same way for every engine.

The runner and engines own wiring, the model owns rules: this module is the one place that
turns a validated `Config` into the model's own pieces (nodes, heartbeat plan, faults, RPC
model, scheduler replicas, client hosts), each handed the random stream it draws from
(`harness.model.random_streams.Streams`, which names every stream).
"""

from __future__ import annotations

from functools import partial

from harness.config import Config, trace_file
from harness.external.replica import ExternalReplica, RemoteChoice
from harness.model.cluster.faults import Faults, SlowNodes
from harness.model.cluster.heartbeat import BeatGroup, HeartbeatPlan
from harness.model.cluster.node import Node
from harness.model.cluster.pools import build_nodes, registrations
from harness.model.cluster.rpc import RpcModel
from harness.model.lifecycle import Lifecycle
from harness.model.protocol import Sink
from harness.model.protocol.client_party import ClientHost
from harness.model.protocol.node_party import NodeHost
from harness.model.protocol.replica_party import ReplicaHost
from harness.model.random_streams import Streams
from harness.model.scheduling.placement.pipeline import Parts
from harness.model.scheduling.scheduler import Choice, Scheduler
from harness.model.scheduling.strategies import STRATEGIES, make_strategy
from harness.model.workload.arrivals import ARRIVALS
from harness.wiring.demand_estimate import demand


def nodes(config: Config, seed: int) -> list[Node]:
    """The cluster at t = 0, with its initial loads."""
    return build_nodes(config.cluster, config.placement.r, Streams(seed).cluster())


def rpc_model(config: Config) -> RpcModel:
    c, p = config.cluster, config.placement
    return RpcModel(
        c.create_latency_ms, c.kill_latency_ms, p.rpc_timeout_ms, SlowNodes(config.faults)
    )


def create_times(config: Config) -> tuple[float, float] | None:
    """(cold, warm): seconds a create takes on the node, without or with its template cached;
    None when both are 0 (the node answers at once)."""
    c = config.cluster
    if not (c.create_cold_ms or c.create_warm_ms):
        return None
    return c.create_cold_ms / 1000.0, c.create_warm_ms / 1000.0


def lifecycle(config: Config) -> Lifecycle:
    """When the run's samples fall and when it is over."""
    return Lifecycle(config.run.duration_s, config.run.sample_interval_s)


def heartbeat_plan(config: Config) -> HeartbeatPlan:
    return HeartbeatPlan(config.heartbeat, config.run.duration_s)


def beat_groups(config: Config, seed: int, node_ids: range) -> list[BeatGroup]:
    """The beat groups of the nodes `node_ids`: every node's phase is drawn (in node order, so
    a node's phase does not depend on how nodes are split among hosts), then kept for these."""
    every = heartbeat_plan(config).groups(
        list(range(config.cluster.node_count)), Streams(seed).heartbeat()
    )
    lo, hi = node_ids.start, node_ids.stop
    if lo == 0 and hi >= config.cluster.node_count:
        return every
    groups = [(t, [i for i in ids if lo <= i < hi]) for t, ids in every]
    return [(t, ids) for t, ids in groups if ids]


def quiet_allowed(config: Config) -> bool:
    """Whether the replicas would ignore a report that says what the node's last one said: the
    strategy ignores one (`Strategy.ignores_unchanged_reports`) and no placement plugin reads when
    a view was reported. Nodes may then skip such reports (`NodeHost`, `quiet`): the run is the
    same (`tests/engines/test_virtual_engine.py` checks every table)."""
    return (
        STRATEGIES[config.placement.strategy].ignores_unchanged_reports()
        and not Parts.of(config.placement).reads_report_times()
    )


def quiet_nodes(config: Config) -> bool:
    """Whether nodes skip the reports that would change nothing: where allowed, unless the
    workload is expected to change nodes (a create or a kill each) more often than the cluster
    reports. Quiet nodes pay for each change and report changed nodes only, which a large
    cluster needs; where nearly every node changes between its beats, reporting on every beat
    is the cheaper way to the same run (docs/performance.md, "Figures behind the code"). A
    trace's rate
    is not read for this: its nodes are quiet. `heartbeat.quiet_nodes` may say on or off
    instead of auto."""
    mode = config.heartbeat.quiet_nodes
    if mode == "off" or not quiet_allowed(config):
        return False
    if mode == "on" or ARRIVALS[config.workload.arrival].replay:
        return True
    need = demand(config)
    changes = (need.creates + need.kills) / config.run.duration_s
    return changes < config.cluster.node_count / config.heartbeat.interval_s


def node_host(config: Config, seed: int, hosted: list[Node], sink: Sink) -> NodeHost:
    """The node side for `hosted` (a contiguous run of the cluster's nodes); its random faults
    and report delivery draw from streams keyed by its first node."""
    first = hosted[0].node_id
    ids = range(first, first + len(hosted))
    strategy = STRATEGIES[config.placement.strategy]
    return NodeHost(
        hosted,
        plan=heartbeat_plan(config),
        beat_groups=beat_groups(config, seed, ids),
        faults=Faults(config.faults, Streams(seed).faults(first), ids),
        rpc=rpc_model(config),
        create_times=create_times(config),
        replicas=config.placement.replicas,
        with_ids=strategy.wants_sandbox_ids,
        with_response=strategy.wants_response_report,
        delivery=Streams(seed).report_delivery(first),
        sink=sink,
        quiet=quiet_nodes(config),
    )


def replica_host(
    config: Config, seed: int, index: int, sink: Sink, remote: Choice | None = None
) -> ReplicaHost:
    """Scheduler replica `index`: the nodes as they register at start-up (their static facts),
    the config's placement rules and strategy, and a random stream of its own; `remote`
    (an external scheduler) chooses in place of the rules' pipeline."""
    p = config.placement
    nodes = registrations(config.cluster)
    cpu_counts = [info.cpu_count for info in nodes]
    ledger = make_strategy(p.strategy, cpu_counts, p)
    scheduler = Scheduler(nodes, p, ledger, Streams(seed).placement(index), remote)
    return ReplicaHost(index, scheduler, rpc_model(config), sink)


Replica = ReplicaHost | ExternalReplica


def replica(config: Config, seed: int, index: int, sink: Sink, kept: dict | None = None) -> Replica:
    """Scheduler replica `index`, placing in-process, or with an `[external]` scheduler through
    a session of its own (a fresh process when the config gives a command, or one `kept` from
    an earlier seed: `harness.external.client.open_session`); `close_replicas` ends the
    session."""
    if not config.external.active:
        return replica_host(config, seed, index, sink)
    from harness.external.client import open_session  # gRPC: only for an external scheduler

    p = config.placement
    session = open_session(
        config.external, seed, index, p.replicas, registrations(config.cluster), p, kept
    )
    try:
        return ExternalReplica(
            replica_host(config, seed, index, sink, RemoteChoice(session)), session
        )
    except BaseException:
        session.close()
        raise


def replica_hosts(config: Config, seed: int, sink: Sink, kept: dict | None = None) -> list[Replica]:
    """Every scheduler replica of one process (the virtual engine)."""
    hosts: list[Replica] = []
    try:
        for r in range(config.placement.replicas):
            hosts.append(replica(config, seed, r, sink, kept))
    except BaseException:
        close_replicas(hosts)
        raise
    return hosts


def scheduler_names(hosts: list[Replica]) -> list[str]:
    """The names the external scheduler gave itself in the Hello of each of `hosts` that
    places through one (none in process)."""
    return [h.session.hello_name for h in hosts if isinstance(h, ExternalReplica)]


def placed_by(names: list[str]) -> str | None:
    """Who placed, for the summary's `scheduler`: the replicas' scheduler names, joined should
    they differ; None when none was heard (in process)."""
    return " + ".join(sorted(set(names))) or None


def close_replicas(hosts: list[Replica]) -> None:
    """Ends the sessions of replicas that place through an external scheduler."""
    for host in hosts:
        if isinstance(host, ExternalReplica):
            host.close()


def client_host(config: Config, seed: int, index: int, hosts: int, sink: Sink) -> ClientHost:
    """The clients `c % hosts == index`; a trace to replay is read by each host itself,
    streamed from the file (for a trace of another format, its import)."""
    w = config.workload
    rows, spread = None, 0.0
    if ARRIVALS[w.arrival].replay:
        path = trace_file.replayed(config)
        memory = trace_file.node_memory_mib(config)
        rows = partial(trace_file.rows, path, w.template_ids(), memory)
        spread = trace_file.spread(config, path)
    return ClientHost(
        index,
        hosts,
        w,
        config.run.duration_s,
        config.placement.replicas,
        seed,
        sink,
        rows,
        spread,
    )
