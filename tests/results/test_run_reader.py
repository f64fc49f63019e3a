"""Reading a damaged folder: `harness report` on a run, a seed or a sweep whose files were cut,
altered or deleted says so in one line naming the file, and `--resume` runs a damaged part's
seed again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cli import main
from harness.config.sweep_file import load_sweep
from harness.engines import virtual
from harness.results.arrow_schemas import TABLES
from harness.results.run_reader import PARTS, load_run
from harness.results.run_writer import RunWriter
from harness.results.sweep_folder import SweepStore
from tests.support.configs import scenario
from tests.support.durability import (
    HERD,
    QUIET,
    consistent,
    one_line,
    signals_at,
    sweep_file,
)
from tests.support.tiers import slow

# -- harness report on a damaged folder ------------------------------------------------------


def _foreign_table(path: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2], "y": ["a", "b"]}), path)


def _wrong_types(path: Path) -> None:
    table = pq.read_table(path)
    column = table.schema.names[2]  # strategy, t, or the like: made text no number reads
    text = pa.array(["not a number"] * len(table)) if len(table) else pa.array([], pa.string())
    if pa.types.is_string(table.schema.field(column).type):
        text = pa.array([[1]] * len(table), pa.list_(pa.int64()))
    pq.write_table(table.set_column(2, column, text), path)


DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "empty": lambda p: p.write_bytes(b""),
    "not-utf8": lambda p: p.write_bytes(b"\xff\xfe\x00garbage"),
    "foreign-schema": _foreign_table,
    "wrong-types": _wrong_types,
}
JSON_DAMAGE = {
    "truncated": lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]),
    "empty": lambda p: p.write_text(""),
    "list": lambda p: p.write_text("[]"),
    "number": lambda p: p.write_text("42"),
    "empty-object": lambda p: p.write_text("{}"),
    "config-a-list": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "config": []})
    ),
    "config-wrong-value": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "config": {"cluster": {"nodes": "many"}}})
    ),
    "seeds-a-string": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "seeds": "0"})
    ),
    "seeds-of-lists": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "seeds": [[0], [1]]})
    ),
    "not-utf8": lambda p: p.write_bytes(b"\xff\xfe{"),
}


@pytest.mark.parametrize(
    "file,damage",
    [(f"{t}.parquet", d) for t in TABLES for d in DAMAGE] + [("run.json", d) for d in JSON_DAMAGE],
)
def test_report_on_a_damaged_run_is_one_line_naming_the_file(
    file, damage, good_run, tmp_path, capsys
):
    out = tmp_path / "damaged"
    shutil.copytree(good_run, out)
    (JSON_DAMAGE if file == "run.json" else DAMAGE)[damage](out / file)
    assert main(["report", str(out)]) == 2
    one_line(capsys.readouterr().err, "harness: error: ", file)


def test_report_on_a_damaged_seed_of_an_unclosed_run_is_one_line(tmp_path, capsys):
    config = scenario(run={"duration_s": 2.0, "seeds": 2})
    writer = RunWriter(tmp_path, config.to_dict(), ["stale"], [0, 1], "virtual")
    writer.add(virtual.VirtualEngine().run_seed(config, 0))
    writer._lock.release()
    for damaged in ("{", "{}", "[]", '{"strategy": "stale", "seed": "0"}'):
        (tmp_path / PARTS / "00000" / "seed.json").write_text(damaged)
        assert main(["report", str(tmp_path)]) == 2
        one_line(capsys.readouterr().err, "seed.json")


# -- damaged parts of an unfinished run: report names them, --resume runs their seed again ---


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory) -> Path:
    """A run of 3 seeds interrupted as its third began: parts 00000 and 00001 kept."""
    out = tmp_path_factory.mktemp("stopped") / "run"
    args = ["run", HERD, "--seeds", "3", "--set", "run.duration_s=2", *QUIET, "--out", str(out)]
    with pytest.MonkeyPatch.context() as monkeypatch:
        signals_at(monkeypatch, "seed#3=INT")
        assert main(args) == 130
    return out


def _bit_flipped(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _seed_json(change):
    def damage(path: Path) -> None:
        path.write_text(json.dumps(change(json.loads(path.read_text()))))

    return damage


def _first_file(change):
    def edit(record: dict) -> dict:
        name = next(iter(record["files"]))
        return {**record, "files": {**record["files"], name: change(record["files"][name])}}

    return _seed_json(edit)


PART_DAMAGE = {**DAMAGE, "bit-flipped": _bit_flipped, "deleted": lambda p: p.unlink()}
SEED_JSON_DAMAGE = {
    **{k: JSON_DAMAGE[k] for k in ("truncated", "empty", "list", "number", "not-utf8")},
    "empty-object": JSON_DAMAGE["empty-object"],
    "files-dropped": _seed_json(lambda r: {k: v for k, v in r.items() if k != "files"}),
    "files-emptied": _seed_json(lambda r: {**r, "files": {}}),
    "rows-altered": _first_file(lambda f: {**f, "rows": f["rows"] + 1}),
    "checksum-altered": _first_file(lambda f: {**f, "sha256": "0" * 64}),
    "checksum-a-number": _first_file(lambda f: {**f, "sha256": 7}),
}
PART_CASES = [(f"{t}.parquet", d) for t in TABLES for d in PART_DAMAGE] + [
    ("seed.json", d) for d in SEED_JSON_DAMAGE
]
FAST_PART_CASES = {("nodes.parquet", "deleted"), ("seed.json", "checksum-altered")}
"""The damaged parts the fast tier tries (the table once silently gathered without its file,
and a record that no longer vouches for its file); the slow tier tries every one."""


@pytest.mark.parametrize(
    "file,damage",
    [case if case in FAST_PART_CASES else slow(*case) for case in PART_CASES],
    ids=[f"{f}-{d}" for f, d in PART_CASES],
)
def test_a_damaged_part_is_named_by_report_and_run_again_by_resume(
    file, damage, stopped_run, tmp_path, capsys
):
    """A damaged part jammed the folder (a traceback on every resume), and a part
    missing nodes.parquet was gathered without it, silently. Now report names the file in one
    line (exit 2); --resume names it in one line, runs that seed again and completes, the
    undamaged part kept as it was."""
    out = tmp_path / "damaged"
    shutil.copytree(stopped_run, out)
    kept = load_run(out)[1]
    (PART_DAMAGE if file.endswith(".parquet") else SEED_JSON_DAMAGE)[damage](
        out / PARTS / "00000" / file
    )
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    one_line(capsys.readouterr().err, "harness: error: ", str(out / PARTS / "00000"), file)
    assert main(["run", "--resume", str(out), *QUIET]) == 0
    one_line(capsys.readouterr().err, str(out / PARTS / "00000"), file, "its seed runs again")
    meta = consistent(out)
    assert meta["completed"] and meta["finished"] == [["stale", 0], ["stale", 1], ["stale", 2]]
    assert not (out / PARTS).exists()
    frames = load_run(out)[1]
    for name in TABLES:  # seed 1 was not run again: its rows are those kept
        again = frames[name][frames[name]["seed"] == 1].reset_index(drop=True)
        before = kept[name][kept[name]["seed"] == 1].reset_index(drop=True)
        pd.testing.assert_frame_equal(again, before, check_exact=True)


SWEEP_DAMAGE = {
    "sweep.json": {
        "list": "[]",
        "empty-object": "{}",
        "truncated": '{"name": "s", "cells": [',
        "cells-a-number": lambda meta: {**meta, "cells": 3},
        "cell-without-status": lambda meta: {
            **meta,
            "cells": [{k: v for k, v in c.items() if k != "status"} for c in meta["cells"]],
        },
        "base-not-valid": lambda meta: {
            **meta,
            "identity": {**meta["identity"], "base": {"cluster": {"nodes": "many"}}},
        },
    },
}


@pytest.mark.parametrize("damage", list(SWEEP_DAMAGE["sweep.json"]))
def test_report_on_a_damaged_sweep_is_one_line_naming_the_file(damage, tmp_path, capsys):
    out = tmp_path / "sweep-out"
    SweepStore(out, load_sweep(sweep_file(tmp_path))).close()
    assert main(["report", str(out)]) == 0  # whole, it reports (no cell complete yet)
    capsys.readouterr()
    change = SWEEP_DAMAGE["sweep.json"][damage]
    meta = json.loads((out / "sweep.json").read_text())
    text = change if isinstance(change, str) else json.dumps(change(meta))
    (out / "sweep.json").write_text(text)
    assert main(["report", str(out)]) == 2
    one_line(capsys.readouterr().err, "harness: error: ", "sweep.json")


def test_report_on_a_sweep_whose_summary_is_foreign_is_one_line(tmp_path, capsys):
    out = tmp_path / "sweep-out"
    SweepStore(out, load_sweep(sweep_file(tmp_path))).close()
    _foreign_table(out / "summary.parquet")
    assert main(["report", str(out)]) == 2
    one_line(capsys.readouterr().err, "summary.parquet", "lacks the column")
