"""A run on two pools with the memory filter, and the memory in use it leaves."""

from __future__ import annotations

from harness.config import Config
from harness.engines.virtual import VirtualEngine
from harness.model.cluster.pools import registrations
from tests.support.configs import scenario

GIB = 1024.0


def memory_run(strategy: str, engine: str = "virtual") -> Config:
    """20 creates/s of 4 GiB for 10 s, never killed, onto a small pool (3 x 16 GiB) and a large
    one (2 x 64 GiB): 200 creates, room for 3 x 4 + 2 x 16 = 44 at M = 1. Reports every 2 s."""
    return scenario(
        run={"duration_s": 10.0, "seeds": 1, "sample_interval_s": 0, "engine": engine},
        cluster={
            "pools": [
                {"count": 3, "cpu_count": 16, "memory_mib": 16 * GIB},
                {"count": 2, "cpu_count": 16, "memory_mib": 64 * GIB},
            ]
        },
        heartbeat={"interval_s": 2.0},
        placement={"strategy": strategy, "memory_overcommit": {"ratio": 1.0}, "k": 2},
        workload={"memory_mib": 4 * GIB, "lifetime_s": None},
    )


def memory_in_use(config: Config, seed: int = 0) -> tuple[list[float], list[float], int]:
    """(allocated memory per node at the end, each node's M x total, creates placed)."""
    result = VirtualEngine().run_seed(config, seed)
    counts = result.nodes.column("sandboxes").to_pylist()
    limits = [info.memory_mib for info in registrations(config.cluster)]
    return [4 * GIB * n for n in counts], limits, result.summary["placed"]
