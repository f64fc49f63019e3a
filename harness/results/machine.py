"""The one probe of this machine: what a run ran on (run.json `machine`: the CPU, the memory, and
the versions and path of what computed it), and what a run may still use of it (`this_machine`:
the memory left under every limit, and the cores), which the cost check holds an estimate
against. Two runs' time-based figures (wall time, and on Ray every latency and rate) are only
comparable on the same machine; `harness compare` warns when these differ."""

from __future__ import annotations

import os
import platform
import resource
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import harness

MATCHED = ("cpu_model", "cpu_count", "memory_bytes")
"""The fields that make two machines the same one for time-based figures."""


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what the platform says."""
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def memory_bytes() -> int | None:
    """The machine's physical memory; None where the system does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def cpu_count() -> int:
    """The machine's cores (1 where the system does not say)."""
    return os.cpu_count() or 1


@dataclass(frozen=True)
class Machine:
    """What a run may still use of this machine: memory available now, and cores; `bound` says
    what sets the memory (free memory, a cgroup's limit, the address-space limit)."""

    memory_bytes: float
    cpus: int
    bound: str = "free memory"


CGROUP = Path("/sys/fs/cgroup")
CGROUP_LIMITS = (
    ("memory.max", "memory.current"),
    ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"),
)
"""A cgroup's memory limit and use: v2, then v1 (a v1 limit of no limit is a huge number)."""


def this_machine(cgroup: Path = CGROUP, status: Path = Path("/proc/self/status")) -> Machine:
    """Memory this process can still have: the least of what is available now (MemAvailable),
    what its cgroup's limit leaves (v2 or v1) and what its address-space limit (RLIMIT_AS,
    `ulimit -v`) leaves beyond the address space it maps already; and the cores."""
    available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except OSError:
        pass
    bounds = {"free memory": float(available)}
    for limit_file, used_file in CGROUP_LIMITS:
        try:
            limit = (cgroup / limit_file).read_text().strip()
            used = int((cgroup / used_file).read_text())
        except (OSError, ValueError):
            continue
        if limit.isdigit():
            bounds["the cgroup's memory limit"] = float(int(limit) - used)
            break
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        bounds["the address-space limit, ulimit -v"] = float(soft - mapped_bytes(status))
    bound = min(bounds, key=bounds.__getitem__)
    return Machine(max(0.0, bounds[bound]), cpu_count(), bound)


def mapped_bytes(status: Path = Path("/proc/self/status")) -> int:
    """Bytes of address space this process maps now (VmSize), which RLIMIT_AS counts."""
    try:
        for line in status.read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _version(distribution: str) -> str | None:
    """An installed distribution's version, read without importing it (Ray takes seconds)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


GIT_TIMEOUT_S = 5.0
"""How long a git command may take before the commit is given up as unknown."""


def code_commit(package: Path | None = None) -> tuple[str | None, bool | None]:
    """The git commit of the harness's code and whether the checkout had uncommitted changes
    to tracked files, when the package is a tracked folder of a git checkout (an editable
    install); (None, None) otherwise, or when git is missing or fails. A comparison names
    each run's commit, so two runs of the same version but other code are told apart."""
    folder = package or Path(harness.__file__).parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(folder), *args],
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    if git("ls-files", "--error-unmatch", "__init__.py") is None:  # not this checkout's code
        return None, None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    if commit is None or status is None:
        return None, None
    return commit, bool(status)


def fingerprint() -> dict[str, Any]:
    """This machine and software, as recorded in run.json and sweep.json."""
    return {
        "cpu_model": cpu_model(),
        "cpu_count": cpu_count(),
        "memory_bytes": memory_bytes(),
        "system": platform.system(),
        "python": platform.python_version(),
        "ray": _version("ray"),
        "numpy": _version("numpy"),
        "pyarrow": _version("pyarrow"),
        "harness": harness.__version__,
        "harness_path": harness.PATH,
        "harness_location": str(Path(harness.__file__).parent),
        **dict(zip(("git_commit", "git_dirty"), code_commit(), strict=True)),
    }


def differences(one: Any, other: Any) -> str | None:
    """What differs between two recorded machines, or None when they are the same one; a
    machine not recorded (a run from before fingerprints) is not known to be the same."""
    if not isinstance(one, dict) or not isinstance(other, dict):
        return "the machine of a run is not recorded"
    keys = [k for k in MATCHED if one.get(k) != other.get(k)]
    if not keys:
        return None
    return "; ".join(f"{k} {one.get(k)} vs {other.get(k)}" for k in keys)
