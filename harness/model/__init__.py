"""The pure model: nodes, reports, workload, placement, ledgers and the protocol parties.

No Ray, no clock reads, no I/O; time is an argument. Nothing here imports the layers above
(config, results, wiring, engines, running, presentation): import-linter holds it to that.
"""
