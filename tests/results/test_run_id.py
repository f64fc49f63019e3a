"""One run id: the folder a run names for itself, run.json and every table say the same."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from harness.cli import main
from harness.results.arrow_schemas import TABLES
from tests.support.configs import CONFIGS


def test_the_folder_is_named_by_the_run_id_every_table_carries(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["--seeds", "1", "--set", "run.duration_s=2", "--quiet", "--no-report"]
    assert main(["run", str(CONFIGS / "seed-herd.toml"), *args]) == 0
    (folder,) = (tmp_path / "results").iterdir()
    assert folder.name.startswith("seed-herd-")
    assert json.loads((folder / "run.json").read_text())["run_id"] == folder.name
    for name in TABLES:
        ids = pq.read_table(folder / f"{name}.parquet", columns=["run_id"]).column("run_id")
        assert len(ids) > 0 and set(ids.to_pylist()) == {folder.name}, name
