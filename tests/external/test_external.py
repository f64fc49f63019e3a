"""Placement by an external scheduler over gRPC (`harness.external`): the generated code is the
.proto's, the Python example is the in-process run table for table, bad keys are one line, and
each way a scheduler process can misbehave is one line naming it, exit code 3, finished seeds
kept and the run marked incomplete."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.config import ConfigError, load
from harness.external import EXIT_CODE, client
from harness.external.generate import GENERATED, REFERENCE, ROOT, generate
from harness.external.transport import Frames, frame
from tests.support.golden import folder_digests
from tests.support.schedulers import PYTHON_SCHEDULER
from tests.support.tiers import slow

FAULTY = [sys.executable, str(ROOT / "tests" / "support" / "external_fault_scheduler.py")]
SEED_HERD = ROOT / "configs" / "seed-herd.toml"
NOT_SAID = ("k", "scheduler")
"""Summary columns that differ by who placed: an external scheduler's run leaves K empty (its
sampler's, `Sampler.candidates`, is its own) and names the scheduler (`in-process` otherwise)."""


def command(args: list[str]) -> str:
    return f"external.command={json.dumps(args)}"


SHORT = "run.duration_s=2"
"""Seed-herd for 2 s (40 creates a seed, not 500): seed 0 still finishes and seed 1 still reaches
the Place where the fault scheduler misbehaves (its third) and the ones after it, all that a
test of a misbehaving scheduler asks of the run."""


def lives_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's scheduler process lives on after the call it failed: the harness's wait for it
    to exit, which tells a death from a hang-up (`DEATH_WAIT_S`), could only run out. Not
    waited: whether it is alive is still looked at, once."""
    monkeypatch.setattr(client, "DEATH_WAIT_S", 0.0)


def test_the_generated_code_and_reference_are_the_protos(tmp_path) -> None:
    made = generate(tmp_path)
    assert sorted(made) == sorted(GENERATED)
    for path, text in made.items():
        assert (ROOT / path).read_text() == text, (
            f"{path} is stale: python -m harness.external.generate"
        )
    assert "| `create_answered` | `RpcAnswered` | 4 |" in made[REFERENCE]


def _run(tmp_path: Path, name: str, *sets: str, seeds: int = 2, extra: list[str] = ()) -> int:
    args = ["run", str(SEED_HERD), "--seeds", str(seeds), "--out", str(tmp_path / name)]
    args += ["--no-report", "--quiet", *extra]
    for s in sets:
        args += ["--set", s]
    return main(args)


COMPARE = ["--compare", "stale,optimistic"]


@pytest.fixture(scope="module")
def inproc_herd(tmp_path_factory) -> dict[str, str]:
    """The in-process run both transports are held to, run once: its tables' digests."""
    folder = tmp_path_factory.mktemp("herd")
    assert _run(folder, "inproc", extra=COMPARE) == 0
    return folder_digests(folder / "inproc", drop=NOT_SAID)


@pytest.mark.parametrize("transport", ["grpc", "framed"])
def test_the_python_example_gives_the_in_process_run(tmp_path, transport, inproc_herd) -> None:
    """Same Parquet content, stale and optimistic, on seed-herd and on a scenario whose RPCs
    fail and are retried (the scheduler keeps the excluded nodes itself), on either transport."""
    server = PYTHON_SCHEDULER + (["--framed"] if transport == "framed" else [])
    sets = [command(server), f"external.transport={transport}"]
    assert _run(tmp_path, "external", *sets, extra=COMPARE) == 0
    assert inproc_herd == folder_digests(tmp_path / "external", drop=NOT_SAID)
    unsaid = pd.read_parquet(tmp_path / "external" / "summary.parquet")["k"]
    assert unsaid.isna().all()  # the harness cannot know how many the scheduler looked at
    assert json.loads((tmp_path / "external" / "run.json").read_text())["plugins"]["k"] is None
    requests = pd.read_parquet(tmp_path / "external" / "requests.parquet")
    assert len(requests) == 2 * 2 * 500 and requests["node_id"].nunique() == 10


