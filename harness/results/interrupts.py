"""Signals (Ctrl-C, SIGTERM) as the harness takes them: the first stops the command where it
is, unless it lands inside a section that must not be cut (a seed's files being committed,
the run's files being gathered), which then finishes first; later ones are only counted.
Also the hook by which tests deliver a signal at a named phase, with no timing involved."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_BASE = 128
"""A command stopped by signal N exits 128 + N (130 for SIGINT, 143 for SIGTERM), as a shell
reports a process the signal ended."""


class Interrupted(KeyboardInterrupt):
    """The command was stopped by `signum`; a KeyboardInterrupt, so every `finally` and
    context manager runs as for Ctrl-C."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(error: BaseException) -> int:
    """The exit code of a command stopped by `error` (a plain KeyboardInterrupt is SIGINT)."""
    return EXIT_BASE + getattr(error, "signum", signal.SIGINT)


_depth = 0
_held: int | None = None


def stop(signum: int) -> None:
    """Stop the command with Interrupted(signum) here, or at the end of the section that must
    not be cut, if one is running."""
    global _held
    if _depth:
        _held = _held or signum
        return
    raise Interrupted(signum)


@contextmanager
def uncut() -> Iterator[None]:
    """A section a signal does not cut: one arriving inside stops the command when the section
    ends. A section that fails drops it (the failure is what the user is told; the signal is
    still counted by the CLI's handler and sets the exit code)."""
    global _depth, _held
    _depth += 1
    try:
        yield
    except BaseException:
        if _depth == 1:
            _held = None
        raise
    finally:
        _depth -= 1
    if not _depth and _held is not None:
        signum, _held = _held, None
        raise Interrupted(signum)


SIGNAL_AT = "HARNESS_TEST_SIGNAL_AT"
"""Tests only: comma-separated `PHASE=SIG` (e.g. `seed#2=TERM`, `commit=INT,close=INT`): this
process sends itself SIG when it reaches PHASE (`at`), or its Nth time with `PHASE#N`. The
phases, in the order a command meets them: start (a run or sweep, before anything is made),
ray-init (Ray just up, its handlers not yet put back), seed (each seed of a run begins),
commit (a seed's files written, not yet renamed into place), cell (a sweep's cell about to be
written), close (the run's tables about to be gathered), report (report.html about to be
written), shutdown (the command done, Ray about to be stopped), done (all over)."""

_seen: dict[str, int] = {}


def at(phase: str) -> None:
    """Mark that the command has reached `phase`: a signal is sent here when SIGNAL_AT asks for
    this phase (this occurrence of it), so a test stops a command at a point of its choosing
    rather than after a delay. Nothing happens otherwise."""
    spec = os.environ.get(SIGNAL_AT)
    if not spec:
        return
    _seen[phase] = _seen.get(phase, 0) + 1
    for item in spec.split(","):
        where, _, sig = item.partition("=")
        name, _, nth = where.partition("#")
        if name == phase and _seen[phase] == int(nth or 1):
            os.kill(os.getpid(), signal.Signals[f"SIG{sig}"])
