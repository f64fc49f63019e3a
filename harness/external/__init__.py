"""Placement by a scheduler the harness does not host: a process spoken to over gRPC
(`scheduler.proto`), started by the harness (`external.command`) or already listening
(`external.address`).

The I/O lives here, outside the pure model: `client` speaks the protocol, `process` starts and
stops the command, `replica` hands the model's replica the process's choices and tells the
process what the replica hears. Only `client` and `process` import gRPC or start processes,
and only a run with an `[external]` scheduler imports them."""

from __future__ import annotations

from harness.model.catalogue import Declared

SCHEDULER = Declared("scheduler", "external", __name__)
"""How `harness plugins` lists the scheduler outside the process: chosen by the `[external]`
section (`external.address` or `external.command`), not by a registry's name."""
EXIT_CODE = 3
"""What `harness run` exits with when the external scheduler misbehaves."""


class SchedulerError(Exception):
    """The external scheduler did something the protocol does not allow (died, hung, answered
    nonsense): one line naming it and what it did. `replica`: the scheduler replica whose
    session it was, when known (an engine that runs replicas apart names it)."""

    replica: int | None = None
