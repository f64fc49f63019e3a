"""A run's files: compact (few row groups, zstd), joinable (the run id on every row, in run.json
too), nulls rather than empty strings, and readable after a crash that left no time to close."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from harness.config import load
from harness.engines.virtual import VirtualEngine
from harness.results.arrow_schemas import TABLES
from harness.results.run_reader import PARTS, load_run
from harness.results.run_writer import RunWriter
from harness.running.runner import run
from tests.support.configs import CONFIGS, scenario


def test_a_finished_run_has_one_compact_file_per_table_with_its_run_id(tmp_path):
    config = load(CONFIGS / "seed-herd.toml", ["run.seeds=4", "run.duration_s=5"])
    out = run(config, ["stale", "optimistic"], tmp_path / "run")
    run_id = json.loads((out / "run.json").read_text())["run_id"]
    assert run_id.startswith("seed-herd-")
    assert not (out / PARTS).exists()
    for name, schema in TABLES.items():
        file = pq.ParquetFile(out / f"{name}.parquet")
        assert file.schema_arrow.equals(schema)
        assert file.metadata.num_row_groups == 1  # 8 seeds, one row group
        assert file.metadata.row_group(0).column(0).compression == "ZSTD"
        assert set(file.read(columns=["run_id"]).column(0).to_pylist()) == {run_id}
    first = pq.ParquetFile(out / "requests.parquet").metadata.row_group(0)
    encodings = {
        first.column(i).path_in_schema: first.column(i).encodings for i in range(first.num_columns)
    }
    assert "BYTE_STREAM_SPLIT" in encodings["issued_at"]  # floats: bytes split, then zstd
    assert "DELTA_BINARY_PACKED" in encodings["sandbox_id"]  # IDs counting up
    assert "RLE_DICTIONARY" in encodings["outcome"]
    requests = pq.read_table(out / "requests.parquet").to_pandas()
    placed = requests["outcome"] == "placed"
    assert placed.all() and requests["reason"].isna().all()  # null, not ""


def test_a_run_killed_before_closing_leaves_readable_parts(tmp_path):
    config = scenario(run={"duration_s": 3.0, "seeds": 3}, workload={"lifetime_s": 1.0})
    writer = RunWriter(tmp_path, config.to_dict(), ["stale"], [0, 1, 2], "virtual")
    for seed in (0, 1):
        writer.add(VirtualEngine().run_seed(config, seed))
    # No close(): as after SIGKILL. The parts are whole Parquet files and load_run reads them.
    meta, frames = load_run(tmp_path)
    assert not meta["completed"]
    assert sorted(frames["summary"]["seed"]) == [0, 1]
    assert sorted(frames["nodes"]["seed"].unique()) == [0, 1]
    kills = frames["requests"][frames["requests"]["kind"] == "kill"]
    assert len(kills) > 0 and kills["reason"].isna().all()
    assert (frames["timeline"]["run_id"] == writer.run_id).all()
    writer.close(completed=False, error="killed")
    # Closed unfinished: the tables gathered, and the parts kept for --resume.
    for name in TABLES:
        gathered = pq.read_table(tmp_path / f"{name}.parquet").to_pandas()
        assert gathered.equals(frames[name])
    assert [p.name for p in (tmp_path / PARTS).iterdir()] == ["00000", "00001"]
