"""Thin Ray actors over the pure model: they move messages and keep time, nothing more."""
