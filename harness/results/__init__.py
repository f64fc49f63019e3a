"""Results: the Arrow tables of a run, one seed's summary, statistics over seeds, thresholds,
the end-of-seed checks and the run and sweep folders on disk.

Below the config layer: what it needs of a config it reads off the object it is handed.
"""
