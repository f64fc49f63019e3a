"""The results layer reads configs, sweeps and searches through `Protocol`s of its own
(`harness.results.config_view`) rather than naming the config layer's types: the objects the
config layer builds must have every member those protocols declare, with the kind of value
they declare, or a result would read an attribute that is not there."""

from __future__ import annotations

import typing
from typing import Protocol

import pytest

from harness.config.search_file import load_search
from harness.config.sweep_file import load_sweep
from harness.model.cluster.heartbeat import HeartbeatSpec
from harness.model.cluster.pools import ClusterSpec
from harness.model.scheduling.placement.placement_keys import PlacementSpec
from harness.results import config_view
from harness.results.thresholds import Threshold
from tests.support.configs import CONFIGS, SWEEPS, scenario

NAMES = vars(config_view) | {
    "ClusterSpec": ClusterSpec,
    "HeartbeatSpec": HeartbeatSpec,
    "PlacementSpec": PlacementSpec,
    "Threshold": Threshold,
}
"""The names the protocols' annotations use (the model's are imported for type checking only)."""


def members(protocol: type) -> dict[str, object]:
    """A protocol's members with their declared types (a property's return type; a method's
    type is None)."""
    found: dict[str, object] = {}
    for name, value in vars(protocol).items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            found[name] = typing.get_type_hints(value.fget, NAMES)["return"]
        elif callable(value):
            found[name] = None
    return found


def is_protocol(tp: object) -> bool:
    return isinstance(tp, type) and Protocol in tp.__mro__


def satisfies(obj: object, protocol: type, where: str) -> None:
    """`obj` has every member of `protocol`; a member typed with another protocol of the
    module (or a list of one) is checked against it in turn, one typed with a class of the
    harness is an instance of it."""
    for name, tp in members(protocol).items():
        assert hasattr(obj, name), f"{where}.{name}"
        value = getattr(obj, name)
        if tp is None:
            assert callable(value), f"{where}.{name}"
            continue
        if typing.get_origin(tp) is list:
            assert isinstance(value, list), f"{where}.{name}"
            if is_protocol(typing.get_args(tp)[0]):
                for i, item in enumerate(value):
                    satisfies(item, typing.get_args(tp)[0], f"{where}.{name}[{i}]")
        elif is_protocol(tp):
            satisfies(value, tp, f"{where}.{name}")
        elif isinstance(tp, type) and tp.__module__.startswith("harness."):
            assert isinstance(value, tp), f"{where}.{name}"


def test_a_config_has_what_a_result_reads():
    satisfies(scenario(), config_view.ConfigView, "config")


@pytest.mark.parametrize("path", SWEEPS[:1], ids=lambda p: p.name)
def test_a_sweep_and_its_cells_have_what_their_folder_reads(path):
    satisfies(load_sweep(path), config_view.SweepView, "sweep")


def test_a_search_has_what_its_folder_reads():
    search = load_search(CONFIGS / "searches" / "optimistic.toml")
    satisfies(search, config_view.SearchView, "search")


def test_a_missing_member_is_caught():
    """The check can fail: an object without `run` does not satisfy `ConfigView`."""

    class NoRun:
        cluster = heartbeat = placement = external = thresholds = None

    with pytest.raises(AssertionError, match=r"config\.run"):
        satisfies(NoRun(), config_view.ConfigView, "config")
