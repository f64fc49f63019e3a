"""Samplers: which nodes are candidates for a create, in the order that breaks ties (one file
per design, registered in `harness.model.scheduling.placement.registries`)."""
