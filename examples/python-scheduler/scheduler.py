"""A scheduler process in Python: Best-of-K (any `[placement]` strategy) behind the harness's
gRPC protocol, built from the harness's own placement pieces.

    python examples/python-scheduler/scheduler.py [--port N] [--framed]

prints the port it listens on (loopback) and serves until stopped: gRPC, or with --framed the
same messages length-prefixed on a plain TCP stream (`external.transport = "framed"`). Run by
the harness:

    harness run configs/seed-herd.toml \
        --set 'external.command=["python", "examples/python-scheduler/scheduler.py"]'

It keeps its own state, as a real scheduler does: the nodes' static facts, its ledger, its
creates in progress. It draws its samples from the stream the in-process replica would
(`harness.model.random_streams.Streams(seed).placement(replica)`), so on the virtual engine a
run through it is the in-process run, table for table (tests/external/test_external.py). """

from __future__ import annotations

import argparse
import logging
import socket
import sys
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from harness.external import scheduler_pb2 as pb
from harness.external import scheduler_pb2_grpc as pb_grpc
from harness.external import wire
from harness.external.transport import Frames, frame
from harness.model.cluster.node import NodeInfo, Outcome
from harness.model.random_streams import Streams
from harness.model.scheduling.scheduler import Scheduler, Step
from harness.model.scheduling.strategies import make_strategy
from harness.model.workload.request import CreateRequest, Shape


class Session:
    """One replica's state for one seed, from a Hello to the next."""

    def __init__(self, hello: pb.HelloRequest) -> None:
        self.rules = wire.placement_spec(hello.options)
        self.seed = hello.seed
        self.replica = hello.replica
        self.nodes: list[NodeInfo | None] = [None] * hello.node_count
        self.scheduler: Scheduler | None = None
        self.creates: dict[int, CreateRequest] = {}
        """Creates placed or in flight, by sandbox ID, until killed or failed."""
        self.shapes: dict[tuple, Shape] = {}

    def ready(self) -> Scheduler:
        """The scheduler, built once every node has registered (the first Place brings them)."""
        if self.scheduler is None:
            nodes = [info for info in self.nodes if info is not None]
            if len(nodes) != len(self.nodes):
                raise ValueError("a Place came before every node registered")
            r = self.rules
            cpus = [info.cpu_count for info in nodes]
            ledger = make_strategy(r.strategy, cpus, r)
            rng = Streams(self.seed).placement(self.replica)
            self.scheduler = Scheduler(nodes, r, ledger, rng)
        return self.scheduler

    def hear(self, event: pb.Event) -> None:
        kind, now = event.WhichOneof("kind"), event.time
        if kind == "node_registered":
            self.nodes[event.node_registered.node] = wire.node_info(event.node_registered)
            return
        s = self.ready()
        if kind == "report":
            s.strategy.apply_report(wire.from_report(event.report), now)
        elif kind == "create_answered":
            a = event.create_answered
            req = self.creates[a.sandbox_id]
            step = s.finish_create(req, wire.FROM_WIRE[a.outcome], now, wire.fresh_report(a))
            if step is Step.FAILED:  # the harness gives up on it too: same rules
                del self.creates[a.sandbox_id]
        elif kind == "place_dropped":  # the harness gave up on our answer: as never sent
            req = self.creates.pop(event.place_dropped.sandbox_id)
            s.finish_create(req, Outcome.FAILED, now)
        elif kind == "create_refused":
            # The node refused it for lack of room (heard in create_answered) and this Place
            # asks again. Best-of-K, as upstream, may choose that node again; a scheduler that
            # wants to break a storm of refusals would avoid `event.create_refused.node` here.
            pass
        elif kind == "kill_answered":
            a = event.kill_answered
            req = self.creates.pop(a.sandbox_id)
            s.start_kill(req, now)  # the kill was sent and answered since the last call
            s.finish_kill(req, wire.FROM_WIRE[a.outcome], now, wire.fresh_report(a))

    def place(self, request: pb.PlaceRequest) -> pb.PlaceReply:
        for event in request.events:
            self.hear(event)
        c = request.create
        req = self.creates.get(c.sandbox_id)
        if req is None:  # a new create; else a retry, whose excluded nodes this side kept
            req = CreateRequest(c.sandbox_id, self.shape(c), c.issued_at, c.deadline, 0)
            self.creates[c.sandbox_id] = req
        node = self.ready().start_create(req, request.now)
        if node is None:
            del self.creates[c.sandbox_id]
            return pb.PlaceReply(placed=False)
        return pb.PlaceReply(placed=True, node=node)

    def shape(self, c: pb.Create) -> Shape:
        """One `Shape` per distinct ask, as the harness shares one per template."""
        key = (c.vcpu, c.memory_mib, c.template, tuple(c.labels), c.cpu_family)
        if key not in self.shapes:
            labels = frozenset(c.labels)
            self.shapes[key] = Shape(c.vcpu, c.memory_mib, 1.0, c.template, labels, c.cpu_family)
        return self.shapes[key]


