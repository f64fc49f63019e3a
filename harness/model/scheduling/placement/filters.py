"""The filters upstream applies while sampling: a node the request already failed on, a node
with too many creates starting, a node too small for the sandbox, a node whose memory the
sandbox would over-commit, a node without the labels or the CPU family the sandbox needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Filter

if TYPE_CHECKING:
    from harness.model.scheduling.scheduler import Scheduler
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class Excluded(Filter):
    """Not a node this request's create already failed on (other than ResourceExhausted)."""

    name = "excluded"

    def applies(self, scheduler: Scheduler, req: CreateRequest) -> bool:
        return req.excluded is not None

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        excluded = req.excluded
        return excluded is None or node not in excluded


@mypyc_attr(allow_interpreted_subclasses=True)
class TooManyStarting(Filter):
    """Not a node with more than `placement.max_starting` creates in progress (only with
    `placement.too_many_starting`, upstream's older flag)."""

    name = "too_many_starting"

    def needed(self) -> bool:
        return self.rules.too_many_starting

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        return scheduler.starting[node] <= self.rules.max_starting


@mypyc_attr(allow_interpreted_subclasses=True)
class CpuFits(Filter):
    """A node with at least the sandbox's vCPUs (by its last report)."""

    name = "cpu_fits"

    def applies(self, scheduler: Scheduler, req: CreateRequest) -> bool:
        return req.vcpu > scheduler.min_cpu_count

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        return scheduler.ledger.views[node].cpu_count >= req.vcpu


@mypyc_attr(allow_interpreted_subclasses=True)
class MemoryOvercommit(Filter):
    """Upstream's proposed memory hard filter: not a node whose reported allocated memory plus
    the sandbox's exceeds M x its reported total (`placement.memory_overcommit`). Off when M is
    0, and for a node that has reported no total. The allocated memory is the ledger's view:
    the last report, plus the strategy's own adds and removes (the `optimistic` family's)."""

    name = "memory_overcommit"

    def needed(self) -> bool:
        return self.rules.memory_overcommit > 0

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        view = scheduler.ledger.views[node]
        total = view.memory_total_mib
        limit = self.rules.memory_overcommit * total
        return not total or view.memory_allocated_mib + req.memory_mib <= limit


@mypyc_attr(allow_interpreted_subclasses=True)
class RequiredLabels(Filter):
    """A node carrying every label the sandbox requires (`Shape.labels`), as upstream's label
    compatibility check; a sandbox that requires none goes anywhere."""

    name = "labels"
    per_shape = True

    def applies(self, scheduler: Scheduler, req: CreateRequest) -> bool:
        return bool(req.shape.labels)

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        return req.shape.labels <= scheduler.nodes[node].labels


@mypyc_attr(allow_interpreted_subclasses=True)
class CpuFamily(Filter):
    """A node of the CPU family the sandbox's template was built on (`Shape.cpu_family`), as
    upstream's CPU compatibility check; a sandbox that names none goes anywhere."""

    name = "cpu_family"
    per_shape = True

    def applies(self, scheduler: Scheduler, req: CreateRequest) -> bool:
        return bool(req.shape.cpu_family)

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        return scheduler.nodes[node].cpu_family == req.shape.cpu_family
