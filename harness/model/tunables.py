"""How a tunable of the model is declared: a dataclass field carrying its help and bounds.

The model's own small dataclasses (`WorkloadSpec`, `PlacementSpec`, ...) declare their fields
with `key`, once; the config layer reads the same fields to validate a scenario and to list
every key with its default. This module depends on nothing, so the model can use it without
importing the config layer."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Choices = Iterable[str] | Callable[[], Iterable[str]]


class ConfigError(ValueError):
    """A user mistake in a config file or override; the CLI prints it and exits with 2.

    Declared with the keys so the model's own kinds can refuse a value of theirs (an arrival
    kind checks its keys) in the same words as the config layer."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}" if key else reason)
        self.key = key
        self.reason = reason


def key(
    default: Any,
    help: str,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    choices: Choices | None = None,
    registry: Any = None,
    was: str | None = None,
) -> Any:
    """A dataclass field with `help` and constraints in its metadata. `choices` may be a
    registry (any iterable of names, read when a value is checked, so names registered later
    count) or a callable returning one: an object the declaring module imports, so the tie is
    one the import contracts see (a registry of a layer above is checked there instead).
    `registry` (a `harness.model.registry.Registry`) takes any name it has or an import path.
    `was`: the `[placement]` key a plugin's setting replaces, still read as an alias of it."""
    meta = {
        "help": help,
        "ge": ge,
        "gt": gt,
        "le": le,
        "choices": choices,
        "registry": registry,
        "was": was,
    }
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


def _choices(meta: dict[str, Any]) -> Iterable[str] | None:
    """A key's `choices` as an iterable of names; None when it has none."""
    choices = meta.get("choices")
    if choices is None:
        return None
    return choices() if callable(choices) else choices


def allows(meta: dict[str, Any], value: Any) -> bool:
    """Whether a key's `choices` allow `value` (any value when it has none). Asked of the
    choices themselves, so a registry answers for a built-in name without listing the
    installed ones (reading every package's entry points)."""
    choices = _choices(meta)
    return choices is None or value in choices


def choice_names(meta: dict[str, Any]) -> tuple[str, ...]:
    """The names a key's `choices` (or `registry`) allow now."""
    choices = _choices(meta)
    if choices is None:
        registry = meta.get("registry")
        return tuple(registry) if registry is not None else ()
    return tuple(choices)


@dataclass(frozen=True)
class PluginSettings:
    """A plugin's own settings: a plugin (placement part or ledger strategy) declares `Settings`,
    a frozen dataclass deriving from this one whose fields all have defaults (with `key` for
    help and bounds); a config writes them under `[placement.<plugin name>]`, validated as any
    section. A fault kind declares its own keys so too, written flat in its `[[faults]]`
    entry. This base has none."""
