"""One session with an external scheduler (`scheduler.proto`): Hello, then a Place call per
placement carrying every event since the last one, then Reset.

Calls are made as the model asks for them and each is awaited, so on the virtual engine they
come in virtual-time order and a scheduler that decides the same gives the same run. Anything
the process does outside the protocol (dies, hangs past `external.timeout_s`, answers a node
that does not exist or bytes that do not parse, hangs up) is a `SchedulerError`: one line
naming the scheduler and what it did."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.external import SchedulerError, wire
from harness.external import scheduler_pb2 as pb
from harness.external.process import DEATH_WAIT_S, SchedulerProcess
from harness.external.spec import ExternalSpec, split_address
from harness.external.transport import TRANSPORTS, CallFailed
from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import NodeInfo, Outcome
from harness.model.scheduling.placement.eligibility import Eligibility
from harness.model.scheduling.placement.placement_keys import PlacementSpec
from harness.model.scheduling.scheduler import Scheduler
from harness.model.workload.request import CreateRequest


class RemoteScheduler:
    """The harness's end of one session: buffers what the replica hears, places through the
    process."""

    def __init__(self, spec: ExternalSpec, process: SchedulerProcess | None = None) -> None:
        self.process = process
        if process is not None:
            host, port = "127.0.0.1", process.port
            self.name = f"external scheduler {process.name!r}"
        else:
            host, port = split_address(spec.address)
            self.name = f"external scheduler at {spec.address}"
        self.at = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        """Where the scheduler is spoken to."""
        self.timeout_s = spec.timeout_s
        self.fail_on_timeout = spec.on_timeout == "fail"
        self.stop_on_violation = spec.on_violation == "error"
        self.events: list[pb.Event] = []
        self.closed = False
        self.failed = False
        self.serves_many = False
        self.kept: dict | None = None
        """The processes kept between seeds, this one among them while it serves
        (`open_session`); None: stopped with the session."""
        self.kept_as: tuple = ()
        self.refused: tuple[int, int] | None = None
        """(sandbox, node) of the last create a node refused as full: when the next Place is
        that create's, it opens with a `create_refused` event."""
        self.node_count = 0
        self.replica: int | None = None
        try:
            self.transport = TRANSPORTS[spec.transport](host, port, spec.timeout_s)
        except CallFailed as e:
            raise self.error(self._what("connect", e)) from None

    def hello(
        self,
        seed: int,
        replica: int,
        replicas: int,
        nodes: Sequence[NodeInfo],
        rules: PlacementSpec,
    ) -> None:
        """Starts the session; the nodes' registrations go with the first Place."""
        self.replica = replica
        request = pb.HelloRequest(
            protocol_version=wire.PROTOCOL_VERSION,
            seed=seed,
            replica=replica,
            replicas=replicas,
            node_count=len(nodes),
            options=wire.options(rules),
        )
        reply = self._call("Hello", request)
        self.serves_many = reply.serves_many
        self.hello_name = reply.name or "external"
        """The name the scheduler gave itself: the summary's `scheduler` column."""
        if reply.name:
            self.name = f"external scheduler {reply.name!r}"
        if reply.protocol_version != wire.PROTOCOL_VERSION:
            raise self.error(
                f"speaks protocol version {reply.protocol_version}, the harness "
                f"{wire.PROTOCOL_VERSION}"
            )
        self.node_count = len(nodes)
        self.events = [wire.node_registered(i, info) for i, info in enumerate(nodes)]

    def report(self, report: Report, now: float) -> None:
        self.events.append(pb.Event(time=now, report=wire.report(report)))

    def create_answered(
        self, sandbox_id: int, node: int, outcome: Outcome, response: Report | None, now: float
    ) -> None:
        answered = pb.RpcAnswered(**wire.answered(sandbox_id, node, outcome, response))
        self.events.append(pb.Event(time=now, create_answered=answered))
        if outcome is Outcome.RESOURCE_EXHAUSTED:
            self.refused = (sandbox_id, node)

    def kill_answered(
        self, sandbox_id: int, node: int, outcome: Outcome, response: Report | None, now: float
    ) -> None:
        answered = pb.RpcAnswered(**wire.answered(sandbox_id, node, outcome, response))
        self.events.append(pb.Event(time=now, kill_answered=answered))

    def place(self, req: CreateRequest, now: float) -> int | None:
        """The node the scheduler chooses for `req`; None: none (or, with on_timeout = fail,
        no answer in time). The events buffered so far go with the call, and are gone from the
        buffer whatever its outcome."""
        refused = self.refused
        if refused is not None and refused[0] == req.sandbox_id:  # asked again after a refusal
            again = pb.CreateRefused(sandbox_id=req.sandbox_id, node=refused[1], refusals=req.skips)
            self.events.append(pb.Event(time=now, create_refused=again))
            self.refused = None
        request = pb.PlaceRequest(events=self.events, now=now, create=wire.create(req))
        self.events = []
        reply = self._call("Place", request)
        if reply is None:  # dropped (on_timeout = fail): the scheduler hears so first thing
            dropped = pb.PlaceDropped(sandbox_id=req.sandbox_id)
            self.events.append(pb.Event(time=now, place_dropped=dropped))
            return None
        if not reply.placed:
            return None
        if reply.node >= self.node_count:
            raise self.error(
                f"answered node {reply.node} for sandbox {req.sandbox_id}, which "
                f"does not exist (nodes 0-{self.node_count - 1})"
            )
        return reply.node

    def violated(self, scheduler: Scheduler, req: CreateRequest, node: int, rules: str) -> None:
        """Its answer broke eligibility `rules`: with `external.on_violation = "error"`, one line
        naming the create, the node and each rule broken, with what the rule asked."""
        if not self.stop_on_violation:
            return
        why = Eligibility(scheduler.rules).why(scheduler, node, req, rules)
        raise self.error(
            f"placed sandbox {req.sandbox_id} on node {node}, which breaks its "
            f'{rules.replace("+", " and ")} rule ({why}); external.on_violation = "count" '
            "counts such answers instead"
        )

    def _call(self, method: str, request: Any, timeout_s: float | None = None) -> Any:
        try:
            return self.transport.call(method, request, timeout_s)
        except CallFailed as e:
            if e.kind == "timeout" and method == "Place" and self.fail_on_timeout:
                return None  # a failed placement; the scheduler may have placed it all the same
            raise self.error(self._what(method, e)) from None

    def error(self, what: str) -> SchedulerError:
        """The one line: the scheduler, what it did, and where its standard error is. A
        scheduler that erred is not kept for another seed."""
        self.failed = True
        where = self.process.where() if self.process is not None else ""
        error = SchedulerError(f"{self.name}: {what}{where}")
        error.replica = self.replica
        return error

    def _what(self, method: str, failed: CallFailed) -> str:
        """What the scheduler did, from how a call failed."""
        process = self.process
        # A process that dies takes a moment to be reaped; one that hangs is not waited for.
        wait_s = 0.0 if failed.kind == "timeout" else DEATH_WAIT_S
        if process is not None and process.exit_code(wait_s) is not None:
            return process.death(f"during {method}")
        if failed.kind == "timeout":
            return f"did not answer {method} within {self.timeout_s:g} s (external.timeout_s)"
        if failed.kind == "unparsable":
            return f"answered {method} with bytes that do not parse as a {method}Reply"
        if failed.kind == "refused" and process is not None:
            return (
                f"printed port {process.port}, but nothing listens on {self.at}: the connection "
                "was refused (is the port printed before the server listens, or another one?)"
            )
        if failed.kind == "refused":
            return (
                "refused the connection: nothing listens there (is the server up, and "
                "external.address its address?)"
            )
        if failed.kind == "closed":
            return f"closed the connection during {method} ({failed.detail})"
        return f"failed {method} ({failed.detail})"

    def close(self) -> None:
        """Ends the session (Reset, not waited for long), and stops a process the harness
        started. Once: the Ray engine's replica asks at the seed's end and again at the next
        reset."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(CallFailed):  # a scheduler gone has nothing to reset
            self.transport.call("Reset", pb.ResetRequest(), min(self.timeout_s, 1.0))
        self.transport.close()
        process = self.process
        if process is None:
            return
        serving = self.serves_many and not self.failed and process.exit_code() is None
        if self.kept is not None and serving:
            return  # kept for the next seed (`open_session`)
        if self.kept is not None:
            self.kept.pop(self.kept_as, None)
        process.stop()


Kept = dict[tuple, SchedulerProcess]
"""Scheduler processes kept between seeds (`HelloReply.serves_many`), by command and replica."""


def open_session(
    spec: ExternalSpec,
    seed: int,
    replica: int,
    replicas: int,
    nodes: Sequence[NodeInfo],
    rules: PlacementSpec,
    kept: Kept | None = None,
) -> RemoteScheduler:
    """A session with the scheduler `spec` names: with a command, the process `kept` holds for
    this replica if it serves many sessions and still runs, else a fresh one (kept when it says
    it serves many). `kept` None: a process per session."""
    key = (tuple(spec.command), rules.strategy, replica)
    process = kept.get(key) if kept is not None else None
    if process is not None and process.exit_code() is not None:
        process = None
    if process is None and spec.command:
        log = None
        if spec.log_dir:
            log = Path(spec.log_dir) / f"{rules.strategy}-seed{seed}-replica{replica}.log"
        process = SchedulerProcess(spec.command, spec.start_timeout_s, log)
    try:
        session = RemoteScheduler(spec, process)
    except BaseException:
        if process is not None:
            process.stop()
        raise
    if kept is not None and process is not None:
        kept[key] = process
        session.kept, session.kept_as = kept, key
    try:
        session.hello(seed, replica, replicas, nodes, rules)
    except BaseException:
        session.close()
        raise
    return session
