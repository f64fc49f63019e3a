"""`stale`: the scheduler as it was before the fix. Only reports change the view."""

from mypy_extensions import mypyc_attr

from harness.model.scheduling.strategy import Strategy


@mypyc_attr(allow_interpreted_subclasses=True)
class StaleStrategy(Strategy):
    name = "stale"
    counts_in_progress = False
    view_is_last_report = True