@pytest.mark.parametrize(
    ("config", "sets"),
    [
        ("faults-rpc-error.toml", []),  # failed RPCs, retried: the scheduler keeps the excluded
        ("seed-herd.toml", ["placement.algorithm=least_busy"]),  # another pipeline
        # The longer ones in the slow tier: two runs each, one through a process per replica.
        slow("replicas.toml", ["run.duration_s=30"]),  # 4 replicas, a process each; kills too
        slow("heterogeneous.toml", []),  # pools: labels, CPU families, memory over-commit
        slow("race-erase.toml", ["placement.strategy=sync_response"]),  # fresh reports in answers
        slow("race-double-count.toml", ["placement.strategy=reconcile"]),  # IDs in reports
    ],
)
def test_other_scenarios_match_too(tmp_path, config, sets) -> None:
    """The example builds the scenario's own pipeline and strategy from the Hello's options,
    so any of them gives the in-process run through it."""
    runs = {}
    for name, external in (("inproc", []), ("external", [command(PYTHON_SCHEDULER)])):
        args = ["run", str(ROOT / "configs" / config), "--seeds", "1", "--quiet", "--no-report"]
        args += ["--out", str(tmp_path / name)]
        args += [a for s in [*sets, *external] for a in ("--set", s)]
        assert main(args) == 0
        runs[name] = folder_digests(tmp_path / name, drop=NOT_SAID)
    assert runs["inproc"] == runs["external"]
    requests = pd.read_parquet(tmp_path / "external" / "requests.parquet")
    if config == "faults-rpc-error.toml":
        assert (requests["attempts"] > 1).any()
    if config == "replicas.toml":
        assert requests["replica"].nunique() == 4 and (requests["kind"] == "kill").any()


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["external.address=10.1.2.3:5000"], "external.address: '10.1.2.3' is not this machine"),
        (["external.address=localhost"], "external.address: must be host:port"),
        (
            ["external.address=127.0.0.1:5000", 'external.command=["python3"]'],
            "external.command: cannot be used with external.address",
        ),
        (['external.command=["no-such-scheduler"]'], "external.command[0]: 'no-such-scheduler'"),
        (["external.on_timeout=retry"], "external.on_timeout: must be one of error, fail"),
        (["external.timeout_s=0"], "external.timeout_s: must be > 0"),
    ],
)
def test_bad_external_keys_are_one_line(sets, message) -> None:
    with pytest.raises(ConfigError) as error:
        load(SEED_HERD, sets)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_a_remote_address_is_allowed_only_when_asked() -> None:
    config = load(SEED_HERD, ["external.address=10.1.2.3:5000", "external.allow_remote=true"])
    assert config.external.active


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("die", "exited with code 7 during Place"),
        ("hang", "did not answer Place within 1 s (external.timeout_s)"),
        ("no-node", "answered node 15 for sandbox"),
        # In the slow tier only: a reply that does not parse, and a scheduler that stops
        # serving (the framed transport's own test below has both, at the Hello, fast).
        slow("garbage", "answered Place with bytes that do not parse as a PlaceReply"),
        slow("hangup", "during Place"),
    ],
)
def test_a_misbehaving_scheduler_is_one_line_and_keeps_finished_seeds(
    tmp_path, capsys, monkeypatch, mode, said
) -> None:
    # 1 s where the timeout is what fails, not to wait 10; elsewhere the default: a freshly
    # started scheduler's first answer (its Hello) can take over a second on a loaded machine.
    timeout = ["external.timeout_s=1"] if mode == "hang" else []
    if mode != "die":  # every other mode leaves the process running
        lives_on(monkeypatch)
    code = _run(tmp_path, "run", command([*FAULTY, mode]), SHORT, *timeout)
    err = capsys.readouterr().err.strip()
    assert code == EXIT_CODE
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"harness: error: external scheduler 'faulty-{mode}': "), err
    assert said in err
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["completed"] is False
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet")
    assert list(summary["seed"]) == [0]  # seed 0 finished and kept; seed 1 did not finish


def test_a_scheduler_of_another_protocol_version_is_refused(tmp_path, capsys) -> None:
    assert _run(tmp_path, "run", command([*FAULTY, "old"])) == EXIT_CODE
    err = capsys.readouterr().err
    assert "external scheduler 'faulty-old': speaks protocol version 0, the harness 1" in err


def test_a_command_that_prints_no_port_is_one_line(tmp_path, capsys) -> None:
    script = [sys.executable, "-c", "print('ready'); import time; time.sleep(60)"]
    assert _run(tmp_path, "run", command(script)) == EXIT_CODE
    err = capsys.readouterr().err.strip()
    assert "printed 'ready' where its port (1-65535) was expected" in err
    assert len(err.splitlines()) == 1


