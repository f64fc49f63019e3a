"""Starting or joining Ray, the same way for every command that uses it (runs and sweeps), and
stopping it so that nothing it started is left running."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
from harness import interrupts, testing_signals
from harness.config import Config, ConfigError
from harness.engines import EngineError
from harness.engines.ray_reaper import ENV
from harness.model.registry import Registry
from harness.model.scheduling.placement.registries import REGISTRIES, parse_weighted
from harness.model.scheduling.strategies import STRATEGIES

PROBE_S = 3.0
"""Seconds an address gets to answer as Ray before it is refused."""
HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
"""An HTTP/2 client's preface and an empty SETTINGS frame: Ray's GCS and its client server
speak gRPC, and an HTTP/2 server answers this with a SETTINGS frame (type 4) at once."""
AF_UNIX_PATH_MAX = 107
"""Longest path of a Unix socket (Linux; 103 on macOS, where temp folders are short anyway)."""
SOCKET_TAIL = len("/ray/session_2026-01-01_00-00-00_000000_4194304/sockets/plasma_store")
"""What Ray puts after its temp folder in the path of its longest socket."""
REAPER_WAIT_S = 10.0
"""How long stopping Ray waits for the reaper to end what is left and remove the folder."""


def check_reachable(address: str) -> None:
    """Fail in seconds, not minutes: ray.init retries an address for minutes when nothing
    answers there, or when a TCP port accepts and says nothing (not Ray)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if address == "auto":
        return
    if not sep or not port.isdigit():
        raise ConfigError("--address", f"must be host:port, got {address!r}")
    tls = os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")
    head = b""
    try:
        with socket.create_connection((host, int(port)), timeout=PROBE_S) as conn:
            if tls:  # the handshake would be TLS first: reachable is all this can tell
                return
            conn.sendall(HTTP2_HELLO)
            while len(head) < 4 and (chunk := conn.recv(9 - len(head))):
                head += chunk
    except TimeoutError:
        pass  # said nothing in time: refused below
    except OSError as e:
        raise ConfigError("--address", f"cannot reach a Ray cluster at {address}: {e}") from None
    if len(head) < 4 or head[3] != 4:
        raise ConfigError("--address", f"{address} does not answer as a Ray cluster (gRPC)")


@contextlib.contextmanager
def _keeping_signal_handlers() -> Iterator[None]:
    """ray.init, left to itself, installs a SIGTERM handler that exits at once, and a failure
    handler of its own in this process that prints `*** SIGTERM received ...` and aborts: a
    signal while Ray starts would kill the harness. Here neither is installed, a signal
    meanwhile waits until Ray is up (`harness.interrupts.uncut`: one cutting ray.init short
    leaves a half-made Ray), and the CLI's own handlers (SIGTERM and SIGINT stop the run, so
    what has arrived is written and run.json says incomplete) are put back if anything
    replaced them."""
    from ray._private import ray_constants, utils

    main = threading.current_thread() is threading.main_thread()
    kept = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)} if main else {}
    ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
    set_sigterm_handler = utils.set_sigterm_handler
    utils.set_sigterm_handler = lambda handler: None
    try:
        with interrupts.uncut():
            yield
            testing_signals.at("ray-init")
    finally:
        utils.set_sigterm_handler = set_sigterm_handler
        for signum, handler in kept.items():
            if handler is not None:
                signal.signal(signum, handler)


@dataclass
class _Ours:
    """The Ray this process started (or joined): what stopping it takes."""

    reaper: subprocess.Popen | None = None
    """Ends what is left of a local Ray once the pipe to it closes (`harness.engines.ray_reaper`):
    some of Ray's own processes outlive a harness that is killed."""


_ours: _Ours | None = None


def _private_folder() -> Path:
    """A new folder only this user can enter (mode 0700) for a local Ray's sockets and logs.
    Ray makes its own temp folder world-writable without the sticky bit, so that one goes
    inside. Under the system's temp folder, unless Ray's socket paths would then be longer
    than a Unix socket allows: then under /tmp."""
    base = tempfile.gettempdir()
    if len(base) + len("/harness-ray-12345678") + SOCKET_TAIL > AF_UNIX_PATH_MAX:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="harness-ray-", dir=base))


def _start_local(num_cpus: int | None, quiet: dict[str, Any]) -> None:
    """A new local Ray on loopback, in a private temp folder (unless RAY_TMPDIR names one),
    its processes marked for the reaper."""
    global _ours
    # Ray binds to the machine's network address unless it runs in single-host mode. The
    # flag is read from the environment when ray is first imported (here and in every
    # process Ray starts); if this process imported ray already, switch it on there too.
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False
    folder = None if "RAY_TMPDIR" in os.environ else _private_folder()
    token = secrets.token_hex(16)
    reaper = Path(__file__).with_name("ray_reaper.py")
    args = [token, str(folder or ""), str(os.getpid())]
    _ours = _Ours(
        subprocess.Popen(
            [sys.executable, "-I", str(reaper), *args],
            stdin=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C to the harness's process group leaves it be
        )
    )
    temp = {"_temp_dir": str(folder / "ray")} if folder else {}
    os.environ[ENV] = token  # inherited by every process Ray starts
    try:
        with _keeping_signal_handlers():
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **temp, **quiet)
    except Exception as e:  # GCS timed out, the raylet died while starting: said in one line
        stop_ray()  # what did start is shut down, the reaper ends the rest and the folder
        raise EngineError(f"Ray could not start on this machine: {_first_line(e)}") from None
    finally:
        del os.environ[ENV]
    # Where every process of this Ray keeps its logs: how the reaper finds them all.
    session = ray._private.worker._global_node.get_session_dir_path()
    _ours.reaper.stdin.write(f"{session}\n".encode())
    _ours.reaper.stdin.flush()


