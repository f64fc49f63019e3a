"""Search files: a base scenario, a space of dotted keys, and an objective a searcher drives
to its worst (`harness search`; the runner is `harness.running.search_runner`).

```toml
[search]
base = "../seed-herd.toml"                  # relative to this file
objective = "maximize optimistic.cv_mean"   # STRATEGY.METRIC_AGGREGATE, or two of them
                                            # joined by - or /
seeds = 5                                   # per trial (default: the base's run.seeds)
trials = 200                                # and/or wall_s = 300
searcher = "tpe"                            # tpe | cmaes | random | grid
seed = 0                                    # the searcher's seed: same seed, same trials

[set]                                       # optional: fixed changes to the base
"run.duration_s" = 10.0

[space]
"placement.replicas" = { int = [1, 8] }
"heartbeat.interval_s" = { low = 1.0, high = 60.0, log = true }
"placement.k" = { choices = [2, 3, 5] }
```

Every mistake is a ConfigError naming the key (exit 2 in the CLI), found before anything runs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from harness.config import (
    Config,
    ConfigError,
    check_folder_name,
    flatten,
    load,
    parse_override,
    parse_toml,
    stored_config,
)
from harness.config.sweep_file import get_value
from harness.model.registry import RegistryError
from harness.model.scheduling.strategies import STRATEGIES
from harness.results.thresholds import (
    AGGREGATE_NAMES,
    ThresholdError,
    aggregated,
    metric_and_aggregate,
)

SEARCHERS = {
    "tpe": "TPESampler",
    "cmaes": "CmaEsSampler",
    "random": "RandomSampler",
    "grid": "GridSampler",
}
"""Each searcher's name, and the Optuna sampler that is it (`harness.running.search_runner`)."""
DEFAULT_SEARCHER = "tpe"
_SECTIONS = {"search", "set", "space"}
_HEAD = {
    "base": "the base scenario file, relative to this file",
    "name": "the results folder's default name (results/<name>)",
    "objective": "maximize|minimize TERM [- or / TERM], a TERM being STRATEGY.METRIC_AGGREGATE",
    "seeds": "seeds per trial",
    "trials": "how many trials at most",
    "wall_s": "how many seconds of searching at most",
    "searcher": ", ".join(SEARCHERS),
    "seed": "the searcher's seed",
    "batch": "trials asked for at once (and run in parallel)",
    "shrink_tolerance": "how far below the best (a fraction of it) the minimal scenario may be",
    "confirm_seeds": "fresh seeds the best and minimal scenarios are confirmed on",
    "max_creates": "a constraint: points of the space sending more creates a seed are not run",
}
_OBJECTIVE = re.compile(r"\s*(maximize|minimize)\s+(\S+)\s*(?:([-/])\s*(\S+))?\s*")
_SPACE_FORMS = (
    "{ int = [LOW, HIGH] }, { low = X, high = Y, log = false, step = S } or { choices = [...] }"
)


@dataclass(frozen=True)
class Term:
    """One strategy's summary metric aggregated over the seeds, as a threshold takes it."""

    strategy: str
    metric: str
    aggregate: str

    def value(self, summary: pd.DataFrame) -> float:
        return aggregated(
            summary[summary["strategy"] == self.strategy], self.metric, self.aggregate
        )

    def __str__(self) -> str:
        return f"{self.strategy}.{self.metric}_{self.aggregate}"


@dataclass(frozen=True)
class Objective:
    direction: str
    """maximize or minimize."""
    terms: tuple[Term, ...]
    op: str | None
    """None (one term), "-" (difference) or "/" (ratio) of two terms."""

    @property
    def strategies(self) -> list[str]:
        """The strategies every trial runs: those the terms name."""
        return list(dict.fromkeys(t.strategy for t in self.terms))

    @property
    def sign(self) -> float:
        """+1 when larger is worse for the design (maximize), -1 otherwise."""
        return 1.0 if self.direction == "maximize" else -1.0

    def value(self, summary: pd.DataFrame) -> float:
        """The objective on a summary frame (one row per strategy and seed); NaN when a term
        has no value or a ratio divides by zero."""
        values = [t.value(summary) for t in self.terms]
        if self.op is None:
            return values[0]
        if self.op == "-":
            return values[0] - values[1]
        return values[0] / values[1] if values[1] else math.nan

    def __str__(self) -> str:
        joined = f" {self.op} ".join(str(t) for t in self.terms)
        return f"{self.direction} {joined}"


