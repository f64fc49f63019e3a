"""Each plugin's own settings (`Settings`, `[placement.<table>]`): validated with one line
naming the key, listed by `harness keys`, recorded in run.json, and the old `[placement]` keys
they replaced still read, with a one-line notice."""

from __future__ import annotations

import json
import sys

import pytest

from harness.cli import main
from harness.config import ConfigError
from harness.config.key_tables import plugin_keys_table
from harness.config.sweep_file import load_sweep
from harness.model.scheduling.placement.registries import SETTINGS_AXES
from tests.support.configs import CONFIGS, scenario

EXAMPLE = CONFIGS.parent / "examples" / "idle-first-plugin" / "src"
IDLE_FIRST = "idle_first:IdleFirst"


@pytest.fixture
def example(monkeypatch):
    """The example plugin package importable by path (`idle_first:IdleFirst`), as a config
    names a plugin it has not installed."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    sys.modules.pop("idle_first", None)


def _with_example(**settings) -> dict:
    return {"scorers": ["reference", f"{IDLE_FIRST}=0.5"], "idle_first": settings}


def test_a_plugins_own_setting_is_read_and_reaches_the_plugin(example):
    config = scenario(placement=_with_example(per_vcpu=False))
    (setting,) = config.placement.settings.values()
    assert setting.per_vcpu is False
    assert config.with_value("placement.k", 2).placement.settings == config.placement.settings


@pytest.mark.parametrize(
    ("settings", "key", "reason"),
    [
        ({"per_cpu": True}, "placement.idle_first.per_cpu", "unknown key; did you mean"),
        ({"per_vcpu": 1}, "placement.idle_first.per_vcpu", "must be true or false, got 1"),
    ],
)
def test_a_bad_setting_is_one_line_naming_its_key(example, settings, key, reason):
    with pytest.raises(ConfigError) as caught:
        scenario(placement=_with_example(**settings))
    assert caught.value.key == key and reason in caught.value.reason
    assert "\n" not in str(caught.value)


def test_a_table_of_no_plugin_with_settings_is_refused():
    with pytest.raises(ConfigError) as caught:
        scenario(placement={"lowest": {"x": 1}})
    assert caught.value.key == "placement.lowest"
    assert "nor a plugin with settings" in caught.value.reason


def test_a_bound_of_a_built_in_setting_holds():
    with pytest.raises(ConfigError, match=r"placement\.cache_affinity\.max_hits: must be >= 1"):
        scenario(placement={"cache_affinity": {"max_hits": 0}})


def test_the_old_keys_still_work_with_a_one_line_notice(capsys):
    old = scenario(placement={"affinity_top_nodes": 7, "memory_overcommit": 1.5})
    new = scenario(
        placement={"cache_affinity": {"top_nodes": 7}, "memory_overcommit": {"ratio": 1.5}}
    )
    assert old.placement == new.placement
    notices = capsys.readouterr().err.splitlines()
    assert "notice: placement.affinity_top_nodes is now placement.cache_affinity.top_nodes" in (
        notices[0] if "affinity" in notices[0] else notices[1]
    )
    with pytest.raises(ConfigError, match="both given"):
        scenario(placement={"max_starting": 2, "starting_cap": {"max_starting": 3}})


def test_every_built_in_plugin_setting_is_listed():
    listed = {key for key, _, _ in plugin_keys_table(installed=False)}
    expected = set()
    for registry in SETTINGS_AXES:
        for plugin in registry.builtins.values():
            table = scenario().placement.table_of(plugin)
            expected |= {f"placement.{table}.{f}" for f in plugin.Settings.__dataclass_fields__}
    assert listed == expected and "placement.ttl.ttl_s" in listed


def test_the_run_records_each_plugins_settings(example, tmp_path):
    out = tmp_path / "run"
    sets = [
        f'placement.scorers=["reference", "{IDLE_FIRST}=0.5"]',
        "placement.idle_first.per_vcpu=false",
        "placement.cache_affinity.top_nodes=4",  # not in use: not recorded
        "run.duration_s=2",
    ]
    args = [a for s in sets for a in ("--set", s)]
    cli = ["run", str(CONFIGS / "seed-herd.toml"), "--seeds", "1", "--compare", "ttl", *args]
    assert main([*cli, "--out", str(out), "--quiet", "--no-report"]) == 0
    parts = json.loads((out / "run.json").read_text())["plugins"]["parts"]
    by_name = {p["name"]: p for p in parts}
    assert by_name[IDLE_FIRST]["settings"] == {"per_vcpu": False}
    assert by_name["ttl"]["settings"] == {"ttl_s": 20.0}  # the defaults it ran with
    assert "settings" not in by_name["reference"]


def test_a_sweep_varies_a_plugins_setting(tmp_path):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\n'
        '[grid]\n"placement.ttl.ttl_s" = [5.0, 10.0]\n"placement.strategy" = ["ttl"]\n'
    )
    cells = load_sweep(sweep).cells
    assert [c.config.placement.settings["ttl"].ttl_s for c in cells] == [5.0, 10.0]