def _first_line(error: BaseException) -> str:
    """An exception as one line: its type, and the first line of its message (Ray's can run
    to a page of advice)."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _sources(module: str) -> list[str]:
    """Where top-level `module` lives, found without importing it: a package's folder (each
    part of a namespace package), or a module's file."""
    spec = importlib.util.find_spec(module)
    if spec is None:
        return []
    if spec.submodule_search_locations is not None:
        return list(spec.submodule_search_locations)
    return [spec.origin] if spec.origin and spec.origin.endswith(".py") else []


def plugin_sources(configs: Iterable[Config], strategies: Iterable[str] = ()) -> list[str]:
    """The folders (or files) of the top-level modules holding the import-path plugins
    ("module:Class") that `configs` and `strategies` (another run's --compare) name, for Ray to
    ship to a cluster's workers with the job. Built-in and installed (entry-point) names are
    not among them: an installed plugin must be installed on every node of the cluster."""
    refs: list[tuple[Registry, str]] = [(STRATEGIES, s) for s in strategies]
    for config in configs:
        p = config.placement
        refs.append((STRATEGIES, p.strategy))
        refs += [(REGISTRIES["samplers"], p.sampler), (REGISTRIES["selectors"], p.selector)]
        refs += [(REGISTRIES["filters"], f) for f in p.filters]
        refs += [(REGISTRIES["scorers"], parse_weighted(s)[0]) for s in p.scorers]
    tops = set()
    for registry, ref in refs:
        module, sep, _ = ref.partition(":")
        if sep and ref not in registry.builtins and ref not in registry.installed():
            tops.add(module.split(".")[0])
    return sorted({source for top in tops for source in _sources(top)})


def start_ray(
    address: str | None = None, num_cpus: int | None = None, modules: Iterable[str] = ()
) -> None:
    """Join the cluster at `address`, shipping this code (the harness and its actors, with its
    compiled modules if any; a process running pure Python has the workers run pure too) and
    the import-path plugins' `modules` (`plugin_sources`) with the job, so no shared
    filesystem is assumed; or start a new local Ray (never one another program started here)
    listening on loopback only, sized to this machine unless `num_cpus` says otherwise,
    without dashboard, and keeping workers' logs off the terminal. `stop_ray` (or the end of
    the process) stops it."""
    global _ours
    stop_ray()  # what is left of one this process started and shut down directly
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    atexit.unregister(stop_ray)
    atexit.register(stop_ray)  # at the end of the process, if nothing stopped it before
    if address is None:
        _start_local(num_cpus, quiet)
        return
    check_reachable(address)
    import ray

    # The packages' folders, found without importing them (actors imports Ray and the engine).
    packages = [source for name in ("harness", "actors") for source in _sources(name)]
    packages += [source for source in modules if source not in packages]
    runtime_env: dict[str, Any] = {"py_modules": packages}
    if not harness.COMPILED:  # the workers run the path this process runs
        runtime_env["env_vars"] = {harness.PURE_ENV: "1"}
    _ours = _Ours()
    try:
        with _keeping_signal_handlers():
            ray.init(address=address, runtime_env=runtime_env, **quiet)
    except ConnectionError as e:
        raise ConfigError("--address", f"cannot join the Ray cluster: {e}") from None


def stop_ray() -> None:
    """Stop the Ray this process started, or leave the one it joined; then the reaper ends
    whatever of a local one is left and removes its folder (waited for, briefly)."""
    global _ours
    ours, _ours = _ours, None
    if ours is None:
        return
    import ray

    ray.shutdown()
    if ours.reaper is not None:
        ours.reaper.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            ours.reaper.wait(timeout=REAPER_WAIT_S)


@contextlib.contextmanager
def ray_scope() -> Iterator[None]:
    """Ray started or joined inside the block is stopped when it ends; one that was up before
    (a test's, a sweep worker's) is left alone."""
    before = _ours
    try:
        yield
    finally:
        if _ours is not None and _ours is not before:
            stop_ray()


def joined_address(address: str | None) -> str | None:
    """The address of the Ray cluster a run joins: the one given, else RAY_ADDRESS; None: it
    starts Ray here."""
    return address or os.environ.get("RAY_ADDRESS") or None


def check_address(address: str | None) -> None:
    """Refuse, in one line (ConfigError), the Ray cluster a run would join (`joined_address`)
    when it is not host:port or nothing answers there; nothing to check where Ray starts
    here."""
    joined = joined_address(address)
    if joined is not None:
        check_reachable(joined)


def connect(address: str | None = None, modules: Iterable[str] = ()) -> bool:
    """Join the Ray cluster at `address` (or RAY_ADDRESS), shipping `modules` too (see
    `start_ray`), else start an embedded local one. When Ray is already up in this process
    (tests share one; a sweep task runs inside one) only the address is checked. True when
    this call started Ray, so the caller stops it (`stop_ray`)."""
    import ray

    address = joined_address(address)
    if ray.is_initialized():
        check_address(address)
        return False
    start_ray(address, modules=modules)
    return True
