"""Every shipped scenario's headline agrees with its tables: each figure a sentence names is the
table's, each "X equals Y" is two strategies that ended the same in every seed (and every such
pair is named), and each count of creates in flight is what the requests table says (each
create's `in_flight`, as its replica saw it), counted here rather than read off the summary."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cli import main
from harness.model.scheduling.strategies import STRATEGIES
from harness.presentation.headline import REASONS, headline
from harness.results.run_reader import load_run
from harness.results.seed_figures import FAILURE_REASONS
from harness.results.statistics import by_strategy, contrasts, cv_shift
from tests.support.configs import CONFIGS, SCENARIOS, brief_flags, runnable

COMPARED = ["stale", "in_progress", "optimistic"]
QUICK = {"seed-burst", "seed-herd", "faults-crash"}
"""Scenarios the fast tier runs; the others (several seconds each) run in the full suite."""


def _run(config: Path, out: Path) -> dict[str, pd.DataFrame]:
    args = ["run", str(config), "--compare", ",".join(COMPARED), "--seeds", "2"]
    args += brief_flags(config)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*args, "--out", str(out), "--quiet", "--no-report"]) == 0
    return load_run(out)[1]


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> Callable[[Path], dict[str, pd.DataFrame]]:
    """`_run` of a config, once per module: two tests read seed-burst's tables."""
    done: dict[Path, dict[str, pd.DataFrame]] = {}

    def of(config: Path) -> dict[str, pd.DataFrame]:
        if config not in done:
            done[config] = _run(config, tmp_path_factory.mktemp(config.stem) / "run")
        return {name: frame.copy() for name, frame in done[config].items()}

    return of


def _in_flight(requests: pd.DataFrame) -> dict[str, tuple[int, float, bool]]:
    """Per strategy, from each create sent to a node and the others of its replica in flight
    when it was placed: the most of one replica in flight at once in any seed, the mean share
    placed while another was, and whether in every seed each replica placed its last with
    all its others in flight."""
    sent = requests[(requests["kind"] == "create") & (requests["rpcs"] > 0)]
    found = {}
    for strategy, mine in sent.groupby("strategy", sort=False):
        most, shares, whole = 1, [], True
        for _, seed in mine.groupby("seed"):
            for _, replica in seed.groupby("replica"):
                at_once = int(replica["in_flight"].max()) + 1
                most = max(most, at_once)
                whole = whole and at_once == len(replica)
            shares.append(float((seed["in_flight"] > 0).mean()))
        found[strategy] = (most, float(np.mean(shares)), whole)
    return found


