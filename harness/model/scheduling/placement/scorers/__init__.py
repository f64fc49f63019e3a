"""Scorers: a number per candidate, lower is better, added up by weight (one file per design,
registered in `harness.model.scheduling.placement.registries`)."""
