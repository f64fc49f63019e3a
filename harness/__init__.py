"""Load-test harness for cluster schedulers: Best-of-K placement on stale node metrics.

The model's hot modules may be compiled with mypyc (README, "Compiled hot path"): each then
has an extension module next to its source, which Python imports first. `HARNESS_PURE=1` in the
environment makes every `harness` module load from its source all the same; `COMPILED` says
which path is live.
"""

from __future__ import annotations

import os
import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec
from importlib.util import find_spec, spec_from_file_location
from pathlib import Path
from types import ModuleType
from typing import Any

__version__ = "0.1.0"

PURE_ENV = "HARNESS_PURE"
"""Set to 1 to run the pure-Python modules even where compiled ones are installed."""


class _SourceFirst(MetaPathFinder):
    """Finds `harness.*` modules as their `.py` source, never as an extension module."""

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not fullname.startswith(f"{__name__}.") or not path:
            return None
        leaf = fullname.rpartition(".")[2]
        for entry in path:
            package = Path(entry, leaf, "__init__.py")
            if package.is_file():
                return spec_from_file_location(
                    fullname, package, submodule_search_locations=[str(package.parent)]
                )
            module = Path(entry, f"{leaf}.py")
            if module.is_file():
                return spec_from_file_location(fullname, module)
        return None


def _pure_wanted() -> bool:
    return os.environ.get(PURE_ENV, "").strip() not in ("", "0")


if _pure_wanted() and not any(isinstance(f, _SourceFirst) for f in sys.meta_path):
    sys.meta_path.insert(0, _SourceFirst())


def _compiled() -> bool:
    spec = find_spec(f"{__name__}.native_clock")
    origin = spec.origin if spec is not None else None
    return origin is not None and origin.endswith(tuple(EXTENSION_SUFFIXES))


COMPILED = _compiled()
"""Whether the compiled modules are the ones imported (False: pure Python throughout)."""
