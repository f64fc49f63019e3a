"""Progress of a long command, on stderr: runs, sweeps, searches and the report they draw.

In a terminal, a bar redrawn in place. Where stderr is not a terminal (a CI log, a pipe, a
file), a redrawn bar shows nothing until it ends, so a long command looked hung: there a plain
line comes every `PROGRESS_ENV` seconds instead (`EVERY_S` by default), as pip, cargo and k6
write theirs in CI logs, from a thread of its own, so it keeps coming while the command waits
on anything (a slow seed, Ray, a picture). Each says what is done of what, the time elapsed and
the time left; a phase with nothing to count (the run's tables written, the best trial shrunk,
the report drawn) says what it does and for how long.

The time left is honest for a slow seed: it counts the model time the running seeds have
reached, not only seeds done, over the pace of the last `WINDOW_S` seconds (`Pace`), so a seed
that a storm of refusals slows down slows it at once. With no progress in that window it is not
known, and the line says for how long nothing moved. A storm of refusals is named once, on its
own line, with the key that caps it."""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn
from rich.text import Text

from harness.config import ConfigError
from harness.engines import Snapshot
from harness.model.protocol.replica_party import REFUSED_AGAIN
from harness.presentation.terminal import live_detail
from harness.running.seed_tasks import STORM

PROGRESS_ENV = "HARNESS_PROGRESS_S"
"""Seconds between two progress lines where stderr is not a terminal."""
EVERY_S = 15.0
"""Seconds between two progress lines unless `PROGRESS_ENV` says otherwise."""
WINDOW_S = 60.0
"""Seconds of progress the time left is estimated from, at most."""
SAMPLE_S = 0.5
"""Seconds between two samples of progress kept for the estimate."""
BAR_WIDTH = 16
"""Characters of progress bar: with the counts and the clock, a line fits in 80 columns."""


def every_s() -> float:
    """Seconds between two plain progress lines (`PROGRESS_ENV`, else `EVERY_S`)."""
    text = os.environ.get(PROGRESS_ENV, "").strip()
    if not text:
        return EVERY_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        raise ConfigError(PROGRESS_ENV, f"must be a number of seconds above 0, got {text!r}")
    return seconds


def clock(seconds: float | None) -> str:
    """0:08, 12:30, 1:02:03; -:-- when not known yet."""
    if seconds is None:
        return "-:--"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def storm_line(refused: int) -> str:
    """What a storm of refusals is, and the key that caps it."""
    return (
        f"a storm of refusals: {refused} creates in flight were refused by full nodes "
        f"{REFUSED_AGAIN} times or more each, and are placed again until placement.deadline_s "
        "passes; placement.max_asks caps how often a create is placed (0: no cap, as upstream)"
    )


