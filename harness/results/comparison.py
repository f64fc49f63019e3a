"""Is a run better or worse than a baseline run? Per summary column and strategy (and sweep cell):
both means, the change with its 95% interval, a p-value and a verdict from the column's
direction (`harness.results.summary_columns`) and a noise band.

Two runs of the same config and seeds on the virtual engine see exactly the same creates, so the
comparison is paired seed by seed: a sign-flip test on the per-seed differences, far more
sensitive than comparing two groups. Otherwise (other seeds, or the Ray engine, where timing
makes every run different) it is unpaired: a Mann-Whitney rank test. Intervals are bootstrap
percentiles of the mean change (of the mean differences when paired). A change is `better` or
`worse` only when p < `ALPHA` (two-sided, so each side errs at most half of it), its interval
excludes 0, and it is larger than the noise band (`min_effect`): a share of the base's mean for
most kinds, an absolute amount for fractions (`Kind`). Everything is seeded: the same two
folders give the same table."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from harness.results import machine
from harness.results.atomic_files import write_parquet
from harness.results.failures import ResultsError
from harness.results.folder_policy import holder, marker
from harness.results.run_reader import PARTS, load_run, read_columns, read_meta
from harness.results.summary_columns import (
    BY_NAME,
    OVERLOADED,
    SUMMARY_COLUMNS,
    Column,
    Direction,
    Pace,
)
from harness.results.sweep_folder import load_sweep_results

ALPHA = 0.05
"""Two-sided significance level: a `worse` verdict by chance has probability ALPHA / 2."""
LEVEL = 0.95
"""Of the intervals."""
RESAMPLES = 10_000
"""Permutations, sign flips and bootstrap resamples per figure."""
NORMAL_FROM = 10
"""From this many values in each group the rank test's p-value is the normal approximation's;
below, it is found by RESAMPLES permutations."""
EXACT_FLIPS = 12
"""Up to this many pairs every sign flip is tried (2**12); beyond, RESAMPLES random ones."""
UNCHANGED, BETTER, WORSE, CHANGED = "~", "better", "worse", "changed"
UNJUDGED = "overloaded"
"""The verdict of a column of a strategy that ran overloaded (`time_keeping`) on either side:
its figures may describe the machine, not the scheduler, so it is neither better nor worse."""
VERDICTS = (WORSE, BETTER, CHANGED, UNCHANGED, UNJUDGED)
"""In the order a table shows them."""
IGNORED_KEYS = ("thresholds", "run.workers")
"""Config keys (or sections) that judge results, or set how fast they come, without changing
them: never a difference."""
SEED_KEYS = ("run.first_seed", "run.seeds", "sweep.seeds")
"""The keys that say which seeds ran: never a difference either. Other seeds are compared
unpaired (`pairing`), which the output says."""
RealTime = Callable[[str], bool]
"""Whether the engine of a name runs in real time (`harness.engines.real_time`), handed in by
the caller: the results layer does not import the engines."""


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    """A dotted config without `IGNORED_KEYS` and `SEED_KEYS`."""
    return {
        k: v
        for k, v in config.items()
        if k not in SEED_KEYS
        and not any(k == ignored or k.startswith(f"{ignored}.") for ignored in IGNORED_KEYS)
    }


FILE = "comparison.parquet"


class CompareError(ResultsError):
    """Two folders that cannot be compared (or a comparison asked for wrongly): one line."""


@dataclass(frozen=True)
class Side:
    """One compared folder: a run or a sweep, its record and its finished summary rows."""

    folder: Path
    kind: str
    meta: dict[str, Any]
    summary: pd.DataFrame
    config: dict[str, Any]
    """The config (a sweep's: its base, grid and seeds) as dotted keys."""


def load_side(path: str | Path) -> Side:
    """A run or sweep folder to compare, or CompareError saying why it is not one."""
    folder = Path(path)
    if not folder.is_dir():
        raise CompareError(f"{folder} is not a folder")
    kind = holder(folder)
    if kind is None:
        marks = f"{marker('run')} or {marker('sweep')}"
        raise CompareError(f"{folder} is not a results folder (no {marks})")
    if kind == "run":
        meta, summary = _run_summary(folder)
        finished = pd.DataFrame(meta["finished"], columns=["strategy", "seed"])
        summary = summary.merge(finished.astype({"seed": "int64"}), on=["strategy", "seed"])
        return Side(folder, kind, meta, summary, run_config(meta["config"]))
    meta, summary = load_sweep_results(folder)
    identity = meta["identity"]
    config = {
        **flatten(identity.get("base", {})),
        **flatten({k: v for k, v in identity.items() if k != "base"}, "sweep"),
    }
    return Side(folder, kind, meta, summary, _comparable(config))


def _run_summary(folder: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """A run's record and summary. A closed run's summary is read with the columns it has: a
    baseline written by an earlier harness lacks the columns added since, which are then not
    compared (the parts of an unclosed run are read as `load_run` reads them)."""
    if (folder / PARTS).is_dir():
        meta, frames = load_run(folder, ("summary",))
        return meta, frames["summary"]
    meta = read_meta(folder)
    path = folder / "summary.parquet"
    if not path.is_file():
        raise CompareError(f"{folder} is missing summary.parquet")
    return meta, read_columns(path, ["engine", "strategy", "seed"]).to_pandas()


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as {dotted key: value}."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def differing_keys(
    base: dict[str, Any], new: dict[str, Any], allowed: list[str]
) -> tuple[list[str], list[str], list[str]]:
    """The config keys (dotted) whose values differ: (those `allowed` covers, the others, and
    those only one side has: a key added to the harness since the other ran, not held
    against it). A key is covered by itself or a section above it (`placement` covers
    `placement.k`)."""
    both = set(base) & set(new)
    keys = sorted(k for k in both if base[k] != new[k])
    one_sided = sorted(set(base) ^ set(new))

    def covered(key: str) -> bool:
        return any(key == a or key.startswith(f"{a}.") for a in allowed)

    return [k for k in keys if covered(k)], [k for k in keys if not covered(k)], one_sided


def check_configs(base: dict[str, Any], new: dict[str, Any], allowed: list[str]) -> list[str]:
    """Notes on how two configs (dotted) differ, or CompareError when they differ beyond
    `allowed`."""
    allowed_keys, others, one_sided = differing_keys(base, new, allowed)
    if others:
        raise CompareError(
            f"the configs differ in {', '.join(others)} (--allow-diff KEY to compare anyway)"
        )
    notes = []
    if allowed_keys:
        notes.append(f"configs differ, as allowed, in {', '.join(allowed_keys)}")
    if one_sided:
        notes.append(f"keys in one config only (another harness version): {', '.join(one_sided)}")
    return notes


def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """A run's config (`Config.to_dict()`, as run.json stores it) as `Side.config` has it."""
    stored = json.loads(json.dumps(config, default=str))
    return _comparable(flatten(stored))


def _engines(side: Side, rows: pd.DataFrame) -> set[str]:
    engines = {str(e) for e in rows["engine"].dropna().unique()}
    if side.kind == "run":
        engines.add(str(side.meta.get("engine", "")))
    return engines - {""}


def pairing(
    engines: tuple[set[str], set[str]],
    real_time: RealTime,
    base_rows: pd.DataFrame,
    new_rows: pd.DataFrame,
    same_config: bool,
) -> tuple[bool, str]:
    """Whether two sets of rows (a run's, or a sweep cell's) of the engines named are compared
    seed by seed, and why (or why not)."""
    timed = sorted(e for e in engines[0] | engines[1] if real_time(e))
    if timed:
        return False, (
            f"unpaired: the {'/'.join(timed)} engine runs in real time, so no two runs of a "
            "seed see the same timings"
        )
    if set(base_rows["seed"]) != set(new_rows["seed"]):
        return False, "unpaired: the two runs have other seeds"
    why = "same seeds" if same_config else "same seeds, configs differing only where allowed"
    named = "/".join(sorted(engines[0] | engines[1]))
    return True, f"paired by (strategy, seed): {why}, {named} engine"


def overloaded(rows: pd.DataFrame) -> pd.DataFrame:
    """The (strategy, seed) rows an engine in real time ran overloaded (`time_keeping`)."""
    if "time_keeping" not in rows:
        return rows.iloc[:0]
    return rows[rows["time_keeping"] == OVERLOADED]


def seeds_text(rows: pd.DataFrame) -> str:
    """`stale seeds 0, 3; optimistic seed 1`: which seeds of which strategies `rows` are."""
    parts = []
    for strategy, group in rows.groupby("strategy", sort=False):
        seeds = sorted(int(s) for s in group["seed"])
        word = "seed" if len(seeds) == 1 else "seeds"
        parts.append(f"{strategy} {word} {', '.join(map(str, seeds))}")
    return "; ".join(parts)


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given their mean rank."""
    order = np.argsort(values, kind="mergesort")
    plain = np.empty(values.size)
    plain[order] = np.arange(1, values.size + 1)
    _, group, counts = np.unique(values, return_inverse=True, return_counts=True)
    return (np.bincount(group, weights=plain) / counts)[group]


def _interval(samples: np.ndarray) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2 * 100
    lo, hi = np.percentile(samples, [tail, 100 - tail])
    return float(lo), float(hi)


def _tolerance(values: np.ndarray) -> float:
    """Float residue below which two statistics count as equal."""
    return 1e-9 * max(1.0, float(np.abs(values).max(initial=0.0)))


def paired_test(base: np.ndarray, new: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """(lo, hi, p) of the mean per-seed difference `new - base`: bootstrap interval, sign-flip
    p-value (exact up to EXACT_FLIPS pairs)."""
    d = new - base
    if not np.any(d):
        return 0.0, 0.0, 1.0
    rng = np.random.default_rng(seed)
    n = d.size
    exact = n <= EXACT_FLIPS
    if exact:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    else:
        signs = rng.choice((1.0, -1.0), size=(RESAMPLES, n))
    flipped = np.abs((signs * d).mean(axis=1))
    extreme = int((flipped >= abs(d.mean()) - _tolerance(d)).sum())
    p = extreme / len(signs) if exact else (extreme + 1) / (RESAMPLES + 1)
    lo, hi = _interval(rng.choice(d, size=(RESAMPLES, n)).mean(axis=1))
    return lo, hi, min(1.0, p)


def unpaired_test(base: np.ndarray, new: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """(lo, hi, p) of the change of the mean from `base` to `new`, two groups: bootstrap
    interval (each group resampled on its own) and Mann-Whitney p-value; by permutation while
    a group is smaller than NORMAL_FROM, else from the normal approximation with the tie and
    continuity corrections (as scipy's `mannwhitneyu` does)."""
    both = np.concatenate([base, new])
    if np.all(both == both[0]):
        return 0.0, 0.0, 1.0
    rng = np.random.default_rng(seed)
    r = ranks(both)
    n1, n2, n = base.size, new.size, both.size
    centre = n2 * (n + 1) / 2
    observed = abs(r[n1:].sum() - centre)
    if min(n1, n2) >= NORMAL_FROM:
        _, ties = np.unique(both, return_counts=True)
        variance = n1 * n2 / 12 * ((n + 1) - float((ties**3 - ties).sum()) / (n * (n - 1)))
        z = max(0.0, observed - 0.5) / math.sqrt(variance)
        p = math.erfc(z / math.sqrt(2))
    else:
        shuffled = rng.permuted(np.tile(r, (RESAMPLES, 1)), axis=1)[:, :n2].sum(axis=1)
        extreme = int((np.abs(shuffled - centre) >= observed - 1e-9).sum())
        p = (extreme + 1) / (RESAMPLES + 1)
    means_new = rng.choice(new, size=(RESAMPLES, n2)).mean(axis=1)
    means_base = rng.choice(base, size=(RESAMPLES, n1)).mean(axis=1)
    lo, hi = _interval(means_new - means_base)
    return lo, hi, min(1.0, p)


MIN_EFFECT = re.compile(r"\s*(?:(?P<column>\w+)\s*=)?\s*(?P<value>[0-9.eE+-]+)\s*(?P<pct>%?)\s*")


@dataclass(frozen=True)
class NoiseBand:
    """How big a change must be to count: a share of the base's mean (`relative`) or an amount
    in the column's unit."""

    value: float
    relative: bool

    def absolute(self, base_mean: float) -> float:
        return self.value * abs(base_mean) if self.relative else self.value

    def __str__(self) -> str:
        return f"{self.value * 100:g}%" if self.relative else f"{self.value:g}"


def noise_bands(given: list[str]) -> dict[str, NoiseBand]:
    """Each column's noise band: its kind's default, replaced by `--min-effect [COLUMN=]VALUE`
    (VALUE `2%` a share of the base's mean, `0.01` an amount in the column's unit; without
    COLUMN, every column's)."""
    bands = {c.name: NoiseBand(c.kind.min_effect, c.kind.relative) for c in SUMMARY_COLUMNS}
    for text in given:
        match = MIN_EFFECT.fullmatch(text)
        try:
            value = float(match["value"]) if match else math.nan
        except ValueError:
            value = math.nan
        if match is None or not math.isfinite(value) or value < 0:
            raise CompareError(
                f"--min-effect: {text!r} is not [COLUMN=]VALUE with VALUE a number >= 0, "
                "or a percentage (2%)"
            )
        band = NoiseBand(value / 100, True) if match["pct"] else NoiseBand(value, False)
        if match["column"]:
            bands[check_column(match["column"], "--min-effect").name] = band
        else:
            bands = dict.fromkeys(bands, band)
    return bands


def check_column(name: str, flag: str) -> Column:
    """The summary column `name`, if it can be compared; else CompareError."""
    column = BY_NAME.get(name)
    if column is None:
        raise CompareError(f"{flag}: no summary column {name!r} (docs: Result columns)")
    if column.direction is Direction.IDENTITY:
        raise CompareError(f"{flag}: {name} is a label or an echo of the config, not a result")
    return column


def chosen_columns(names: list[str] | None) -> list[Column]:
    """The columns to compare: those named, else every one whose kind is compared unless asked
    (not labels, sketches or wall-clock time)."""
    if names:
        return [check_column(n, "--columns") for n in names]
    return [c for c in SUMMARY_COLUMNS if c.kind.compared and c.direction is not Direction.IDENTITY]


def verdict(
    column: Column, change: float, interval: tuple[float, float], p: float, band: float
) -> str:
    """`~` unless the test is significant, the interval lies on one side of 0 (both must
    agree: either alone lets through more than its level of false alarms on some columns) and
    the change is beyond the noise band; then better or worse by the column's direction, or
    `changed` for a neutral column."""
    lo, hi = interval
    if not p < ALPHA or not (lo > 0 or hi < 0) or abs(change) <= band:
        return UNCHANGED
    if column.direction is Direction.NEUTRAL:
        return CHANGED
    lower = change < 0
    return BETTER if lower == (column.direction is Direction.LOWER) else WORSE


def machines_differ(base: Side, new: Side) -> str | None:
    """What differs between the machines the two ran on (run.json `machine`), or None."""
    return machine.differences(base.meta.get("machine"), new.meta.get("machine"))


SCHEMA = pa.schema(
    [
        ("cell", pa.int32()),
        ("cell_values", pa.string()),
        ("strategy", pa.string()),
        ("column", pa.string()),
        ("unit", pa.string()),
        ("direction", pa.string()),
        ("test", pa.string()),
        ("n_base", pa.int64()),
        ("n_new", pa.int64()),
        ("base", pa.float64()),
        ("new", pa.float64()),
        ("change", pa.float64()),
        ("change_lo", pa.float64()),
        ("change_hi", pa.float64()),
        ("relative", pa.float64()),
        ("p", pa.float64()),
        ("min_effect", pa.float64()),
        ("verdict", pa.string()),
        ("machine_warning", pa.bool_()),
    ]
)
"""comparison.parquet: a row per compared (cell, strategy, column)."""


@dataclass
class Result:
    """A comparison: a row per (cell, strategy, column) and what the reader must know first."""

    base: Side
    new: Side
    rows: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    overloaded: list[str] = field(default_factory=list)
    """Per side that ran overloaded somewhere, which seeds, as a line: its columns were not
    judged (verdict `overloaded`), or, judging the faithful seeds only, left out."""

    def worse(self, columns: list[str] | None = None) -> pd.DataFrame:
        """The rows judged worse (of `columns` only, when given)."""
        rows = self.rows[self.rows["verdict"] == WORSE]
        return rows if columns is None else rows[rows["column"].isin(columns)]


def _cells(side: Side) -> dict[str, tuple[int | None, pd.DataFrame]]:
    """The summary rows of each cell by its values (a run: one cell, "")."""
    if side.kind == "run":
        return {"": (None, side.summary)}
    keys = list(side.meta["keys"])
    found = {}
    for cell, rows in side.summary.groupby("cell", sort=True):
        values = rows.iloc[0][keys]
        found[", ".join(f"{k}={values[k]}" for k in keys)] = (int(cell), rows)
    return found


def compare(
    base: Side,
    new: Side,
    columns: list[str] | None = None,
    allow: list[str] | None = None,
    min_effect: list[str] | None = None,
    *,
    real_time: RealTime,
    faithful_only: bool = False,
) -> Result:
    """`new` against `base`, or CompareError when they cannot be compared (a run and a sweep,
    configs differing beyond `allow`, nothing in common). A strategy that ran overloaded
    (`time_keeping`) on either side is not judged, or with `faithful_only` judged on its other
    seeds; a column whose figures are the engine's pace (`Kind.pace`) is not compared between
    an engine in real time and one that keeps model time."""
    if base.kind != new.kind:
        raise CompareError(f"{base.folder} holds a {base.kind}, {new.folder} a {new.kind}")
    chosen = chosen_columns(columns)
    bands = noise_bands(min_effect or [])
    notes = check_configs(base.config, new.config, allow or [])
    allowed = differing_keys(base.config, new.config, allow or [])[0]
    result = Result(base, new, pd.DataFrame(columns=SCHEMA.names), notes)
    _versions(result)
    one_sided = [c.name for c in chosen if (c.name in base.summary) != (c.name in new.summary)]
    if one_sided:
        result.notes.append(f"columns in one run only, not compared: {', '.join(one_sided)}")
    differ = machines_differ(base, new)
    base_cells, new_cells = _cells(base), _cells(new)
    common = [v for v in new_cells if v in base_cells]
    if not common:
        raise CompareError(f"{base.folder} and {new.folder} have no sweep cell in common")
    for name, cells in (("base", base_cells), ("new", new_cells)):
        alone = [v for v in cells if v not in common]
        if alone:
            result.notes.append(f"only in {name}, not compared: cells {'; '.join(alone)}")
    _overload_notes(result, base_cells, new_cells, common, faithful_only)
    rows, reasons, unpaced = [], [], set()
    any_real_time = False
    for values in common:
        (_, base_rows), (cell, new_rows) = base_cells[values], new_cells[values]
        engines = (_engines(base, base_rows), _engines(new, new_rows))
        timed = [any(real_time(e) for e in side) for side in engines]
        any_real_time |= any(timed)
        unjudged = set(overloaded(base_rows)["strategy"]) | set(overloaded(new_rows)["strategy"])
        if faithful_only:
            base_rows, new_rows = _faithful(base_rows), _faithful(new_rows)
            unjudged = set()
        paired, reason = pairing(engines, real_time, base_rows, new_rows, not allowed)
        reasons.append(reason)
        strategies = [
            s for s in dict.fromkeys(new_rows["strategy"]) if s in set(base_rows["strategy"])
        ]
        for s in dict.fromkeys([*base_rows["strategy"], *new_rows["strategy"]]):
            if s not in strategies:
                result.notes.append(f"strategy {s} is in one folder only: not compared")
        for strategy in strategies:
            b = base_rows[base_rows["strategy"] == strategy].sort_values("seed")
            n = new_rows[new_rows["strategy"] == strategy].sort_values("seed")
            pairs = _seed_pairs(b, n) if paired else None
            for column in chosen:
                if column.kind.pace is not Pace.NEVER and timed[0] != timed[1]:
                    unpaced.add(column.name)  # the engine's pace on one side only
                    continue
                row = _compare_column(column, b, n, pairs, bands[column.name])
                if row is None:
                    continue
                paced = column.kind.pace is Pace.ALWAYS or (
                    column.kind.pace is Pace.REAL_TIME and any(timed)
                )
                if strategy in unjudged:
                    row["verdict"] = UNJUDGED
                row.update(
                    column=column.name,
                    cell=cell,
                    cell_values=values,
                    strategy=strategy,
                    machine_warning=paced and differ is not None,
                )
                rows.append(row)
    result.notes[:0] = list(dict.fromkeys(reasons))
    if unpaced:
        named = [c.name for c in chosen if c.name in unpaced]
        result.notes.append(
            "not compared, as one engine runs in real time and the other keeps model time: "
            f"{', '.join(named)} (the engine's pace, not the scheduler's)"
        )
    if not any_real_time:
        result.notes.append(
            "model time on both: simulated figures (CV, failures, model-time latencies) do "
            "not depend on the machine they ran on"
        )
    if differ is not None and any(r["machine_warning"] for r in rows):
        result.warnings.append(
            f"machines differ ({differ}): time-based columns are compared with a warning"
        )
    result.rows = pd.DataFrame(rows, columns=SCHEMA.names)
    return result


def _faithful(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.drop(index=overloaded(rows).index)


def _overload_notes(
    result: Result,
    base_cells: dict[str, tuple[int | None, pd.DataFrame]],
    new_cells: dict[str, tuple[int | None, pd.DataFrame]],
    common: list[str],
    faithful_only: bool,
) -> None:
    """Which seeds of each side ran overloaded, for the reader and the exit code."""
    for name, side, cells in (("base", result.base, base_cells), ("new", result.new, new_cells)):
        found = []
        for values in common:
            over = overloaded(cells[values][1])
            if len(over):
                where = f"cell {values}: " if values else ""
                found.append(f"{where}{seeds_text(over)}")
        if not found:
            continue
        done = "left out" if faithful_only else "not judged"
        result.overloaded.append(
            f"{name} ({side.folder}) ran overloaded in {'; '.join(found)}: "
            f"its time keeping failed, so the figures may describe the machine; {done}"
        )


def _versions(result: Result) -> None:
    """Notes on what ran each side: the harness's version and path, and the plugins."""
    sides = (result.base.meta, result.new.meta)
    versions = [_harness(m) for m in sides]
    if versions[0] == versions[1]:
        dirty = (sides[0].get("machine") or {}).get("git_dirty")
        maybe = ": the code may differ" if dirty else ""
        result.notes.append(f"harness {versions[0]} on both{maybe}")
    else:
        result.notes.append(f"harness {versions[0]} -> {versions[1]}")
    plugins = [_plugins(m) for m in sides]
    gone, added = sorted(plugins[0] - plugins[1]), sorted(plugins[1] - plugins[0])
    if gone or added:
        changes = [f"-{p}" for p in gone] + [f"+{p}" for p in added]
        result.notes.append(f"plugins: {' '.join(changes)}")
    elif plugins[0]:
        result.notes.append("plugins: the same on both")


def _harness(meta: dict[str, Any]) -> str:
    """The harness that wrote a run: its version, whether the compiled path ran, and the
    commit of its code when it ran from a git checkout (`machine.code_commit`)."""
    machine = meta.get("machine") or {}
    path = machine.get("harness_path", "path not recorded")
    commit = machine.get("git_commit")
    at = ""
    if commit:
        at = f" at {commit[:12]}" + (
            " with uncommitted changes" if machine.get("git_dirty") else ""
        )
    return f"{meta.get('harness_version', '?')} ({path}){at}"


def _plugins(meta: dict[str, Any]) -> set[str]:
    """Each part of the placement pipeline and strategy that ran, with where it came from."""
    found = meta.get("plugins") or []
    if isinstance(found, dict):  # {algorithm, k, uniform, parts}
        found = found.get("parts") or []
    if not found and "cells" in meta:
        found = [p for c in meta["cells"] for p in c.get("plugins", [])]
    return {
        f"{p.get('kind')}:{p.get('name')}"
        + ("" if p.get("from") in ("harness", p.get("name")) else f" ({p.get('from')})")
        for p in found
        if isinstance(p, dict)
    }


def _seed_pairs(base: pd.DataFrame, new: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The row positions in `base` and in `new` of each seed both hold, as a merge on the seed
    pairs them: found once for every column, where a merge per column cost more than the
    column's test."""
    joined = (
        base[["seed"]]
        .assign(at_base=np.arange(len(base)))
        .merge(new[["seed"]].assign(at_new=np.arange(len(new))), on="seed")
    )
    return joined["at_base"].to_numpy(), joined["at_new"].to_numpy()


def _compare_column(
    column: Column,
    base: pd.DataFrame,
    new: pd.DataFrame,
    pairs: tuple[np.ndarray, np.ndarray] | None,
    band: NoiseBand,
) -> dict[str, Any] | None:
    """One row of the comparison, or None when a side has no value of the column. Paired seed
    by seed when `pairs` (`_seed_pairs`) is given, a pair with a missing value left out."""
    if column.name not in base or column.name not in new:
        return None
    if pairs is not None:
        b = base[column.name].iloc[pairs[0]].astype(float).to_numpy()
        n = new[column.name].iloc[pairs[1]].astype(float).to_numpy()
        both = ~(np.isnan(b) | np.isnan(n))
        b, n = b[both], n[both]
        if b.size == 0:
            return None
        lo, hi, p = paired_test(b, n)
    else:
        b = base[column.name].astype(float).to_numpy()
        n = new[column.name].astype(float).to_numpy()
        b, n = b[~np.isnan(b)], n[~np.isnan(n)]
        if b.size == 0 or n.size == 0:
            return None
        lo, hi, p = unpaired_test(b, n)
    base_mean, new_mean = float(b.mean()), float(n.mean())
    change = new_mean - base_mean
    needed = band.absolute(base_mean)
    return {
        "unit": column.unit,
        "direction": column.direction.value,
        "test": "unpaired" if pairs is None else "paired",
        "n_base": int(b.size),
        "n_new": int(n.size),
        "base": base_mean,
        "new": new_mean,
        "change": change,
        "change_lo": lo,
        "change_hi": hi,
        "relative": change / base_mean if base_mean else math.nan,
        "p": p,
        "min_effect": needed,
        "verdict": verdict(column, change, (lo, hi), p, needed),
    }


NOTES = b"harness.comparison"
"""The key of the Parquet metadata holding what was compared and the notes."""


def write(result: Result, path: Path) -> Path:
    """The comparison's rows as Parquet at `path` (atomically), with the folders compared and
    the notes in the file's metadata, for the report."""
    rows = result.rows.astype({"cell": "Int32"}) if len(result.rows) else result.rows
    said = {
        "base": str(result.base.folder),
        "new": str(result.new.folder),
        "notes": result.notes,
        "warnings": [*result.overloaded, *result.warnings],
    }
    schema = SCHEMA.with_metadata({NOTES: json.dumps(said).encode()})
    table = pa.Table.from_pandas(rows, schema=SCHEMA, preserve_index=False).cast(schema)
    write_parquet(path, schema, [table])
    return path


def read(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The rows and what was said of a comparison.parquet, or ResultsError saying why not."""
    table = read_columns(path, SCHEMA.names)
    try:
        said = json.loads((table.schema.metadata or {}).get(NOTES, b"{}"))
    except ValueError:
        said = {}
    return table.select(SCHEMA.names).to_pandas(), said if isinstance(said, dict) else {}
