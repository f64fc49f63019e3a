"""Accounting error beyond the calls in flight."""

from __future__ import annotations

import pandas as pd


def beyond_in_flight(tl: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(over-count, under-count) of believed minus true vCPUs per timeline sample, beyond what
    the replica's own calls in flight can explain, both >= 0.

    A call in flight can leave the view off either way, depending on the ledger: a create the
    node has done whose answer is not in yet is missing from a ledger that counts on the
    answer, while one counted before its RPC (`optimistic_pre_rpc`) is over until the node has
    done it; a kill likewise. So the slack is the vCPUs of the creates and the kills in flight
    together, whatever the strategy. (The one-sided bound, short by at most the creates and
    over by at most the kills, holds only for ledgers that change on answers alone;
    tests/model/scheduling/test_races.py checks it for those.)"""
    slack = tl["in_progress_cpu"] + tl["kill_in_progress_cpu"]
    over = (tl["cpu_error"] - slack).clip(lower=0)
    under = (-tl["cpu_error"] - slack).clip(lower=0)
    return over, under
