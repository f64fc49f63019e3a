"""How a call reaches the scheduler: gRPC (`external.transport = "grpc"`), or the same messages
length-prefixed on a plain TCP stream (`"framed"`, `Call` and `Answer` in scheduler.proto).

Both raise `CallFailed` with what went wrong in the protocol's terms (no answer in time, the
connection closed, an answer that does not parse); the client says it in a line naming the
scheduler."""

from __future__ import annotations

import socket
import time
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from harness.external import scheduler_pb2 as pb
from harness.external import scheduler_pb2_grpc as pb_grpc

CHANNEL_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
"""No size limit: the first Place carries every node's registration."""


class CallFailed(Exception):
    """A call that got no proper answer: `kind` is timeout, refused (nothing listens at the
    address), closed, unparsable or failed."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class Grpc:
    """Unary gRPC calls on one channel."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        # An IPv6 address goes in brackets in a gRPC target ("[::1]:50051").
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.channel = grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
        stub = pb_grpc.SchedulerStub(self.channel)
        self.methods = {"Hello": stub.Hello, "Place": stub.Place, "Reset": stub.Reset}
        self.timeout_s = timeout_s

    def call(self, method: str, request: Any, timeout_s: float | None = None) -> Any:
        try:
            return self.methods[method](request, timeout=timeout_s or self.timeout_s)
        except grpc.RpcError as e:
            code, detail = e.code(), (e.details() or "").strip()  # type: ignore[attr-defined]
            if code is grpc.StatusCode.DEADLINE_EXCEEDED:
                raise CallFailed("timeout") from None
            if code is grpc.StatusCode.INTERNAL and "deserializ" in detail.lower():
                raise CallFailed("unparsable", detail) from None
            if code is grpc.StatusCode.UNAVAILABLE:
                refused = "connection refused" in detail.lower()
                raise CallFailed("refused" if refused else "closed", detail) from None
            raise CallFailed("failed", f"{code.name}: {detail}") from None

    def close(self) -> None:
        self.channel.close()


def frame(data: bytes) -> bytes:
    """`data` after its length as a varint: protobuf's delimited form, which the framed
    transport sends both ways."""
    out = bytearray()
    n = len(data)
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + data


class Frames:
    """The frames arriving on a socket, in order; `next` reads one by `deadline` (None: no
    limit). Bytes past a frame are kept for the next."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def next(self, deadline: float | None = None) -> bytes:
        size, shift, at = 0, 0, 0
        while True:
            while at >= len(self.buffer):
                self._read(deadline)
            byte = self.buffer[at]
            at += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
            if shift > 63:
                raise DecodeError("a frame length longer than a varint")
        while len(self.buffer) < at + size:
            self._read(deadline)
        data, self.buffer = self.buffer[at : at + size], self.buffer[at + size :]
        return data

    def _read(self, deadline: float | None) -> None:
        if deadline is not None:
            # Past the deadline, what has arrived is still taken (timeout 0: no wait): this
            # process may look late because a loaded machine held it up, not the other end.
            self.sock.settimeout(max(0.0, deadline - time.monotonic()))
        try:
            chunk = self.sock.recv(1 << 16)
        except BlockingIOError:  # timeout 0, and nothing has arrived
            raise TimeoutError from None
        if not chunk:
            raise ConnectionResetError("the other end closed the connection")
        self.buffer += chunk


class Framed:
    """`Call`s and `Answer`s on one TCP connection, each after its length as a varint; one
    answer per call, in order. A call that timed out still owes its answer: the next call
    reads it first and throws it away, so a late answer is never taken for another's."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout_s)
        except ConnectionRefusedError as e:
            raise CallFailed("refused", str(e)) from None
        except OSError as e:
            raise CallFailed("closed", str(e)) from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.frames = Frames(self.sock)
        self.broken = False
        self.owed = 0
        """Answers to calls that timed out, still to come."""

    def call(self, method: str, request: Any, timeout_s: float | None = None) -> Any:
        if self.broken:  # a late answer would be taken for the next one
            raise CallFailed("closed", "the stream was given up after an earlier failure")
        field = method.lower()
        data = pb.Call(**{field: request}).SerializeToString()
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        try:
            self.sock.settimeout(timeout_s or self.timeout_s)
            self.sock.sendall(frame(data))
            self.owed += 1
            while self.owed > 1:  # late answers to earlier calls
                self.frames.next(deadline)
                self.owed -= 1
            answer = pb.Answer.FromString(self.frames.next(deadline))
            self.owed = 0
        except TimeoutError:
            raise CallFailed("timeout") from None
        except OSError as e:
            self.broken = True
            raise CallFailed("closed", str(e)) from None
        except DecodeError as e:
            self.broken = True
            raise CallFailed("unparsable", str(e)) from None
        if answer.WhichOneof("answer") != field:
            self.broken = True
            raise CallFailed("unparsable", f"an answer to {answer.WhichOneof('answer')}")
        return getattr(answer, field)

    def close(self) -> None:
        self.sock.close()


TRANSPORTS = {"grpc": Grpc, "framed": Framed}
