"""The least a scheduler needs: the least loaded node that keeps the create's rules."""

import json
from concurrent import futures

import grpc

from harness.external import scheduler_pb2 as pb  # the protocol's messages
from harness.external import scheduler_pb2_grpc as pb_grpc  # its gRPC service


class Skeleton(pb_grpc.SchedulerServicer):
    def Hello(self, request, context):
        self.nodes = {}  # node -> its NodeRegistered: CPUs, memory, labels, CPU family
        self.cpu = {}  # node -> vCPUs allocated: its last report, plus what we placed since
        self.memory = {}  # node -> memory (MiB) allocated, the same way
        self.ratio = json.loads(request.options["memory_overcommit"])["ratio"]  # 0: no rule
        return pb.HelloReply(protocol_version=pb.PROTOCOL_VERSION, name="skeleton")

    def Place(self, request, context):
        for event in request.events:
            if event.WhichOneof("kind") == "node_registered":
                node = event.node_registered
                self.nodes[node.node] = node
                self.cpu[node.node] = self.memory[node.node] = 0.0
            elif event.WhichOneof("kind") == "report":
                self.cpu[event.report.node] = event.report.cpu_allocated
                self.memory[event.report.node] = event.report.memory_allocated_mib
        c = request.create
        fits = [
            n.node
            for n in self.nodes.values()
            if set(c.labels) <= set(n.labels)
            and c.cpu_family in ("", n.cpu_family)
            and n.node not in c.excluded
            and (not self.ratio or self.memory[n.node] + c.memory_mib <= self.ratio * n.memory_mib)
        ]
        if not fits:
            return pb.PlaceReply(placed=False)
        best = min(fits, key=lambda node: self.cpu[node] / self.nodes[node].cpu_count)
        self.cpu[best] += c.vcpu
        self.memory[best] += c.memory_mib
        return pb.PlaceReply(placed=True, node=best)

    def Reset(self, request, context):
        return pb.ResetReply()


server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))  # one call at a time
pb_grpc.add_SchedulerServicer_to_server(Skeleton(), server)
port = server.add_insecure_port("127.0.0.1:0")  # any free port, on loopback
server.start()
print(port, flush=True)  # the first line of stdout: the port, flushed at once
server.wait_for_termination()
