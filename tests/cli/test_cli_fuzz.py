"""Generated command lines: `harness` exits 0, or 2 with exactly one `harness: error:` line on
stderr; never a traceback, never another exit code.

The argv are drawn over the commands, their flags and values, odd strings included (empty,
accents, newlines, leading dashes, a byte that is not UTF-8 as argv brings it: a lone
surrogate; never NUL, which no argv holds), with config files from the config fuzz test's
generators and --out targets in a fresh folder under the test's tmp (new, nested, an existing
empty folder, a finished run, odd names). What runs is kept tiny, on the virtual engine only;
a sweep that would start Ray stops at `run_sweep`, stubbed."""

from __future__ import annotations

import io
import shutil
import tomllib
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import harness.running.sweep_runner
from harness.cli import main, parse_args
from harness.cli.run import run_config
from harness.config import ConfigError
from tests.support.cli_in_process import parser_built_once, pictures_drawn_once
from tests.support.configs import CONFIGS
from tests.support.generated_configs import (
    SECTION_KEYS,
    bounded,
    near,
    raw_configs,
    small,
    toml_value,
    write_config,
)
from tests.support.tiers import examples, slow

HERD = CONFIGS / "seed-herd.toml"
KEYS = {f"{s}.{k}": default for s, keys in SECTION_KEYS.items() for k, default in keys.items()}
ODD_NAMES = ["sp ace", "ünï", "-dash", "x\ny", ".hidden", "a'b\"c", "\udcff", "tab\tx"]
"""File and folder names; each is a valid name on Linux."""
ODD = st.one_of(
    st.sampled_from(["", " ", "-", "--x", "=", "é", "\n", "\udcff", "../x", "1e999", "nan", "["]),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=6),
)
"""Any value a user could type, now and then."""


