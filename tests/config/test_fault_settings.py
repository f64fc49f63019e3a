"""A fault kind's own keys (`Settings`, written flat in its `[[faults]]` entry beside the
common ones): an installed kind's are validated with one line naming the key, listed by
`harness keys`, recorded in run.json and read by its hooks, as the built-in kinds' are."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from importlib.metadata import EntryPoint, EntryPoints

import pandas as pd
import pytest

from harness.cli import main
from harness.config import ConfigError
from harness.config.key_tables import fault_keys_table
from harness.model import registry
from harness.model.cluster.faults import FAULT_KINDS, Faults
from harness.model.cluster.faults.fault_keys import COMMON, keys_of
from harness.model.cluster.faults.fault_kind import FaultKind
from harness.model.cluster.faults.fault_window import Drawn
from harness.model.cluster.faults.rpc_error import RpcError
from harness.model.cluster.node import Node, Outcome
from harness.model.tunables import key
from harness.model.workload.request import Shape
from tests.support.configs import scenario

PATH = "tests.config.test_fault_settings:Stutter"


@dataclass(frozen=True)
class StutterSettings(Drawn):
    answer: str = key(
        "failed", "How a struck create ends.", choices=("failed", "resource_exhausted")
    )


class Stutter(FaultKind):
    """A kind of another package: a share of creates end as its setting `answer` says."""

    name = "stutter"
    Settings = StutterSettings
    counters = RpcError.counters

    @staticmethod
    def strikes(spec, where):
        return where == "create"

    @staticmethod
    def on_rpc(spec, node, sandbox_id, shape, counts):
        if spec.settings.answer == "resource_exhausted":
            counts["fault_rpc_exhausted"] += 1
            return Outcome.RESOURCE_EXHAUSTED
        counts["fault_rpc_failed"] += 1
        return Outcome.FAILED


@pytest.fixture
def stutter(monkeypatch):
    """`Stutter` as if another package had installed it (entry point `herd_harness.faults`)."""
    installed = EntryPoint("stutter", PATH, FAULT_KINDS.group)
    found = {FAULT_KINDS.group: EntryPoints([installed])}
    monkeypatch.setattr(registry, "entry_points", lambda group: found.get(group, EntryPoints()))


def _fault(**keys) -> dict:
    return {"kind": "stutter", "at_s": 1.0, **keys}


def test_an_installed_kinds_setting_is_read_and_reaches_its_hook(stutter):
    config = scenario(faults=[_fault(answer="resource_exhausted", fraction=1.0)])
    (fault,) = config.faults
    assert asdict(fault.settings) == {"fraction": 1.0, "answer": "resource_exhausted"}
    assert config.to_dict()["faults"] == [
        {"kind": "stutter", "at_s": 1.0, "until_s": None, "node": None}
        | {"fraction": 1.0, "answer": "resource_exhausted"}
    ]
    assert config.with_value("run.duration_s", 20.0).faults == config.faults
    plan = Faults(config.faults, random.Random(0), range(1))
    node = Node(0, cpu_count=8, memory_mib=1024, overcommit=4.0)
    assert plan.create(node, 1, Shape(1.0, 1.0, 1.0), 2.0) is Outcome.RESOURCE_EXHAUSTED
    assert plan.counts["fault_rpc_exhausted"] == 1 and plan.counts["fault_rpc_failed"] == 0


@pytest.mark.parametrize(
    ("keys", "key", "reason"),
    [
        ({"answer": "timeout"}, "faults[0].answer", "must be one of failed, resource_exhausted"),
        ({"fraction": 1.5}, "faults[0].fraction", "must be <= 1, got 1.5"),
        ({"latency_ms": 5.0}, "faults[0].latency_ms", "does not apply to kind stutter"),
        ({"answr": "failed"}, "faults[0].answr", "did you mean faults[0].answer?"),
    ],
)
def test_a_bad_setting_is_one_line_naming_its_key(stutter, keys, key, reason):
    with pytest.raises(ConfigError) as caught:
        scenario(faults=[_fault(**keys)])
    assert caught.value.key == key and reason in caught.value.reason
    assert "\n" not in str(caught.value)


def test_an_installed_kind_that_does_not_import_is_one_line_naming_the_kind(monkeypatch):
    installed = EntryPoint("ghost", "no_such_module:Ghost", FAULT_KINDS.group)
    found = {FAULT_KINDS.group: EntryPoints([installed])}
    monkeypatch.setattr(registry, "entry_points", lambda group: found.get(group, EntryPoints()))
    with pytest.raises(ConfigError) as caught:
        scenario(faults=[{"kind": "ghost"}])
    assert caught.value.key == "faults[0].kind" and "cannot import 'no_such_module'" in str(
        caught.value
    )


def test_a_built_in_kind_refuses_another_kinds_key():
    with pytest.raises(ConfigError) as caught:
        scenario(faults=[{"kind": "crash", "node": 0, "fraction": 0.5}])
    assert str(caught.value).startswith("faults[0].fraction: does not apply to kind crash")


def test_every_kinds_own_keys_are_listed_by_harness_keys(stutter, capsys):
    listed = {key for key, _, _ in fault_keys_table()}
    expected = {f"faults[].{k}" for k in COMMON}
    for name in FAULT_KINDS:
        expected |= {f"faults[{name}].{k}" for k in keys_of(FAULT_KINDS[name])[len(COMMON) :]}
    assert listed == expected
    assert {"faults[stutter].answer", "faults[rpc_error].error"} <= listed
    assert "faults[stutter].answer" not in {k for k, _, _ in fault_keys_table(installed=False)}
    assert main(["keys", "--markdown"]) == 0
    assert '| `faults[stutter].answer` | `"failed"` | How a struck create ends. |' in (
        capsys.readouterr().out
    )


def test_the_run_records_each_faults_kind_and_settings(stutter, tmp_path):
    config = tmp_path / "stutter.toml"
    config.write_text(
        '[run]\nduration_s = 4.0\n[cluster]\nnodes = 4\n[workload]\narrival = "constant"\n'
        "rate_per_s = 10.0\nlifetime_s = 1.0\n"
        '[[faults]]\nkind = "stutter"\nanswer = "resource_exhausted"\nfraction = 0.5\n'
        '[[faults]]\nkind = "crash"\nnode = 0\nat_s = 3.0\n'
    )
    out = tmp_path / "run"
    args = ["run", str(config), "--seeds", "1", "--out", str(out), "--quiet", "--no-report"]
    assert main(args) == 0
    recorded = json.loads((out / "run.json").read_text())["plugins"]["faults"]
    assert recorded == [
        {
            "kind": "fault",
            "name": "stutter",
            "from": PATH,
            "settings": {"fraction": 0.5, "answer": "resource_exhausted"},
        },
        {"kind": "fault", "name": "crash", "from": "harness"},
    ]
    summary = pd.read_parquet(out / "summary.parquet").iloc[0]
    assert summary["fault_rpc_exhausted"] > 0 and summary["fault_rpc_failed"] == 0
