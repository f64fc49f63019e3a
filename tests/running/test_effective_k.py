"""The K a run records is the sampler's own (`Sampler.candidates`), not `placement.k`, which
most algorithms ignore: every registered algorithm, through the CLI, as a user would set it."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.cli import main
from harness.model.scheduling.placement.algorithms import ALGORITHMS
from tests.support.configs import CONFIGS

NODES = 10  # seed-herd.toml's cluster; its placement.k is 3
DRAWS = {
    "best_of_k": (3, True),
    "two_choices": (2, True),
    "one_at_random": (1, True),
    "round_robin": (1, False),
    "every_node": (NODES, False),
}
"""(effective K, uniform) of each built-in sampler on seed-herd: a new sampler must say."""


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_every_algorithm_records_the_k_its_sampler_draws(tmp_path, algorithm):
    out = tmp_path / "run"
    args = ["--seeds", "1", "--set", "run.duration_s=1", "--set", "run.sample_interval_s=0"]
    code = main(
        [
            "run",
            str(CONFIGS / "seed-herd.toml"),
            *args,
            "--set",
            f"placement.algorithm={algorithm}",
            "--out",
            str(out),
            "--quiet",
            "--no-report",
        ]
    )
    assert code == 0
    k, uniform = DRAWS[ALGORITHMS[algorithm].sampler]
    summary = pd.read_parquet(out / "summary.parquet")
    assert summary["k"].tolist() == [k]
    plugins = json.loads((out / "run.json").read_text())["plugins"]
    assert (plugins["algorithm"], plugins["k"], plugins["uniform"]) == (algorithm, k, uniform)


def test_power_of_two_places_as_best_of_k_with_k_2(tmp_path):
    """`compare-algorithms.toml` takes power_of_two for Best-of-K at K = 2: the same draws."""
    placed = []
    for algorithm, k in (("power_of_two", 3), ("best_of_k", 2)):
        out = tmp_path / algorithm
        sets = [f"placement.algorithm={algorithm}", f"placement.k={k}", "run.duration_s=5"]
        args = [a for s in sets for a in ("--set", s)]
        cli = ["run", str(CONFIGS / "seed-herd.toml"), "--seeds", "1", *args]
        assert main([*cli, "--out", str(out), "--quiet", "--no-report"]) == 0
        placed.append(pd.read_parquet(out / "requests.parquet")["node_id"].tolist())
    assert placed[0] == placed[1] and len(placed[0]) > 50


@pytest.mark.parametrize(("algorithm", "theory"), [("power_of_two", True), ("round_robin", False)])
def test_the_static_score_shares_are_drawn_only_for_a_uniform_sampler(tmp_path, algorithm, theory):
    """The report's dashed C(n-i, K-1)/C(n, K) describes K drawn uniformly (`Sampler.uniform`):
    drawn, and captioned with the sampler's K, for power_of_two; not for round_robin."""
    out = tmp_path / "run"
    sets = [f"placement.algorithm={algorithm}", "run.duration_s=2", "run.sample_interval_s=0"]
    args = [a for s in sets for a in ("--set", s)]
    cli = ["run", str(CONFIGS / "seed-herd.toml"), "--seeds", "1", *args, "--quiet"]
    assert main([*cli, "--out", str(out)]) == 0
    page = (out / "report.html").read_text()
    assert ("C(n-i, K-1)/C(n, K)" in page) == theory
    assert ("K = 2" in page) == (algorithm == "power_of_two")
