"""`in_progress`: pending creates count in the score (part 1 of the merged fix, always on)."""

from mypy_extensions import mypyc_attr

from harness.model.scheduling.strategy import Strategy


@mypyc_attr(allow_interpreted_subclasses=True)
class InProgressStrategy(Strategy):
    name = "in_progress"
    counts_in_progress = True
    view_is_last_report = True
