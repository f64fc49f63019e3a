"""Compiles the model's and the Ray hosts' hot modules with mypyc when the package is built
(README, "Compiled hot path"); everything else about the package is in pyproject.toml.

`pip install .` and `pip install -e .` compile them (mypyc comes with mypy, a build
requirement; a C compiler and Python's headers must be there). If the compile fails, the
package installs as pure Python all the same, with a warning in pip's build output (`-v`).
`HARNESS_PURE=1` in the environment skips the compile."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tomllib
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
COMPILED = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["herd-harness"]["compiled"]
"""The modules compiled: the virtual engine's loop and what it calls for every message, and the
Ray hosts' hot path (`actors.carrier`, `actors.outbox`: they import no Ray). Not
compiled: modules that declare config keys (`harness.model.tunables.key` dataclasses: compiled,
their type hints lose their parameters, which the config layer reads) and everything the model calls
rarely. No package `__init__` either: compiled, one sets its `__path__` as if the shared library
were at the top level."""
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


IN_PLACE = {"editable_wheel", "develop"}
"""The builds that leave the extensions next to the sources (`pip install -e .`)."""


def _digest(path: str) -> str:
    return hashlib.sha256((ROOT / path).read_bytes()).hexdigest()


def _unchanged() -> bool:
    """Whether an editable install's extensions in the tree are those of the current sources:
    the record of the last compile names every module compiled now, each with its source's
    digest unchanged, and each extension (and the shared library) is still there for this
    Python. Then a reinstall reuses them rather than compiling again for minutes."""
    if not IN_PLACE.intersection(sys.argv[1:]):
        return False
    try:
        built = json.loads((ROOT / BUILT).read_text())["sources"]
    except (OSError, ValueError, KeyError):
        return False
    suffix = EXTENSION_SUFFIXES[0]
    shared = ROOT / f"harness/_native__mypyc{suffix}"
    return (
        sorted(built) == sorted(COMPILED)
        and shared.is_file()
        and all(built[p] == _digest(p) for p in COMPILED)
        and all((ROOT / p).with_suffix(suffix).is_file() for p in COMPILED)
    )


def _extensions() -> list:
    if not BUILDS.intersection(sys.argv[1:]):
        return []
    if os.environ.get("HARNESS_PURE", "").strip() not in ("", "0"):
        return _pure()
    if _unchanged():
        print(
            "herd-harness: compiled modules unchanged since the last build; reusing them",
            file=sys.stderr,
        )
        return []
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
            sources = {p: _digest(p) for p in COMPILED}
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