class Framing:
    """The servicer's context on a framed stream: an abort ends the connection."""

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise ConnectionAbortedError(details)


class BestOfKService(pb_grpc.SchedulerServicer):
    def __init__(self, serves_many: bool = True) -> None:
        self.session: Session | None = None
        self.serves_many = serves_many

    def Hello(self, request: pb.HelloRequest, context: grpc.ServicerContext) -> pb.HelloReply:
        self.session = Session(request)
        # serves_many: a Reset drops the session and a Hello starts the next, so the harness
        # may keep this process from seed to seed and pay its start-up once.
        return pb.HelloReply(
            protocol_version=wire.PROTOCOL_VERSION,
            name="python-best-of-k",
            serves_many=self.serves_many,
        )

    def Place(self, request: pb.PlaceRequest, context: grpc.ServicerContext) -> pb.PlaceReply:
        if self.session is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "Place before Hello")
        return self.session.place(request)

    def Reset(self, request: pb.ResetRequest, context: grpc.ServicerContext) -> pb.ResetReply:
        """The seed is over: its state goes; the next Hello starts the next session (a server
        at `external.address` serves every seed and replica this way, one after another)."""
        self.session = None
        return pb.ResetReply()


def serve_framed(listener: socket.socket, methods: dict[str, Callable[[Any, Any], Any]]) -> None:
    """Answers `Call`s on one connection at a time, each after its length as a varint
    (`harness.external.transport.Framed`), until the harness hangs up: `methods` are the
    servicer's, by the `Call` field that names them (hello, place, reset)."""
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        frames = Frames(conn)
        with conn:
            while True:
                try:
                    call = pb.Call.FromString(frames.next())
                    method = call.WhichOneof("call")
                    reply = methods[method](getattr(call, method), Framing())
                    conn.sendall(frame(pb.Answer(**{method: reply}).SerializeToString()))
                except ConnectionResetError:  # the harness hung up
                    break
                except ConnectionAbortedError as e:  # a call out of turn
                    print(f"scheduler: {e}", file=sys.stderr, flush=True)
                    break


def main() -> None:
    # gRPC logs an exception raised in a call (with its traceback) and, unless logging is set
    # up, drops it: set up, it reaches standard error, which the harness keeps in the run folder.
    logging.basicConfig(format="%(asctime)s %(name)s %(levelname)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--host", default="127.0.0.1", help="loopback: 127.0.0.1 or ::1")
    parser.add_argument("--framed", action="store_true", help="a plain TCP stream, not gRPC")
    parser.add_argument(
        "--one-session",
        action="store_true",
        help="say serves_many = false: the harness starts a fresh process per seed",
    )
    args = parser.parse_args()
    if args.framed:
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        listener = socket.create_server((args.host, args.port), family=family)
        print(listener.getsockname()[1], flush=True)
        try:
            service = BestOfKService(not args.one_session)
            methods = {"hello": service.Hello, "place": service.Place, "reset": service.Reset}
            serve_framed(listener, methods)
        except KeyboardInterrupt:
            sys.exit(130)
    # One worker: the harness awaits each call, and the session is not shared between threads.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    pb_grpc.add_SchedulerServicer_to_server(BestOfKService(not args.one_session), server)
    host = f"[{args.host}]" if ":" in args.host else args.host  # an IPv6 address in brackets
    port = server.add_insecure_port(f"{host}:{args.port}")
    server.start()
    print(port, flush=True)  # the harness reads the port from the first line
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
