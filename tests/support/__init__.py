"""What the tests share, one module per concern (tests/conftest.py holds only fixtures and
hooks: pytest imports it under a name of its own, so importing it again from a test would load a
second copy). No test module imports another; each imports what it needs from here."""
