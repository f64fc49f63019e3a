"""Signals (Ctrl-C, SIGTERM) as the harness takes them: the first stops the command where it
is, unless it lands inside a section that must not be cut (`harness.results.phase_hooks.uncut`:
a seed's files being committed, the run's files being gathered), which then finishes first;
later ones are only counted (the CLI's handler)."""

from __future__ import annotations

import signal

from harness.results import phase_hooks

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


def stop(signum: int) -> None:
    """Stop the command with Interrupted(signum) here, or at the end of the section that must
    not be cut, if one is running."""
    error = Interrupted(signum)
    if not phase_hooks.hold(error):
        raise error
