"""What a create asks for (`Shape`) and one logical create as the client sees it, carried
through every RPC it takes (`CreateRequest`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Shape:
    """What a sandbox asks of a node: the part of its template that the scheduler and the node
    see. One object per template, shared by every create of it (messages carry a reference)."""

    vcpu: float
    memory_mib: float
    usage: float
    """The fraction of its vCPUs the sandbox keeps busy (1.0 = 100%)."""
    template: str = ""
    """The template's ID, for caches and affinity; empty when the workload names none."""
    labels: frozenset[str] = frozenset()
    """Labels a node must carry to take the sandbox."""
    cpu_family: str = ""
    """The CPU family a node must have; empty: any."""

    def __reduce__(self) -> tuple[type[Shape], tuple[object, ...]]:
        # Pickled as a call with its fields (the Ray engine sends shapes between actors):
        # compiled, a frozen dataclass cannot have its state set back field by field.
        fields = (self.vcpu, self.memory_mib, self.usage, self.template, self.labels)
        return Shape, (*fields, self.cpu_family)


class CreateRequest:
    """One logical create as the client sees it, across all its RPCs."""

    __slots__ = (
        "asks",
        "attempts",
        "client",
        "context",
        "deadline",
        "excluded",
        "failure",
        "in_flight",
        "issued_at",
        "memory_mib",
        "node",
        "rpcs",
        "sandbox_id",
        "shape",
        "skips",
        "vcpu",
        "violated",
    )

    def __init__(
        self, sandbox_id: int, shape: Shape, issued_at: float, deadline: float, client: int
    ) -> None:
        self.sandbox_id = sandbox_id
        self.shape = shape
        self.vcpu = shape.vcpu
        """`shape.vcpu`, read by every filter and scorer (one attribute lookup less)."""
        self.memory_mib = shape.memory_mib
        self.issued_at = issued_at
        self.deadline = deadline
        self.client = client
        self.context: object = None
        """What the client needs back with the answer (the scheduler only carries it)."""
        self.attempts = 0
        self.asks = 0
        """Times a scheduler was asked to choose a node for it (one more than its RPCs when
        the last ask found none)."""
        self.rpcs = 0
        self.skips = 0
        self.excluded: set[int] | None = None
        self.node = -1
        self.violated = ""
        """The eligibility rules its placements broke, joined by "+"
        (`harness.model.scheduling.placement.eligibility`); "" while none has."""
        self.failure: str | None = None
        """Why the create failed (`harness.model.scheduling.scheduler`); None while it has not."""
        self.in_flight = 0
        """The most other creates of its replica in flight (sent to a node, not yet answered)
        when it was placed: what a strategy counting creates in progress adds to its score."""
