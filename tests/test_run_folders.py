"""Results folders: `run.name` (and a sweep's name) must be a plain file name under results/,
one line and exit 2 otherwise, with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.config import ConfigError, from_dict
from harness.sweep_spec import load_sweep
from tests.conftest import CONFIGS

HERD = str(CONFIGS / "seed-herd.toml")
SHORT = ["--seeds", "1", "--set", "run.duration_s=2", "--quiet"]


def _one_error_line(capsys: pytest.CaptureFixture[str], *parts: str) -> str:
    """The single stderr line of a refused command, which must name every one of `parts`."""
    err = capsys.readouterr().err
    assert err.startswith("harness: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for part in parts:
        assert part in err, (part, err)
    return err


# -- run.name ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,reason",
    [
        ("nul\0byte", "control character"),
        ("two\nlines", "control character"),
        ("x" * 201, "at most 200 bytes"),
        ("é" * 101, "at most 200 bytes"),
        ("/tmp/elsewhere", "a file name"),
        ("../../x", "a file name"),
        ("a/b", "a file name"),
        ("..", "a file name"),
        (".", "a file name"),
        ("", "empty"),
    ],
)
def test_run_name_must_be_a_plain_file_name(name, reason):
    with pytest.raises(ConfigError) as err:
        from_dict({"run": {"name": name}})
    assert err.value.key == "run.name" and reason in err.value.reason


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/escaped", "line\nbreak"])
def test_a_run_name_never_writes_outside_results(name, tmp_path, monkeypatch, capsys):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    assert main(["run", HERD, *SHORT, "--set", f"run.name={name}"]) == 2
    _one_error_line(capsys, "run.name")
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*")] == [Path("a"), Path("a/b")]


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/escaped", "tab\there"])
def test_a_sweep_name_must_be_a_plain_file_name_too(name, tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\nname = {json.dumps(name)}\n'
        '[grid]\n"placement.k" = [2, 3]\n'
    )
    with pytest.raises(ConfigError) as err:
        load_sweep(path)
    assert err.value.key == "sweep.name"


def test_a_long_plain_run_name_still_fits_the_folder_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", HERD, *SHORT, "--set", f"run.name={'n' * 200}"]) == 0
