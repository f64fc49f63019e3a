"""Many draws at once (`harness.model.random_streams.randints`, `uniforms`) are the draws one call
at a time would make, and leave the stream where those calls would; so is `expovariate`'s one
draw."""

from __future__ import annotations

import random

import pytest

from harness.model.random_streams import Streams, expovariate, randints, uniforms


@pytest.mark.parametrize(
    ("lo", "hi", "n"),
    [(0, 4, 1000), (0, 0, 300), (3, 3, 10), (0, 7, 333), (-5, 100, 2000), (1, 10**6, 500),
     (0, 2**32 - 1, 50), (0, 2**32, 20), (5, 4, 0)],
)  # fmt: skip
def test_randints_are_randint_one_at_a_time(lo: int, hi: int, n: int) -> None:
    for seed in range(5):
        bulk, one = random.Random(f"{seed}:cluster"), random.Random(f"{seed}:cluster")
        assert randints(bulk, lo, hi, n) == [one.randint(lo, hi) for _ in range(n)]
        assert bulk.getstate() == one.getstate()


@pytest.mark.parametrize(
    ("a", "b", "n"),
    [(0.0, 20.0, 1000), (0.0, 1.0, 7), (-3.5, 17.25, 100), (5.0, 5.0, 3), (0, 1, 0)],
)
def test_uniforms_are_uniform_one_at_a_time(a: float, b: float, n: int) -> None:
    for seed in range(5):
        bulk, one = random.Random(f"{seed}:heartbeat"), random.Random(f"{seed}:heartbeat")
        assert uniforms(bulk, a, b, n) == [one.uniform(a, b) for _ in range(n)]
        assert bulk.getstate() == one.getstate()


@pytest.mark.parametrize("rate", [2000.0, 1 / 30.0, 1.0, 1e-9, 7.5e6])
def test_expovariate_is_the_streams_own(rate: float) -> None:
    for seed in range(5):
        ours, theirs = random.Random(f"{seed}:lifetime"), random.Random(f"{seed}:lifetime")
        assert [expovariate(ours, rate) for _ in range(500)] == [
            theirs.expovariate(rate) for _ in range(500)
        ]
        assert ours.getstate() == theirs.getstate()


def test_every_stream_is_named_in_one_place():
    """A seeded stream is made only by `harness.model.random_streams` (`Streams` names each
    purpose): no other module of the harness names one, so the list of what a seed draws is
    the module's own."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    made = [
        str(path.relative_to(root))
        for folder in ("harness", "actors")
        for path in sorted((root / folder).rglob("*.py"))
        if "random.Random(" in path.read_text(encoding="utf-8").replace("random.Random()", "")
    ]
    assert made == ["harness/model/random_streams.py"]
    assert not any(
        "random_streams import stream" in path.read_text(encoding="utf-8")
        for folder in ("harness", "actors")
        for path in (root / folder).rglob("*.py")
    )


def test_the_streams_keep_their_names():
    """The names are part of every seed's draws (the golden digests hold them): a closed-loop
    client's streams add its number to the purpose."""
    import random

    s = Streams(5)
    for rng, name in [
        (s.cluster(), "cluster"),
        (s.workload(), "workload"),
        (s.lifetimes(), "lifetime"),
        (s.lifetimes(3), "lifetime/3"),
        (s.templates(3), "template/3"),
        (s.sizes(3).of("vcpu"), "variety/vcpu/3"),
        (s.sizes().of("memory"), "variety/memory"),
        (s.spread(), "spread"),
        (s.heartbeat(), "heartbeat"),
        (s.placement(2), "placement/2"),
        (s.faults(7), "faults/7"),
        (s.report_delivery(7), "report-delivery/7"),
    ]:
        assert rng.random() == random.Random(f"5:{name}").random(), name