class Pace:
    """How fast a count moves: the time left from the pace over the last `window_s` seconds up
    to now, or the last half of the time so far when that is shorter (a run's quick start, the
    cluster still empty, is not the pace of the storm that follows), a stall since the last
    move included; and how long nothing has moved."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self.samples: deque[tuple[float, float]] = deque()
        self.began: float | None = None
        self.moved_at: float | None = None

    def add(self, at: float, done: float) -> None:
        """The count is `done` at `at` (monotonic seconds)."""
        if self.began is None:
            self.began = at
        if not self.samples or done > self.samples[-1][1]:
            self.moved_at = at
        s = self.samples
        if len(s) >= 2 and s[-1][0] - s[-2][0] < SAMPLE_S:
            s[-1] = (at, done)  # samples kept SAMPLE_S apart, the last one the latest
        else:
            s.append((at, done))
        while len(s) > 2 and s[1][0] <= at - self.window_s:
            s.popleft()

    def left(self, total: float, now: float) -> float | None:
        """Seconds left to reach `total` at the recent pace; None when nothing moved in that
        time (or nothing is known yet)."""
        if self.began is None or len(self.samples) < 2:
            return None
        start = now - min(self.window_s, (now - self.began) / 2)
        since, before = self.samples[0]
        for at, done in self.samples:
            if at > start:
                break
            since, before = at, done
        done = self.samples[-1][1]
        if now <= since or done <= before:
            return None
        return max(0.0, total - done) / ((done - before) / (now - since))

    def still_s(self, now: float) -> float:
        """Seconds since the count last moved (0 before it first did)."""
        return 0.0 if self.moved_at is None else now - self.moved_at


def timing(pace: Pace, began: float, total: float | None, now: float) -> str:
    """`elapsed 1:23, ETA 4:56`; `ETA -:--, nothing moved for 1:05` once still a whole window."""
    text = f"elapsed {clock(now - began)}"
    if total is None:
        return text
    text += f", ETA {clock(pace.left(total, now))}"
    still = pace.still_s(now)
    return text + (f", nothing moved for {clock(still)}" if still >= pace.window_s else "")


class Ticker:
    """`line()` on stderr every `every` seconds, from a thread of its own, once started."""

    def __init__(self, line: Callable[[], str], every: float) -> None:
        self.line = line
        self.every = every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            say(self.line())

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.every + 1.0)


def say(line: str) -> None:
    """One line on stderr (above a live bar, which redirects it)."""
    print(f"harness: {line}", file=sys.stderr, flush=True)


def plain() -> bool:
    """Whether stderr is not a terminal: progress then comes as lines (`Ticker`)."""
    return not Console(file=sys.stderr).is_terminal


@contextmanager
def ticking(what: str) -> Iterator[None]:
    """A phase with nothing to count (`what`: the report being drawn) says it goes on, every
    `every_s()` seconds, where stderr is not a terminal."""
    if not plain():
        yield
        return
    began = time.monotonic()
    ticker = Ticker(lambda: f"{what}, elapsed {clock(time.monotonic() - began)}", every_s())
    ticker.start()
    try:
        yield
    finally:
        ticker.stop()


class ClockColumn(ProgressColumn):
    """`elapsed 0:08, ETA 0:02`: both named, so that neither is read as the other; the time
    left from the task's `eta` field (`Pace`), else rich's own."""

    def render(self, task: Task) -> Text:
        left = task.fields.get("eta", task.time_remaining)
        return Text(f"elapsed {clock(task.elapsed)}, ETA {clock(left)}")


class Display:
    """What the progress of a run, a sweep and a search share: `name`, the clock from the
    start, the recent pace of the count (`Pace`), and, where stderr is not a terminal, `line()`
    said every `every_s()` seconds from a thread of its own (`Ticker`) instead of a display
    drawn in place."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.start = time.monotonic()
        self.pace = Pace()
        self.ticker = Ticker(self.line, every_s()) if plain() else None

    def moved(self, done: float) -> bool:
        """Notes that the count is at `done` now; True where progress is said in lines (the
        ticker then goes), False where the subclass draws it."""
        self.pace.add(time.monotonic(), done)
        if self.ticker is None:
            return False
        self.ticker.start()
        return True

    def line(self) -> str:
        """The plain line."""
        raise NotImplementedError

    def close(self) -> None:
        if self.ticker is not None:
            self.ticker.stop()


class LazyProgress(Display):
    """A run's progress: seeds done and the model time of those running. In a terminal, a
    bar that appears only once the run has taken more than `delay` seconds, with, for an
    engine in real time, a live view of the current seed under it; elsewhere a line every
    `every_s()` seconds. A storm of refusals is named once."""

    def __init__(self, name: str, delay: float = 1.5) -> None:
        super().__init__(name)
        self.delay = delay
        self.state = (0, 0, 0.0, 0)
        """Seeds done, seeds in all, the share done of those running, creates stuck."""
        self.stormed = False
        self.bar: Progress | None = None
        self.live: Live | None = None
        self.task: Any = None

    def __call__(
        self,
        done: int,
        total: int,
        fraction: float,
        snapshot: Snapshot | None = None,
        refused: int = 0,
    ) -> None:
        self.state = (done, total, fraction, refused)
        if refused >= STORM and not self.stormed:
            self.stormed = True
            say(storm_line(refused))
        if self.moved(done + fraction):
            return
        now = time.monotonic()
        if self.bar is None:
            if now - self.start < self.delay:
                return
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=BAR_WIDTH),
                TextColumn("{task.fields[units]}"),
                ClockColumn(),
            )
            self.task = self.bar.add_task(self.name, total=total, units="", eta=None)
            self.live = Live(
                self.bar, console=Console(file=sys.stderr), transient=True, refresh_per_second=4
            )
            self.live.start()
        units = f"{done}/{total} seeds"
        if refused:  # a storm: nodes refuse and the scheduler answers them again
            units += f"; {refused} creates refused {REFUSED_AGAIN}+ times, asked again"
        eta = self.pace.left(total, now)
        self.bar.update(self.task, completed=done + min(fraction, 1.0), units=units, eta=eta)
        if snapshot is not None and self.live is not None:
            self.live.update(Group(self.bar, live_detail(snapshot)))

    def line(self) -> str:
        """The plain line: `seed-herd: 1.42 of 3 seeds, elapsed 0:45, ETA 0:50`."""
        done, total, share, refused = self.state
        now = time.monotonic()
        if total and done >= total:
            return (
                f"{self.name}: {done} of {total} seeds; writing the run's tables, "
                f"elapsed {clock(now - self.start)}"
            )
        stuck = f", {refused} creates refused {REFUSED_AGAIN}+ times" if refused else ""
        return (
            f"{self.name}: {done + share:.2f} of {total} seeds{stuck}, "
            f"{timing(self.pace, self.start, total, now)}"
        )

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
        super().close()


