"""What a person sees: the terminal output, the pictures and the HTML report."""

REPORTED = {
    "requests": (
        "strategy",
        "seed",
        "kind",
        "outcome",
        "replica",
        "issued_at",
        "sent_at",
        "done_at",
        "latency_ms",
        "node_id",
        "rpcs",
    )
}
"""The columns the terminal tables and the HTML report read of the tables too large to load
whole: only these are loaded (a sweep's requests run to millions of rows; a column the
report does not read still took its memory)."""
