"""Config validation, `--set`, and the CLI: clear one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import PIPED_WIDTH, main
from harness.config import ConfigError, from_dict, parse_override
from harness.config.key_tables import defaults_table
from tests.support.configs import CONFIGS, SCENARIOS, brief_flags, runnable


@pytest.mark.parametrize(
    "raw,key,reason",
    [
        ({"placement": {"k": 0}}, "placement.k", ">= 1"),
        ({"placement": {"kk": 2}}, "placement.kk", "did you mean placement.k"),
        ({"placment": {"k": 2}}, "placment", "did you mean placement"),
        ({"workload": {"rate_per_s": -1}}, "workload.rate_per_s", "> 0"),
        ({"workload": {"arrival": "bursty"}}, "workload.arrival", "one of"),
        ({"cluster": {"nodes": 2.5}}, "cluster.nodes", "an integer"),
        ({"cluster": {"nodes": True}}, "cluster.nodes", "an integer"),
        ({"placement": {"too_many_starting": 1}}, "placement.too_many_starting", "true or false"),
        ({"workload": {"lifetime_s": "forever"}}, "workload.lifetime_s", '"none"'),
        ({"cluster": {"initial_cpu_allocated": [4, 1]}}, "cluster.initial_cpu_allocated", "lo"),
        (
            {"cluster": {"nodes": 3, "initial_cpu_per_node": [1, 2]}},
            "cluster.initial_cpu_per_node",
            "2 values for 3 nodes",
        ),
        (
            {"workload": {"arrival": "closed", "lifetime_s": "none"}},
            "workload.lifetime_s",
            "closed-loop",
        ),
        ({"workload": {"vcpu": 500}}, "workload.vcpu", "cpu_count"),
        ({"cluster": {"nodes": 2}}, "placement.k", "exceeds cluster.nodes 2"),
        ({"run": {"duration_s": float("inf")}}, "run.duration_s", "finite"),
        ({"run": 3}, "run", "a table"),
        (
            {"workload": {"arrival": "burst", "burst_at_s": 30}},
            "workload.burst_at_s",
            "not before run.duration_s",
        ),
    ],
)
def test_bad_values_name_the_key_and_the_reason(raw, key, reason):
    with pytest.raises(ConfigError) as err:
        from_dict(raw)
    assert err.value.key == key
    assert reason in str(err.value)


def test_overrides_are_read_as_toml_values_or_strings():
    assert parse_override("placement.k=2") == ("placement.k", 2)
    assert parse_override("placement.strategy=optimistic") == ("placement.strategy", "optimistic")
    assert parse_override("cluster.initial_cpu_allocated=[1, 3]")[1] == [1, 3]
    with pytest.raises(ConfigError):
        parse_override("placement.k")


def test_every_key_has_help_and_a_valid_default():
    rows = defaults_table()
    assert len(rows) > 30 and all(help_ for _, _, help_ in rows)
    from_dict({})


@pytest.mark.parametrize(
    "report",
    [
        pytest.param(False, id="no-report"),
        # Drawing the report's charts is most of a short run's time: slow for all 13.
        pytest.param(True, id="report", marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("path", runnable(SCENARIOS))
def test_every_shipped_config_runs(path, report, tmp_path):
    out = tmp_path / "out"
    # Shortened to 5 s, except fault scenarios: their faults are timed within the full run.
    shorter = [] if path.name.startswith("faults-") else ["--set", "run.duration_s=5"]
    argv = ["run", str(path), "--seeds", "1", *brief_flags(path), *shorter, "--out", str(out)]
    argv.append("--quiet")
    assert main(argv if report else [*argv, "--no-report"]) == 0
    assert json.loads((out / "run.json").read_text())["completed"] is True
    assert (out / "report.html").exists() == report


def test_run_compare_then_report(tmp_path, capsys):
    out = tmp_path / "herd"
    config = CONFIGS / "seed-herd.toml"
    assert (
        main(
            [
                "run",
                str(config),
                "--seeds",
                "3",
                "--compare",
                "stale,optimistic",
                "--out",
                str(out),
                "--quiet",
                "--no-report",  # `harness report` below writes it
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "stale" in printed and "optimistic" in printed and "node 9 |" in printed
    meta = json.loads((out / "run.json").read_text())
    assert meta["strategies"] == ["stale", "optimistic"] and meta["seeds"] == [0, 1, 2]
    assert meta["config"]["cluster"]["nodes"] == 10 and len(meta["finished"]) == 6
    assert main(["report", str(out)]) == 0
    assert capsys.readouterr().out.count("optimistic") >= 2


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "no-such.toml"], "does not exist"),
        (["run", "{config}", "--set", "placement.k=0"], "placement.k: must be >= 1"),
        (["run", "{config}", "--set", "nope"], "expected key=value"),
        (["run", "{config}", "--compare", "stale,bogus"], "unknown strategy 'bogus'"),
        (["run", "{bad_toml}"], "not valid TOML"),
        (["run", "{latin1}"], "not UTF-8"),
        (["report", "{plain}"], "not a results folder (no run.json) and holds none"),
        (["report", "{bad_toml}"], "is not a folder"),
        (["report", "{garbled}"], "not valid JSON"),
        (["run", "{tmp}"], "is a directory"),
        (["run", "{config}", "--set", "faults.node=1"], "[[faults]]"),
        (["run", "{config}", "--engine", "ray", "--address", "127.0.0.1:1"], "cannot reach"),
        (["run", "{config}", "--engine", "ray", "--address", "nowhere"], "host:port"),
        (["sweep", "{sweep}", "--address", "127.0.0.1:1"], "cannot reach"),
    ],
)
def test_user_mistakes_give_one_line_and_exit_2(argv, message, tmp_path, capsys):
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("[run\n")
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes("name = 'caf\xe9'".encode("latin-1"))
    garbled = tmp_path / "garbled"
    garbled.mkdir()
    (garbled / "run.json").write_text("{not json")
    plain = tmp_path / "plain"
    plain.mkdir()
    values = {
        "plain": str(plain),
        "garbled": str(garbled),
        "sweep": str(CONFIGS / "sweep-heartbeat.toml"),
        "config": str(CONFIGS / "seed-herd.toml"),
        "bad_toml": str(bad_toml),
        "latin1": str(latin1),
        "tmp": str(tmp_path),
    }
    out = tmp_path / "out"
    # Never the default results/<name>: the sweep writes its folder before it reaches Ray, and
    # a complete results/sweep-heartbeat (README's `harness sweep`) would be read, exit 0.
    where = ["--out", str(out)] if argv[0] in ("run", "sweep") else []
    assert main([a.format(**values) for a in argv] + where) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1
    if argv[0] == "run":
        assert not out.exists()


def test_an_interrupted_run_leaves_readable_partial_results(tmp_path, monkeypatch):
    from harness.engines.virtual import VirtualEngine
    from harness.results.run_reader import load_run

    real = VirtualEngine.run_seed
    calls = 0

    def interrupted(self, config, seed, progress=None, rows=None):
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return real(self, config, seed, progress, rows)

    monkeypatch.setattr(VirtualEngine, "run_seed", interrupted)
    out = tmp_path / "partial"
    config = str(CONFIGS / "seed-herd.toml")
    assert main(["run", config, "--out", str(out), "--quiet"]) == 130
    meta, frames = load_run(out)
    assert meta["completed"] is False and meta["error"] == "interrupted"
    assert sorted(frames["summary"]["seed"]) == [0, 1]
    assert set(frames["requests"]["seed"]) == {0, 1}


@pytest.mark.parametrize(
    "text,overrides,message",
    [
        ("[cluster]\ncpu_count = 1000000000000000000000000000000", [], "cluster.cpu_count"),
        ("", ["cluster.cpu_count=1000000000000000000000000000000"], "cluster.cpu_count"),
        (
            "[cluster]\ninitial_cpu_allocated = [0, 2147483648]",
            [],
            "cluster.initial_cpu_allocated[1]",
        ),
        ("[run]\nfirst_seed = 9223372036854775808", [], "run.first_seed"),
        ("[placement]\nk = -9223372036854775809", [], "placement.k"),
    ],
)
def test_an_integer_beyond_32_bits_is_one_line(text, overrides, message, tmp_path, capsys):
    """`cpu_count = 10**30` in a file passed validation and died writing the tables
    (OverflowError, 44 lines, a folder of empty tables left)."""
    err = _refused(text, overrides, tmp_path, capsys)
    assert err.startswith(f"harness: error: {message}: must be an integer within"), err


@pytest.mark.parametrize(
    "text,overrides,message",
    [
        ("run = 3", [], "run: must be a table ([run]), got 3"),
        ('run = "x"', [], "run: must be a table ([run]), got 'x'"),
        ("[[run]]\nseeds = 2", [], "run: must be a table ([run]), got an array of tables"),
        ("[[cluster]]\nnodes = 3", [], "cluster: must be a table ([cluster]), got an array"),
        ("[[cluster]]\nnodes = 3", ["cluster.nodes=4"], "cluster: must be a table ([cluster])"),
        ("cluster = []", ["cluster.nodes=4"], "cluster: must be a table ([cluster]), got []"),
        ("", ["run=3"], "run: must be section.key"),
        ("faults = 3", [], "faults: must be a list of tables ([[faults]]), got 3"),
        ('[faults]\nkind = "crash"', [], "faults: must be a list of tables ([[faults]])"),
        ("[[faults]]\n[[faults]]\nkind = 3", [], "faults[1].kind: must be a string"),
    ],
)
def test_a_section_that_is_not_a_table_is_named(text, overrides, message, tmp_path, capsys):
    """TOML lets a section be a scalar, an array or an array of tables; each is one line."""
    err = _refused(text, overrides, tmp_path, capsys)
    assert err.startswith("harness: error: ") and message in err, err


def _refused(text: str, overrides: list[str], tmp_path: Path, capsys) -> str:
    """`harness run` of a config file holding `text`, with `--set overrides`: exit 2, nothing
    written, one line on stderr, which is returned."""
    path = tmp_path / "c.toml"
    path.write_text(text + "\n")
    sets = [arg for o in overrides for arg in ("--set", o)]
    out = tmp_path / "out"
    assert main(["run", str(path), *sets, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert not out.exists()
    return err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "{config}", "--seeds", "abc"], "argument --seeds: invalid int value: 'abc'"),
        (["run", "{config}", "--engine", "gpu"], "argument --engine: invalid choice: 'gpu'"),
        (["bogus"], "argument command: invalid choice: 'bogus'"),
        (["run"], "config: a scenario TOML file is required (or --resume DIR)"),
        (["run", "{config}", "--nope"], "unrecognized arguments: --nope"),
        (["sweep", "{config}", "--seeds", "1.5"], "argument --seeds: invalid int value: '1.5'"),
        (["report"], "the following arguments are required: dir"),
    ],
)
def test_command_line_mistakes_are_one_line(argv, message, capsys):
    """argparse's own errors take the one-line form of every other mistake, not its usage
    block."""
    values = {"config": str(CONFIGS / "seed-herd.toml")}
    assert main([a.format(**values) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"harness: error: {message}") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "text,message",
    [
        ("[run]\nnäme = 1", "run.näme: not a valid TOML key (c.toml line 2)"),
        ('[run]\n"näme" = 1', "run.näme: unknown key; did you mean run.name?"),
        ("[rün]\nx = 1", "rün: not a valid TOML key (c.toml line 1)"),
        ("[[faults]]\nnode = 1\n[[faults]]\nnöde = 2", "faults[1].nöde: not a valid TOML key"),
        ("[cluster]\nnodes = 3\n[run]\ndüration_s.x = 1", "run.düration_s.x: not a valid"),
        ("[run]\nname = é", "c.toml is not valid TOML: Invalid value (at line 2, column 8)"),
    ],
)
def test_a_non_ascii_key_is_named(text, message, tmp_path, capsys):
    """A bare key outside ASCII is invalid TOML: the line names the key, not only where the
    parser stopped; quoted, it parses and is an unknown key."""
    path = tmp_path / "c.toml"
    path.write_text(text + "\n", encoding="utf-8")
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error: ") and err.count("\n") == 1, err
    assert message in err, err


def test_a_non_ascii_key_in_a_sweep_file_is_named(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text('[sweep]\nbäse = "seed-herd.toml"\n', encoding="utf-8")
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error: sweep.bäse: not a valid TOML key (s.toml line 2)")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "argv,message",
    [
        (["report", "{tmp}/x\ny"], "x\\ny is not a folder"),
        (["run", "{tmp}/a\nb.toml"], "config file {tmp}/a\\nb.toml does not exist"),
        (["run", "{tmp}/\x1b[31mred.toml"], "config file {tmp}/\\x1b[31mred.toml does not"),
        (["run", "{config}", "--compare", "a\rb"], "unknown strategy 'a\\rb'"),
        (["run", "{config}", "--out", "{tmp}/\udcff"], "--out: '{tmp}/\\udcff' is not UTF-8"),
        (["run", "{tmp}/\udcff.toml"], "config file {tmp}/\\udcff.toml does not exist"),
    ],
)
def test_odd_characters_stay_on_one_printable_line(argv, message, tmp_path, capsys):
    """Paths and values as argv brings them: a newline, a carriage return or an escape code in
    a name is shown escaped (one line, nothing for the terminal to act on), and a byte that is
    not UTF-8 (a lone surrogate in argv) can be printed and is refused as an --out."""
    values = {"tmp": str(tmp_path), "config": str(CONFIGS / "seed-herd.toml")}
    argv = [a.format(**values) for a in argv]
    where = [] if "--out" in argv or argv[0] == "report" else ["--out", str(tmp_path / "o")]
    assert main([*argv, *where]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error: ") and err.count("\n") == 1, err
    assert message.format(**values) in err, err
    assert all(c.isprintable() for c in err[:-1]), err
    assert not (tmp_path / "o").exists() and not (tmp_path / "\udcff").exists()


def test_report_of_a_name_too_long_is_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / ("x" * 300))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error: ") and "File name too long" in err, err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "command,path,hint",
    [
        ("sweep", CONFIGS / "seed-herd.toml", "is a scenario file, not a sweep (no [sweep] table)"),
        ("run", CONFIGS / "sweep-heartbeat.toml", "is a sweep file ([sweep])"),
    ],
)
def test_a_file_given_to_the_other_command_names_the_right_one(command, path, hint, capsys):
    other = {"sweep": "run", "run": "sweep"}[command]
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"harness: error: {path} {hint}: run it with harness {other} {path}\n"


DATA_LIBRARIES = ("pandas", "pyarrow", "numpy", "ray", "matplotlib")
"""What a mistake in a config must not wait for: each takes a tenth of a second or more to load
(bench/config_error.py measures the whole)."""


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "{bad}"],
        ["run", "{config}", "--set", "placement.strategy=optimistc"],
        ["run", "{config}", "--threshold", "cv_mediam < 1"],
        ["sweep", "{bad}"],
    ],
)
def test_a_config_error_loads_no_data_library(argv, tmp_path):
    """Checked in a fresh interpreter: the command line and validation import only what
    checking needs, so a mistake is said before pandas, Arrow, numpy or Ray load."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[run]\nname = "x"\nseedz = 3\n')
    args = [a.format(bad=bad, config=CONFIGS / "seed-herd.toml") for a in argv]
    probe = (
        "import sys\nfrom harness.cli import PIPED_WIDTH, main\n"
        f"code = main({args!r})\n"
        f"print(code, [m for m in {DATA_LIBRARIES!r} if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split(" ", 1) == ["2", "[]\n"], (done.stdout, done.stderr)
    assert done.stderr.startswith("harness: error: ") and done.stderr.count("\n") == 1


def test_the_compare_help_names_the_file_compare_writes(capsys):
    """The help names the comparison's file without loading the comparison module (pandas)."""
    from harness.results.comparison import FILE

    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert f"NEW/{FILE}" in capsys.readouterr().out.replace("\n", " ")


def test_harness_alone_prints_the_usage(capsys):
    """`harness` with no command is a question, not a mistake: the help, exit 0."""
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: harness") and all(c in out for c in ("run", "report", "keys"))


@pytest.mark.parametrize(
    "argv,line",
    [
        (["--seeds", "0"], "harness: error: --seeds: must be >= 1"),
        (
            ["--engine", "ray", "--address", "nowhere"],
            "harness: error: --address: must be host:port",
        ),
        (["--set", "run.seeds=0"], "harness: error: run.seeds: must be >= 1"),
    ],
)
def test_a_bad_flag_value_is_named_by_the_flag(argv, line, tmp_path, capsys):
    assert main(["run", str(CONFIGS / "seed-herd.toml"), *argv, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(line)


def test_a_results_folder_given_to_run_points_at_report_and_resume(tmp_path, capsys):
    out = tmp_path / "done"
    assert (
        main(
            [
                "run",
                str(CONFIGS / "seed-herd.toml"),
                "--seeds",
                "1",
                "--quiet",
                "--no-report",
                "--out",
                str(out),
                "--set",
                "run.duration_s=2",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["run", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"`harness report {out}`" in err and f"`harness run --resume {out}`" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(("columns", "widest"), [("72", 72), ("200", 200), (None, PIPED_WIDTH)])
def test_piped_output_takes_its_width_from_columns(columns, widest, monkeypatch, capsys):
    """Output to a pipe is as wide as `COLUMNS` says, else PIPED_WIDTH; `harness keys`
    fills the width it is given (its tables wrap their text)."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert main(["keys"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) == widest


def test_the_checked_config_is_declared_in_a_module_of_its_own():
    """`Config` and `from_dict` are `harness.config.config`'s; validation checks sections and
    names no `Config`, so neither module imports the other's result."""
    import harness.config
    from harness.config import config, validation

    assert harness.config.Config is config.Config
    assert config.Config.__module__ == "harness.config.config"
    assert harness.config.from_dict is config.from_dict
    assert not hasattr(validation, "Config") and not hasattr(validation, "from_dict")
