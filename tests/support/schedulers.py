"""The example external schedulers (examples/)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys

from tests.support.configs import CONFIGS

EXAMPLES = CONFIGS.parent / "examples"
PYTHON_SCHEDULER = [sys.executable, str(EXAMPLES / "python-scheduler" / "scheduler.py")]
GO = EXAMPLES / "go-scheduler"
GO_MISSING = [
    tool
    for tool in ("go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc")
    if not shutil.which(tool)
]
"""The Go example's tools not on PATH: its tests are skipped, naming them."""


def go_scheduler() -> list[str]:
    """The Go example's command, built first (examples/go-scheduler/build.sh) under a lock:
    tests on two workers may build it at once, and both write the same files."""
    GO.joinpath(".cache").mkdir(exist_ok=True)
    with open(GO / ".cache" / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run([str(GO / "build.sh")], check=True, capture_output=True)
    return [str(GO / "bin" / "scheduler")]
