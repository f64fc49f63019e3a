"""Sweeps: the file format, and on one shared local Ray: resume after an interruption gives
the same results as one uninterrupted sweep, and a cell that raises is recorded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from harness.cli import main
from harness.config import ConfigError
from harness.config.sweep_file import load_sweep
from harness.engines.ray_setup import stop_ray
from harness.model.scheduling.strategies import STRATEGIES
from harness.results.failures import ResultsError
from harness.results.sweep_folder import SweepStore, load_sweep_results, read_cells
from harness.running.sweep_runner import run_sweep
from tests.support.configs import CONFIGS

# Its Ray tests check cells, resumes and exit codes, not timing: they may share the machine.
pytestmark = pytest.mark.shares_machine

FAILING_CPU_COUNT = 13  # the fault injected into Ray workers hits seed 1 of these cells


@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray for the module, on loopback, with a fault injector in every worker."""

    def inject_fault() -> None:
        # Defined in here so that Ray ships it by value: workers cannot import this module.
        from harness.engines.virtual import VirtualEngine

        run_seed = VirtualEngine.run_seed

        def failing(self, config, seed, progress=None, rows=None):
            if config.cluster.cpu_count == FAILING_CPU_COUNT and seed == 1:
                raise RuntimeError("injected failure")
            return run_seed(self, config, seed, progress, rows)

        VirtualEngine.run_seed = failing

    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = pytest.importorskip("ray")
    stop_ray()  # the Ray the tests share (tests/conftest.py), if up: this one injects faults
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"worker_process_setup_hook": inject_fault},
    )
    yield ray
    ray.shutdown()


def _sweep_file(tmp_path: Path, grid: str, extra: str = "") -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\nseeds = 3\n'
        f'[set]\n"run.duration_s" = 6.0\n{extra}\n[grid]\n{grid}\n'
    )
    return path


GRID = '"placement.strategy" = ["stale", "optimistic"]\n"heartbeat.interval_s" = [1, 2.5, 5]\n'


# -- the sweep file ---------------------------------------------------------------------------


def test_grid_expands_to_every_combination_with_linked_keys(tmp_path):
    path = _sweep_file(
        tmp_path,
        '"placement.strategy" = "all"\n"cluster.nodes" = [5, 50]\n'
        '[linked]\n"workload.rate_per_s" = { with = "cluster.nodes", values = [10, 100] }\n',
    )
    sweep = load_sweep(path)
    assert sweep.grid["placement.strategy"] == list(STRATEGIES)
    assert len(sweep.cells) == len(STRATEGIES) * 2
    assert sweep.seeds == [0, 1, 2]
    for cell in sweep.cells:
        c = cell.config
        assert c.placement.strategy == cell.values["placement.strategy"]
        assert c.workload.rate_per_s == 2.0 * c.cluster.nodes
        assert c.run.duration_s == 6.0


@pytest.mark.parametrize(
    ("grid", "extra", "key"),
    [
        ('"cluster.nodez" = [4, 5]\n', "", "grid.cluster.nodez"),
        ('"cluster.nodes" = [4, -2]\n', "", "grid.cluster.nodes"),
        ('"cluster.nodes" = []\n', "", "grid.cluster.nodes"),
        ('"cluster.nodes" = "all"\n', "", "grid.cluster.nodes"),
        ('"clustr.nodes" = "all"\n', "", "grid.clustr"),
        ('"run.name" = "all"\n', "", "grid.run.name"),
        ('"cluster.nodes" = [4, 4]\n', "", "grid.cluster.nodes"),
        ('"cluster.nodes" = [4, 5]\n', '"cluster.cpu_count" = "many"\n', "set.cluster.cpu_count"),
        (
            '"cluster.nodes" = [4, 5]\n[linked]\n"workload.rate_per_s" = '
            '{ with = "cluster.nodes", values = [1] }\n',
            "",
            "linked.workload.rate_per_s.values",
        ),
        ('"cluster.nodes" = [4, 5]\n[thresholds]\n"cvv" = "< 1"\n', "", "thresholds.cvv"),
    ],
)
def test_mistakes_in_a_sweep_file_name_the_key(tmp_path, grid, extra, key):
    with pytest.raises(ConfigError) as caught:
        load_sweep(_sweep_file(tmp_path, grid, extra))
    assert caught.value.key == key


def test_cli_exits_2_on_a_bad_sweep_file(tmp_path, capsys):
    path, out = _sweep_file(tmp_path, '"placement.k" = [0]\n'), tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out)]) == 2  # never the default results/
    assert "grid.placement.k" in capsys.readouterr().err
    assert not out.exists()