UNFLUSHED = """
import socket, time
listener = socket.create_server(("127.0.0.1", 0))
out = open(1, "w", buffering=8192, closefd=False)  # block-buffered, as a pipe's stdout is
out.write(f"{listener.getsockname()[1]}\\n")  # and never flushed
time.sleep(120)
"""


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux /proc")
def test_a_port_printed_but_not_flushed_is_said_long_before_the_start_timeout(tmp_path, capsys):
    """The process listens, its port line waits in its buffer: said once it has listened a few
    seconds in silence (`UNPRINTED_WAIT_S`), not after `external.start_timeout_s` of nothing."""
    script = [sys.executable, "-c", UNFLUSHED]
    assert _run(tmp_path, "run", command(script), "external.start_timeout_s=120") == EXIT_CODE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "but has printed nothing for 5 s: its port line is likely still in its output" in err
    assert "flush it after printing (Python: print(port, flush=True)" in err


def test_a_port_where_nothing_listens_is_a_refused_connection(tmp_path, capsys, monkeypatch):
    script = [sys.executable, "-c", "print(1, flush=True); import time; time.sleep(60)"]
    lives_on(monkeypatch)
    assert _run(tmp_path, "run", command(script)) == EXIT_CODE
    err = capsys.readouterr().err
    assert "printed port 1, but nothing listens on 127.0.0.1:1: the connection was refused" in err
    for transport in ("grpc", "framed"):
        sets = ["external.address=127.0.0.1:1", f"external.transport={transport}"]
        assert _run(tmp_path, transport, *sets) == EXIT_CODE
        err = capsys.readouterr().err
        assert err.startswith(
            "harness: error: external scheduler at 127.0.0.1:1: refused the connection: nothing "
            "listens there (is the server up, and external.address its address?)"
        ), err


def test_an_answer_that_arrived_is_taken_though_the_harness_looks_after_its_deadline():
    """On a loaded machine the harness itself may be held up past a call's deadline: an
    answer already on the socket is still taken, and only where none came is it late."""
    mine, theirs = socket.socketpair()
    with mine, theirs:
        theirs.sendall(frame(b"answered in time"))
        past = time.monotonic() - 1.0
        assert Frames(mine).next(past) == b"answered in time"
        with pytest.raises(TimeoutError):
            Frames(mine).next(past)


@pytest.mark.parametrize("transport", ["grpc", slow("framed")])  # each waits out a timeout
def test_on_timeout_fail_counts_a_failed_placement_and_goes_on(tmp_path, transport) -> None:
    """The late answer is thrown away (on a stream, read before the next call's), and the
    scheduler hears first thing that it was dropped (the fault scheduler exits with 9 if not)."""
    scheduler = [*FAULTY, "slow-once", *(["framed"] if transport == "framed" else [])]
    sets = [command(scheduler), "external.timeout_s=2", "external.on_timeout=fail", SHORT]
    assert _run(tmp_path, "run", *sets, f"external.transport={transport}") == 0
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet")
    assert list(summary["seed"]) == [0, 1]
    assert list(summary["failed"]) == [0, 1]


FRAMED_FAULT = """
import socket, sys, time
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
conn, _ = listener.accept()
conn.recv(1 << 16)
if sys.argv[1] == "garbage":
    conn.sendall(bytes([4]) + b"\\xff\\xff\\xff\\xff")
conn.close()
listener.close()
time.sleep(60)
"""


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("hangup", "closed the connection during Hello"),
        ("garbage", "answered Hello with bytes that do not parse as a HelloReply"),
    ],
)
def test_the_framed_transport_names_what_the_scheduler_did(
    tmp_path, capsys, monkeypatch, mode, said
) -> None:
    script = [sys.executable, "-c", FRAMED_FAULT, mode]
    lives_on(monkeypatch)
    sets = [command(script), "external.transport=framed"]
    assert _run(tmp_path, "run", *sets) == EXIT_CODE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert said in err, err


def test_an_exception_in_place_leaves_its_traceback_in_the_run_folder(
    tmp_path, capsys, monkeypatch
) -> None:
    """The scheduler's standard error, a file per seed and replica in the run folder, named in
    the error line."""
    lives_on(monkeypatch)  # the server answers the exception as an error and serves on
    assert _run(tmp_path, "run", command([*FAULTY, "raise"]), SHORT) == EXIT_CODE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    log = tmp_path / "run" / "scheduler" / "stale-seed1-replica0.log"
    assert f"its stderr: {log}" in err, err
    text = log.read_text()
    assert "Traceback" in text and "KeyError: 'missing-key'" in text, text
    assert (tmp_path / "run" / "scheduler" / "stale-seed0-replica0.log").exists()