class SweepBar(Display):
    """Cells complete, cells failed, elapsed and time left of a sweep, on stderr; it appears
    with the first report, so an error found before the sweep starts is not drawn under a bar
    (a line every `every_s()` seconds where stderr is not a terminal)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.started = False
        self.state = (0, 0, 0)
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=BAR_WIDTH),
            TextColumn("{task.fields[cells]}"),
            ClockColumn(),
            console=Console(file=sys.stderr),
        )
        self.task = self.bar.add_task(name, total=None, cells="", eta=None)

    def __call__(self, done: int, failed: int, total: int) -> None:
        self.state = (done, failed, total)
        if self.moved(done + failed):
            return
        now = time.monotonic()
        if not self.started:
            self.bar.start()
            self.started = True
        cells = f"{done}/{total} cells" + (f" [red]{failed} failed[/red]" if failed else "")
        eta = self.pace.left(total, now)
        self.bar.update(self.task, completed=done + failed, total=total, cells=cells, eta=eta)

    def line(self) -> str:
        """The plain line: `grid: 3 of 12 cells (1 failed), elapsed 2:00, ETA 6:00`."""
        done, failed, total = self.state
        now = time.monotonic()
        failing = f" ({failed} failed)" if failed else ""
        return (
            f"{self.name}: {done} of {total} cells{failing}, "
            f"{timing(self.pace, self.start, total, now)}"
        )

    def close(self) -> None:
        if self.started:
            self.bar.stop()
        super().close()


def _best(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.4g}"


class SearchLine(Display):
    """A search's progress: trials done, best so far, trials/s, then what it does after the
    trials (`phase`: shrinking the best, confirming on fresh seeds). In a terminal one line
    rewritten in place; elsewhere a line every `every_s()` seconds."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.err = Console(file=sys.stderr)
        self.last = 0.0
        self.shown = False
        self.state = (0, None, None, 0.0)
        self.doing: str | None = None
        self.doing_since = self.start

    def __call__(self, done: int, limit: int | None, best: float | None, rate: float) -> None:
        self.state = (done, limit, best, rate)
        if self.moved(done):
            return
        now = time.monotonic()
        if now - self.last < 0.2 and rate:
            return
        self.last = now
        of = f"/{limit}" if limit is not None else ""
        speed = f", {rate:.1f} trials/s" if rate else ""
        self._show(f"{self.name}: {done}{of} trials, best {_best(best)}{speed}")

    def phase(self, what: str) -> None:
        """The search is past its trials: `what` it does now (shrinking, confirming)."""
        self.doing, self.doing_since = what, time.monotonic()
        if self.ticker is not None:
            self.ticker.start()
            return
        self._show(f"{self.name}: {what}")

    def _show(self, line: str) -> None:
        self.err.file.write(line.ljust(60) + "\r")
        self.err.file.flush()
        self.shown = True

    def line(self) -> str:
        """The plain line: `worst: 12 of 40 trials, best 0.543, elapsed 3:00, ETA 7:00`, then
        `worst: shrinking the best trial, for 0:40, elapsed 3:40`."""
        done, limit, best, _ = self.state
        now = time.monotonic()
        if self.doing is not None:
            return (
                f"{self.name}: {self.doing}, for {clock(now - self.doing_since)}, "
                f"elapsed {clock(now - self.start)}"
            )
        of = f" of {limit}" if limit is not None else ""
        return (
            f"{self.name}: {done}{of} trials, best {_best(best)}, "
            f"{timing(self.pace, self.start, limit, now)}"
        )

    def close(self) -> None:
        if self.shown:
            self.err.file.write("\n")
        super().close()