def test_shipped_sweeps_are_valid():
    heartbeat = load_sweep(CONFIGS / "sweep-heartbeat.toml")
    assert min(heartbeat.grid["heartbeat.interval_s"]) == 0.1
    assert max(heartbeat.grid["heartbeat.interval_s"]) == 60.0
    scale = load_sweep(CONFIGS / "sweep-scale.toml")
    assert scale.grid["cluster.nodes"][-1] == 10_000
    rates = {c.config.workload.rate_per_s / c.config.cluster.nodes for c in scale.cells}
    assert len(rates) == 1
    reference = load_sweep(CONFIGS / "sweep-reference.toml")  # both K of the reference
    assert reference.grid == {"placement.k": [3, 5], "placement.strategy": ["stale", "optimistic"]}
    assert len(reference.cells) == 4
    assert reference.seeds == list(range(20))
    designs = load_sweep(CONFIGS / "compare-algorithms.toml")  # algorithm x accounting
    assert "placement.k" not in designs.grid  # only best_of_k reads it
    assert {"best_of_k", "power_of_two", "least_busy", "bin_pack", "random"} <= set(
        designs.grid["placement.algorithm"]
    )
    assert designs.grid["placement.strategy"] == ["stale", "optimistic"]


def test_a_folder_of_another_sweep_is_refused(tmp_path):
    out = tmp_path / "out"
    SweepStore(out, load_sweep(_sweep_file(tmp_path, GRID))).close()
    store = SweepStore(out, load_sweep(_sweep_file(tmp_path, GRID)))  # the same sweep: resumes
    with pytest.raises(ResultsError, match="in use"):  # while it is open, no one else writes
        SweepStore(out, load_sweep(_sweep_file(tmp_path, GRID)))
    store.close()
    with pytest.raises(ResultsError, match="different sweep"):
        SweepStore(out, load_sweep(_sweep_file(tmp_path, GRID), seeds=4))


# -- running on Ray ---------------------------------------------------------------------------


def _everything(out: Path) -> dict[str, pd.DataFrame]:
    """All results of a sweep folder, in a canonical order, without wall-clock columns and
    the sweep's run id (checked to be the one of sweep.json on every row)."""
    meta, summary = load_sweep_results(out)
    cells = [c["cell"] for c in meta["cells"]]
    frames = {"summary": summary.drop(columns=["engine_wall_s"])}
    for table in ("nodes", "requests", "timeline"):
        frames[table] = read_cells(out, table, cells)
    for frame in frames.values():
        assert (frame.pop("run_id") == meta["run_id"]).all()
    order = {
        "summary": ["cell", "seed"],
        "nodes": ["cell", "seed", "node_id"],
        "requests": ["cell", "seed", "kind", "sandbox_id"],
        "timeline": ["cell", "seed", "t", "node_id", "replica"],
    }
    return {
        name: frame.sort_values(order[name]).reset_index(drop=True)
        for name, frame in frames.items()
    }


@pytest.mark.ray
def test_interrupted_sweep_resumes_to_the_same_results(ray_instance, tmp_path):
    sweep = load_sweep(_sweep_file(tmp_path, GRID))
    full, part = tmp_path / "full", tmp_path / "part"
    run_sweep(sweep, full)

    def interrupt(done, failed, total):
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, part, interrupt)
    meta, summary = load_sweep_results(part)
    assert not meta["completed"]
    finished = [c["cell"] for c in meta["cells"] if c["status"] == "complete"]
    assert len(finished) == 3
    assert sorted(summary["cell"].unique()) == finished  # finished cells are readable
    assert len(read_cells(part, "nodes", finished)) == 3 * len(sweep.seeds) * 10

    # A cell whose files were written but whose completion was never recorded (a crash
    # between the two) must be run again and end up once, not twice.
    rewritten = finished[-1]
    meta["cells"][rewritten]["status"] = "pending"
    (part / "sweep.json").write_text(json.dumps(meta))
    kept = finished[:-1]
    stamps = {c: (part / "nodes" / f"cell={c}" / "part-0.parquet").stat().st_mtime_ns for c in kept}

    calls = []
    run_sweep(sweep, part, lambda *args: calls.append(args))
    assert calls[0] == (len(kept), 0, len(sweep.cells))  # the complete cells were skipped
    assert {
        c: (part / "nodes" / f"cell={c}" / "part-0.parquet").stat().st_mtime_ns for c in kept
    } == stamps
    meta, summary = load_sweep_results(part)
    assert meta["completed"]
    assert not summary.duplicated(["cell", "seed"]).any()
    assert len(summary) == len(sweep.cells) * len(sweep.seeds)

    expected, got = _everything(full), _everything(part)
    for name in expected:
        pd.testing.assert_frame_equal(got[name], expected[name], check_categorical=False)


