"""What a run records, built in one place for both engines: request rows, timeline rows and a
node's end state, as plain column lists (the results layer turns them into Arrow tables).

Request rows are recorded by the client side when an answer reaches the client; timeline
samples by whoever can see both the nodes' truth and the replicas' views at one instant (the
virtual engine, or the Ray driver polling its actors), from the two parties' own snapshots.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.node import Node, Outcome

REQUEST_COLUMNS = (
    "kind",
    "sandbox_id",
    "client",
    "replica",
    "issued_at",
    "sent_at",
    "done_at",
    "latency_ms",
    "node_id",
    "rpcs",
    "skips",
    "attempts",
    "outcome",
    "reason",
)
TIMELINE_COLUMNS = (
    "t",
    "node_id",
    "replica",
    "cpu_allocated",
    "sandboxes",
    "view_cpu_allocated",
    "in_progress",
    "in_progress_cpu",
    "kill_in_progress_cpu",
    "cpu_error",
)

CreateAnswer = tuple[int, str, int, int, int, int, str | None, object]
"""(sandbox_id, step, node, rpcs, skips, attempts, failure, context) of a finished create;
`failure` is None for a placed one (a null `reason`, not an empty string)."""
Truth = tuple[list[float], list[int]]
"""True allocated vCPUs and sandbox counts, node by node (`NodeHost.truth`)."""
View = tuple[list[float], list[int], list[float], list[float]]
"""A replica's believed vCPUs, in-progress creates (count, vCPUs) and in-progress kills (vCPUs),
node by node (`ReplicaHost.view`)."""


def _columns(names: Sequence[str], rows: list[tuple]) -> dict[str, list | tuple]:
    if not rows:
        return {name: [] for name in names}
    return dict(zip(names, zip(*rows, strict=True), strict=True))


class RequestLog:
    """One row per create or kill call, appended as tuples (cheap on the hot path).

    `issued_at` is when the call was meant to go out and latency counts from it (no coordinated
    omission); `sent_at` is when it did (later in an engine in real time that falls behind).
    """

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def create(
        self,
        answer: CreateAnswer,
        client: int,
        replica: int,
        issued_at: float,
        sent_at: float,
        done_at: float,
    ) -> None:
        sandbox_id, step, node, rpcs, skips, attempts, failure, _ = answer
        self._add(
            "create", sandbox_id, client, replica, issued_at, sent_at, done_at, node,
            rpcs, skips, attempts, step, failure,
        )  # fmt: skip

    def kill(
        self,
        sandbox_id: int,
        outcome: Outcome,
        client: int,
        replica: int,
        node: int,
        issued_at: float,
        sent_at: float,
        done_at: float,
    ) -> None:
        """A kill is one RPC and one attempt, never a skip."""
        ok = outcome is Outcome.OK
        self._add(
            "kill", sandbox_id, client, replica, issued_at, sent_at, done_at, node,
            1, 0, 1, "killed" if ok else "failed", None if ok else outcome.value,
        )  # fmt: skip

    def _add(
        self,
        kind: str,
        sandbox_id: int,
        client: int,
        replica: int,
        issued_at: float,
        sent_at: float,
        done_at: float,
        node: int,
        rpcs: int,
        skips: int,
        attempts: int,
        outcome: str,
        reason: str | None,
    ) -> None:
        latency = (done_at - issued_at) * 1000.0
        self.rows.append(
            (kind, sandbox_id, client, replica, issued_at, sent_at, done_at, latency, node,
             rpcs, skips, attempts, outcome, reason)
        )  # fmt: skip

    def take(self) -> dict[str, list | tuple]:
        """The rows recorded so far as columns; the log starts empty again."""
        rows, self.rows = self.rows, []
        return _columns(REQUEST_COLUMNS, rows)


class TimelineLog:
    """Samples of every node as the truth and each replica's view see it at one instant."""

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def sample(self, t: float, truth: Truth, views: Sequence[View]) -> None:
        """`cpu_error` = believed minus true allocated vCPU: the accounting error."""
        cpu, counts = truth
        append = self.rows.append
        for replica, (believed, in_progress, in_progress_cpu, killing) in enumerate(views):
            for node, row in enumerate(
                zip(cpu, counts, believed, in_progress, in_progress_cpu, killing, strict=True)
            ):
                true_cpu, count, view_cpu, pending, pending_cpu, killing_cpu = row
                append(
                    (
                        t,
                        node,
                        replica,
                        true_cpu,
                        count,
                        view_cpu,
                        pending,
                        pending_cpu,
                        killing_cpu,
                        view_cpu - true_cpu,
                    )
                )

    def take(self) -> dict[str, list | tuple]:
        rows, self.rows = self.rows, []
        return _columns(TIMELINE_COLUMNS, rows)


def next_sample(t: float, interval: float, duration: float) -> float | None:
    """The timeline sample after the one at `t` (the first is at 0); None past the end or
    when sampling is off."""
    if interval <= 0:
        return None
    nxt = t + interval
    return nxt if nxt <= duration else None


def node_columns(nodes: list[Node], unknown_losses: bool = False) -> dict[str, list]:
    """The end state of nodes, one entry per node, as the `nodes` table has it;
    `unknown_losses` when the process holding them died (what it lost is not known). One pass
    over the nodes, which at a million nodes is a third of the time of one per column."""
    n = len(nodes)
    node_id, sandboxes, lost = [0] * n, [0] * n, [0] * n
    cpu, base, peak, capacity = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    down = [False] * n
    for i in range(n):
        node = nodes[i]
        node_id[i] = node.node_id
        sandboxes[i] = len(node.sandboxes)
        cpu[i] = node.cpu_allocated
        base[i] = node.base_cpu
        peak[i] = node.peak_cpu_allocated
        capacity[i] = node.capacity
        down[i] = node.down
        lost[i] = len(node.lost)
    return {
        "node_id": node_id,
        "sandboxes": sandboxes,
        "cpu_allocated": cpu,
        "initial_cpu_allocated": base,
        "peak_cpu_allocated": peak,
        "capacity": capacity,
        "down": down,
        "lost": lost,
        "lost_unknown": [unknown_losses] * n,
    }
