"""A run's seeds as Ray tasks (`harness.running.pool.OnRay`) write the same files as the same
seeds run one after another in this process, whether a task writes its rows straight into its
part or, placed on another node, into a folder of its own that the driver then fetches."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.engines.virtual import VirtualEngine
from harness.results.run_writer import RunWriter
from harness.running.pool import InProcess, Job, OnRay, Pool
from harness.running.seed_tasks import run_unit
from tests.support.configs import CONFIGS
from tests.support.golden import folder_digests

pytestmark = [pytest.mark.ray, pytest.mark.shares_machine]

SEEDS = [0, 1]
STRATEGIES = ["stale", "optimistic"]


def _run(pool: Pool, out: Path) -> dict[str, str]:
    from harness.config import load

    config = load(CONFIGS / "churn.toml", ["run.seeds=2", "run.duration_s=5"])
    with RunWriter(out, config.to_dict(), STRATEGIES, SEEDS, "virtual", run_id="same") as w:
        variants = {s: config.with_values({"placement.strategy": s}) for s in STRATEGIES}
        jobs = [
            Job((s, seed), run_unit, (variants[s], seed), w.seed_rows(s, seed))
            for s in STRATEGIES
            for seed in SEEDS
        ]
        with pool:
            for done in pool.results(jobs, lambda *a: None, w.add):
                assert done.error is None, done.trace
                w.add(*done.value)
    return folder_digests(out, drop=("run_id",))


def test_seeds_on_ray_write_what_seeds_in_this_process_write(local_ray, tmp_path):
    alone = _run(InProcess(VirtualEngine()), tmp_path / "alone")
    assert _run(OnRay(2), tmp_path / "tasks") == alone
    # As if every task ran on another node: each writes its own folder, fetched in chunks.
    assert _run(OnRay(2, home="another node"), tmp_path / "fetched") == alone
    assert not list((tmp_path / "fetched").rglob("*.tmp"))
