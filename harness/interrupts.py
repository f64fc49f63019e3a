"""Signals (Ctrl-C, SIGTERM) as the harness takes them, for every layer: the handler, the points
where a stop is acted on, the sections a stop must not cut, exit codes and the word a stop is
said with. At the bottom of the tree (it imports nothing of the harness), so every layer that
polls imports it, and `python -m harness` takes the signals with it before anything heavy loads.

The handler only notes a signal. The command stops where it polls (`poll`): between the virtual
engine's events, between seeds, cells and trials, in the Ray wait loops, between the report's
pictures. An exception raised by the handler itself lands wherever the interpreter happens to
be, and some places swallow it (a weakref callback, a `__del__`, a library's own signal check):
the command then ran on as if never signalled. A second signal before the first was acted on
stops the command at once (a command blocked where nothing polls), unless a section that must
not be cut is running (`uncut`: a seed's files being committed, the run's files gathered, Ray
starting), or an import is (a module half imported breaks its own exit hooks): then at its end.
Signals after the stop is under way, or once the command is done (`shield`), are only counted:
writing what is kept, and stopping Ray, are never cut short. The exit code is 128 + the first
signal, whatever exception carried the stop (a library may turn it into a plain
KeyboardInterrupt)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

EXIT_BASE = 128
"""A command stopped by signal N exits 128 + N (130 for SIGINT, 143 for SIGTERM), as a shell
reports a process the signal ended."""
SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals a command takes: Ctrl-C, and a supervisor's (or `kill`'s) request to stop."""
WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
"""How the line said on a stop begins, and what run.json says stopped a run."""
_IMPORTING = "<frozen importlib._bootstrap>"


class Interrupted(KeyboardInterrupt):
    """The command was stopped by `signum`; a KeyboardInterrupt, so every `finally` and
    context manager runs as for Ctrl-C."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _Stop:
    """What the signals of the running command were: the first's number, how many came,
    whether a stop was raised for them, how deep in sections that must not be cut, and
    whether the command is done."""

    def __init__(self) -> None:
        self.first: int | None = None
        self.count = 0
        self.acted = False
        self.depth = 0
        self.shielded = False


_stop = _Stop()


def _importing(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename == _IMPORTING:
            return True
        frame = frame.f_back
    return False


def handler(signum: int, frame: FrameType | None) -> None:
    """The handler of SIGINT and SIGTERM: notes the signal; a second one before the first was
    acted on raises at once where that is safe (see the module)."""
    s = _stop
    s.count += 1
    if s.first is None:
        s.first = signum
    if s.count > 1 and not (s.acted or s.shielded or s.depth or _importing(frame)):
        raise Interrupted(s.first)


def install() -> None:
    """Take SIGINT and SIGTERM (in the main thread; elsewhere nothing can be taken)."""
    for signum in SIGNALS:
        signal.signal(signum, handler)


@contextmanager
def taken(restore: bool) -> Iterator[None]:
    """The signals taken for one command, from a fresh start unless they already are (taken at
    start-up by `harness.__main__`, whose signal must not be lost); with `restore` (a command
    run inside another program, a test), the handlers before it are put back at the end, and
    what it noted is forgotten: nothing after it stops for a signal it got."""
    global _stop
    before = {s: signal.getsignal(s) for s in SIGNALS}
    if before[signal.SIGINT] is not handler:
        _stop = _Stop()
        install()
    try:
        yield
    finally:
        if restore:
            for signum, previous in before.items():
                signal.signal(signum, previous)
            _stop = _Stop()


def poll() -> None:
    """Raise Interrupted (with the first signal) if a signal came and no stop was raised for it
    yet: where the command can stop, it does. Inside a section that must not be cut, and once
    the command is done, nothing."""
    s = _stop
    if s.first is not None and not (s.acted or s.depth or s.shielded):
        s.acted = True
        raise Interrupted(s.first)


@contextmanager
def uncut() -> Iterator[None]:
    """A section a stop does not cut: a signal inside it stops the command when it ends. A
    section that fails drops the stop (the failure is what the user is told; the signal
    still sets the exit code)."""
    s = _stop
    s.depth += 1
    try:
        yield
    except BaseException:
        if s.first is not None:
            s.acted = True
        raise
    finally:
        s.depth -= 1
    poll()


def shield() -> None:
    """The command is done: a signal from now on is only counted (and sets the exit code of a
    command that succeeded: `stopped_after`)."""
    _stop.shielded = True


def first() -> int | None:
    """The first signal the command got, if any."""
    return _stop.first


def signum_of(error: BaseException | None = None) -> int:
    """The signal that stopped the command: the first one noted, else the one `error` carries
    (a plain KeyboardInterrupt is SIGINT)."""
    return _stop.first or getattr(error, "signum", signal.SIGINT)


def exit_code(error: BaseException | None = None) -> int:
    """The exit code of a command stopped by a signal (see `signum_of`)."""
    return EXIT_BASE + signum_of(error)


def word(error: BaseException | None = None) -> str:
    """How a stop is said: "terminated" (SIGTERM) or "interrupted" (SIGINT, Ctrl-C)."""
    return WORDS.get(signal.Signals(signum_of(error)), "interrupted")


def said_at_start_up(error: BaseException) -> int:
    """A stop before the command line was read: one line, and the exit code; a later signal
    cuts nothing now."""
    shield()
    print(f"harness: {word(error)}; nothing was run", file=sys.stderr)
    return exit_code(error)
