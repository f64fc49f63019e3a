"""The reaper of a local Ray the harness started: a small process that outlives the harness by
a moment and leaves nothing of that Ray behind, however the harness ended.

Ray's GCS, raylet and workers die with the process that started them, but its dashboard and
runtime-env agents do not when that process is killed (they wait for the dead GCS for ever).
The harness starts this reaper with a pipe on its stdin, and starts Ray with
`HARNESS_RAY=<token>` in the environment its processes inherit. It writes Ray's session
folder down the pipe once Ray is up. When the pipe closes (the harness stopped Ray and closed
it, or died), the reaper kills every process but the harness that carries the token or holds a
file in Ray's folders (the agents rewrite their environment, not their log files), and removes
Ray's private temp folder. It reads /proc: it finds processes on Linux only.

    python ray_reaper.py TOKEN FOLDER HARNESS_PID      (FOLDER "": none to remove)
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

ENV = "HARNESS_RAY"
"""The environment variable that marks the processes of one local Ray."""


def _holds(pid: Path, folders: list[str]) -> bool:
    for fd in (pid / "fd").iterdir():
        try:
            if os.readlink(fd).startswith(tuple(folders)):
                return True
        except OSError:
            continue
    return False


def marked(token: str, folders: list[str], spare: set[int]) -> list[int]:
    """Processes, but those in `spare`, whose environment holds `ENV=token` or that hold a file
    under one of `folders` (each ending with a slash)."""
    mark = f"{ENV}={token}".encode()
    found = []
    for pid in Path("/proc").glob("[0-9]*"):
        try:
            if int(pid.name) in spare:
                continue
            if mark in (pid / "environ").read_bytes().split(b"\0") or _holds(pid, folders):
                found.append(int(pid.name))
        except OSError:  # gone meanwhile, or not ours
            continue
    return found


def reap(token: str, folders: list[str], remove: Path | None, harness: int) -> None:
    """Kill what is left of that Ray (SIGKILL: a graceful end had its chance) and remove its
    temp folder."""
    for pid in marked(token, folders, {harness, os.getpid()}):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
    if remove is not None:
        shutil.rmtree(remove, ignore_errors=True)


def main() -> None:
    token, folder, harness = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # only the end of the pipe ends the watch
    folders = [line.strip() for line in sys.stdin if line.strip()]  # until the pipe closes
    folders = [os.path.join(os.path.realpath(f), "") for f in (*folders, folder) if f]
    reap(token, folders, Path(folder) if folder else None, harness)


if __name__ == "__main__":
    main()
