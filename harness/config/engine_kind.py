"""The engines' registry (`ENGINES`, the key `run.engine`) and what the harness asks of an
engine before it runs one (`EngineKind`: its name and capabilities).

Declared in the config layer, so `run.engine` names the registry by import and a config that
names no engine this build has is refused with its key when it loads, as any other choice is.
The engines themselves (`harness.engines.Engine`, which adds the steps of a run) are in the
layer above: the registry names its built-ins by import path, so naming one imports nothing
until a run needs it (the Ray engine lives in `actors/` and imports Ray); a package may add one
under the entry-point group `herd_harness.engines`.
"""

from __future__ import annotations

from typing import ClassVar

from harness.model.registry import Registry, RegistryError


class EngineKind:
    """What every engine declares: a name and what it needs of the machine and of time. The
    steps of a run are `harness.engines.Engine`'s, which every engine derives from."""

    name: ClassVar[str] = ""
    on_ray: ClassVar[bool] = False
    """Whether its parties run as Ray actors: a run then needs a Ray cluster (its own,
    embedded, or one at `ray.address`, which then holds everything but the results), and the
    budget counts the actors; otherwise every party runs in this process."""
    real_time: ClassVar[bool] = False
    """Whether it plays the model in real time: its timings (latencies, RPC times, rates: the
    summary columns whose `Kind.pace` is `REAL_TIME`) are then partly the machine's, no two
    runs of a seed are alike, and it judges its own time keeping (`time_keeping`). Otherwise it
    keeps model time by construction and a seed gives the same results on any machine."""


ENGINES = Registry(
    "engines",
    "engine",
    EngineKind,
    (),
    lazy={"virtual": "harness.engines.virtual:VirtualEngine", "ray": "actors.engine:RayEngine"},
)
"""Engines by name, each class imported when a run needs it."""


def real_time(name: str) -> bool:
    """Whether the engine `name` runs in real time (`EngineKind.real_time`); an engine that
    cannot be found here (a plugin not installed) is taken to, as nothing says it keeps model
    time."""
    try:
        return ENGINES.resolve(name).real_time
    except RegistryError:
        return True
