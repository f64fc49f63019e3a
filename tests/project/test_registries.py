"""Every axis that varies is one `Registry`: names resolve to classes of the axis's base, an
alias to the class it names, and the rest of the harness asks the classes (capabilities), not
their names. Fault kinds' counters are the summary's fault columns; one without a column is
an error. And the packages import in one direction: no circle."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

import harness.api
from harness.config.traces import TRACE_FORMATS
from harness.engines import ENGINES, Engine, get_engine, real_time
from harness.engines.virtual import VirtualEngine
from harness.model.catalogue import MODEL_REGISTRIES, Declared
from harness.model.cluster.faults import COUNTS, FAULT_KINDS, Faults, FaultSpec
from harness.model.cluster.faults.fault_kind import Counter, FaultKind, Where
from harness.model.cluster.faults.fault_window import Drawn
from harness.model.cluster.faults.kinds import counters
from harness.model.cluster.node import Node, Outcome
from harness.model.cluster.phases import PHASES
from harness.model.registry import RegistryError
from harness.model.scheduling.placement.filters.too_many_starting import TooManyStarting
from harness.model.scheduling.placement.pipeline import Parts
from harness.model.scheduling.placement.registries import FILTERS, SAMPLERS
from harness.model.scheduling.scheduler import PlacementSpec
from harness.model.scheduling.strategies import STRATEGIES
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.distributions import LIFETIMES
from harness.model.workload.request import Shape
from harness.results.arrow_schemas import SUMMARY, summary_table
from harness.results.seed_result import seed_result
from harness.results.seed_rows import SeedRows
from tests.support.configs import scenario

ROOT = Path(__file__).resolve().parents[2]
AXES = [*MODEL_REGISTRIES, ARRIVALS, LIFETIMES, PHASES, FAULT_KINDS, ENGINES, TRACE_FORMATS]


@pytest.mark.parametrize("registry", AXES, ids=lambda r: r.axis)
def test_every_built_in_name_resolves_to_a_class_of_its_axis(registry):
    for name, cls in registry.builtins.items():
        assert registry.resolve(name) is cls and issubclass(cls, registry.base)
        assert cls.name == name
    with pytest.raises(RegistryError, match=f"unknown {registry.one} 'nope'; known: "):
        registry.resolve("nope")


def test_the_two_names_of_the_starting_filter_are_one_class():
    """`starting_cap` (the least-busy designs') is an alias of `too_many_starting`."""
    assert FILTERS.resolve("starting_cap") is FILTERS.resolve("too_many_starting")
    assert "starting_cap" in FILTERS and "starting_cap" not in list(FILTERS)
    assert ("filter", "starting_cap", "alias:too_many_starting") in FILTERS.catalogue()


@pytest.mark.parametrize("algorithm", ["best_of_k", "random", "bin_pack", "least_busy"])
def test_the_too_many_starting_flag_adds_the_filter_to_any_pipeline_once(algorithm):
    always = algorithm == "least_busy"
    for flag in (False, True):
        parts = Parts.of(PlacementSpec(algorithm=algorithm, too_many_starting=flag))
        assert parts.filters.count(TooManyStarting) == (1 if flag or always else 0)
    listed = PlacementSpec(filters=["starting_cap", "too_many_starting"], too_many_starting=True)
    assert Parts.of(listed).filters == [TooManyStarting]


def test_harness_plugins_lists_every_registry(capsys):
    from harness.cli import main

    assert main(["plugins"]) == 0
    lines = [tuple(line.split()) for line in capsys.readouterr().out.splitlines()]
    for registry in AXES:
        for name in (*registry.builtins, *registry.lazy):
            assert (registry.one, name, "harness") in lines
    header, *rows = lines
    assert header == ("KIND", "NAME", "FROM") and all(len(line) == 3 for line in rows)
    # every registered plugin, axis by axis, then the external scheduler ([external], not a
    # registry)
    listed = [row for registry in harness.api.AXES for row in registry.catalogue()]
    assert rows == [*listed, ("scheduler", "external", "harness.external")]


def test_harness_plugins_lists_a_choice_made_by_a_section_from_its_declaration(capsys, monkeypatch):
    """The external scheduler is chosen by `[external]`, not by a registry's name: its row is
    its declaration's (`harness.external.SCHEDULER`), printed as every row is, not a line of
    its own in the command."""
    import harness.external
    from harness.cli import main, plugins

    assert harness.external.SCHEDULER in plugins.LISTED
    declared = Declared("scheduler", "elsewhere", "a.package")
    listed = [declared if item is harness.external.SCHEDULER else item for item in plugins.LISTED]
    monkeypatch.setattr(plugins, "LISTED", tuple(listed))
    assert main(["plugins"]) == 0
    rows = [tuple(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert rows[-1] == ("scheduler", "elsewhere", "a.package")
    assert ("scheduler", "external", "harness.external") not in rows


def test_engines_are_named_without_importing_them():
    """Listing the engines imports neither (the Ray engine imports Ray); naming one builds it."""
    code = (
        "import sys; from harness.engines import ENGINES; names = list(ENGINES); "
        "assert names[:2] == ['virtual', 'ray'], names; "
        "assert 'actors.engine' not in sys.modules and 'ray' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    assert isinstance(get_engine("virtual"), VirtualEngine)
    assert issubclass(ENGINES.resolve("virtual"), Engine) and not VirtualEngine.on_ray
    with pytest.raises(ValueError, match="unknown engine 'nope'"):
        get_engine("nope")


def test_whether_an_engine_runs_in_real_time_is_its_capability():
    """`harness compare` and `harness search` ask `Engine.real_time`, never a name: the Ray
    engine plays in real time, the virtual one keeps model time, and an engine not installed
    here is taken to run in real time (nothing says it keeps model time)."""
    assert not real_time("virtual") and real_time("ray")
    assert ENGINES.resolve("ray").real_time and not VirtualEngine.real_time
    assert real_time("an_engine_not_installed")


def test_capabilities_replace_the_names():
    """What the harness used to ask by name, each kind now says (a sample of each axis)."""
    assert [n for n, k in ARRIVALS.builtins.items() if k.closed] == ["closed"]
    assert [n for n, k in ARRIVALS.builtins.items() if k.replay] == ["trace"]
    assert [n for n, k in ARRIVALS.builtins.items() if k.at_once] == ["burst"]
    assert [n for n, k in LIFETIMES.builtins.items() if not k.varies] == ["fixed"]
    assert [n for n, k in PHASES.builtins.items() if k.together] == ["aligned"]
    assert [n for n, k in FAULT_KINDS.builtins.items() if k.slows] == ["slow_node"]


def test_the_summary_has_a_column_for_every_fault_counter_in_order():
    """The fault columns are the built-in kinds' counters (`COUNTS`), grouped by where they
    strike, as the summary always had them."""
    assert COUNTS == (
        "fault_rpc_failed",
        "fault_rpc_exhausted",
        "fault_timeouts",
        "fault_down_creates",
        "fault_down_kills",
        "fault_lost_reports",
        "fault_crashes",
    )
    names = SUMMARY.names
    at = names.index(COUNTS[0])
    assert tuple(names[at : at + len(COUNTS)]) == COUNTS


class Flaky(FaultKind):
    """A kind added by one file (named by import path here): every create fails, counted in a
    counter of its own."""

    name = "flaky"
    Settings = Drawn  # it strikes a share of creates: all by default
    counters = (Counter("fault_flaky", Where.RPC, "Creates failed by the test kind."),)

    @staticmethod
    def strikes(spec, where):
        return where == "create"

    @staticmethod
    def on_rpc(spec, node, sandbox_id, shape, counts):
        counts["fault_flaky"] += 1
        return Outcome.FAILED


def test_a_new_kinds_counters_are_derived_and_one_without_a_column_is_an_error():
    # After the other counters of RPC answers, before those of reports and nodes.
    assert counters([*FAULT_KINDS.builtins.values(), Flaky]) == (
        *COUNTS[:5],
        "fault_flaky",
        *COUNTS[5:],
    )
    faults = Faults(
        [FaultSpec(kind="tests.project.test_registries:Flaky")], random.Random(0), range(1)
    )
    node = Node(0, cpu_count=8, memory_mib=1024, overcommit=4.0)
    with pytest.raises(KeyError, match="fault_flaky"):  # not a column of this build's summary
        faults.create(node, 1, Shape(1.0, 1.0, 1.0), 0.0)


def test_a_fault_counter_or_summary_figure_without_a_column_is_refused():
    config = scenario()
    columns = {"node_id": [0], "sandboxes": [0], "cpu_allocated": [0.0]}
    with pytest.raises(ValueError, match="fault_flaky"):
        seed_result("virtual", config, 0, columns, SeedRows("stale", 0), 0.0, {"fault_flaky": 1})
    with pytest.raises(ValueError, match="no_such_column"):
        summary_table([{"engine": "virtual", "no_such_column": 1}])


def test_no_import_circle_in_the_packages():
    """No module reaches itself through imports, type-only imports included (`grimp`, which
    import-linter uses)."""
    import grimp

    graph = grimp.build_graph("harness", "actors", exclude_type_checking_imports=False)
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            assert not graph.chain_exists(imported, module), (module, imported)


def layer_of(module: str) -> str:
    """The layer a module is in: its folder under `harness` (`harness.config`), or `actors`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "harness" else parts[0]


def layer_circles(imports: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs of layers that each reach the other through `imports` (module -> module)."""
    edges: dict[str, set[str]] = {}
    for a, b in imports:
        if layer_of(a) != layer_of(b):
            edges.setdefault(layer_of(a), set()).add(layer_of(b))

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return sorted((a, b) for a in edges for b in edges[a] if a in reach(b))


def test_no_import_circle_between_the_layers():
    """No layer (a folder of `harness`: config, results, ...) reaches itself through another,
    type-only imports included: the config layer imports the results layer, so the results
    layer names no type of the config's, even to type-check (it reads a config through
    `harness.results.config_view`)."""
    import grimp

    graph = grimp.build_graph("harness", "actors", exclude_type_checking_imports=False)
    imports = {
        (module, imported)
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.split(".")[0] in ("harness", "actors")
    }
    assert layer_circles(imports) == []
    # The check sees a circle made of a type-only import, as results -> config was.
    back = {("harness.results.seed_result", "harness.config.validation")}
    assert ("harness.config", "harness.results") in layer_circles(imports | back)


def test_modules_are_found_by_import_not_by_name():
    """Only the registry turns a name into a module (a "module:Class" plugin, an engine named
    lazily): a choice of a key, a fault kind's settings, ... are imports the contracts see."""
    dynamic = re.compile(r"import_module\(|__import__\(")
    found = [
        str(path.relative_to(ROOT))
        for folder in ("harness", "actors")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if dynamic.search(path.read_text(encoding="utf-8"))
    ]
    assert found == ["harness/model/registry.py"]


@pytest.mark.parametrize(
    ("registry", "typo", "meant"),
    [(STRATEGIES, "optimistc", "optimistic"), (SAMPLERS, "bestofk", "best_of_k")],
    ids=lambda x: getattr(x, "axis", x),
)
def test_a_misspelt_name_gets_the_closest_one(registry, typo, meant):
    """A strategy or plugin name one slip away is named, as a misspelt key is."""
    with pytest.raises(RegistryError, match=rf"'{typo}'; did you mean {meant}\? known: "):
        registry.resolve(typo)
