"""One seed as a job of the pool (`harness.running.pool`): its body, checked where it ran, and
the share of it done that it tells while it runs. A run's (strategy, seed) units and a sweep's
(cell, seed) are such jobs; a unit is deterministic, so the results, and the files, are the
same in this process or as Ray tasks."""

from __future__ import annotations

from contextlib import closing, nullcontext
from dataclasses import replace
from typing import Any

from harness.config import Config
from harness.engines import Engine, Progress, Snapshot, get_engine
from harness.results.invariants import check
from harness.results.seed_result import SeedResult
from harness.results.seed_rows import SeedRows
from harness.running.pool import Tell

STORM = 10
"""Creates in flight stuck in refusals at once (each refused `REFUSED_AGAIN` times or more,
`harness.model.protocol.replica_party`) from which a seed is in a storm of refusals: its
progress then counts the model time it may run past its duration, and the display names it."""

Checked = tuple[SeedResult, list[dict[str, Any]]]
"""A finished seed: its result, and its invariant checks."""


class Share:
    """A seed's share done, from the model time it has reached: over its duration; once it
    has been in a storm of refusals (`STORM`), over its duration and the placement's deadline,
    for the creates sent before its end are placed again until then (the seed runs on past its
    duration, and a share pinned at 1 would say nothing is left). Never above 1."""

    def __init__(self, config: Config) -> None:
        self.duration = config.run.duration_s
        p = config.placement
        self.tail = p.deadline_s if p.retry_refused else 0.0
        self.stormed = False

    def __call__(self, t: float, refused: int) -> float:
        self.stormed = self.stormed or refused >= STORM
        end = self.duration + (self.tail if self.stormed else 0.0)
        return min(t / end, 1.0)


def run_checked(
    engine: Engine,
    config: Config,
    seed: int,
    progress: Progress | None = None,
    rows: SeedRows | None = None,
) -> tuple[SeedResult, list[dict[str, Any]], list[str]]:
    """One seed on `engine`, then its invariant checks (`harness.results.invariants`): the
    result, the checks, and a line for each broken one."""
    result = engine.run_seed(config, seed, progress, rows)
    checks = check(config, result)
    return result, checks, broken_lines(checks)


def broken_lines(checks: list[dict[str, Any]]) -> list[str]:
    """A line for each broken one of invariant `checks`."""
    return [f"{c['check']} ({c['detail']})" for c in checks if not c["ok"]]


def run_unit(
    config: Config,
    seed: int,
    rows: SeedRows | None = None,
    progress: Tell | None = None,
    engine: Engine | None = None,
) -> Checked:
    """The body of a seed's job: the seed on `engine` (a new one of the config's, closed after,
    without), its rows into `rows` (kept in memory without), checked where it ran; `progress`
    is told the share done (`Share`). The end state the checks needed stays here rather than
    travelling back."""
    told = None if progress is None else _told(progress, Share(config))
    own = closing(get_engine(config.run.engine)) if engine is None else nullcontext(engine)
    with own as running:  # one of its own stops what it kept for the seed
        result, checks, _ = run_checked(running, config, seed, told, rows)
    return replace(result, sandbox_ids=[], lost_ids=[], drained_views=None), checks


def _told(progress: Tell, share: Share) -> Progress:
    """An engine's progress callback that tells `progress` the share of the seed done."""

    def tick(t: float, snapshot: Snapshot | None = None, refused: int = 0) -> None:
        progress(share(t, refused), snapshot, refused)

    return tick
