"""Load-test harness for cluster schedulers: Best-of-K placement on stale node metrics.

The model's hot modules, and the Ray hosts' (`actors`), may be compiled with mypyc (docs,
"Compiled hot path"): each then has an extension module next to its source, which Python
imports first. They are used only as the build that made them recorded them: it writes a
digest of each source it compiled (`_compiled.json`). Without that record, once a source has
changed since (an edit in an editable install), or with `HARNESS_PURE=1`, every `harness` and
`actors` module is loaded from its source instead (`actors` imports this package first, so the
choice is made before any of its modules loads). `COMPILED` says which path is live.

The `harness` command takes its signals once this package has loaded (`harness.__main__`), so
what loads here is kept to the least: the digests are read only when compiled modules are
there to be checked, and `COMPILED` is found when first asked for.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path

__version__ = "0.1.0"

PURE_ENV = "HARNESS_PURE"
"""Set to 1 to run pure Python even where compiled modules are installed (and, at build time,
to build none)."""
BUILT = Path(__file__).with_name("_compiled.json")
"""What the build compiled: {"sources": {path from the project root: sha256 of the source}}."""
PACKAGES = (__name__, "actors")
"""The packages with compiled modules: the model and the Ray hosts' hot path. Named, never
imported here (the Ray engine stays out of `harness`)."""


class _SourceFirst:
    """A meta path finder: the modules of `PACKAGES` as their `.py` source, never as an
    extension module."""

    def find_spec(
        self, fullname: str, path: list[str] | None = None, target: object = None
    ) -> ModuleSpec | None:
        package, dot, _ = fullname.partition(".")
        if not dot or package not in PACKAGES or not path:
            return None
        from importlib.util import spec_from_file_location

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


def changed_sources() -> list[str] | None:
    """The compiled modules whose source differs from the one compiled; None when no build
    recorded what it compiled (nothing was, or a build since did not compile)."""
    try:
        text = BUILT.read_text()
    except OSError:
        return None
    import hashlib
    import json

    try:
        built = json.loads(text)["sources"]
    except (ValueError, KeyError, TypeError):
        return None
    root = BUILT.parent.parent
    changed = []
    for name, digest in built.items():
        try:
            now = hashlib.sha256((root / name).read_bytes()).hexdigest()
        except OSError:
            now = None
        if now != digest:
            changed.append(name)
    return changed


def _pure_wanted() -> bool:
    """Pure Python when asked for, and unless a build's record says the extension modules
    here are its own and match their sources."""
    if os.environ.get(PURE_ENV, "").strip() not in ("", "0"):
        return True
    changed = changed_sources()
    if changed:
        import warnings

        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        warnings.warn(
            f"harness: {changed[0]}{more} changed since it was compiled; running pure Python "
            f"(rebuild with `pip install -e .`, or set {PURE_ENV}=1 to run pure quietly)",
            RuntimeWarning,
            stacklevel=2,
        )
    return changed != []


if _pure_wanted() and not any(isinstance(f, _SourceFirst) for f in sys.meta_path):
    sys.meta_path.insert(0, _SourceFirst())


def _compiled() -> bool:
    from importlib.machinery import EXTENSION_SUFFIXES
    from importlib.util import find_spec

    spec = find_spec(f"{__name__}.model.event_queue")
    origin = spec.origin if spec is not None else None
    return origin is not None and origin.endswith(tuple(EXTENSION_SUFFIXES))


def __getattr__(name: str) -> object:
    """`COMPILED`: whether the compiled modules are the ones imported (False: pure Python
    throughout); `PATH`: which path is live, as `harness --version` and the benchmarks say it.
    Found when first asked for: finding them imports the model's package."""
    if name == "COMPILED":
        globals()[name] = _compiled()
    elif name == "PATH":
        globals()[name] = "compiled" if __getattr__("COMPILED") else "pure Python"
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return globals()[name]
