"""Compiles the model's and the Ray hosts' hot modules with mypyc when the package is built
(README, "Compiled hot path"); everything else about the package is in pyproject.toml.

`pip install .` and `pip install -e .` compile them (mypyc comes with mypy, a build
requirement; a C compiler and Python's headers must be there). If the compile fails, the
package installs as pure Python all the same, with a warning in pip's build output (`-v`).
`HARNESS_PURE=1` in the environment skips the compile.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
COMPILED = [
    "harness/model/event_queue.py",
    "harness/model/native_event_queue.py",
    "harness/model/cluster/node.py",
    "harness/model/cluster/heartbeat_wheel.py",
    "harness/model/cluster/faults/plan.py",
    "harness/model/workload/request.py",
    "harness/model/cluster/rpc.py",
    "harness/model/random_streams.py",
    "harness/model/workload/arrivals/arrival_kind.py",
    "harness/model/workload/arrivals/constant.py",
    "harness/model/workload/arrivals/poisson.py",
    "harness/model/workload/arrivals/burst.py",
    "harness/model/workload/arrivals/profiled.py",
    "harness/model/workload/arrivals/steps.py",
    "harness/model/workload/arrivals/ramp.py",
    "harness/model/workload/arrivals/diurnal.py",
    "harness/model/workload/arrivals/trace.py",
    "harness/model/workload/arrivals/closed.py",
    "harness/model/workload/lifetimes/distribution.py",
    "harness/model/workload/lifetimes/fixed.py",
    "harness/model/workload/lifetimes/exponential.py",
    "harness/model/workload/lifetimes/lognormal.py",
    "harness/model/workload/lifetimes/pareto.py",
    "harness/model/recording.py",
    "harness/model/scheduling/ledger.py",
    "harness/model/scheduling/ledgers/in_progress.py",
    "harness/model/scheduling/ledgers/optimistic.py",
    "harness/model/scheduling/ledgers/optimistic_add_only.py",
    "harness/model/scheduling/ledgers/optimistic_pre_rpc.py",
    "harness/model/scheduling/ledgers/reconcile.py",
    "harness/model/scheduling/ledgers/stale.py",
    "harness/model/scheduling/ledgers/sync_response.py",
    "harness/model/scheduling/ledgers/ttl.py",
    "harness/model/scheduling/replica_state.py",
    "harness/model/scheduling/scheduler.py",
    "harness/model/scheduling/placement/plugin.py",
    "harness/model/scheduling/placement/pipeline.py",
    "harness/model/scheduling/placement/samplers/best_of_k.py",
    "harness/model/scheduling/placement/samplers/every_node.py",
    "harness/model/scheduling/placement/samplers/one_at_random.py",
    "harness/model/scheduling/placement/samplers/two_choices.py",
    "harness/model/scheduling/placement/samplers/round_robin.py",
    "harness/model/scheduling/placement/filters/excluded.py",
    "harness/model/scheduling/placement/filters/too_many_starting.py",
    "harness/model/scheduling/placement/filters/cpu_fits.py",
    "harness/model/scheduling/placement/filters/memory_overcommit.py",
    "harness/model/scheduling/placement/filters/labels.py",
    "harness/model/scheduling/placement/filters/cpu_family.py",
    "harness/model/scheduling/placement/filters/fits.py",
    "harness/model/scheduling/placement/scorers/reference.py",
    "harness/model/scheduling/placement/scorers/cpu_usage.py",
    "harness/model/scheduling/placement/scorers/bin_pack.py",
    "harness/model/scheduling/placement/scorers/constant.py",
    "harness/model/scheduling/placement/scorers/cache_affinity.py",
    "harness/model/scheduling/placement/selectors/lowest.py",
    "harness/model/scheduling/placement/selectors/least_busy_quirk.py",
    "harness/model/protocol/node_party.py",
    "harness/model/protocol/replica_party.py",
    "harness/model/protocol/client_party.py",
    "actors/outbox.py",
    "actors/carrier.py",
]
"""The modules compiled: the virtual engine's loop and what it calls for every message, and the
Ray hosts' hot path (`actors.carrier`, `actors.outbox`: they import no Ray). Not
compiled: modules that declare config keys (`harness.model.tunables.key` dataclasses: compiled,
their
type hints lose their parameters, which the config layer reads) and everything the model
calls rarely. No package `__init__` either: compiled, one sets its `__path__` as if the shared
library were at the top level."""
BUILT = "harness/_compiled.json"
"""Written next to the extensions after a compile: the digest of each source compiled, so
`harness` can tell an extension from a source edited since (harness/__init__.py)."""


def _pure(message: str | None = None) -> list:
    """No extensions: pure Python. The record of an earlier compile goes, so extensions it
    left in the source tree are not used (harness/__init__.py)."""
    if message:
        print(f"herd-harness: {message}; installing pure Python", file=sys.stderr)
    (ROOT / BUILT).unlink(missing_ok=True)
    return []


BUILDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop", "install"}
"""The commands that build extensions: mypyc runs for these only (pip also runs this file to
read the metadata, `egg_info`, which needs none)."""


def _extensions() -> list:
    if not BUILDS.intersection(sys.argv[1:]):
        return []
    if os.environ.get("HARNESS_PURE", "").strip() not in ("", "0"):
        return _pure()
    try:
        from mypyc.build import mypycify
    except ImportError as e:
        return _pure(f"no mypyc ({e})")
    os.chdir(ROOT)  # mypycify takes the paths from the project root
    try:
        # mypy follows imports into modules not compiled for their types; their own type
        # errors are not the compile's business (silent), those of compiled ones are.
        # One shared library inside the package (harness/_native__mypyc: a Ray cluster's
        # workers get it with the package the job ships) and a small extension per module.
        options = ["--follow-imports=silent", *COMPILED]
        extensions = mypycify(options, opt_level="3", group_name="harness._native")
    except BaseException as e:  # mypy reports type errors with SystemExit
        return _pure(f"mypyc could not compile the model ({e!r})")
    return extensions


class BuildExt(build_ext):
    """Builds every extension or none: one that fails to compile (no compiler, no headers)
    leaves the package pure Python rather than half compiled."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:
            for ext in self.extensions:
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            _pure(f"the compiled modules could not be built ({e})")
            return
        if self.extensions:
            sources = {p: hashlib.sha256((ROOT / p).read_bytes()).hexdigest() for p in COMPILED}
            self._built().write_text(json.dumps({"sources": sources}, indent=1) + "\n")

    def _built(self) -> Path:
        """Where the record of what was compiled goes: next to the sources for an editable
        install (setuptools copies the extensions there), else into the build."""
        in_place = self.inplace or getattr(self, "editable_mode", False)
        return (ROOT if in_place else Path(self.build_lib)) / BUILT

    def get_outputs(self) -> list[str]:
        outputs = super().get_outputs()
        if self.extensions and not getattr(self, "editable_mode", False):
            outputs.append(str(self._built()))
        return outputs


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildExt})
