"""The public plugin API (`harness.api`, docs/reference/api.md): every documented name is
exported, every axis a package can extend has its base class there (found from the registries
themselves), and the example plugin package and the plugins guide import from it alone."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re

import harness
import harness.api
from harness.model.registry import Registry
from tests.support.configs import CONFIGS

ROOT = CONFIGS.parent
PAGE = ROOT / "docs" / "reference" / "api.md"
GUIDE = ROOT / "docs" / "guides" / "plugins.md"
EXAMPLE = ROOT / "examples" / "idle-first-plugin" / "src"

PUBLIC = {
    "API_VERSION",
    "ENTRY_POINT_GROUPS",
    "FILTERS",
    "LEDGERS",
    "STRATEGIES",
    "SAMPLERS",
    "SCORERS",
    "SELECTORS",
    "CreateRequest",
    "Eligible",
    "Filter",
    "Ledger",
    "Strategy",
    "NodeInfo",
    "NodeView",
    "OptimisticLedger",
    "OptimisticStrategy",
    "Outcome",
    "PlacementSpec",
    "Plugin",
    "PluginSettings",
    "Registry",
    "RegistryError",
    "ReplicaState",
    "Report",
    "Sampler",
    "Scorer",
    "Selector",
    "Shape",
    "key",
    # every axis's base, and what its hooks are handed (API 1, every axis)
    "AXES",
    "ALGORITHMS",
    "Algorithm",
    "ARRIVALS",
    "ArrivalKind",
    "ArrivalKeys",
    "LIFETIMES",
    "DRAWS",
    "Distribution",
    "PHASES",
    "Phase",
    "BeatGroup",
    "FAULT_KINDS",
    "FaultKind",
    "FaultWindow",
    "Counter",
    "Where",
    "Drawn",
    "Node",
    "ENGINES",
    "EngineKind",
    "Engine",
    "EngineError",
    "Progress",
    "Snapshot",
    "Load",
    "TRACE_FORMATS",
    "TraceFormat",
    "Imported",
    "ConfigError",
}
"""The stable names, as released (the deprecated ones included, until API_VERSION 2):
removing one fails here, whatever the page says."""


def documented() -> set[str]:
    """The names in the first column of the page's table of public names."""
    names = set()
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = line.split("|")
        if len(cells) > 2 and "`" in cells[1]:
            names |= set(re.findall(r"`([A-Za-z_]+)`", cells[1]))
    return names


def test_every_documented_name_is_exported() -> None:
    assert documented() == PUBLIC
    assert set(harness.api.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(harness.api, name) is not None


def _harness_imports(source: str) -> set[str]:
    """The `harness` modules a Python source imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {m for m in found if m == "harness" or m.startswith("harness.")}


def test_the_example_plugin_imports_only_the_public_module() -> None:
    sources = sorted(EXAMPLE.rglob("*.py"))
    assert sources
    imported = set().union(*(_harness_imports(p.read_text(encoding="utf-8")) for p in sources))
    assert imported == {"harness.api"}


def test_the_guides_code_imports_only_the_public_module() -> None:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    imported = set().union(*(_harness_imports(b) for b in blocks if "import" in b))
    assert imported == {"harness.api"}


def every_registry() -> list[Registry]:
    """Every `Registry` instance a module of `harness` defines, each module imported."""
    found: dict[int, Registry] = {}
    for info in pkgutil.walk_packages(harness.__path__, "harness."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, Registry):
                found[id(value)] = value
    return list(found.values())


def test_every_axis_has_its_base_class_and_registry_in_the_public_module() -> None:
    """Found from the registries, not from a list: a new axis whose base class a package
    would have to import from an internal path fails here."""
    registries = every_registry()
    assert {r.axis for r in registries} == {r.axis for r in harness.api.AXES}
    exported = {id(getattr(harness.api, name)) for name in harness.api.__all__}
    for registry in registries:
        assert id(registry.base) in exported, f"{registry.axis}: {registry.base.__qualname__}"
        assert id(registry) in exported, registry.axis
        assert harness.api.ENTRY_POINT_GROUPS[registry.axis] == registry.group