@dataclass(frozen=True)
class Dimension:
    """One key of the space: an int or float range (log scale, step) or a list of choices."""

    key: str
    kind: str
    """int, float or choices."""
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()

    def grid(self) -> list[Any] | None:
        """Every value a grid search visits, or None when the range is not discrete."""
        if self.kind == "choices":
            return list(self.choices)
        step = self.step if self.step is not None else (1 if self.kind == "int" else None)
        if step is None:
            return None
        count = math.floor((self.high - self.low) / step + 1e-9) + 1
        values = [self.low + i * step for i in range(count)]
        return [int(v) for v in values] if self.kind == "int" else values


@dataclass(frozen=True)
class Search:
    name: str
    base: Config
    """The scenario every trial changes: [set] and the seeds applied."""
    objective: Objective
    space: dict[str, Dimension]
    searcher: str
    seed: int
    trials: int | None
    wall_s: float | None
    batch: int
    shrink_tolerance: float
    confirm_seeds: int
    max_creates: float | None
    """Points whose estimated creates per seed exceed this fail without running."""
    head: dict[str, Any]
    """The [search] table as written (budget included), for search.json and --resume."""
    raw_space: dict[str, Any]

    @property
    def seeds(self) -> list[int]:
        return self.base.run.seed_numbers

    def config(self, values: dict[str, Any]) -> Config:
        """The base with a trial's `values`, running the objective's first strategy; ConfigError
        when they do not make a valid scenario."""
        first = self.objective.strategies[0]
        return self.base.with_values({**values, "placement.strategy": first})

    def base_values(self) -> dict[str, Any]:
        """Each key of the space as the base has it (what shrinking moves back towards)."""
        return {key: get_value(self.base, key) for key in self.space}

    def grid_size(self) -> int | None:
        """How many points a grid search has, or None if a dimension is not discrete."""
        size = 1
        for dim in self.space.values():
            values = dim.grid()
            if values is None:
                return None
            size *= len(values)
        return size

    def identity(self) -> dict[str, Any]:
        """What makes two searches the same: a folder may only be resumed by its own search.
        The budget may change on a resume (`--trials`, `--wall-s`); nothing else may."""
        head = {k: v for k, v in self.head.items() if k not in ("trials", "wall_s")}
        return {
            "base": self.base.to_dict(),
            "head": head,
            "space": self.raw_space,
            "objective": str(self.objective),
            "searcher": self.searcher,
            "seed": self.seed,
            "batch": self.batch,
        }


