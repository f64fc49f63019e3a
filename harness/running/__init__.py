"""Running: runs and sweeps over engines, what a scenario costs before it runs, the live load
meter, and starting, joining and cleaning up Ray."""