class SweepStarted(Exception):
    """`harness sweep` reached `run_sweep`, which would start Ray."""


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run folder of seed-herd, one seed, for --out and `report` to meet (without
    a report.html: `report` draws one, and a run into it is refused before one is read)."""
    out = tmp_path_factory.mktemp("finished") / "run"
    argv = ["run", str(HERD), "--seeds", "1", "--out", str(out), "--quiet", "--no-report"]
    with redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    return out


@pytest.fixture(autouse=True)
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    def started(*args: Any, **kwargs: Any) -> None:
        raise SweepStarted

    monkeypatch.setattr(harness.running.sweep_runner, "run_sweep", started)


def target(kind: str, tmp: Path, finished: Path) -> str:
    """A folder for --out or `report` in `tmp`: see `TARGETS`."""
    if kind == "nested":
        return str(tmp / "a" / "b" / "c")
    if kind == "empty folder":
        (tmp / "empty").mkdir(exist_ok=True)
        return str(tmp / "empty")
    if kind == "finished run":
        if not (tmp / "finished").exists():
            shutil.copytree(finished, tmp / "finished")
        return str(tmp / "finished")
    if kind == "broken run.json":
        (tmp / "broken").mkdir(exist_ok=True)
        (tmp / "broken" / "run.json").write_text("{")
        return str(tmp / "broken")
    if kind == "a file":
        (tmp / "file").write_text("x")
        return str(tmp / "file")
    if kind == "under a file":
        (tmp / "file").write_text("x")
        return str(tmp / "file" / "out")
    if kind == "long name":
        return str(tmp / ("x" * 300))
    if kind.startswith("named "):
        return str(tmp / kind.removeprefix("named "))
    return str(tmp / "out")


TARGETS = [
    "new",
    "nested",
    "empty folder",
    "finished run",
    "broken run.json",
    *(f"named {name}" for name in ODD_NAMES),
    "a file",
    "under a file",
    "long name",
]
"""Where --out or `report` points, besides missing."""


def config_file(draw: st.DrawFn, tmp: Path) -> str:
    """A `harness run` config: seed-herd or a generated one (some under an odd name), else
    missing, a folder, not UTF-8 or not TOML."""
    kinds = ["generated"] * 4 + ["seed-herd"] * 6 + ["odd name", "missing", "dir", "bytes", "bad"]
    kind = draw(st.sampled_from(kinds))
    path = tmp / "c.toml"
    if kind == "seed-herd":
        return str(HERD)
    if kind in ("generated", "odd name"):
        if kind == "odd name":
            path = tmp / f"{draw(st.sampled_from(ODD_NAMES))}.toml"
        write_config(draw(raw_configs()), path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "bytes":
        path.write_bytes(b"[run]\nname = '\xff'\n")
    elif kind == "bad":
        path.write_text(draw(st.sampled_from(["[run", "run = 3", "x = ", "[[cluster]]", "é = 1"])))
    return str(path)


def sweep_file(draw: st.DrawFn, tmp: Path) -> str:
    """A sweep file over a generated base, the shipped seed-herd, or a missing one; mostly a
    [grid] of one or two keys, now and then a [set] or a section a sweep does not have."""
    write_config(draw(raw_configs()), tmp / "c.toml")
    base = draw(st.sampled_from(['"c.toml"', '"missing.toml"', f'"{HERD}"', f'"{HERD}"', "3"]))
    lines = ["[sweep]", f"base = {base}"]
    if draw(st.booleans()):
        lines.append(f"seeds = {toml_value(draw(near('1')))}")
    extra = st.lists(st.sampled_from(["set", "set", "set", "extra"]), max_size=1)
    for section in ["grid", *draw(extra)] if draw(st.integers(0, 9)) else draw(extra):
        lines.append(f"[{section}]")
        keys = st.lists(st.sampled_from([*KEYS, "bogus.key"]), min_size=1, max_size=2, unique=True)
        for key in draw(keys):
            default = tomllib.loads(f"v = {KEYS.get(key, '1')}")["v"]
            roll = draw(st.integers(0, 2))
            if roll == 2:
                value = draw(st.lists(near(KEYS.get(key, "1")), max_size=3))
            else:
                value = "all" if roll == 0 else [default]
            lines.append(f'"{key}" = {toml_value(value)}')
    path = tmp / "s.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def a_set(draw: st.DrawFn, clean: bool) -> str:
    """A --set: a known key with a value around its range, else (unless `clean`) anything."""
    key = draw(st.sampled_from(list(KEYS)))
    roll = draw(st.integers(2 if clean else 0, 5))
    if roll == 0:
        return draw(ODD)
    if roll == 1:
        return f"{key}={draw(ODD)}"
    return f"{key}={toml_value(draw(near(KEYS[key])))}"


def options(draw: st.DrawFn, command: str, clean: bool) -> list[str]:
    """Flags of `command` with drawn values: plausible ones when `clean`, else any value and
    now and then flags it does not have."""
    choices = {
        "--seeds": st.sampled_from(["1", "2", "0", "-1", "abc", "1.5"]),
        "--compare": st.sampled_from(["stale", "stale,optimistic", "optimistic", ",", "x"]),
        "--engine": st.sampled_from(["virtual", "gpu", "", "Virtual"]),
        "--address": st.just("127.0.0.1:1"),
    }
    flags = ["--quiet"] * 3 + ["--force"] * 2
    if clean:
        choices = {"--seeds": st.just("1"), "--compare": st.just("stale,optimistic")}
    else:
        choices = {name: st.one_of(values, ODD) for name, values in choices.items()}
        flags += ["--bogus", "-h"]
    if command == "sweep":
        choices.pop("--compare", None)
        choices.pop("--engine", None)
    pool = [*choices, *["--set"] * 3, *flags]
    argv: list[str] = []
    for name in draw(st.lists(st.sampled_from(pool), max_size=5)):
        if name in flags:
            argv.append(name)
        elif name == "--set":
            argv += [name, a_set(draw, clean)]
        else:
            argv += [name, draw(choices[name])]
    return argv


def tiny(argv: list[str]) -> list[str] | None:
    """`argv` with the caps a run needs to stay short (`bounded`), or None when the config it
    stands for is valid but too big to run here; argv the CLI refuses are kept as they are."""
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            args = parse_args(argv)
    except (ConfigError, SystemExit):
        return argv
    if args is None or args.command != "run":
        return argv
    try:
        config, strategies = run_config(args)
    except ConfigError:
        return argv
    if not small(config) or config.run.seeds * len(strategies) > 4:
        return None
    assert config.run.engine == "virtual"  # nothing here may start Ray
    b = bounded(config)
    caps = [f"placement.deadline_s={b.placement.deadline_s}"]
    caps.append(f"workload.failure_backoff_s={b.workload.failure_backoff_s}")
    return [*argv, *(arg for cap in caps for arg in ("--set", cap))]


@st.composite
def command_lines(draw: st.DrawFn, tmp: Path, finished: Path) -> list[str]:
    """`harness` and its arguments. Half the runs are plausible (plausible flags, a quarter
    of them on seed-herd); the other runs and every other command draw anything."""
    command = draw(st.sampled_from(["run"] * 8 + ["sweep"] * 2 + ["report"] * 2 + ["bogus", ""]))
    if command == "report":
        where = target(draw(st.sampled_from(TARGETS)), tmp, finished)
        return ["report", where, *draw(st.lists(st.just("--bogus"), max_size=1))]
    if command not in ("run", "sweep"):
        return [command] if command else []
    out = target(draw(st.sampled_from(TARGETS)), tmp, finished)
    clean = command == "run" and draw(st.booleans())
    if command == "sweep":
        file = sweep_file(draw, tmp)
    else:
        file = str(HERD) if clean and draw(st.booleans()) else config_file(draw, tmp)
    argv = [command, file, *options(draw, command, clean)]
    if "--seeds" not in argv:
        argv += ["--seeds", "1"]
    # Always an --out under tmp, last: never results/ in the working directory.
    return [*argv, "--out", out]


def outcome(argv: list[str]) -> tuple[int | str | None, str]:
    """(exit code, stderr) of `harness argv`; --help exits through SystemExit."""
    err = io.StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = main(argv)
    except SystemExit as e:
        code = e.code
    return code, err.getvalue()


def assert_contract(code: int | str | None, err: str) -> None:
    assert "Traceback" not in err
    assert code in (0, 2), err
    if code == 2:
        assert err.startswith("harness: error: ") and err.count("\n") == 1, err


@examples(fast=10, full=150)
def test_the_cli_exits_0_or_2_with_one_line(examples, tmp_path_factory, finished_run, monkeypatch):
    parser_built_once(monkeypatch)
    pictures_drawn_once(monkeypatch)

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        tmp = tmp_path_factory.mktemp("cli")
        argv = tiny(data.draw(command_lines(tmp, finished_run)))
        if argv is None:
            event("valid, too big to run here")
            return
        try:
            code, err = outcome(argv)
        except SweepStarted:
            event("sweep reached Ray (stubbed)")
            return
        event(f"{argv[0] if argv else 'no command'}: exit {code}")
        assert_contract(code, err)

    one()


def check_target(command: str, kind: str, tmp: Path, finished: Path) -> None:
    """`harness run` (a valid tiny config) with --out at the target, or `harness report` of
    it: the contract holds whatever the target is."""
    where = target(kind, tmp, finished)
    if command == "report":
        assert_contract(*outcome(["report", where]))
        return
    assert_contract(*outcome(["run", str(HERD), "--seeds", "1", "--quiet", "--out", where]))


SLOW_RUNS = {"nested", "empty folder"} | {
    f"named {name}" for name in ODD_NAMES if name not in ("\udcff", "x\ny")
}
"""The targets whose run (a report drawn into the folder) is in the slow tier only. The fast
tier keeps a new folder, the targets a run is refused, and of the odd names a byte that is not
UTF-8 and a newline, the two a path's printing trips over."""


@pytest.mark.parametrize(
    "command,kind",
    [("run", kind) if kind not in SLOW_RUNS else slow("run", kind) for kind in TARGETS]
    + [("report", kind) for kind in TARGETS],
)
def test_every_target_meets_the_contract(command, kind, tmp_path, finished_run):
    """Each --out and `report` target once, whatever the fuzz test happens to draw."""
    check_target(command, kind, tmp_path, finished_run)
