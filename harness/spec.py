"""How a tunable of the model is declared: a dataclass field carrying its help and bounds.

The model's own small dataclasses (`WorkloadSpec`, `PlacementSpec`, ...) declare their fields
with `key`, once; the config layer reads the same fields to validate a scenario and to list
every key with its default. This module depends on nothing, so the model can use it without
importing the config layer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Any

Choices = Iterable[str] | Callable[[], Iterable[str]]


def key(
    default: Any,
    help: str,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    choices: Choices | None = None,
) -> Any:
    """A dataclass field with `help` and constraints in its metadata. `choices` may be a
    registry (any iterable of names, read when a value is checked, so names registered later
    count) or a callable returning one."""
    meta = {"help": help, "ge": ge, "gt": gt, "le": le, "choices": choices}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


def choice_names(choices: Choices | None) -> tuple[str, ...]:
    """The names a `choices` entry allows now."""
    if choices is None:
        return ()
    return tuple(choices() if callable(choices) else choices)
