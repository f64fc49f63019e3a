"""Algorithms: named pipelines, what `placement.algorithm` picks unless the config lists its own
plugins. A registry like every other axis (`ALGORITHMS`: built in, installed under the
entry-point group `herd_harness.algorithms`, or "module:Class"). Parts are named, not imported,
so the keys that choose an algorithm (`placement_keys`) need none of the plugins."""

from __future__ import annotations

from typing import ClassVar

from harness.model.registry import Registry

ELIGIBLE = ("memory_overcommit", "labels", "cpu_family")
"""Upstream's eligibility beyond the CPU: every algorithm keeps to it. Each costs nothing unless
used: `memory_overcommit` is dropped with M = 0, `labels` and `cpu_family` skip a request that
requires neither."""
BEST_OF_K_FILTERS = ("excluded", "cpu_fits", *ELIGIBLE)
"""`too_many_starting` joins them with `placement.too_many_starting` (`pipeline.Parts`)."""
LEAST_BUSY_FILTERS = ("excluded", "too_many_starting", "cpu_fits", *ELIGIBLE)


class Algorithm:
    """A named pipeline: what `placement.algorithm` picks unless the config lists plugins.
    Its parts are plugin names (`sampler`, `filters`, (scorer, weight)s, `selector`)."""

    name: ClassVar[str] = ""
    sampler: ClassVar[str] = ""
    filters: ClassVar[tuple[str, ...]] = BEST_OF_K_FILTERS
    scorers: ClassVar[tuple[tuple[str, float], ...]] = ()
    selector: ClassVar[str] = "lowest"


class BestOfK(Algorithm):
    """The reference scheduler's Best-of-K (the default)."""

    name = "best_of_k"
    sampler = "best_of_k"
    scorers = (("reference", 1.0),)


class PowerOfTwo(Algorithm):
    """The power of two choices: Best-of-K with K = 2."""

    name = "power_of_two"
    sampler = "two_choices"
    scorers = (("reference", 1.0),)


class Random(Algorithm):
    """One eligible node, uniformly at random."""

    name = "random"
    sampler = "one_at_random"
    scorers = (("constant", 1.0),)


class RoundRobin(Algorithm):
    """Each replica walks the nodes in order."""

    name = "round_robin"
    sampler = "round_robin"
    scorers = (("constant", 1.0),)


class BinPack(Algorithm):
    """Upstream's proposed bin-packing: the fullest node that fits."""

    name = "bin_pack"
    sampler = "every_node"
    filters = (*BEST_OF_K_FILTERS, "fits")
    scorers = (("bin_pack", 1.0),)


class LeastBusy(Algorithm):
    """Upstream's least-busy scan before Best-of-K, its comparison's quirk included."""

    name = "least_busy"
    sampler = "every_node"
    filters = LEAST_BUSY_FILTERS
    scorers = (("cpu_usage", 1.0),)
    selector = "least_busy_quirk"


class LeastBusyCorrected(Algorithm):
    """The least-busy scan with the lowest score winning."""

    name = "least_busy_corrected"
    sampler = "every_node"
    filters = LEAST_BUSY_FILTERS
    scorers = (("cpu_usage", 1.0),)


ALGORITHMS = Registry(
    "algorithms",
    "algorithm",
    Algorithm,
    (BestOfK, PowerOfTwo, Random, RoundRobin, BinPack, LeastBusy, LeastBusyCorrected),
)
"""Algorithms by name."""
