"""What a run records, built in one place for both engines: request rows, timeline rows and a
node's end state, as plain column lists (the results layer turns them into Arrow tables).

Request rows are recorded by the client side when an answer reaches the client; timeline
samples by whoever can see both the nodes' truth and the replicas' views at one instant (the
virtual engine, or the Ray driver polling its actors), from the two parties' own snapshots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, final

from librt.vecs import append, vec
from mypy_extensions import i32, i64, u8

from harness.model.cluster.node import Node, Outcome

REQUEST_FIELDS: Final = (
    ("kind", "code"),
    ("sandbox_id", "i64"),
    ("client", "i64"),
    ("replica", "i32"),
    ("issued_at", "f64"),
    ("sent_at", "f64"),
    ("done_at", "f64"),
    ("latency_ms", "f64"),
    ("node_id", "i32"),
    ("rpcs", "i32"),
    ("skips", "i32"),
    ("attempts", "i32"),
    ("outcome", "code"),
    ("reason", "str"),
    ("asks", "i32"),
    ("in_flight", "i32"),
    ("violated", "str"),
    ("tag", "str"),
)
"""The request log's columns and the width of each: the one declaration the log's vectors and
the results layer's Arrow schema (`harness.results.arrow_schemas`) are both held to. Widths:
`i32`, `i64`, `f64`, `bool`, `str`, and `code` (a `Coded` column of a few strings)."""
TIMELINE_FIELDS: Final = (
    ("t", "f64"),
    ("node_id", "i32"),
    ("replica", "i32"),
    ("cpu_allocated", "f64"),
    ("sandboxes", "i32"),
    ("cpu_percent", "f64"),
    ("view_cpu_allocated", "f64"),
    ("in_progress", "i32"),
    ("in_progress_cpu", "f64"),
    ("kill_in_progress_cpu", "f64"),
    ("cpu_error", "f64"),
)
"""The timeline's columns and their widths."""
NODE_FIELDS: Final = (
    ("node_id", "i32"),
    ("sandboxes", "i32"),
    ("cpu_allocated", "f64"),
    ("cpu_count", "i32"),
    ("cpu_percent", "f64"),
    ("initial_cpu_allocated", "f64"),
    ("peak_cpu_allocated", "f64"),
    ("capacity", "f64"),
    ("down", "bool"),
    ("lost", "i32"),
    ("lost_unknown", "bool"),
)
"""A node's end state (`node_columns`), one row per node, and the widths. `cpu_percent` is the
node's actual CPU use (100 = one busy vCPU: the sum of its sandboxes' vCPUs x usage, each at
most the node's vCPUs), as its reports carry it; utilisation is `cpu_percent / cpu_count` per
cent."""
REQUEST_COLUMNS: Final = tuple(name for name, _ in REQUEST_FIELDS)
TIMELINE_COLUMNS: Final = tuple(name for name, _ in TIMELINE_FIELDS)

KINDS: Final = ("create", "kill")
"""The `kind` column's values (`Coded`)."""
OUTCOMES: Final = ("placed", "failed", "killed")
"""The `outcome` column's values: a create placed or failed, a kill done or failed."""
_OUTCOME: Final = {label: code for code, label in enumerate(OUTCOMES)}
_CREATE: Final = 0
_KILL: Final = 1


@final
class Coded:
    """A column of a few strings, kept as a small code per row: the row's value is
    `labels[code]` (the results layer makes the strings of all rows at once)."""

    __slots__ = ("codes", "labels")

    def __init__(self, labels: tuple[str, ...], codes: vec[u8]) -> None:
        self.labels = labels
        self.codes = codes

    def __len__(self) -> int:
        return len(self.codes)


CreateAnswer = tuple[int, str, int, int, int, int, str | None, object, int, str | None, int]
"""(sandbox_id, step, node, rpcs, skips, attempts, failure, context, asks, violated, in_flight)
of a finished create; `failure` is None for a placed one (a null `reason`, not an empty string),
and `violated` None for one whose placements broke no eligibility rule."""
Truth = tuple[list[float], list[int], list[float]]
"""True allocated vCPUs, sandbox counts and CPU use (`cpu_percent`), node by node
(`NodeHost.truth`)."""
View = tuple[list[float], list[int], list[float], list[float]]
"""A replica's believed vCPUs, in-progress creates (count, vCPUs) and in-progress kills (vCPUs),
node by node (`ReplicaHost.view`)."""


