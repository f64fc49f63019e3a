"""A scheduler process that misbehaves on purpose, for tests/external/test_external.py:

    python tests/support/external_fault_scheduler.py MODE [framed]

places as the Python example does (examples/python-scheduler) through seed 0, then from the
third Place of any later seed does what MODE says: `die` (exits with code 7), `hang` (never
answers), `no-node` (answers a node that does not exist), `garbage` (answers bytes that are not
a PlaceReply), `raise` (raises KeyError inside Place), `hangup` (stops serving, the process
lives on), `slow-once` (one answer late, then placing again, having heard first thing that the
harness dropped it: else it exits with code 9), or from its first Hello `old` (speaks protocol
version 0) or `node-0` (answers node 0 to every Place, whatever the create asks; a create asked
about again must come with a `create_refused` event counting its refusals, else it exits with
code 9). With `framed` it serves the framed transport, one call at a time, not gRPC.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "python-scheduler"))

from scheduler import Session, serve_framed

from harness.external import scheduler_pb2 as pb
from harness.external import wire

MODE = sys.argv[1]
FAULTY_FROM = 3
"""The Place call of a seed after 0 from which the scheduler misbehaves."""
SLOW_S = 3.0
"""How late `slow-once` answers: 1.5 x the test's 2 s timeout, so the answer is late by 1 s and,
served one call at a time, still lets the next call (sent at the drop, waiting for the late
answer first) finish 1 s inside its own timeout."""


class Faulty:
    def __init__(self) -> None:
        self.session: Session | None = None
        self.calls = 0
        self.late = -1
        self.asked: dict[int, int] = {}
        self.server: grpc.Server | None = None

    def hello(self, request: pb.HelloRequest, context: grpc.ServicerContext) -> pb.HelloReply:
        self.session, self.calls = Session(request), 0
        version = 0 if MODE == "old" else wire.PROTOCOL_VERSION
        return pb.HelloReply(protocol_version=version, name=f"faulty-{MODE}")

    def place(self, request: pb.PlaceRequest, context: grpc.ServicerContext) -> object:
        assert self.session is not None
        self.calls += 1
        if MODE == "node-0":  # told of each refusal before it is asked again, or exits with 9
            sandbox = request.create.sandbox_id
            refused = [e.create_refused for e in request.events if e.HasField("create_refused")]
            if sandbox in self.asked and [(r.sandbox_id, r.refusals) for r in refused] != [
                (sandbox, self.asked[sandbox])
            ]:
                os._exit(9)
            self.asked[sandbox] = self.asked.get(sandbox, 0) + 1
            return pb.PlaceReply(placed=True, node=0)
        if self.session.seed == 0 or self.calls < FAULTY_FROM:
            return self.session.place(request)
        if MODE == "die":
            os._exit(7)
        if MODE == "hang":
            time.sleep(3600)
        if MODE == "raise":
            raise KeyError("missing-key")
        if MODE == "no-node":
            return pb.PlaceReply(placed=True, node=len(self.session.nodes) + 5)
        if MODE == "garbage":
            return b"\xff\xff\xff\xff"
        if MODE == "hangup":
            assert self.server is not None
            threading.Thread(target=self.server.stop, args=(0,)).start()
            time.sleep(3600)
        if MODE == "slow-once" and self.calls == FAULTY_FROM:
            self.session.place(request)  # heard, and placed, but answered too late
            self.late = request.create.sandbox_id
            time.sleep(SLOW_S)
            return pb.PlaceReply(placed=False)
        if MODE == "slow-once" and self.calls == FAULTY_FROM + 1:
            first = request.events[0] if request.events else None
            if first is None or first.place_dropped.sandbox_id != self.late:
                os._exit(9)  # the harness did not say first thing that it dropped our answer
        return self.session.place(request)

    def reset(self, request: pb.ResetRequest, context: grpc.ServicerContext) -> pb.ResetReply:
        self.session = None
        return pb.ResetReply()


def raw(reply: object) -> bytes:
    """A reply's bytes: a message serialized, or the bytes the fault sends as they are."""
    return reply if isinstance(reply, bytes) else reply.SerializeToString()  # type: ignore[attr-defined]


def main() -> None:
    # gRPC logs an exception raised in a call (with its traceback) and, unless logging is set
    # up, drops it: set up, it reaches standard error, which the harness keeps in the run folder.
    logging.basicConfig(format="%(asctime)s %(name)s %(levelname)s %(message)s")
    faulty = Faulty()
    if sys.argv[2:] == ["framed"]:  # one call at a time: a late answer comes before the next
        listener = socket.create_server(("127.0.0.1", 0))
        print(listener.getsockname()[1], flush=True)
        methods = {"hello": faulty.hello, "place": faulty.place, "reset": faulty.reset}
        serve_framed(listener, methods)
        return
    methods = {
        "Hello": grpc.unary_unary_rpc_method_handler(faulty.hello, pb.HelloRequest.FromString, raw),
        "Place": grpc.unary_unary_rpc_method_handler(faulty.place, pb.PlaceRequest.FromString, raw),
        "Reset": grpc.unary_unary_rpc_method_handler(faulty.reset, pb.ResetRequest.FromString, raw),
    }
    handler = grpc.method_handlers_generic_handler("herd.scheduler.v1.Scheduler", methods)
    # Several workers: a call that hangs must not hold up the next one (slow-once).
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[handler])
    faulty.server = server
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
