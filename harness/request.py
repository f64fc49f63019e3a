"""One logical create as the client sees it, carried through every RPC it takes."""

from __future__ import annotations


class CreateRequest:
    """One logical create as the client sees it, across all its RPCs."""

    __slots__ = (
        "attempts",
        "client",
        "context",
        "deadline",
        "excluded",
        "failure",
        "issued_at",
        "memory_mib",
        "node",
        "rpcs",
        "sandbox_id",
        "skips",
        "usage",
        "vcpu",
    )

    def __init__(
        self,
        sandbox_id: int,
        vcpu: float,
        memory_mib: float,
        usage: float,
        issued_at: float,
        deadline: float,
        client: int,
    ) -> None:
        self.sandbox_id = sandbox_id
        self.vcpu = vcpu
        self.memory_mib = memory_mib
        self.usage = usage
        self.issued_at = issued_at
        self.deadline = deadline
        self.client = client
        self.context: object = None
        """What the client needs back with the answer (the scheduler only carries it)."""
        self.attempts = 0
        self.rpcs = 0
        self.skips = 0
        self.excluded: set[int] | None = None
        self.node = -1
        self.failure: str | None = None
        """Why the create failed (`harness.scheduler`); None while it has not."""
