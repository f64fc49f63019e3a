"""Wiring: the protocol's parties built from a config and a seed, the same for every engine,
and what a config will ask of an engine (demand), estimated from its keys."""
