"""`stale`: the scheduler as it was before the fix. Only reports change the view."""

from harness.ledger import Ledger


class StaleLedger(Ledger):
    name = "stale"
    counts_in_progress = False
    view_is_last_report = True
