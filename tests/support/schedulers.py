"""The example external schedulers (examples/)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.configs import CONFIGS

EXAMPLES = CONFIGS.parent / "examples"
PYTHON_SCHEDULER = [sys.executable, str(EXAMPLES / "python-scheduler" / "scheduler.py")]
SKELETON = EXAMPLES / "python-scheduler" / "skeleton.py"
"""The guide's skeleton scheduler (docs/guides/external-scheduler.md shows it whole)."""
GO = EXAMPLES / "go-scheduler"
GO_MISSING = [
    tool
    for tool in ("go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc")
    if not shutil.which(tool)
]
"""The Go example's tools not on PATH: its tests are skipped, naming them."""


GO_CACHE = Path(tempfile.gettempdir()) / "herd-go-build-cache"
"""Go's build cache for the tests' builds, kept from one session to the next (Go's cache is
safe to share): a build after the first only links."""


def go_scheduler() -> list[str]:
    """The Go example's command, built first (examples/go-scheduler/build.sh) outside the
    source tree, into the folder every worker of the session shares, under a lock: tests on
    two workers may build it at once, and both write the same files."""
    shared = Path(os.environ["HARNESS_TEST_LOCKS"])
    with open(shared / "go-scheduler.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {**os.environ, "GOCACHE": str(GO_CACHE)}
        done = subprocess.run(
            [str(GO / "build.sh"), str(shared / "go-scheduler")],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
    return [done.stdout.splitlines()[-1]]  # build.sh's last line: the binary's path
