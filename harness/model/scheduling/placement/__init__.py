"""Placement as a pipeline of named plugins, as the kube-scheduler framework has it.

Extension points, in the order a choice runs them:
- **sampler**: which nodes are candidates (`best_of_k`: up to K uniformly without replacement,
  the reference's; `every_node`: all of them, in order). Filters apply while sampling, so a
  node that fails one is skipped, not counted.
- **filters**: predicates a candidate must pass (`excluded` after a failed RPC, `too_many_
  starting`, `cpu_fits`, and upstream's eligibility: `memory_overcommit`, `labels`,
  `cpu_family`).
- **scorers**, each with a weight: the candidate's score is the weighted sum (`reference`:
  the reference's formula; `cache_affinity`: a bounded bonus where the template was placed).
- **selector**: which scored candidate wins (`lowest`, strict `<`: the first sampled wins a
  tie).

Any part may learn from the creates it placed (`Plugin.placed`, kube-scheduler's PostBind).
Every plugin is a small class registered by name (`SAMPLERS`, `FILTERS`, `SCORERS`,
`SELECTORS`), or named by import path (`"mypkg.scoring:MyScore"`), or installed under the entry
point group `herd_harness.<kind>` (e.g. `herd_harness.scorers`). An algorithm (`ALGORITHMS`)
is a named pipeline; a config can list its own plugins instead.
"""

from harness.model.scheduling.placement.framework import (
    ALGORITHMS,
    FILTERS,
    SAMPLERS,
    SCORERS,
    SELECTORS,
    Algorithm,
    Filter,
    Pipeline,
    PluginError,
    Sampler,
    Scorer,
    Selector,
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
