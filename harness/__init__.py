"""Load-test harness for cluster schedulers: Best-of-K placement on stale node metrics."""

__version__ = "0.1.0"
