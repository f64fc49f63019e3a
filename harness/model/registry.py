"""Named extension classes: built in, installed by another package, or named by import path.

Every axis that varies (ledger strategies; placement samplers, filters, scorers, selectors;
arrival kinds, lifetimes, heartbeat phases, fault kinds; engines) is a `Registry`: a name maps
to a class of the axis's base, which declares what the rest of the harness may ask of it
(capability attributes, not name comparisons elsewhere); a class may declare `aliases`, other
names it answers to; a package adds names by declaring entry points in the group
`herd_harness.<axis>`; any other reference is read as an import path "module:Class". The config
resolves every reference when it loads, so a bad one is refused with its key before anything
runs.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")


def entry_points(group: str) -> Iterable[EntryPoint]:
    """The installed entry points of `group`, read again only once the folders Python imports
    from have changed (an install adds its metadata folder to one): a registry lists them
    whenever it is compared or iterated, hundreds of times in a run that names a plugin by
    import path, and each reading reads every installed distribution's metadata.
    `importlib.metadata` is loaded on first use: its import takes longer than checking a
    config that names built-ins only."""
    from importlib import metadata

    state = tuple(map(_changed_at, sys.path))
    kept = _read.get(group)
    if kept is None or kept[0] != state:
        kept = _read[group] = (state, tuple(metadata.entry_points(group=group)))
    return kept[1]


_read: dict[str, tuple[tuple[int | None, ...], tuple[EntryPoint, ...]]] = {}
"""Per group: the state of the import folders when its entry points were read, and them."""


def _changed_at(folder: str) -> int | None:
    try:
        return os.stat(folder or ".").st_mtime_ns
    except OSError:
        return None


class RegistryError(ValueError):
    """A reference that does not resolve to a class of its registry's kind."""


class Registry(Mapping[str, type[T]], Generic[T]):
    """The built-in classes of one axis by name; `resolve` also finds installed and
    import-path ones. As a mapping it lists the names available now (built in, installed)."""

    def __init__(
        self,
        axis: str,
        one: str,
        base: type[T],
        builtins: tuple[type[T], ...],
        lazy: dict[str, str] | None = None,
    ) -> None:
        self.axis = axis
        """The plural name: the entry-point group's suffix."""
        self.one = one
        """What one of them is called in messages."""
        self.base = base
        self.builtins: dict[str, type[T]] = {cls.name: cls for cls in builtins}
        self.lazy = dict(lazy or {})
        """Built-in names whose class is imported only when resolved ("module:Class"): one that
        needs what a run may not have (the Ray engine needs Ray)."""
        self.aliases = {a: cls.name for cls in builtins for a in getattr(cls, "aliases", ())}
        """Other names a built-in answers to (an older config name) -> its name."""

    @property
    def group(self) -> str:
        """The entry-point group a package declares plugins of this axis in."""
        return f"herd_harness.{self.axis}"

    def installed(self) -> dict[str, str]:
        """Name -> "module:attribute" of the installed plugins not shadowing a built-in."""
        found = {ep.name: ep.value for ep in entry_points(group=self.group)}
        return {name: path for name, path in found.items() if name not in self.known()}

    def source(self, ref: str) -> str:
        """Where `ref` comes from: "harness" for a built-in, the "module:attribute" of an
        installed entry point, or the import path it is."""
        if ref in self.builtins:
            return "harness"
        return self.installed().get(ref, ref)

    def known(self) -> set[str]:
        """The built-in names, lazy ones and aliases included."""
        return {*self.builtins, *self.lazy, *self.aliases}

    def __getitem__(self, name: str) -> type[T]:
        return self.resolve(name)

    def __iter__(self) -> Iterator[str]:
        yield from self.builtins
        yield from self.lazy
        yield from self.installed()

    def __len__(self) -> int:
        return len(self.builtins) + len(self.lazy) + len(self.installed())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.known() or name in self.installed())

    def resolve(self, ref: str) -> type[T]:
        """The class `ref` names: a built-in (or an alias of one) or installed name, or
        "module:Class"."""
        ref = self.aliases.get(ref, ref)
        if ref in self.builtins:
            return self.builtins[ref]
        path = self.lazy.get(ref) or self.installed().get(ref, ref)
        module, sep, attribute = path.partition(":")
        if not sep:
            names = list(self) + list(self.aliases)
            close = difflib.get_close_matches(ref, names, n=1)
            hint = f"; did you mean {close[0]}?" if close else ";"
            raise RegistryError(f"unknown {self.one} {ref!r}{hint} known: {', '.join(self)}")
        try:
            found = getattr(importlib.import_module(module), attribute)
        except ImportError as e:
            raise RegistryError(f"cannot import {module!r} for {ref!r}: {e}") from None
        except AttributeError:
            raise RegistryError(f"{module!r} has no {attribute!r}") from None
        if not (isinstance(found, type) and issubclass(found, self.base)):
            base = f"{self.base.__module__}.{self.base.__name__}"
            raise RegistryError(f"{path} is not a {self.base.__name__} ({base})")
        return found

    def catalogue(self) -> list[tuple[str, str, str]]:
        """(what one is called, name, source) of every name available now: "harness" for a
        built-in, "alias:<name>" for an alias, the entry point of an installed one."""
        rows = [(self.one, name, "harness") for name in (*self.builtins, *self.lazy)]
        rows += [(self.one, alias, f"alias:{name}") for alias, name in self.aliases.items()]
        rows += [(self.one, name, path) for name, path in self.installed().items()]
        return rows
