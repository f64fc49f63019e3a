"""The filters upstream applies while sampling: a node the request already failed on, a node
with too many creates starting, a node too small for the sandbox."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.placement.plugin import Filter

if TYPE_CHECKING:
    from harness.request import CreateRequest
    from harness.scheduler import Scheduler


class Excluded(Filter):
    """Not a node this request's create already failed on (other than ResourceExhausted)."""

    name = "excluded"

    def applies(self, scheduler: Scheduler, req: CreateRequest) -> bool:
        return req.excluded is not None

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        excluded = req.excluded
        return excluded is None or node not in excluded


class TooManyStarting(Filter):
    """Not a node with more than `placement.max_starting` creates in progress (only with
    `placement.too_many_starting`, upstream's older flag)."""

    name = "too_many_starting"

    def needed(self) -> bool:
        return self.rules.too_many_starting

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        return len(scheduler.in_progress[node]) <= self.rules.max_starting


class CpuFits(Filter):
    """A node with at least the sandbox's vCPUs (by its last report)."""

    name = "cpu_fits"

    def applies(self, scheduler: Scheduler, req: CreateRequest) -> bool:
        return req.vcpu > scheduler.min_cpu_count

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        return scheduler.ledger.views[node].cpu_count >= req.vcpu
