"""The marks a command leaves as it goes, for whoever stops it: the sections that must finish
whole once begun (`uncut`: a seed's files being committed, the run's files being gathered,
Ray starting), and the named phases it passes (`at`), where a test has the process signal
itself, with no timing involved. Here, below everything that writes results or starts Ray;
the handling of the signals themselves lives with the runner (`harness.running.interrupts`)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

_depth = 0
_held: BaseException | None = None


def hold(error: BaseException) -> bool:
    """Keep `error` to be raised when the running uncut section ends, if one is running (the
    first kept wins). False when none runs: the caller raises it at once."""
    global _held
    if not _depth:
        return False
    _held = _held or error
    return True


@contextmanager
def uncut() -> Iterator[None]:
    """A section a stop does not cut: one asked for inside (`hold`) is raised when the section
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
        error, _held = _held, None
        raise error


SIGNAL_AT = "HARNESS_TEST_SIGNAL_AT"
"""Tests only: comma-separated `PHASE=SIG` (e.g. `seed#2=TERM`, `commit=INT,close=INT`): this
process sends itself SIG when it reaches PHASE (`at`), or its Nth time with `PHASE#N`
(`rows=STOP` pauses it there, for a test to act on a run known to have rows, then SIGCONT). The
phases, in the order a command meets them: start (a run or sweep, before anything is made),
ray-init (Ray just up, its handlers not yet put back), seed (each seed of a run begins), rows
(the Ray driver has spooled a seed's first request rows), commit (a seed's files written, not
yet renamed into place), cell (a sweep's cell about to be written), trial (a search's trial
about to be written), close (the run's tables about to be gathered), report (report.html about
to be written), shutdown (the command done, Ray about to be stopped), done (all over)."""

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
