"""The one probe of this machine (`harness.results.machine`): what a run ran on, as run.json
records it, and what it may still use, under free memory, a cgroup's limit and the
address-space limit, as the cost check holds an estimate against it."""

from __future__ import annotations

import os
import resource

import pytest

from harness.results import machine


def _status(tmp_path, vm_kb: int):
    status = tmp_path / "status"
    status.write_text(f"Name:\tharness\nVmPeak:\t{vm_kb + 5} kB\nVmSize:\t{vm_kb} kB\n")
    return status


def test_the_record_and_the_budget_count_the_same_cores():
    found = machine.this_machine()
    assert 0 < found.memory_bytes < 1e15
    assert found.cpus == machine.fingerprint()["cpu_count"] == (os.cpu_count() or 1)


def test_an_address_space_limit_bounds_the_memory_available(tmp_path, monkeypatch):
    limit = 3 * 2**30
    monkeypatch.setattr(resource, "getrlimit", lambda which: (limit, resource.RLIM_INFINITY))
    found = machine.this_machine(tmp_path / "no-cgroup", _status(tmp_path, 1024 * 1024))
    assert found.memory_bytes == limit - 2**30  # what the limit leaves beyond what is mapped
    assert found.bound == "the address-space limit, ulimit -v"


@pytest.mark.parametrize(
    "files",
    [
        {"memory.max": "2000000000\n", "memory.current": "500000000\n"},  # cgroup v2
        {
            "memory/memory.limit_in_bytes": "2000000000\n",  # cgroup v1
            "memory/memory.usage_in_bytes": "500000000\n",
        },
    ],
    ids=["v2", "v1"],
)
def test_a_cgroup_memory_limit_bounds_the_memory_available(files, tmp_path):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = machine.this_machine(tmp_path, _status(tmp_path, 1000))
    assert found.memory_bytes == 1.5e9 and found.bound == "the cgroup's memory limit"


def test_a_cgroup_without_a_limit_leaves_free_memory_the_bound(tmp_path):
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "memory.current").write_text("500000000\n")
    assert machine.this_machine(tmp_path, _status(tmp_path, 1000)).bound == "free memory"
