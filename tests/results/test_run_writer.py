"""Nothing lost when a write fails: every file of a run is whole (the previous state or the
new one), no temporary file stays, the user reads one true line with the documented exit code,
and the run resumes to the very files of a run never stopped. Failures are injected at the
I/O boundary (a stub that fails the Nth write) or on a real, small file system."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.cli import WRITE_FAILED, main
from harness.results.run_reader import load_run
from tests.support.durability import (
    HERD,
    QUIET,
    RUN,
    consistent,
    hold_still,
    one_line,
    tables,
    temporaries,
)

# -- a write that fails: a stub at the I/O boundary ------------------------------------------


class Disk:
    """The writes of a run (Parquet files, whole or row group by row group, and text files):
    counted, and failing from the `fail_at`th on (a full disk stays full) or only there
    (`once`: a permission lost for a moment)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self.fail_at: int | None = None
        self.once = False
        self.error = errno.ENOSPC
        for owner, name in (
            (pq, "write_table"),
            (pq.ParquetWriter, "write_table"),
            (Path, "write_text"),
        ):
            monkeypatch.setattr(owner, name, self._wrap(getattr(owner, name)))

    def _wrap(self, real):
        def write(*args, **kwargs):
            self.calls += 1
            failing = self.fail_at is not None and (
                self.calls == self.fail_at if self.once else self.calls >= self.fail_at
            )
            if failing:
                raise OSError(self.error, os.strerror(self.error))
            return real(*args, **kwargs)

        return write


WRITTEN = ["run", HERD, *RUN, "--seeds", "1", *QUIET]
"""The run whose every write fails in turn: a seed of each of 2 strategies, so a write fails
before any seed is kept, with one kept, and while the run's tables are gathered (~25 writes)."""


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory) -> tuple[Path, int]:
    """`WRITTEN` run straight through, held still (`hold_still`), once for every way a write
    fails: its folder, and how many writes it made."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        hold_still(monkeypatch)
        disk = Disk(monkeypatch)
        straight = tmp_path_factory.mktemp("written") / "straight"
        assert main([*WRITTEN, "--out", str(straight)]) == 0
        return straight, disk.calls


@pytest.mark.slow  # a failure at each of the ~25 writes of a run, each resumed: ~50 runs
@pytest.mark.parametrize("once", [False, True], ids=["disk-full", "eacces-once"])
def test_a_write_failing_at_any_point_of_a_run_leaves_whole_files_and_resumes(
    once, straight_run, tmp_path, monkeypatch, capsys, still
):
    straight, writes = straight_run
    assert writes > 15
    load_run(straight)  # read whole once: every resumed run below must give these same bytes
    disk = Disk(monkeypatch)
    disk.once = once
    disk.error = errno.EACCES if once else errno.ENOSPC
    reason = os.strerror(disk.error)
    for n in range(1, writes + 1):
        out = tmp_path / f"fail-{n}"
        disk.calls, disk.fail_at = 0, n
        code = main([*WRITTEN, "--out", str(out)])
        err = capsys.readouterr().err
        assert code == WRITE_FAILED, (n, err)
        one_line(err, "harness: error: cannot write ", str(out), reason)
        assert temporaries(out) == [], n
        disk.fail_at = None
        if not (out / "run.json").exists():  # the first write failed: nothing was written
            assert "nothing was written" in err and list(out.iterdir()) == []
            continue
        meta = consistent(out)
        assert meta["completed"] is False
        if once:  # run.json could still be written: it says why, and lists what is kept
            assert reason in meta["error"]
            raw = json.loads((out / "run.json").read_text())
            assert raw["finished"] == meta["finished"]
        assert main(["run", "--resume", str(out), *QUIET]) == 0, capsys.readouterr().err
        assert tables(out) == tables(straight), n
        # Its tables are the straight run's bytes, read whole once above: run.json is what is left.
        assert load_run(out, ())[0]["completed"] is True


def test_the_report_is_replaced_whole_or_not_at_all(good_run, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    shutil.copytree(good_run, out)
    before = b"<html>the report drawn before</html>\n"  # what a failed write leaves: any bytes
    (out / "report.html").write_bytes(before)
    disk = Disk(monkeypatch)
    disk.fail_at = 1
    assert main(["report", str(out)]) == WRITE_FAILED
    one_line(capsys.readouterr().err, "report.html", "No space left on device")
    assert (out / "report.html").read_bytes() == before
    assert temporaries(out) == []


def _mounted(folder: Path, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
    )
    return done.returncode == 0


def _open_in(folder: Path) -> list[str]:
    """The files under `folder` this process holds open (Linux /proc)."""
    fds = Path("/proc/self/fd")
    held = (os.readlink(fd) for fd in fds.iterdir() if fd.is_symlink())
    return sorted(path for path in held if path.startswith(str(folder)))


@pytest.fixture
def small_disk(tmp_path):
    """A real 1 MiB file system (tmpfs), where root may mount one; skipped otherwise."""
    disk = tmp_path / "disk"
    if not _mounted(disk, "1m"):
        pytest.skip("mounting a tmpfs needs root and a kernel that lets this process mount")
    try:
        yield disk
    finally:
        # Lazily: a file left open in it (a failed test) would keep a plain umount from
        # detaching it, and pytest could then never remove the test's folder.
        subprocess.run(["umount", "--lazy", str(disk)], check=False)


@pytest.mark.slow  # a run and its resume per size, on a file system mounted for it
@pytest.mark.parametrize("free_kb", [8, 32, 128, 380, 420])
def test_a_real_full_disk_is_one_line_and_whole_files(free_kb, small_disk, capsys):
    """Each seed's parts take ~50 kB and the gathered tables ~85 kB: with 8 kB free the first
    commit fails and so does the gather; 32 kB, the first commit; 128 kB, the third; 380 kB,
    the final run.json; 420 kB, the gathered timeline."""
    ballast = small_disk / "ballast"
    size = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    ballast.write_bytes(b"\0" * (size - free_kb * 1024))
    out = small_disk / "run"
    args = ["run", HERD, *RUN, "--set", "cluster.nodes=300", "--set", "run.duration_s=20"]
    code = main([*args, "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == WRITE_FAILED, err
    one_line(err, "cannot write", "No space left on device")
    assert temporaries(small_disk) == []
    assert _open_in(small_disk) == []  # a write that failed leaves no file open
    if (out / "run.json").exists():
        meta = consistent(out)
        assert not meta["completed"]
        ballast.unlink()  # room again: the run resumes to the end
        assert main(["run", "--resume", str(out), "--quiet"]) == 0, capsys.readouterr().err
        assert consistent(out)["completed"]
        assert (out / "report.html").read_text().rstrip().endswith("</html>")
