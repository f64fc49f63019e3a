"""Selectors: which scored candidate wins (one file per design, registered in
`harness.model.scheduling.placement.registries`)."""
