"""Filters: predicates a candidate must pass, applied while sampling (one file per design,
registered in `harness.model.scheduling.placement.registries`)."""
