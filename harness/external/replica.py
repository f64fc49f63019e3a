"""A model replica whose placements an external scheduler chooses.

The replica (`harness.model.protocol.replica_party.ReplicaHost`) runs as for any placement: it
sends the RPCs, retries, keeps its in-progress map and ledger (the view the timeline records, kept
with `placement.strategy`). Only the choice of a node comes from outside (`RemoteChoice`), and
`ExternalReplica` tells the scheduler everything the replica hears before the replica acts on it, so
the scheduler knows what the replica knew when it is asked to place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from harness.model.protocol import Kind, Recipient
from harness.model.recording import View

if TYPE_CHECKING:
    from harness.model.cluster.heartbeat import Report
    from harness.model.cluster.node import Outcome
    from harness.model.protocol.replica_party import ReplicaHost
    from harness.model.scheduling.scheduler import Scheduler
    from harness.model.workload.request import CreateRequest


class Session(Protocol):
    """The harness's end of a session with a scheduler (`harness.external.client`)."""

    hello_name: str
    """The name the scheduler gave itself in its Hello."""

    def report(self, report: Report, now: float) -> None: ...

    def create_answered(
        self, sandbox_id: int, node: int, outcome: Outcome, response: Report | None, now: float
    ) -> None: ...

    def kill_answered(
        self, sandbox_id: int, node: int, outcome: Outcome, response: Report | None, now: float
    ) -> None: ...

    def place(self, req: CreateRequest, now: float) -> int | None: ...

    def violated(self, scheduler: Scheduler, req: CreateRequest, node: int, rules: str) -> None: ...

    def close(self) -> None: ...


class RemoteChoice:
    """The scheduler's choice (`Scheduler.remote`): it asks the session, and the external
    scheduler's answer is the node."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def choose(self, scheduler: Scheduler, req: CreateRequest, now: float) -> int | None:
        return self.session.place(req, now)

    def violated(self, scheduler: Scheduler, req: CreateRequest, node: int, rules: str) -> None:
        self.session.violated(scheduler, req, node, rules)


class ExternalReplica(Recipient):
    """`host`, which places with `RemoteChoice(session)`, with what it hears told to the
    session first: reports, and the answers to the creates and kills it sent."""

    def __init__(self, host: ReplicaHost, session: Session) -> None:
        self.host = host
        self.session = session

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        if kind == Kind.REPORT:
            self.session.report(payload, now)
        elif kind == Kind.CREATE_ANSWER:
            sandbox_id, outcome, response = payload
            node = self.host.creating[sandbox_id].node
            self.session.create_answered(sandbox_id, node, outcome, response, now)
        elif kind == Kind.KILL_ANSWER:
            sandbox_id, outcome, response = payload
            node = self.host.killing[sandbox_id].node
            self.session.kill_answered(sandbox_id, node, outcome, response, now)
        self.host.deliver(kind, key, payload, now)

    def believed(self, now: float) -> list[float]:
        return self.host.believed(now)

    def refused_again(self) -> int:
        return self.host.refused_again()

    def view(self, now: float) -> View:
        return self.host.view(now)

    def close(self) -> None:
        self.session.close()
