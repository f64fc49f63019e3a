"""Fixtures and hooks. The helpers the tests share are plain functions in tests/support/,
imported from there: pytest loads this file under a module name of its own."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.config.traces.cache import CACHE_ENV
from tests.support.configs import scenario
from tests.support.durability import HERD, QUIET, hold_still
from tests.support.entry_points import own_entry_points

_others_hidden = pytest.MonkeyPatch()


def pytest_configure(config: pytest.Config) -> None:
    """The registries of this process find built-in plugins and this project's entry points
    only, from collection on (tests are parametrized over their names): the suite passes
    whatever else is installed. A test about installed plugins registers one itself
    (tests/model/scheduling/test_strategies.py) or installs the example package apart
    (tests/project/test_plugin_package.py). And the folder of the locks that keep Ray tests apart
    (`pytest_runtest_protocol`), made once for all workers, who also keep there what they make
    once for all (tests/project/test_plugin_package.py `site`), among it the trace cache
    (`HARNESS_CACHE_DIR`): a trace the tests import is imported once, never into the user's
    own cache."""
    _others_hidden.setattr("harness.model.registry.entry_points", own_entry_points)
    if not hasattr(config, "workerinput"):  # this process, or pytest-xdist's controller
        os.environ["HARNESS_TEST_LOCKS"] = tempfile.mkdtemp(prefix="harness-tests-")
        os.environ[CACHE_ENV] = os.path.join(os.environ["HARNESS_TEST_LOCKS"], "cache")


def pytest_unconfigure(config: pytest.Config) -> None:
    _others_hidden.undo()
    if not hasattr(config, "workerinput"):
        os.environ.pop(CACHE_ENV, None)
        shutil.rmtree(os.environ.pop("HARNESS_TEST_LOCKS"), ignore_errors=True)


def alone(item: pytest.Item) -> bool:
    """Whether `item` is a Ray test that must have the machine to itself (see
    `pytest_runtest_protocol`)."""
    shares = item.get_closest_marker("shares_machine")  # a test's own mark before its module's
    return bool(item.get_closest_marker("ray")) and (shares is None or shares.args == (False,))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A Ray test has the machine to itself, unless marked `shares_machine` (a test of a module
    so marked may say `shares_machine(False)`); other tests share it. Ray's runs are real time
    and take every core: a test beside one makes it late (conformance bands missed at a load of
    7). A writer-first lock over the workers (`-n`): a Ray test waits for the tests running to
    end, and no new one starts until it has ended. Ray tests never run two at once: they are
    all one worker's (`xdist_group`).

    Before it waits, a Ray test's module may do the part of its work that needs no quiet
    machine: its function `before_the_machine(item)`, if it has one (the virtual engine's side
    of a comparison, the same whenever it is played). Should that raise, the test meets the
    same error again in its own phases, where it is reported. Tests that run alone one after
    another keep the machine between them (`_held`)."""
    global _held
    ray = item.get_closest_marker("ray")
    before = getattr(getattr(item, "module", None), "before_the_machine", None) if ray else None
    if before is not None:
        with contextlib.suppress(Exception):
            before(item)
    locks, _held = _held or _machine(alone(item)), None
    try:
        return (yield)
    finally:
        if alone(item) and nextitem is not None and alone(nextitem):
            _held = locks
        else:
            locks.close()


_held: contextlib.ExitStack | None = None
"""The machine, held from a test that runs alone to the next one that does: let go between
them, it would go to another worker's next test, whose end the next one waits for."""


LOCKS = ("turnstile", "machine")
"""The files locked, in the folder of the locks (HARNESS_TEST_LOCKS)."""


def _machine(exclusive: bool) -> contextlib.ExitStack:
    """The locks of a test that runs alone (`exclusive`) or beside others, taken; closing the
    stack lets them go."""
    folder = Path(os.environ["HARNESS_TEST_LOCKS"])
    locks = contextlib.ExitStack()
    turnstile, machine = (os.open(folder / name, os.O_CREAT | os.O_RDWR) for name in LOCKS)
    locks.callback(os.close, turnstile)  # a closed file's lock goes with it
    locks.callback(os.close, machine)
    if exclusive:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(machine, fcntl.LOCK_EX)
    else:
        fcntl.flock(turnstile, fcntl.LOCK_EX)  # not past a Ray test that waits
        fcntl.flock(machine, fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
    return locks


RAY_FIXTURES = frozenset({"local_ray", "ray_instance"})
"""The fixtures that start Ray: a test that uses one (directly or through another fixture) is
marked `ray` whether or not it says so."""
OWN_RAY_FIXTURES = frozenset({"ray_instance"})
"""The fixtures that stop the shared Ray for one of their own (tests/running/test_sweep.py's,
with a fault hook): a test that uses one is marked `own_ray` whether or not it says so."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the `xdist_group` marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that starts Ray is slow: starting one costs seconds and takes both cores, so the
    fast tier (`-m "not slow"`) runs without Ray. A test that stops the shared Ray for one of
    its own (`own_ray`) runs after those that share it: before them, it would have the next
    start the shared one again, seconds of one worker's that every other Ray test waits on."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if RAY_FIXTURES.intersection(fixtures):
            item.add_marker(pytest.mark.ray)
        if OWN_RAY_FIXTURES.intersection(fixtures):
            item.add_marker(pytest.mark.own_ray)
        if item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.slow)
            # One group, one worker's, its tests one after another (`-n` with `--dist
            # loadgroup`, pyproject.toml): those that run alone and those that share the machine
            # alike. A group per kind would take a worker each (xdist hands a worker a new unit
            # only when it is almost out), and a shared Ray test would run beside nothing but
            # the lock of one that runs alone; in one group, the other workers run the tests
            # without Ray beside it. A module's Ray is started once, not once per worker.
            item.add_marker(pytest.mark.xdist_group("ray"))
    items.sort(key=lambda item: item.get_closest_marker("own_ray") is not None)  # stable


@pytest.fixture
def make_config():
    return scenario


@pytest.fixture(scope="session")
def _ray_stopped_at_the_end() -> Iterator[None]:
    yield
    from harness.engines.ray_setup import stop_ray

    stop_ray()


@pytest.fixture(scope="module")
def local_ray(_ray_stopped_at_the_end: None) -> None:
    """The embedded local Ray (`harness.engines.ray_setup.connect`: loopback, private folder,
    sized to the machine) that every module needing no Ray of its own shares, as a `harness` command
    started in this process would: starting one costs seconds. Started on first use, again
    after a module that stopped it for a Ray of its own (`ray_cluster`,
    tests/running/test_sweep.py), stopped at the end of the session. A test that runs Ray through
    `harness.cli.main` joins it (`ray_scope` leaves a Ray that was up before alone)."""
    from harness.engines.ray_setup import connect

    connect()


@pytest.fixture(scope="module")
def ray_address(local_ray: None) -> str:
    """The address of the shared local Ray (`local_ray`), for a `harness` process of a test to
    join (RAY_ADDRESS or --address) instead of starting a Ray of its own: only where the test
    is not about Ray's own start-up or shutdown, nor about the processes left behind."""
    import ray

    return ray.get_runtime_context().gcs_address


@pytest.fixture
def still(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run id and the engine's wall time held still, so that two runs of one config write
    the same bytes (`tests.support.durability.hold_still`)."""
    hold_still(monkeypatch)


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed run of two seeds, which a module's tests copy and damage or write into."""
    out = tmp_path_factory.mktemp("good") / "run"
    assert (
        main(["run", HERD, "--seeds", "2", "--set", "run.duration_s=2", *QUIET, "--out", str(out)])
        == 0
    )
    return out
