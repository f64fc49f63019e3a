"""Placement as a pipeline of named plugins, as the kube-scheduler framework has it.

Extension points, in the order a choice runs them:
- **sampler** (`samplers/`): which nodes are candidates (`best_of_k`: up to K uniformly without
  replacement, the reference's; `every_node`: all of them, in order). Filters apply while
  sampling, so a node that fails one is skipped, not counted.
- **filters** (`filters/`): predicates a candidate must pass (`excluded` after a failed RPC,
  `too_many_starting`, `cpu_fits`, and upstream's eligibility: `memory_overcommit`, `labels`,
  `cpu_family`).
- **scorers** (`scorers/`), each with a weight: the candidate's score is the weighted sum
  (`reference`: the reference's formula; `cache_affinity`: a bounded bonus where the template
  was placed).
- **selector** (`selectors/`): which scored candidate wins (`lowest`, strict `<`: the first
  sampled wins a tie).

Any part may learn from the creates it placed (`Plugin.placed`, kube-scheduler's PostBind).
Every plugin is a small class in a file of its own, its extension point's folder, registered
by name (`registries`: `SAMPLERS`, `FILTERS`, `SCORERS`, `SELECTORS`), or named by import path
(`"mypkg.scoring:MyScore"`), or installed under the entry point group `herd_harness.<kind>`
(e.g. `herd_harness.scorers`). An algorithm (`algorithms.ALGORITHMS`, a registry too) is a
named pipeline; a config can list its own plugins instead. `pipeline.Pipeline` runs a
replica's choice.
"""

from harness.model.scheduling.placement.algorithms import ALGORITHMS, Algorithm
from harness.model.scheduling.placement.pipeline import Pipeline
from harness.model.scheduling.placement.plugin import Filter, Sampler, Scorer, Selector
from harness.model.scheduling.placement.registries import (
    FILTERS,
    SAMPLERS,
    SCORERS,
    SELECTORS,
    PluginError,
    resolve,
)

__all__ = [
    "ALGORITHMS",
    "FILTERS",
    "SAMPLERS",
    "SCORERS",
    "SELECTORS",
    "Algorithm",
    "Filter",
    "Pipeline",
    "PluginError",
    "Sampler",
    "Scorer",
    "Selector",
    "resolve",
]
