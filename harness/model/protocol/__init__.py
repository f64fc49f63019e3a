"""The protocol of a run, sans I/O: what each party does with each message, and what it sends.

Three parties take part: the **node side** (`node_party.NodeHost`: nodes, their heartbeats, faults
and RPC answers), the **scheduler side** (`replica_party.ReplicaHost`: one scheduler replica) and
the **client side** (`client_party.ClientHost`: arrivals, lifetimes, kills, closed-loop cycles, and
the request rows). A party never reads a clock and never performs what it decides: it is a
`Recipient`, handed each message as `deliver(kind, key, payload, now)`, and it hands every
message it wants sent to `sink.emit(at, kind, key, payload)`, the engine's `Sink`. `at` is the
model time the message should be handled; `key` says which node, replica or client it is for.

Engines are transports. The virtual engine handles a message at once when it is due now and
goes to another party (a zero-latency hop), and otherwise puts it on its heap; the Ray engine
carries messages between actors in batches and holds each until its `at` on a wall clock.
Timers are messages a party sends itself: they always wait for their time.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

from harness.model.event_queue import Recipient, Sink

__all__ = [
    "IS_TIMER",
    "KINDS",
    "NAMES",
    "PARTY",
    "TIMERS",
    "Kind",
    "Party",
    "Recipient",
    "Sink",
    "unhandled",
]


class Kind:
    """Every message of the protocol, as small ints: they index the engines' dispatch tables
    on the hot path (keep them dense; `NAMES` has their names)."""

    # to the node side; key: node ID
    CREATE_RPC: Final = 0
    """(sandbox_id, shape, replica): the first leg of a create has arrived."""
    KILL_RPC: Final = 1
    """(sandbox_id, replica): the first leg of a kill has arrived."""
    # the node side's own timers
    BEAT: Final = 2
    """key: the turn on the host's beat wheel (`harness.model.cluster.heartbeat_wheel.BeatWheel`);
    payload: the planned time. That turn's group of nodes reports."""
    CRASH: Final = 3
    """key: node ID; payload: down (True) or back (False)."""
    # to a scheduler replica; key: replica
    SUBMIT_CREATE: Final = 4
    """(client, sandbox_id, shape, issued_at, context): a client asks for a create of `shape`
    (`harness.model.workload.request.Shape`); `context` is the client's own and comes back with the
    answer."""
    SUBMIT_KILL: Final = 5
    """(sandbox_id, context): a client asks for the kill of a sandbox this replica placed."""
    CREATE_ANSWER: Final = 6
    """(sandbox_id, outcome, fresh report or None): a node's answer to a create."""
    KILL_ANSWER: Final = 7
    """(sandbox_id, outcome, fresh report or None): a node's answer to a kill."""
    REPORT: Final = 8
    """A heartbeat `Report` reaches the replica."""
    # to the client side; key: client
    CREATE_DONE: Final = 9
    """(sandbox_id, step, node, rpcs, skips, attempts, failure, context): a create is placed
    or failed."""
    KILL_DONE: Final = 10
    """(sandbox_id, outcome, node, context): a kill is answered."""
    # the client side's own timers
    ARRIVAL: Final = 11
    """(arrival index, (intended time, shape, lifetime)): the next open-loop arrival is due
    (key: arrival index)."""
    CLIENT_START: Final = 12
    """payload: the intended time; a closed-loop client starts its next cycle."""
    KILL_DUE: Final = 13
    """(sandbox_id, intended time): its lifetime is over."""


def kind_names(kinds: type) -> dict[int, str]:
    """Kind value -> name of a class of kinds, refused unless the values are 0, 1, 2, ...
    without gaps: engines index their tables by kind."""
    names = {v: k for k, v in vars(kinds).items() if isinstance(v, int)}
    if sorted(names) != list(range(len(names))):
        raise ValueError(f"message kinds must be 0, 1, 2, ... without gaps: {sorted(names)}")
    return names


NAMES = kind_names(Kind)
"""Kind value -> name, for messages shown to people."""
KINDS = range(len(NAMES))
"""Every kind, derived from `Kind`: a new kind extends it, and the engines' own kinds (a
timeline sample) number after it."""


def unhandled(kind: int, recipient: object) -> TypeError:
    """The error of a message delivered to a party that does not handle its kind."""
    name = NAMES.get(kind, "unknown")
    return TypeError(f"{type(recipient).__name__} does not handle {name} messages (kind {kind})")


class Party(IntEnum):
    NODES: Final = 0
    REPLICA: Final = 1
    CLIENTS: Final = 2


PARTY = {
    **dict.fromkeys((Kind.CREATE_RPC, Kind.KILL_RPC, Kind.BEAT, Kind.CRASH), Party.NODES),
    **dict.fromkeys(
        (
            Kind.SUBMIT_CREATE,
            Kind.SUBMIT_KILL,
            Kind.CREATE_ANSWER,
            Kind.KILL_ANSWER,
            Kind.REPORT,
        ),
        Party.REPLICA,
    ),
    **dict.fromkeys(
        (Kind.CREATE_DONE, Kind.KILL_DONE, Kind.ARRIVAL, Kind.CLIENT_START, Kind.KILL_DUE),
        Party.CLIENTS,
    ),
}
"""Which party handles each kind of message."""
if set(PARTY) != set(KINDS):
    raise ValueError(
        f"message kinds no party handles: {[NAMES[k] for k in KINDS if k not in PARTY]}"
    )

TIMERS = frozenset({Kind.BEAT, Kind.CRASH, Kind.ARRIVAL, Kind.CLIENT_START, Kind.KILL_DUE})
"""Messages a party sends itself: they wait for their time even when it is now."""
IS_TIMER = tuple(kind in TIMERS for kind in KINDS)
"""`TIMERS` as a table indexed by kind (the hot path's form)."""
