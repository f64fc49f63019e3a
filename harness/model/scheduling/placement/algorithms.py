"""Algorithms: named pipelines, what `placement.algorithm` picks unless the config lists its own
plugins. Parts are named, not imported, so the keys that choose an algorithm
(`placement_keys`) need none of the plugins."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Algorithm:
    """A named pipeline: what `placement.algorithm` picks unless the config lists plugins."""

    sampler: str
    filters: tuple[str, ...]
    scorers: tuple[tuple[str, float], ...]
    selector: str = "lowest"


ELIGIBLE = ("memory_overcommit", "labels", "cpu_family")
"""Upstream's eligibility beyond the CPU: every algorithm keeps to it. Each costs nothing unless
used: `memory_overcommit` is dropped with M = 0, `labels` and `cpu_family` skip a request that
requires neither."""
BEST_OF_K_FILTERS = ("excluded", "cpu_fits", *ELIGIBLE)
"""`too_many_starting` joins them with `placement.too_many_starting` (`pipeline.Parts`)."""
LEAST_BUSY_FILTERS = ("excluded", "too_many_starting", "cpu_fits", *ELIGIBLE)
ALGORITHMS = {
    "best_of_k": Algorithm("best_of_k", BEST_OF_K_FILTERS, (("reference", 1.0),)),
    "power_of_two": Algorithm("two_choices", BEST_OF_K_FILTERS, (("reference", 1.0),)),
    "random": Algorithm("one_at_random", BEST_OF_K_FILTERS, (("constant", 1.0),)),
    "round_robin": Algorithm("round_robin", BEST_OF_K_FILTERS, (("constant", 1.0),)),
    "bin_pack": Algorithm("every_node", (*BEST_OF_K_FILTERS, "fits"), (("bin_pack", 1.0),)),
    "least_busy": Algorithm(
        "every_node", LEAST_BUSY_FILTERS, (("cpu_usage", 1.0),), "least_busy_quirk"
    ),
    "least_busy_corrected": Algorithm("every_node", LEAST_BUSY_FILTERS, (("cpu_usage", 1.0),)),
}
"""Algorithms by name."""
