"""Starting or joining Ray, the same way for every command that uses it (runs and sweeps)."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.config import ConfigError


def check_reachable(address: str) -> None:
    """Fail in seconds, not minutes: ray.init retries an unreachable address for a long time."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if address == "auto":
        return
    if not sep or not port.isdigit():
        raise ConfigError("--address", f"must be host:port, got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=3.0).close()
    except OSError as e:
        raise ConfigError("--address", f"cannot reach a Ray cluster at {address}: {e}") from None


@contextlib.contextmanager
def _keeping_sigterm() -> Iterator[None]:
    """ray.init installs a SIGTERM handler that exits at once; the CLI's own (SIGTERM stops the
    run like Ctrl-C, so what has arrived is written and run.json says incomplete) is put
    back."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and previous is not None:
            signal.signal(signal.SIGTERM, previous)


def start_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Join the cluster at `address`, shipping this code (the harness and its actors) with the
    job, so no shared filesystem is assumed; or start a new local Ray (never one another program
    started here) listening on loopback only, sized to this machine unless `num_cpus` says
    otherwise, without dashboard, and keeping workers' logs off the terminal."""
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    if address is None:
        # Ray binds to the machine's network address unless it runs in single-host mode. The
        # flag is read from the environment when ray is first imported (here and in every
        # process Ray starts); if this process imported ray already, switch it on there too.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
        with _keeping_sigterm():
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **quiet)
        return
    check_reachable(address)
    import ray

    # The packages' folders, found without importing them (actors imports Ray and the engine).
    packages = [
        str(Path(importlib.util.find_spec(name).origin).parent) for name in ("harness", "actors")
    ]
    try:
        with _keeping_sigterm():
            ray.init(address=address, runtime_env={"py_modules": packages}, **quiet)
    except ConnectionError as e:
        raise ConfigError("--address", f"cannot join the Ray cluster: {e}") from None


def connect(address: str | None = None) -> bool:
    """Join the Ray cluster at `address` (or RAY_ADDRESS), else start an embedded local one.
    When Ray is already up in this process (tests share one; a sweep task runs inside one) only
    the address is checked. True when this call started Ray, so the caller shuts it down."""
    import ray

    address = address or os.environ.get("RAY_ADDRESS") or None
    if ray.is_initialized():
        if address:
            check_reachable(address)
        return False
    start_ray(address)
    return True
