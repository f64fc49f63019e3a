"""The `[external]` keys: where the scheduler process is, and how long the harness waits for it.

Declared apart from the client (`harness.external.client`) so the config layer reads them
without importing gRPC, which only a run with an external scheduler needs.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import shutil
from dataclasses import dataclass

from harness.model.tunables import key

ON_TIMEOUT = {
    "error": "the run stops with an error (finished seeds are kept)",
    "fail": "the create fails to place and the run goes on",
}
"""What a Place call that times out does, by `external.on_timeout`."""
ON_VIOLATION = {
    "error": "the run stops with an error naming the create, the node and the rule",
    "count": "the placement goes ahead and is counted (`violations_*` in the summary)",
}
"""What an answer that breaks an eligibility rule does, by `external.on_violation`."""


@dataclass(frozen=True)
class ExternalSpec:
    address: str = key(
        "",
        "host:port of a scheduler process already listening (gRPC; the protocol is "
        "scheduler.proto); loopback only unless allow_remote. Empty: in-process placement.",
    )
    command: list[str] = key(
        [],
        "Command (a list of arguments, run without a shell) that starts a scheduler and prints "
        "its port as its first line; one fresh process per seed and replica, stopped with it.",
    )
    log_dir: str = key(
        "",
        "Folder for the standard error of the processes external.command starts, a file per "
        "seed and replica (named by strategy, seed and replica; its last 1-2 MiB); empty: the "
        "run folder's scheduler/.",
    )
    transport: str = key(
        "grpc",
        "grpc, or framed: the same messages, length-prefixed on a plain TCP stream (faster; "
        "the scheduler must serve it, as examples/go-scheduler does with -framed).",
        choices=("grpc", "framed"),
    )
    allow_remote: bool = key(False, "Let external.address name a host other than this one.")
    timeout_s: float = key(10.0, "Seconds a call to the scheduler may take.", gt=0)
    start_timeout_s: float = key(30.0, "Seconds external.command may take to print its port.", gt=0)
    on_timeout: str = key(
        "error",
        "A call past timeout_s: error (stop the run) or fail (the create fails to place).",
        choices=ON_TIMEOUT,
    )

    on_violation: str = key(
        "error",
        "An answer that breaks the create's labels, CPU family, memory over-commit or excluded "
        "nodes: error (stop the run; the default, since such a run's numbers are not "
        "comparable with the in-process one's) or count (let it be placed, counted in "
        "violations_*).",
        choices=ON_VIOLATION,
    )

    @property
    def active(self) -> bool:
        """Whether placement is answered by an external scheduler."""
        return bool(self.address or self.command)


LOOPBACK_NAMES = ("localhost",)


def split_address(address: str) -> tuple[str, int]:
    """(host, port) of "host:port" or "[v6]:port"; ValueError with the reason otherwise."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"must be host:port with a port 1-65535, got {address!r}")
    return host.removeprefix("[").removesuffix("]"), int(port)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def problem(spec: ExternalSpec) -> tuple[str, str] | None:
    """(key, reason) of the first thing wrong with `spec`, or None."""
    if spec.active and importlib.util.find_spec("grpc") is None:
        return "external", "needs grpcio and protobuf: pip install 'herd-harness[external]'"
    if spec.address and spec.command:
        return "external.command", "cannot be used with external.address: one or the other"
    if spec.address:
        try:
            host, _ = split_address(spec.address)
        except ValueError as e:
            return "external.address", str(e)
        if not spec.allow_remote and not is_loopback(host):
            return (
                "external.address",
                f"{host!r} is not this machine (loopback); set external.allow_remote = true "
                "to place through a remote scheduler",
            )
    if spec.command:
        if any(not arg or "\0" in arg for arg in spec.command):
            return "external.command", "has an empty argument or one with a NUL"
        if shutil.which(spec.command[0]) is None:
            return "external.command[0]", f"{spec.command[0]!r}: no such program"
    return None
