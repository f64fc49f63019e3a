"""The compiled path (README, "Compiled hot path") writes the same Parquet bytes as pure Python:
every shipped scenario, every strategy, one seed, run on each path in a process of its own.

Skipped where no compiled modules are installed, or where they no longer match their sources
(harness then runs pure Python anyway): `pip install -e .` builds them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from tests.support.configs import SCENARIOS, shipped, unrunnable

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("summary", "nodes", "requests", "timeline")


def _env(pure: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != harness.PURE_ENV}
    return {**env, harness.PURE_ENV: "1"} if pure else env


def _compiled_available() -> bool:
    probe = [sys.executable, "-c", "import harness; print(harness.COMPILED)"]
    done = subprocess.run(probe, env=_env(pure=False), capture_output=True, text=True, cwd=ROOT)
    return done.stdout.strip() == "True"


def test_pure_forced_is_pure_throughout():
    """HARNESS_PURE=1 loads every harness module, and the Ray hosts' hot path (`actors`), from
    its source, compiled or not."""
    code = (
        "import actors.carrier as c, actors.outbox as o, harness.model.event_queue, "
        "harness.model.protocol.node_party, harness.model.scheduling.strategies.stale as s, "
        "harness; "
        "print(harness.COMPILED, all(m.__file__.endswith('.py') for m in "
        "(harness.model.event_queue, harness.model.protocol.node_party, s, c, o)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=_env(pure=True), capture_output=True, text=True
    )
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_compiled_path_takes_the_ray_hosts_compiled_too():
    """Where the model runs compiled, so does the Ray hosts' hot path (setup.py compiles both)."""
    if not _compiled_available():
        pytest.skip("no compiled modules, or their sources changed since the build")
    code = "import actors.carrier as c, actors.outbox as o; print(c.__file__, o.__file__)"
    done = subprocess.run([sys.executable, "-c", code], env=_env(pure=False), capture_output=True)
    files = done.stdout.decode().split()
    assert len(files) == 2 and not any(f.endswith(".py") for f in files), done.stderr


def test_only_extensions_their_build_recorded_and_whose_sources_match_are_used(
    tmp_path, monkeypatch
):
    """harness runs compiled modules only while the build's record (`_compiled.json`) holds
    the digest of every source as it is now; without a record, pure Python."""
    package = tmp_path / "harness"
    package.mkdir()
    (package / "first.py").write_text("A = 1\n")
    (package / "second.py").write_text("B = 1\n")
    monkeypatch.setattr(harness, "BUILT", package / "_compiled.json")
    assert harness.changed_sources() is None
    digests = {
        f"harness/{name}": hashlib.sha256((package / name).read_bytes()).hexdigest()
        for name in ("first.py", "second.py")
    }
    harness.BUILT.write_text(json.dumps({"sources": digests}))
    assert harness.changed_sources() == []
    (package / "second.py").write_text("B = 2\n")
    assert harness.changed_sources() == ["harness/second.py"]


@pytest.mark.slow
def test_compiled_and_pure_write_the_same_parquet_bytes(tmp_path):
    if not _compiled_available():
        pytest.skip(
            "no compiled modules, or their sources changed since the build: "
            "`pip install -e .` compiles them"
        )
    runs = {}
    for path, pure in (("compiled", False), ("pure", True)):
        out = tmp_path / path
        cmd = [sys.executable, "-m", "tests.project.test_compiled", str(out)]
        runs[path] = (out, subprocess.Popen(cmd, env=_env(pure), cwd=ROOT, stderr=subprocess.PIPE))
    for path, (_, process) in runs.items():
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, f"{path}: {err.decode()[-2000:]}"
    compiled, pure = runs["compiled"][0], runs["pure"][0]
    assert (compiled / "path").read_text() == "compiled"
    assert (pure / "path").read_text() == "pure Python"
    files = sorted(p.relative_to(compiled) for p in compiled.rglob("*.parquet"))
    assert len(files) == len(TABLES) * sum(unrunnable(p) is None for p in SCENARIOS)
    assert files == sorted(p.relative_to(pure) for p in pure.rglob("*.parquet"))
    differ = [str(f) for f in files if (compiled / f).read_bytes() != (pure / f).read_bytes()]
    assert not differ


def _run_every_scenario(out: Path) -> None:
    """Every shipped scenario that can run here (in brief where it is long) under every
    strategy, one seed, into `out/<scenario>/`, with the two things that differ from run to
    run held still: the run id and the engine's wall time."""
    from harness.engines import virtual
    from harness.model.scheduling.strategies import STRATEGIES
    from harness.results import folder_policy
    from harness.results.failures import InvariantError
    from harness.running.runner import run

    folder_policy.new_run_id = lambda name: f"{name}-same"

    class _Still:
        @staticmethod
        def perf_counter() -> float:
            return 0.0

    virtual.time = _Still  # engine_wall_s = 0
    out.mkdir(parents=True)
    (out / "path").write_text(harness.PATH)
    for path in SCENARIOS:
        if unrunnable(path):
            continue
        config = shipped(path, ["run.seeds=1", "run.engine=virtual"])
        with contextlib.suppress(InvariantError):  # a broken check is part of the content
            run(config, list(STRATEGIES.builtins), out / path.stem)


if __name__ == "__main__":
    _run_every_scenario(Path(sys.argv[1]))
