"""A simulated node's true state and its admission control; the ground truth of every run."""

from __future__ import annotations

from enum import StrEnum
from typing import Final, NamedTuple

from harness.model.cluster.heartbeat import Report
from harness.model.workload.request import Shape

_new_tuple: Final = tuple.__new__
_REPORT: Final = Report
"""Both Final: compiled, a reference held in the module, not a lookup in its namespace for
every report."""


class Outcome(StrEnum):
    """What a node answers to a create or kill RPC."""

    OK = "ok"
    RESOURCE_EXHAUSTED = "resource_exhausted"
    FAILED = "failed"
    TIMEOUT = "timeout"
    """No answer in time: the scheduler gave up; the node may have acted all the same."""


class NodeInfo(NamedTuple):
    """A node's static facts. A scheduler replica learns them once, when the nodes register at
    start-up (as upstream's node manager reads a node's machine info from its first
    ServiceInfo), and they never change during a run."""

    cpu_count: int
    memory_mib: float
    labels: frozenset[str] = frozenset()
    """What a sandbox may require of the node (`Shape.labels`)."""
    cpu_family: str = ""
    """What a sandbox built on a given CPU family requires (`Shape.cpu_family`); empty: none."""


class Node:
    """True state of one node: the sandboxes it runs, by ID.

    `base_cpu` is load that was there before the run (the reference's 0-4 random vCPUs); it is
    allocated but belongs to no sandbox this harness created. `cache_size` bounds the templates
    the node keeps cached (`cache`)."""

    __slots__ = (
        "base_cpu",
        "cache_size",
        "cpu_allocated",
        "cpu_count",
        "cpu_percent",
        "double_count",
        "down",
        "lost",
        "memory_allocated_mib",
        "memory_mib",
        "memory_used_mib",
        "node_id",
        "overcommit",
        "peak_cpu_allocated",
        "phantom_cpu",
        "phantom_memory_mib",
        "sandboxes",
        "seq",
        "templates",
    )

    def __init__(
        self,
        node_id: int,
        cpu_count: int,
        memory_mib: float,
        overcommit: float,
        base_cpu: float = 0.0,
        cache_size: int = 0,
        double_count: bool = False,
    ) -> None:
        self.node_id = node_id
        self.cpu_count = cpu_count
        self.memory_mib = memory_mib
        self.overcommit = overcommit
        self.base_cpu = base_cpu
        self.sandboxes: dict[int, Shape] = {}
        self.cpu_allocated = base_cpu
        self.peak_cpu_allocated = base_cpu
        self.cpu_percent = 0.0
        self.memory_allocated_mib = 0.0
        self.memory_used_mib = 0.0
        self.seq = 0
        self.down = False
        self.lost: list[int] = []
        """IDs of the sandboxes that were on this node when it crashed."""
        self.cache_size = cache_size
        self.templates: dict[str, None] = {}
        """The templates cached, least recently used first."""
        self.double_count = double_count
        """`cluster.node_metrics = "bench_double_count"`: a model of the in-process node of
        upstream's BenchmarkPlacementComparison, not of production. There the node's metrics
        object is the scheduler's own: the placement flow's OptimisticAdd raises it once the
        (mocked) create RPC returns, then the node admits against the raised value and adds
        the sandbox again; a kill subtracts once, a refused create keeps the add."""
        self.phantom_cpu = 0.0
        """What that shared object holds beyond the node's sandboxes (double count only):
        reported and admitted against, never run."""
        self.phantom_memory_mib = 0.0

    @property
    def capacity(self) -> float:
        return self.overcommit * self.cpu_count

    def create(self, sandbox_id: int, shape: Shape) -> Outcome:
        """Admit on the true state: the node refuses when it would exceed R * cpu_count. Not on
        memory: upstream's nodes (and its benchmark's) never refuse for it, so only the
        scheduler's `memory_overcommit` filter, on reported memory, keeps it in bounds."""
        if self.down:
            return Outcome.FAILED
        if sandbox_id in self.sandboxes:
            raise ValueError(f"sandbox {sandbox_id} already on node {self.node_id}")
        vcpu, memory_mib, usage = shape.vcpu, shape.memory_mib, shape.usage
        if self.double_count:
            self.phantom_cpu += vcpu
            self.phantom_memory_mib += memory_mib
        if self.cpu_allocated + self.phantom_cpu + vcpu > self.overcommit * self.cpu_count:
            return Outcome.RESOURCE_EXHAUSTED
        self.sandboxes[sandbox_id] = shape
        self.cpu_allocated += vcpu
        if self.cpu_allocated > self.peak_cpu_allocated:
            self.peak_cpu_allocated = self.cpu_allocated
        self.cpu_percent += self._busy(vcpu, usage)
        self.memory_allocated_mib += memory_mib
        self.memory_used_mib += self._used_memory(memory_mib, usage)
        return Outcome.OK

    def kill(self, sandbox_id: int) -> Outcome:
        if self.down:
            return Outcome.FAILED
        # A lookup and a delete rather than `pop`: compiled, `pop` is a generic method call.
        shape = self.sandboxes.get(sandbox_id)
        if shape is None:
            return Outcome.FAILED
        del self.sandboxes[sandbox_id]
        vcpu, memory_mib, usage = shape.vcpu, shape.memory_mib, shape.usage
        self.cpu_allocated -= vcpu
        self.cpu_percent -= self._busy(vcpu, usage)
        self.memory_allocated_mib -= memory_mib
        self.memory_used_mib -= self._used_memory(memory_mib, usage)
        return Outcome.OK

    def _busy(self, vcpu: float, usage: float) -> float:
        """What a sandbox adds to `cpu_percent`: its vCPUs x usage, x 100, at most the node's
        own vCPUs (a trace's usage may exceed the request, as a sandbox may burst above it,
        but it runs on this node's vCPUs). The same value at the create and at the kill."""
        busy = 100.0 * vcpu * usage
        most = 100.0 * self.cpu_count
        return most if busy > most else busy

    def _used_memory(self, memory_mib: float, usage: float) -> float:
        """What a sandbox adds to `memory_used_mib`: its memory x usage, at most the node's."""
        used = memory_mib * usage
        return self.memory_mib if used > self.memory_mib else used

    def cache(self, template: str) -> bool:
        """Whether `template` is cached (a warm create). Either way it becomes the most
        recently used, and the least recently used template beyond `cache_size` is dropped."""
        templates = self.templates
        warm = template in templates
        if warm:
            del templates[template]
        if self.cache_size:
            templates[template] = None
            if len(templates) > self.cache_size:
                del templates[next(iter(templates))]
        return warm

    def crash(self) -> None:
        """The node dies: its sandboxes are gone (kept in `lost`) and so is its template
        cache, RPCs to it fail, and it sends no report until `restart`."""
        self.down = True
        self.lost.extend(self.sandboxes)
        self.sandboxes.clear()
        self.cpu_allocated = self.cpu_percent = self.phantom_cpu = 0.0
        self.memory_allocated_mib = self.memory_used_mib = self.phantom_memory_mib = 0.0
        self.templates.clear()

    def restart(self) -> None:
        """Back after a crash, empty: no sandbox, no template cached."""
        self.down = False

    def beat(self, now: float, with_ids: bool = False) -> Report | None:
        """The report the node sends on a heartbeat or with an answer; None when it is down,
        as a down node sends none."""
        return None if self.down else self.report(now, with_ids)

    def report(self, now: float, with_ids: bool = False) -> Report:
        self.seq += 1
        # Built as the tuple it is, in `Report`'s field order: the keyword constructor's own
        # frame costs three times the tuple, on the most frequent message of a large run.
        return _new_tuple(
            _REPORT,
            (
                self.node_id,
                self.seq,
                now,
                self.cpu_count,
                self.cpu_allocated + self.phantom_cpu,
                self.cpu_percent,
                self.memory_mib,
                self.memory_allocated_mib + self.phantom_memory_mib,
                self.memory_used_mib,
                len(self.sandboxes),
                frozenset(self.sandboxes) if with_ids else None,
            ),
        )


def nodes_alike(
    first: int,
    cpu_count: int,
    memory_mib: float,
    overcommit: float,
    loads: list[float],
    cache_size: int,
    double_count: bool = False,
) -> list[Node]:
    """Nodes `first`, `first + 1`, .. of one size, one per initial load: built here, in the
    node's own (compiled) module, as a million-node cluster is built at every seed's start."""
    return [
        Node(first + i, cpu_count, memory_mib, overcommit, load, cache_size, double_count)
        for i, load in enumerate(loads)
    ]
