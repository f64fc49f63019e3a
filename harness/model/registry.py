"""Named extension classes: built in, installed by another package, or named by import path.

Every axis a user can extend (ledger strategies, placement samplers, filters, scorers,
selectors) is a `Registry`: a name maps to a class of the axis's base; a package adds names
by declaring entry points in the group `herd_harness.<axis>`; any other reference is read as
an import path "module:Class". The config resolves every reference when it loads, so a bad one
is refused with its key before anything runs."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points


class RegistryError(ValueError):
    """A reference that does not resolve to a class of its registry's kind."""


class Registry(Mapping[str, type]):
    """The built-in classes of one axis by name; `resolve` also finds installed and
    import-path ones. As a mapping it lists the names available now (built in, installed)."""

    def __init__(self, axis: str, one: str, base: type, builtins: tuple[type, ...]) -> None:
        self.axis = axis
        """The plural name: the entry-point group's suffix."""
        self.one = one
        """What one of them is called in messages."""
        self.base = base
        self.builtins: dict[str, type] = {cls.name: cls for cls in builtins}

    @property
    def group(self) -> str:
        """The entry-point group a package declares plugins of this axis in."""
        return f"herd_harness.{self.axis}"

    def installed(self) -> dict[str, str]:
        """Name -> "module:attribute" of the installed plugins not shadowing a built-in."""
        found = {ep.name: ep.value for ep in entry_points(group=self.group)}
        return {name: path for name, path in found.items() if name not in self.builtins}

    def source(self, ref: str) -> str:
        """Where `ref` comes from: "harness" for a built-in, the "module:attribute" of an
        installed entry point, or the import path it is."""
        if ref in self.builtins:
            return "harness"
        return self.installed().get(ref, ref)

    def __getitem__(self, name: str) -> type:
        return self.resolve(name)

    def __iter__(self) -> Iterator[str]:
        yield from self.builtins
        yield from self.installed()

    def __len__(self) -> int:
        return len(self.builtins) + len(self.installed())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.builtins or name in self.installed())

    def resolve(self, ref: str) -> type:
        """The class `ref` names: a built-in or installed name, or "module:Class"."""
        if ref in self.builtins:
            return self.builtins[ref]
        path = self.installed().get(ref, ref)
        module, sep, attribute = path.partition(":")
        if not sep:
            raise RegistryError(f"unknown {self.one} {ref!r}; known: {', '.join(self)}")
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