def _same(nodes: pd.DataFrame, summary: pd.DataFrame, a: str, b: str) -> bool:
    """Whether a and b ended the same in every seed: sandboxes on every node, creates placed and
    failed, CV."""

    def end(s: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        n = nodes[nodes["strategy"] == s].sort_values(["seed", "node_id"])
        m = summary[summary["strategy"] == s].sort_values("seed")
        return (
            n[["seed", "node_id", "sandboxes"]].reset_index(drop=True),
            m[["seed", "placed", "failed", "cv"]].reset_index(drop=True),
        )

    (na, sa), (nb, sb) = end(a), end(b)
    return na.equals(nb) and sa.equals(sb)


def _figure(value: float) -> str:
    """A count as the headline prints a lone one: an integer when whole, else one decimal."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _check_nodes(sentence: str, row: pd.Series, base: pd.Series) -> None:
    busiest = re.search(r"busiest node ([\d.]+)(?: -> ([\d.]+))? sandboxes", sentence)
    idlest = re.search(r"idlest ([\d.]+)(?: -> ([\d.]+))?[;.]", sentence)
    for found, column in ((busiest, "max_count"), (idlest, "min_count")):
        assert found, sentence
        before, after = found.group(1), found.group(2) or found.group(1)
        assert float(before) == pytest.approx(base[column], abs=0.05), sentence
        assert float(after) == pytest.approx(row[column], abs=0.05), sentence
    failed = re.search(r"failed creates ([\d.]+)(?: -> ([\d.]+))? per seed", sentence)
    if "no create failed" in sentence:
        assert base["failed"] == row["failed"] == 0, sentence
    else:
        assert failed, sentence
        assert float(failed.group(1)) == pytest.approx(base["failed"], abs=0.05), sentence
        assert float(failed.group(2) or failed.group(1)) == pytest.approx(row["failed"], abs=0.05)


def _check_reasons(sentence: str, rows: pd.DataFrame) -> None:
    """Why the first strategy's creates failed, as its sentence says: each reason's mean count
    per seed, or `all` of them for the one reason, as the summary's `failed_<reason>`."""
    means = {r: rows[f"failed_{r}"].mean() for r in FAILURE_REASONS}
    failing = {r: m for r, m in means.items() if m > 0}
    alone = re.search(r"per seed, all (\w+) \(([^)]*)\)", sentence)
    listed = re.findall(r"([\d.]+) (\w+) \(([^)]*)\)", sentence.partition("per seed: ")[2])
    if not failing:
        assert not alone and not listed, sentence
    elif len(failing) == 1:
        assert alone and alone.group(1) in failing, sentence
        assert alone.group(2) == REASONS[alone.group(1)], sentence
    else:
        assert {r: float(n) for n, r, _ in listed} == pytest.approx(failing, abs=0.05), sentence
        assert all(words == REASONS[r] for _, r, words in listed), sentence


def test_every_failure_reason_is_worded_with_what_sets_it():
    assert set(REASONS) == set(FAILURE_REASONS)
    assert "placement.deadline_s" in REASONS["deadline"]
    assert "placement.max_asks" in REASONS["asks_exhausted"]


def _check_flying(sentence: str, strategy: str, flying: dict) -> None:
    """Each count of creates in flight a sentence gives is the requests table's."""
    most, share, whole = flying.get(strategy, (1, 0.0, False))
    none = "no create was sent while another was in flight" in sentence
    if none:
        assert most == 1, sentence
    at_most = re.search(
        r"[Aa]t most (\d+) creates of (?:a seed|one replica) were in flight at "
        r"once \(([\d.]+)% of creates",
        sentence,
    )
    if at_most:
        assert (int(at_most.group(1)), float(at_most.group(2))) == (most, round(share * 100, 1))
        assert not whole, sentence
    every = re.search(
        r"ll (\d+ )?creates of each (?:seed|replica) were in flight at once", sentence
    )
    if every:
        assert whole and most > 1, sentence
        assert every.group(1) is None or int(every.group(1)) == most, sentence
    # A sentence that speaks of creates in flight gives one of the counts checked here.
    assert "in flight" not in sentence or none or at_most or every, sentence
    counts = re.search(r"(\S+) counts them where (\S+) does not", sentence)
    if counts:
        assert STRATEGIES.resolve(counts.group(1)).counts_in_progress, sentence
        assert not STRATEGIES.resolve(counts.group(2)).counts_in_progress, sentence


def _check(frames: dict[str, pd.DataFrame]) -> list[str]:
    summary, nodes, requests = frames["summary"], frames["nodes"], frames["requests"]
    table = by_strategy(summary).set_index("strategy")
    lines = headline(contrasts(summary, nodes))
    flying = _in_flight(requests)
    base = table.loc[COMPARED[0]]
    shifts = cv_shift(
        pd.concat(summary[summary["strategy"] == COMPARED[0]].assign(strategy=s) for s in COMPARED),
        summary,
    ).set_index("strategy")
    assert len(lines) == len(COMPARED)
    named = set()
    for strategy, sentence in zip(COMPARED, lines, strict=True):
        row = table.loc[strategy]
        assert sentence.startswith(strategy), sentence
        if strategy == COMPARED[0]:
            assert f"{strategy}: CV {row['cv_mean']:.3f} over 2 seeds" in sentence
            _check_nodes(sentence, row, row)
            _check_reasons(sentence, summary[summary["strategy"] == strategy])
            continue
        equal = re.match(r"\S+ equals (\S+) to every digit in all 2 seeds", sentence)
        equal = equal or re.search(r"as (\S+) does, equal to it to every digit", sentence)
        if equal:
            twin = equal.group(1)
            assert _same(nodes, summary, strategy, twin), sentence
            assert COMPARED.index(twin) < COMPARED.index(strategy)
            named.add(strategy)
        change = re.search(r"(cuts|raises) CV from ([\d.]+) to ([\d.]+)", sentence)
        unclear = re.search(
            r"no clear change from (\S+): CV ([\d.]+) -> ([\d.]+) \(paired 95% "
            r"interval of the change ([-+][\d.]+) to ([-+][\d.]+)\)",
            sentence,
        )
        if change:
            before, after = float(change.group(2)), float(change.group(3))
            assert change.group(1) == ("cuts" if row["cv_mean"] < base["cv_mean"] else "raises")
            assert not shifts.loc[strategy, "shift_lo"] <= 0 <= shifts.loc[strategy, "shift_hi"]
        elif unclear:
            before, after = float(unclear.group(2)), float(unclear.group(3))
            assert float(unclear.group(4)) <= 0 <= float(unclear.group(5)), sentence
        else:  # only "X equals Y": Y's figures are X's
            assert equal, sentence
            before, after = base["cv_mean"], row["cv_mean"]
        assert f"{before:.3f}" == f"{base['cv_mean']:.3f}", sentence
        assert f"{after:.3f}" == f"{row['cv_mean']:.3f}", sentence
        if not equal:
            _check_nodes(sentence, row, base)
        _check_flying(sentence, strategy, flying)
    # Every strategy that ended as an earlier one says so.
    for i, strategy in enumerate(COMPARED):
        if any(_same(nodes, summary, strategy, earlier) for earlier in COMPARED[:i]):
            assert strategy in named, lines
    return lines


@pytest.mark.parametrize(
    "config", runnable(SCENARIOS, lambda p: [] if p.stem in QUICK else [pytest.mark.slow])
)
def test_every_headline_sentence_agrees_with_the_tables(config: Path, tables) -> None:
    _check(tables(config))


def test_seed_burst_in_progress_and_optimistic_both_cut_cv_with_500_in_flight(tables):
    """All 500 creates of a seed are sent at one instant: all in flight together, so both
    strategies that count them cut CV, the same in every seed."""
    lines = _check(tables(CONFIGS / "seed-burst.toml"))
    _, in_progress, optimistic = lines
    assert in_progress.startswith("in_progress cuts CV from ")
    assert optimistic.startswith("optimistic cuts CV from ")
    assert "as in_progress does, equal to it to every digit in all 2 seeds" in optimistic
    for line in (in_progress, optimistic):
        assert "all 500 creates of each seed were in flight at once" in line.lower()
    assert "in_progress counts them where stale does not" in in_progress
    assert "both count creates in flight" in optimistic
