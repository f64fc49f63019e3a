"""The model's records as the protocol's messages and back (`scheduler.proto`): the harness
encodes what a replica hears, a scheduler written in Python decodes it into the same records
(`examples/python-scheduler` does), so both sides speak of one `Report` and one `Outcome`."""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from typing import Any

from harness.external import scheduler_pb2 as pb
from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import NodeInfo, Outcome
from harness.model.scheduling.placement.placement_keys import KEYS, PlacementSpec
from harness.model.scheduling.placement.registries import with_settings
from harness.model.workload.request import CreateRequest

PROTOCOL_VERSION = pb.PROTOCOL_VERSION
OUTCOMES = {outcome: pb.Outcome.Value(outcome.name) for outcome in Outcome}
"""The model's outcome -> the wire's."""
FROM_WIRE = {wire: outcome for outcome, wire in OUTCOMES.items()}


def options(rules: PlacementSpec) -> dict[str, str]:
    """The `[placement]` keys, each value as JSON text (`HelloRequest.options`), and every
    plugin's settings, as the config gives them or their defaults, as a JSON object under its
    table's name: a scheduler finds `memory_overcommit` (`{"ratio": 0.0}`: the rule off)
    whether or not the config wrote the table."""
    own = {f.name: json.dumps(getattr(rules, f.name)) for f in fields(rules) if f.name in KEYS}
    plugins = with_settings(rules)
    return own | {
        table: json.dumps(asdict(rules.settings_of(plugin))) for table, plugin in plugins.items()
    }


def placement_spec(wire: Any) -> PlacementSpec:
    """The `PlacementSpec` a Hello's options give (keys this version does not know are left
    out, so an older scheduler still reads a newer harness's Hello)."""
    spec = PlacementSpec(**{k: json.loads(v) for k, v in wire.items() if k in KEYS})
    plugins = with_settings(spec)
    settings = {k: plugins[k].Settings(**json.loads(v)) for k, v in wire.items() if k in plugins}
    return replace(spec, settings=settings)


def node_registered(node: int, info: NodeInfo) -> pb.Event:
    registered = pb.NodeRegistered(
        node=node,
        cpu_count=info.cpu_count,
        memory_mib=info.memory_mib,
        labels=sorted(info.labels),
        cpu_family=info.cpu_family,
    )
    return pb.Event(time=0.0, node_registered=registered)


def node_info(wire: pb.NodeRegistered) -> NodeInfo:
    return NodeInfo(wire.cpu_count, wire.memory_mib, frozenset(wire.labels), wire.cpu_family)


def report(r: Report) -> pb.Report:
    ids = r.sandbox_ids
    return pb.Report(
        node=r.node_id,
        seq=r.seq,
        taken_at=r.taken_at,
        cpu_count=r.cpu_count,
        cpu_allocated=r.cpu_allocated,
        cpu_percent=r.cpu_percent,
        memory_total_mib=r.memory_total_mib,
        memory_allocated_mib=r.memory_allocated_mib,
        memory_used_mib=r.memory_used_mib,
        sandboxes_running=r.sandboxes_running,
        has_sandbox_ids=ids is not None,
        sandbox_ids=sorted(ids) if ids is not None else (),
    )


def from_report(w: pb.Report) -> Report:
    return Report(
        w.node,
        w.seq,
        w.taken_at,
        w.cpu_count,
        w.cpu_allocated,
        w.cpu_percent,
        w.memory_total_mib,
        w.memory_allocated_mib,
        w.memory_used_mib,
        w.sandboxes_running,
        frozenset(w.sandbox_ids) if w.has_sandbox_ids else None,
    )


def answered(
    sandbox_id: int, node: int, outcome: Outcome, response: Report | None
) -> dict[str, Any]:
    """The fields of an RpcAnswered."""
    fields_ = {"sandbox_id": sandbox_id, "node": node, "outcome": OUTCOMES[outcome]}
    if response is not None:
        fields_["report"] = report(response)
    return fields_


def fresh_report(w: pb.RpcAnswered) -> Report | None:
    """The report that came with an answer, if any."""
    return from_report(w.report) if w.HasField("report") else None


def create(req: CreateRequest) -> pb.Create:
    shape = req.shape
    return pb.Create(
        sandbox_id=req.sandbox_id,
        vcpu=req.vcpu,
        memory_mib=req.memory_mib,
        template=shape.template,
        labels=sorted(shape.labels),
        cpu_family=shape.cpu_family,
        excluded=sorted(req.excluded) if req.excluded else (),
        issued_at=req.issued_at,
        deadline=req.deadline,
    )