@pytest.mark.ray
def test_a_cell_that_raises_is_recorded_and_the_rest_complete(ray_instance, tmp_path):
    sweep = load_sweep(
        _sweep_file(tmp_path, f'"cluster.cpu_count" = [64, {FAILING_CPU_COUNT}, 192]')
    )
    out = tmp_path / "out"
    calls = []
    run_sweep(sweep, out, lambda *args: calls.append(args))
    meta, summary = load_sweep_results(out)
    status = {c["cell"]: c["status"] for c in meta["cells"]}
    assert status == {0: "complete", 1: "failed", 2: "complete"}
    failed = meta["cells"][1]
    assert "RuntimeError: injected failure" in failed["error"]
    assert "seed 1" in failed["error"]
    assert "injected failure" in failed["traceback"]
    assert not meta["completed"]
    assert calls[-1] == (2, 1, 3)
    assert sorted(summary["cell"].unique()) == [0, 2]
    assert (summary.groupby("cell").size() == len(sweep.seeds)).all()


@pytest.mark.ray
def test_the_exit_code_says_whether_a_cell_or_a_threshold_failed(ray_instance, tmp_path, capsys):
    path, out = _sweep_file(tmp_path, '"placement.strategy" = ["stale", "optimistic"]'), tmp_path
    ok = ["sweep", str(path), "--out", str(out / "ok"), "--quiet", "--no-report"]
    passing = ["--threshold", "optimistic.cv_max < 0.5"]
    assert main([*ok, *passing]) == 0
    first = capsys.readouterr().out
    assert "thresholds: 1 of 1 checks passed in 1 cells" in first
    assert "reused" not in first

    # The same sweep, resumed with a threshold that stale fails: nothing reruns, it is judged,
    # and the output says the cells were reused.
    failing = ["--threshold", "cv_max < 0.5"]
    assert main([*ok, *failing]) == 99
    resumed = capsys.readouterr()
    assert resumed.err == "harness: 1 of 2 threshold checks failed\n"
    assert f"reused 2 of 2 cells complete in {out / 'ok'} from an earlier run" in resumed.out
    meta, _ = load_sweep_results(out / "ok")
    judged = [(r["strategy"], r["passed"]) for c in meta["cells"] for r in c["thresholds"]]
    assert judged == [("stale", False), ("optimistic", True)]

    path = _sweep_file(tmp_path, f'"cluster.cpu_count" = [64, {FAILING_CPU_COUNT}]')
    bad = ["sweep", str(path), "--out", str(out / "bad"), "--quiet", "--no-report"]
    assert main(bad) == 1
    first = "the first: seed 1: RuntimeError: injected failure"
    assert capsys.readouterr().err == f"harness: 1 of 2 cells failed; {first}\n"
    assert main([*bad, "--accept-failed"]) == 0  # the failed cell runs again, and fails again
    assert capsys.readouterr().err == f"harness: 1 of 2 cells failed; {first}\n"


@pytest.mark.ray
def test_sweep_tables_carry_the_run_id_and_the_swept_keys_in_compact_files(ray_instance, tmp_path):
    """`pd.read_parquet` on a table's folder gives every swept key as a column, with one type
    over all cells (the grid mixes 1 and 2.5), and each cell's partition is one compact file."""
    sweep = load_sweep(_sweep_file(tmp_path, GRID))
    out = tmp_path / "out"
    run_sweep(sweep, out)
    meta = json.loads((out / "sweep.json").read_text())
    values = {c["cell"]: c["values"] for c in meta["cells"]}
    for table in ("nodes", "requests", "timeline"):
        frame = pd.read_parquet(out / table)
        assert (frame["run_id"] == meta["run_id"]).all()
        assert frame["heartbeat.interval_s"].dtype == "float64"
        cells = frame["cell"].astype(int)
        assert (
            frame["heartbeat.interval_s"] == cells.map(lambda c: values[c]["heartbeat.interval_s"])
        ).all()
        assert (frame["placement.strategy"] == frame["strategy"]).all()
        assert set(cells) == set(values)
    for part in (out / "requests").glob("cell=*/*.parquet"):
        metadata = pq.ParquetFile(part).metadata
        assert metadata.num_row_groups == 1
        assert metadata.row_group(0).column(0).compression == "ZSTD"
