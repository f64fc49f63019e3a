"""The scheduler: one replica's choice of node (placement plugins), its in-progress map and
create flow (scheduler.py), and its belief of each node's load (ledger strategies)."""