def _table(raw: dict[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(name, f"must be a table, got {value!r}")
    return value


def _changed(base: Config, values: dict[str, Any], prefix: str = "", key: str = "") -> Config:
    try:
        return base.with_values(values)
    except ConfigError as e:
        raise ConfigError(key or f"{prefix}{e.key}", e.reason) from None


def _number(where: str, value: Any, integer: bool = False) -> float:
    ok = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok or not math.isfinite(value):
        kind = "an integer" if integer else "a number"
        raise ConfigError(where, f"must be {kind}, got {value!r}")
    return value


def parse_objective(text: Any, key: str = "search.objective") -> Objective:
    """`maximize optimistic.cv_mean`, `maximize a.cv_mean - b.cv_mean`, or a ratio with /."""
    match = _OBJECTIVE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ConfigError(key, f"must be {_HEAD['objective']}, got {text!r}")
    terms = []
    for word in (match[2], match[4]):
        if word is None:
            continue
        strategy, dot, name = word.partition(".")
        if not dot:
            raise ConfigError(key, f"{word!r} names no strategy: write STRATEGY.METRIC_AGGREGATE")
        try:
            STRATEGIES.resolve(strategy)
        except RegistryError as e:
            raise ConfigError(key, str(e)) from None
        try:
            metric, aggregate = metric_and_aggregate(name)
        except ThresholdError as e:
            raise ConfigError(key, str(e)) from None
        if aggregate is None:
            raise ConfigError(
                key, f"{word!r} needs an aggregate over seeds ({AGGREGATE_NAMES}), e.g. _mean"
            )
        terms.append(Term(strategy, metric, aggregate))
    if len(terms) == 2 and terms[0] == terms[1]:
        raise ConfigError(key, f"compares {terms[0]} with itself")
    return Objective(match[1], tuple(terms), match[3])


def _values_of(base: Config, where: str, key: str, values: list[Any]) -> list[Any]:
    """Each value validated as `key` of the base; returned as the config holds them."""
    checked = []
    for value in values:
        try:
            checked.append(get_value(base.with_value(key, value), key))
        except ConfigError as e:
            raise ConfigError(where, f"{value!r}: {e.reason}") from None
    return checked


def parse_dimension(base: Config, key: str, spec: Any) -> Dimension:
    """One entry of [space], its bounds or choices checked as values of `key` on the base."""
    where = f"space.{key}"
    if key.count(".") != 1:
        raise ConfigError(where, "must be a dotted key SECTION.KEY, e.g. placement.k")
    try:
        get_value(base, key)
    except AttributeError:
        try:
            base.with_value(key, None)  # names the unknown section or key as a config would
        except ConfigError as e:
            raise ConfigError(f"space.{e.key}", e.reason) from None
        raise ConfigError(where, "is not a key a scenario has") from None
    if key in ("placement.strategy", "run.seeds", "run.first_seed", "run.engine", "run.name"):
        raise ConfigError(where, "is fixed by the search itself; it cannot be searched")
    if not isinstance(spec, dict):
        raise ConfigError(where, f"must be {_SPACE_FORMS}, got {spec!r}")
    forms = [k for k in ("int", "low", "choices") if k in spec]
    allowed = {"int": {"int", "log", "step"}, "low": {"low", "high", "log", "step"}}
    allowed["choices"] = {"choices"}
    if len(forms) != 1:
        raise ConfigError(where, f"must be one of {_SPACE_FORMS}, got {spec!r}")
    form = forms[0]
    for name in spec:
        if name not in allowed[form]:
            raise ConfigError(f"{where}.{name}", f"unknown here; known: {', '.join(allowed[form])}")
    if form == "choices":
        values = spec["choices"]
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}.choices", f"must be a non-empty list, got {values!r}")
        if not all(isinstance(v, bool | int | float | str) for v in values):
            raise ConfigError(f"{where}.choices", f"must be numbers, strings or booleans: {values}")
        checked = _values_of(base, f"{where}.choices", key, values)
        if len({repr(v) for v in checked}) != len(checked):
            raise ConfigError(f"{where}.choices", f"has repeated values: {values}")
        return Dimension(key, "choices", choices=tuple(checked))
    if form == "int":
        pair = spec["int"]
        if not (isinstance(pair, list) and len(pair) == 2):
            raise ConfigError(f"{where}.int", f"must be [LOW, HIGH], got {pair!r}")
        low, high = (_number(f"{where}.int", v, integer=True) for v in pair)
        kind = "int"
    else:
        if "high" not in spec:
            raise ConfigError(f"{where}.high", "is missing: a range needs low and high")
        low, high = _number(f"{where}.low", spec["low"]), _number(f"{where}.high", spec["high"])
        kind = "float"
    if not low < high:
        raise ConfigError(where, f"is an empty range: low {low} is not below high {high}")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise ConfigError(f"{where}.log", f"must be true or false, got {log!r}")
    if log and low <= 0:
        raise ConfigError(f"{where}.log", f"a log scale needs low > 0, got {low}")
    step = spec.get("step")
    if step is not None:
        step = _number(f"{where}.step", step, integer=kind == "int")
        if step <= 0 or step > high - low:
            raise ConfigError(f"{where}.step", f"must be above 0 and at most {high - low}")
        if log:
            raise ConfigError(f"{where}.step", "cannot go with log = true")
    _values_of(base, where, key, [low, high])
    return Dimension(key, kind, low, high, log, step)


def _budget(head: dict[str, Any], key: str) -> Any:
    value = head.get(key)
    if value is None:
        return None
    _number(f"search.{key}", value, integer=key == "trials")
    if value <= 0:
        raise ConfigError(f"search.{key}", f"must be above 0, got {value!r}")
    return value


def _positive_int(head: dict[str, Any], key: str, default: int, low: int = 1) -> int:
    value = head.get(key, default)
    _number(f"search.{key}", value, integer=True)
    if value < low:
        raise ConfigError(f"search.{key}", f"must be at least {low}, got {value!r}")
    return value


def build_search(
    name: str, head: dict[str, Any], raw_space: dict[str, Any], base: Config
) -> Search:
    """A Search from its [search] and [space] tables over a `base` that already has [set] and
    the seeds applied: the one path of a search file and of a folder being resumed."""
    for key in head:
        if key not in _HEAD:
            raise ConfigError(f"search.{key}", f"unknown key; known: {', '.join(_HEAD)}")
    objective = parse_objective(head.get("objective"))
    searcher = head.get("searcher", DEFAULT_SEARCHER)
    if searcher not in SEARCHERS:
        raise ConfigError(
            "search.searcher", f"unknown searcher {searcher!r}; known: {_HEAD['searcher']}"
        )
    seed = _positive_int(head, "seed", 0, low=0)
    batch = _positive_int(head, "batch", 4)
    confirm = _positive_int(head, "confirm_seeds", 20)
    tolerance = head.get("shrink_tolerance", 0.1)
    _number("search.shrink_tolerance", tolerance)
    if not 0 <= tolerance < 1:
        raise ConfigError("search.shrink_tolerance", f"must be in [0, 1), got {tolerance!r}")
    trials, wall_s = _budget(head, "trials"), _budget(head, "wall_s")
    max_creates = _budget(head, "max_creates")
    if not raw_space:
        raise ConfigError("space", "names no key to search")
    space = {key: parse_dimension(base, key, spec) for key, spec in raw_space.items()}
    search = Search(
        name,
        base,
        objective,
        space,
        searcher,
        seed,
        trials,
        wall_s,
        batch,
        tolerance,
        confirm,
        max_creates,
        dict(head),
        dict(raw_space),
    )
    if searcher == "grid":
        if search.grid_size() is None:
            loose = next(k for k, d in space.items() if d.grid() is None)
            raise ConfigError(
                f"space.{loose}", "a grid search needs choices, an int range or a step"
            )
        if trials is None:
            search = replace(search, trials=search.grid_size())
    elif trials is None and wall_s is None:
        raise ConfigError("search.trials", "a budget is needed: trials = N and/or wall_s = S")
    return search


def with_budget(search: Search, trials: int | None, wall_s: float | None) -> Search:
    """`search` with the budget the command line gives (`--trials`, `--wall-s`)."""
    head = dict(search.head)
    if trials is not None:
        head["trials"] = trials
    if wall_s is not None:
        head["wall_s"] = wall_s
    where = "--trials" if trials is not None else "--wall-s"
    try:
        return build_search(search.name, head, search.raw_space, search.base)
    except ConfigError as e:
        raise ConfigError(where if e.key.startswith("search.") else e.key, e.reason) from None


def stored_search(meta: dict[str, Any], path: Path) -> Search:
    """The search a results folder holds (search.json, read by `harness.results.search_folder`),
    for `--resume DIR`; a ConfigError naming the file if it no longer validates."""
    identity = meta["identity"]
    try:
        base = stored_config(identity["base"], path)
        budget = {k: v for k, v in meta.get("budget", {}).items() if v is not None}
        return build_search(meta["name"], {**identity["head"], **budget}, identity["space"], base)
    except (ConfigError, KeyError, TypeError) as e:
        raise ConfigError(str(path), f"holds a search that is not valid: {e}") from None


def load_search(path: str | Path, overrides: list[str] = ()) -> Search:
    """Read and validate a search file; `overrides` (`key=value`) change the base like [set]."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise ConfigError("", f"cannot read search file {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ConfigError("", f"search file {path} is not UTF-8 text ({e.reason})") from None
    raw = parse_toml(text, path)
    if "search" not in raw:
        raise ConfigError("", f"{path} is not a search file (no [search] table)")
    for section in raw:
        if section not in _SECTIONS:
            raise ConfigError(section, f"unknown section; known: {', '.join(sorted(_SECTIONS))}")
    head = _table(raw, "search")
    if not isinstance(head.get("base"), str):
        raise ConfigError("search.base", "must name the base scenario file, e.g. seed-herd.toml")
    name = head.get("name", path.stem)
    if not isinstance(name, str):
        raise ConfigError("search.name", f"must be a string, got {name!r}")
    check_folder_name("search.name", name)
    base_path = path.parent / head["base"]
    try:
        base = load(base_path)
    except ConfigError as e:
        raise ConfigError(e.key or "search.base", f"{e.reason} (base {base_path})") from None
    base = _changed(base, flatten(_table(raw, "set")), prefix="set.")
    if "seeds" in head:
        base = _changed(base, {"run.seeds": head["seeds"]}, key="search.seeds")
    base = _changed(base, dict(parse_override(t) for t in overrides), prefix="--set ")
    base = replace(base, thresholds=())  # a search judges by its objective, not thresholds
    space = _space_entries(_table(raw, "space"))
    return build_search(name, head, space, base)


def _space_entries(table: dict[str, Any]) -> dict[str, Any]:
    """[space] as {dotted key: spec}: quoted dotted keys, or nested tables down to a spec."""
    entries: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        nested = isinstance(value, dict) and not {"int", "low", "high", "choices"} & value.keys()
        if nested and value and all(isinstance(v, dict) for v in value.values()):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
            return
        entries[prefix] = value

    for key, value in table.items():
        walk(key, value)
    return entries
