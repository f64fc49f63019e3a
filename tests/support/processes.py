"""Process trees: what a command started and what is left of it."""

from __future__ import annotations

import importlib
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


def _psutil() -> Any:
    """The psutil that ships with Ray (importing Ray puts it on the path), imported when a
    tree is first watched: the helpers do not import Ray for every test module."""
    import ray  # noqa: F401

    return importlib.import_module("psutil")


def paused(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Whether `proc` stops itself (SIGSTOP: `harness.testing_signals.SIGNAL_AT`) within
    `timeout_s`; False if it exits or the time passes first."""
    deadline = time.time() + timeout_s
    while proc.poll() is None and time.time() < deadline:
        try:
            state = Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return False
        if state in ("T", "t"):
            return True
        time.sleep(0.05)
    return False


class Tree:
    """The processes under `proc` (and their temp folders), listed every 50 ms while it runs:
    after it has exited, `left()` is those still running."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.psutil = _psutil()
        self.seen: dict[tuple[int, float], str] = {}
        self.folders: set[Path] = set()
        self._watch = threading.Thread(target=self._list, daemon=True)
        self._watch.start()

    def _list(self) -> None:
        while self.proc.poll() is None:
            try:
                children = self.psutil.Process(self.proc.pid).children(recursive=True)
            except self.psutil.Error:
                return
            for child in children:
                try:
                    self.seen[(child.pid, child.create_time())] = child.name()
                    for arg in child.cmdline():
                        if arg.startswith(("--temp-dir=", "--temp_dir=")):
                            self.folders.add(Path(arg.split("=", 1)[1]))
                except self.psutil.Error:
                    pass
            time.sleep(0.05)

    def running(self, name: str) -> list[int]:
        """The processes seen under it that run as `name` now: a process a raylet forks is
        named "raylet" until it runs its own program, and one that ends before is seen so."""
        found = []
        for (pid, created), seen in list(self.seen.items()):
            try:
                p = self.psutil.Process(pid)
                if seen == name and p.create_time() == created and p.name() == name:
                    found.append(pid)
            except self.psutil.Error:
                pass
        return found

    def left(self, wait_s: float = 10.0) -> list[str]:
        """Processes seen under it that still run (waiting up to `wait_s` for them to end),
        and Ray temp folders left behind; each is killed or reported."""
        self._watch.join(timeout=5)
        deadline = time.time() + wait_s
        while True:
            alive = []
            for (pid, created), name in self.seen.items():
                try:
                    p = self.psutil.Process(pid)
                    if p.create_time() == created and p.status() != self.psutil.STATUS_ZOMBIE:
                        alive.append((p, name))
                except self.psutil.Error:
                    pass
            if not alive or time.time() > deadline:
                break
            time.sleep(0.2)
        for p, _ in alive:  # do not leave them to the next test
            p.kill()
        private = [str(f) for f in self.folders if f.exists() and "harness-ray-" in str(f)]
        return [f"{p.pid} {name}" for p, name in alive] + private