class RequestLog:
    """One row per create or kill call, kept as columns: appending to a column list costs
    about what building a row tuple does, and turning rows into columns at the end (a transpose
    of every row) took a quarter of a virtual seed's time at 10,000 nodes. Numbers are kept in
    `librt.vecs` vectors, mypyc's native arrays: compiled, a value is appended unboxed (no
    object per number), and the results layer reads each column as one buffer, where a list
    of a million numbers is a million objects to visit.

    `issued_at` is when the call was meant to go out and latency counts from it (no coordinated
    omission); `sent_at` is when it did (later in an engine in real time that falls behind).
    """

    __slots__ = REQUEST_COLUMNS

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.kind = vec[u8]()
        self.sandbox_id = vec[i64]()
        self.client = vec[i64]()
        self.replica = vec[i32]()
        self.issued_at = vec[float]()
        self.sent_at = vec[float]()
        self.done_at = vec[float]()
        self.latency_ms = vec[float]()
        self.node_id = vec[i32]()
        self.rpcs = vec[i32]()
        self.skips = vec[i32]()
        self.attempts = vec[i32]()
        self.outcome = vec[u8]()
        self.reason: list[str | None] = []
        self.asks = vec[i32]()
        self.in_flight = vec[i32]()
        self.violated: list[str | None] = []
        self.tag: list[str | None] = []

    def create(
        self,
        answer: CreateAnswer,
        client: int,
        replica: int,
        issued_at: float,
        sent_at: float,
        done_at: float,
        tag: str | None = None,
    ) -> None:
        """`tag`: what the create's trace row named it (its job and task, say); None: none."""
        sandbox_id, step, node, rpcs, skips, attempts, failure, _, asks, violated, flying = answer
        self._add(
            _CREATE, sandbox_id, client, replica, issued_at, sent_at, done_at, node,
            rpcs, skips, attempts, _OUTCOME[step], failure, asks, flying, violated, tag,
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
        """A kill is one RPC and one attempt, never a skip; it has no tag (its create's row
        has, joined by `sandbox_id`)."""
        ok = outcome is Outcome.OK
        self._add(
            _KILL, sandbox_id, client, replica, issued_at, sent_at, done_at, node,
            1, 0, 1, _OUTCOME["killed" if ok else "failed"], None if ok else outcome.value, 0,
            0, None, None,
        )  # fmt: skip

    def _add(
        self,
        kind: int,
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
        outcome: int,
        reason: str | None,
        asks: int,
        in_flight: int,
        violated: str | None,
        tag: str | None,
    ) -> None:
        self.kind = append(self.kind, kind)
        self.sandbox_id = append(self.sandbox_id, sandbox_id)
        self.client = append(self.client, client)
        self.replica = append(self.replica, replica)
        self.issued_at = append(self.issued_at, issued_at)
        self.sent_at = append(self.sent_at, sent_at)
        self.done_at = append(self.done_at, done_at)
        self.latency_ms = append(self.latency_ms, (done_at - issued_at) * 1000.0)
        self.node_id = append(self.node_id, node)
        self.rpcs = append(self.rpcs, rpcs)
        self.skips = append(self.skips, skips)
        self.attempts = append(self.attempts, attempts)
        self.outcome = append(self.outcome, outcome)
        self.reason.append(reason)
        self.asks = append(self.asks, asks)
        self.in_flight = append(self.in_flight, in_flight)
        self.violated.append(violated)
        self.tag.append(tag)

    def __len__(self) -> int:
        return len(self.kind)

    def take(self) -> dict[str, Any]:
        """The rows recorded so far, column by column (a list, a vector of numbers with the
        buffer protocol, or `Coded` strings); the log starts empty again."""
        columns = {name: getattr(self, name) for name in REQUEST_COLUMNS}
        columns["kind"] = Coded(KINDS, self.kind)
        columns["outcome"] = Coded(OUTCOMES, self.outcome)
        self._clear()
        return columns


class TimelineLog:
    """Samples of every node as the truth and each replica's view see it at one instant, kept
    as columns: a sample extends each by the node-by-node lists it was given."""

    __slots__ = ("columns",)

    def __init__(self) -> None:
        self.columns: dict[str, list] = {name: [] for name in TIMELINE_COLUMNS}

    def sample(self, t: float, truth: Truth, views: Sequence[View]) -> None:
        """`cpu_error` = believed minus true allocated vCPU: the accounting error."""
        cpu, counts, used = truth
        n = len(cpu)
        c = self.columns
        for replica, (believed, in_progress, in_progress_cpu, killing) in enumerate(views):
            lengths = {
                len(counts),
                len(used),
                len(believed),
                len(in_progress),
                len(in_progress_cpu),
                len(killing),
            }
            if lengths != {n}:
                raise ValueError(f"a timeline sample of {n} nodes with lists of other lengths")
            c["t"].extend([t] * n)
            c["node_id"].extend(range(n))
            c["replica"].extend([replica] * n)
            c["cpu_allocated"].extend(cpu)
            c["sandboxes"].extend(counts)
            c["cpu_percent"].extend(used)
            c["view_cpu_allocated"].extend(believed)
            c["in_progress"].extend(in_progress)
            c["in_progress_cpu"].extend(in_progress_cpu)
            c["kill_in_progress_cpu"].extend(killing)
            c["cpu_error"].extend([v - true for v, true in zip(believed, cpu, strict=True)])

    def __len__(self) -> int:
        return len(self.columns["t"])

    def take(self) -> dict[str, list]:
        """The samples taken so far, column by column; the log starts empty again."""
        columns, self.columns = self.columns, {name: [] for name in TIMELINE_COLUMNS}
        return columns


def node_columns(nodes: list[Node], unknown_losses: bool = False) -> dict[str, list]:
    """The end state of nodes, one entry per node, as the `nodes` table has it;
    `unknown_losses` when the process holding them died (what it lost is not known). One pass
    over the nodes, which at a million nodes is a third of the time of one per column."""
    n = len(nodes)
    node_id, sandboxes, lost, cpu_count = [0] * n, [0] * n, [0] * n, [0] * n
    cpu, base, peak, capacity = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    used = [0.0] * n
    down = [False] * n
    for i in range(n):
        node = nodes[i]
        node_id[i] = node.node_id
        sandboxes[i] = len(node.sandboxes)
        cpu[i] = node.cpu_allocated
        cpu_count[i] = node.cpu_count
        used[i] = node.cpu_percent
        base[i] = node.base_cpu
        peak[i] = node.peak_cpu_allocated
        capacity[i] = node.capacity
        down[i] = node.down
        lost[i] = len(node.lost)
    return {
        "node_id": node_id,
        "sandboxes": sandboxes,
        "cpu_allocated": cpu,
        "cpu_count": cpu_count,
        "cpu_percent": used,
        "initial_cpu_allocated": base,
        "peak_cpu_allocated": peak,
        "capacity": capacity,
        "down": down,
        "lost": lost,
        "lost_unknown": [unknown_losses] * n,
    }
