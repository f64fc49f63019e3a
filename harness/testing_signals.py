"""Tests only: the named phases a command passes (`at`), where a test has the process signal
itself, with no timing involved. Nothing happens unless `SIGNAL_AT` is set. At the bottom of
the tree, beside the signal handling (`harness.interrupts`), so every layer marks its phases."""

from __future__ import annotations

import os
import signal
import weakref

SIGNAL_AT = "HARNESS_TEST_SIGNAL_AT"
"""Comma-separated `PHASE=SIG` (e.g. `seed#2=TERM`, `commit=INT,close=INT`): this process sends
itself SIG when it reaches PHASE (`at`), or its Nth time with `PHASE#N` (`rows=STOP` pauses it
there, for a test to act on a run known to have rows, then SIGCONT). `PHASE=SIG@weakref` sends
it from inside a weakref callback, which swallows any exception raised in it (as callbacks in
Ray's and Cython's modules did with the handler's own): the stop must not depend on one. The
phases, in the order a command meets them: start (a run or sweep, before anything is made),
ray-init (Ray just up, its handlers not yet put back), seed (each seed of a run begins), rows
(the Ray driver has spooled a seed's first request rows), commit (a seed's files written, not
yet renamed into place), cell (a sweep's cell about to be written), trial (a search's trial
about to be written), close (the run's tables about to be gathered), report (report.html about
to be written), shutdown (the command done, Ray about to be stopped), done (all over)."""

_seen: dict[str, int] = {}


class _Dropped:
    """An object whose only reference is dropped at once, to run a weakref callback."""


def _from_a_callback(signum: int) -> None:
    """Send `signum` to this process from a weakref callback: the handler runs inside it."""
    dropped = _Dropped()
    ref = weakref.ref(dropped, lambda _: os.kill(os.getpid(), signum))
    del dropped
    del ref


def at(phase: str) -> None:
    """Mark that the command has reached `phase`: a signal is sent here when SIGNAL_AT asks for
    this phase (this occurrence of it), so a test stops a command at a point of its choosing
    rather than after a delay. Nothing happens otherwise."""
    spec = os.environ.get(SIGNAL_AT)
    if not spec:
        return
    _seen[phase] = _seen.get(phase, 0) + 1
    for item in spec.split(","):
        where, _, how = item.partition("=")
        name, _, nth = where.partition("#")
        if name == phase and _seen[phase] == int(nth or 1):
            sig, _, inside = how.partition("@")
            signum = signal.Signals[f"SIG{sig}"]
            if inside == "weakref":
                _from_a_callback(signum)
            else:
                os.kill(os.getpid(), signum)
