"""A scheduler process the harness starts (`external.command`), waits for and stops.

The command runs as given, never through a shell, in a session of its own (so stopping it
stops what it started). It prints the port it listens on, on loopback, as its first line; what
it writes afterwards on its standard output is read and dropped (its pipe never fills). Its
standard error goes to a log file when given one (bounded: `LOG_MAX_BYTES`, then the file is
moved to `<name>.1` and begun again), and its last lines are kept for an error message to quote
when it dies."""

from __future__ import annotations

import os
import selectors
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO

from harness.external import SchedulerError

STOP_WAIT_S = 5.0
"""How long a process may take to exit after SIGTERM before it is killed."""
DEATH_WAIT_S = 1.0
"""How long a failed call waits for the process to exit, to tell a death from a hang-up."""


LOG_MAX_BYTES = 1 << 20
"""A log file's size before it is moved aside (one older file kept): at most twice this."""
UNPRINTED_WAIT_S = 5.0
"""How long a process that listens may stay silent before the harness says its port line is
likely still in its output buffer, rather than waiting out `external.start_timeout_s`."""
LOOK_EVERY_S = 0.5
"""How often a silent process is looked at for a listening socket."""


def listening_ports(session: int) -> set[int]:
    """The TCP ports that the processes of `session` (a process group leader's pid, with
    `start_new_session`) listen on; empty where Linux's /proc cannot tell."""
    listening: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A":  # TCP_LISTEN
                listening[fields[9]] = int(fields[1].rsplit(":", 1)[1], 16)
    ports = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[3]) != session:
                continue
            for fd in (proc / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in listening:
                    ports.add(listening[link[8:-1]])
        except (OSError, IndexError, ValueError):  # gone meanwhile, or not ours to read
            continue
    return ports


def _drain(pipe: IO[bytes], keep: deque[str], log: Path | None = None) -> None:
    """Reads `pipe` to its end, keeping its last lines in `keep` and, with `log`, every line
    in that file (bounded as `LOG_MAX_BYTES` says)."""
    out = None if log is None else open(log, "ab")  # noqa: SIM115 - open as long as the pipe
    try:
        for line in pipe:
            if out is not None:
                if out.tell() + len(line) > LOG_MAX_BYTES:
                    out.close()
                    log.replace(log.with_name(log.name + ".1"))  # type: ignore[union-attr]
                    out = open(log, "ab")  # noqa: SIM115
                out.write(line)
                out.flush()
            text = line.decode(errors="replace").strip()
            if text:
                keep.append(text)
    finally:
        if out is not None:
            out.close()


class SchedulerProcess:
    """One running scheduler process and the port it said it listens on."""

    def __init__(self, command: list[str], start_timeout_s: float, log: Path | None = None) -> None:
        self.command = command
        self.name = " ".join(command)
        self.log = log
        """Where its standard error goes, if anywhere."""
        self.stderr: deque[str] = deque(maxlen=5)
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            log.unlink(missing_ok=True)
            log.with_name(log.name + ".1").unlink(missing_ok=True)
        self.drain = threading.Thread(
            target=_drain, args=(self.proc.stderr, self.stderr, log), daemon=True
        )
        self.drain.start()
        try:
            first = self._first_line(start_timeout_s)
            self.port = self._port(first)
        except BaseException:
            self.stop()
            raise
        threading.Thread(
            target=_drain, args=(self.proc.stdout, deque(maxlen=1)), daemon=True
        ).start()

    def _first_line(self, timeout_s: float) -> str:
        """The first line the process writes to its standard output, waited for at most
        `timeout_s`; a SchedulerError if it exits or stays silent."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        got = b""
        heard_at: float | None = None
        """When the process was first seen listening while it had printed nothing."""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in got:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SchedulerError(
                        f"{self.name}: printed no port within {timeout_s:g} s "
                        f"(external.start_timeout_s); a port printed but not flushed waits in "
                        f"the process's output buffer: flush it (Python: print(port, "
                        f"flush=True)){self.where()}"
                    )
                if not sel.select(min(left, LOOK_EVERY_S)):
                    if not got:
                        heard_at = self._unflushed(heard_at)
                    continue
                chunk = os.read(fd, 1)  # byte by byte: what follows the line is not ours
                if not chunk:
                    died = self.death("before printing its port")
                    raise SchedulerError(f"{self.name}: {died}{self.where()}")
                got += chunk
        return got.decode(errors="replace").strip()

    def _unflushed(self, heard_at: float | None) -> float | None:
        """When the silent process was first seen listening (None: not yet); a SchedulerError
        once it has listened for `UNPRINTED_WAIT_S` and still printed nothing: its port line
        is most likely in its output buffer, which a pipe fills before it is written."""
        ports = listening_ports(self.proc.pid)
        if not ports:
            return None
        now = time.monotonic()
        if heard_at is None:
            return now
        if now - heard_at < UNPRINTED_WAIT_S:
            return heard_at
        raise SchedulerError(
            f"{self.name}: listens on port {', '.join(map(str, sorted(ports)))} but has printed "
            f"nothing for {UNPRINTED_WAIT_S:g} s: its port line is likely still in its output "
            "buffer (stdout is a pipe, so block-buffered); flush it after printing (Python: "
            f"print(port, flush=True), or PYTHONUNBUFFERED=1){self.where()}"
        )

    def _port(self, line: str) -> int:
        if not line.isdigit() or not 0 < int(line) < 65536:
            raise SchedulerError(
                f"{self.name}: printed {line[:80]!r} where its port (1-65535) was expected"
                + self.where()
            )
        return int(line)

    def where(self) -> str:
        """Where an error line says the process's standard error is ("" if nowhere)."""
        return f"; its stderr: {self.log}" if self.log is not None else ""

    def exit_code(self, wait_s: float = 0.0) -> int | None:
        """The process's exit code, waiting up to `wait_s` for it; None while it runs."""
        try:
            return self.proc.wait(wait_s) if wait_s > 0 else self.proc.poll()
        except subprocess.TimeoutExpired:
            return None

    def death(self, when: str) -> str:
        """ "exited with code N `when`: <its last line on stderr>"."""
        code = self.exit_code(DEATH_WAIT_S)
        how = (
            f"was killed by signal {-code}"
            if code is not None and code < 0
            else f"exited with code {code}"
        )
        if code is not None:  # its last words: the drain ends at the pipe's end, soon after
            self.drain.join(DEATH_WAIT_S)
        said = f": {self.stderr[-1]}" if self.stderr else ""
        return f"{how} {when}{said}"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within `STOP_WAIT_S`."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.drain.join(STOP_WAIT_S)  # its last words in the log before anyone reads it
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
