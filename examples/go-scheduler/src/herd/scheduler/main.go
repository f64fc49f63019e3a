// A scheduler process in Go: Best-of-K with the stale, in_progress or optimistic strategy
// (`placement.strategy`) behind the harness's gRPC protocol (harness/external/scheduler.proto).
//
//	scheduler [-port N] [-host 127.0.0.1|::1] [-framed]
//
// prints the port it listens on (loopback) and serves until stopped: gRPC, or with -framed
// the same messages length-prefixed on a plain TCP stream (external.transport = "framed"). It keeps its own state,
// as a real scheduler does: each node's static facts and last report, what its strategy adds,
// and the creates it has in flight. Its random stream is Go's, seeded from the Hello's seed, so
// its runs are not the in-process ones draw for draw; its CVs fall in the same bands
// (tests/external/test_external_go.py).
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"os"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "herd/schedulerpb"
)

// node is what the scheduler knows of one node.
type node struct {
	cpuCount  float64
	labels    map[string]bool // static: from its registration
	family    string
	allocated float64 // the last report's, plus the strategy's own adds and removes
	percent   float64
	memTotal  float64 // 0 until a report says: the memory filter then passes the node
	memory    float64 // allocated MiB: the last report's, plus the strategy's adds and removes
	starting  int     // creates in flight
	pending   float64 // and their vCPUs
}

// sandbox is a create this scheduler placed: in flight, or running until killed.
type sandbox struct {
	node   int
	vcpu   float64
	memory float64
}

type session struct {
	strategy   string
	k          int
	r, alpha   float64
	overcommit struct {
		Ratio float64 `json:"ratio"` // placement.memory_overcommit.ratio M: 0 is off
	} // the Hello's option "memory_overcommit": the JSON object {"ratio": M}
	rng       *rand.Rand
	nodes     []node
	sandboxes map[uint64]sandbox
	moved     map[int]int // the partial Fisher-Yates shuffle's moved positions, reused
	excluded  map[int]bool
}

// option decodes one [placement] key of the Hello (JSON text) into v, if present.
func option(options map[string]string, key string, v interface{}) error {
	text, ok := options[key]
	if !ok {
		return nil
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return fmt.Errorf("placement.%s: %v", key, err)
	}
	return nil
}

func newSession(req *pb.HelloRequest) (*session, error) {
	s := &session{strategy: "stale", k: 3, r: 4.0, alpha: 0.5}
	for key, v := range map[string]interface{}{
		"strategy": &s.strategy, "k": &s.k, "r": &s.r, "alpha": &s.alpha,
		"memory_overcommit": &s.overcommit,
	} {
		if err := option(req.Options, key, v); err != nil {
			return nil, err
		}
	}
	switch s.strategy {
	case "stale", "in_progress", "optimistic":
	default:
		return nil, fmt.Errorf("strategy %q: this scheduler knows stale, in_progress and optimistic", s.strategy)
	}
	seed := int64(req.Seed)*1000003 + int64(req.Replica)
	s.rng = rand.New(rand.NewSource(seed))
	s.nodes = make([]node, req.NodeCount)
	s.sandboxes = make(map[uint64]sandbox)
	s.moved = make(map[int]int)
	s.excluded = make(map[int]bool)
	return s, nil
}

func (s *session) countsInProgress() bool { return s.strategy != "stale" }

func (s *session) leave(sb sandbox) {
	n := &s.nodes[sb.node]
	n.starting--
	if n.starting == 0 {
		n.pending = 0
	} else {
		n.pending -= sb.vcpu
	}
}

func (s *session) hear(e *pb.Event) {
	switch k := e.Kind.(type) {
	case *pb.Event_NodeRegistered:
		r := k.NodeRegistered
		n := &s.nodes[r.Node]
		n.cpuCount, n.family = float64(r.CpuCount), r.CpuFamily
		n.labels = make(map[string]bool, len(r.Labels))
		for _, l := range r.Labels {
			n.labels[l] = true
		}
	case *pb.Event_Report:
		n := &s.nodes[k.Report.Node]
		n.allocated, n.percent = k.Report.CpuAllocated, k.Report.CpuPercent
		n.memTotal, n.memory = k.Report.MemoryTotalMib, k.Report.MemoryAllocatedMib
	case *pb.Event_CreateAnswered:
		a := k.CreateAnswered
		sb := s.sandboxes[a.SandboxId]
		s.leave(sb)
		if a.Outcome != pb.Outcome_OK {
			delete(s.sandboxes, a.SandboxId) // a retry comes back as a new Place
			return
		}
		if s.strategy == "optimistic" {
			s.nodes[sb.node].allocated += sb.vcpu
			s.nodes[sb.node].memory += sb.memory
		}
	case *pb.Event_PlaceDropped:
		// The harness gave up waiting for our answer: the create was never sent.
		id := k.PlaceDropped.SandboxId
		if sb, ok := s.sandboxes[id]; ok {
			s.leave(sb)
			delete(s.sandboxes, id)
		}
	case *pb.Event_KillAnswered:
		a := k.KillAnswered
		sb := s.sandboxes[a.SandboxId]
		delete(s.sandboxes, a.SandboxId)
		n := &s.nodes[sb.node]
		if s.strategy == "optimistic" && a.Outcome == pb.Outcome_OK {
			if n.allocated >= sb.vcpu { // upstream's underflow guard
				n.allocated -= sb.vcpu
			}
			if n.memory >= sb.memory {
				n.memory -= sb.memory
			}
		}
	}
}

// eligible is upstream's eligibility, as the harness checks every answer against it: every
// label the create requires, its CPU family if it names one, and with M > 0 room for its memory
// under M x the node's reported total (allocated as this strategy's view has it).
func (s *session) eligible(nd *node, c *pb.Create) bool {
	for _, l := range c.Labels {
		if !nd.labels[l] {
			return false
		}
	}
	if c.CpuFamily != "" && nd.family != c.CpuFamily {
		return false
	}
	m := s.overcommit.Ratio
	return m <= 0 || nd.memTotal == 0 || nd.memory+c.MemoryMib <= m*nd.memTotal
}

// at is position p of the virtual array 0..n-1 being shuffled.
func (s *session) at(p int) int {
	if v, ok := s.moved[p]; ok {
		return v
	}
	return p
}

// place samples up to K eligible nodes uniformly without replacement and returns the one
// with the lowest score (the first sampled on a tie); -1: none.
func (s *session) place(c *pb.Create) int {
	for k := range s.moved {
		delete(s.moved, k)
	}
	for k := range s.excluded {
		delete(s.excluded, k)
	}
	for _, x := range c.Excluded {
		s.excluded[int(x)] = true
	}
	n := len(s.nodes)
	best, low, found := -1, math.Inf(1), 0
	for i := 0; i < n && found < s.k; i++ {
		j := i + s.rng.Intn(n-i)
		candidate := s.at(j)
		if j != i {
			s.moved[j] = s.at(i)
		}
		nd := &s.nodes[candidate]
		if s.excluded[candidate] || nd.cpuCount < c.Vcpu || !s.eligible(nd, c) {
			continue
		}
		found++
		reserved := nd.allocated
		if s.countsInProgress() {
			reserved += nd.pending
		}
		score := (c.Vcpu + reserved + s.alpha*nd.percent/100.0) / (s.r * nd.cpuCount)
		if nd.cpuCount == 0 {
			score = math.Inf(1)
		}
		if best < 0 || score < low {
			best, low = candidate, score
		}
	}
	if best >= 0 {
		nd := &s.nodes[best]
		nd.starting++
		nd.pending += c.Vcpu
		s.sandboxes[c.SandboxId] = sandbox{node: best, vcpu: c.Vcpu, memory: c.MemoryMib}
	}
	return best
}

type server struct {
	pb.UnimplementedSchedulerServer
	mu      sync.Mutex
	session *session
}

func (srv *server) Hello(ctx context.Context, req *pb.HelloRequest) (*pb.HelloReply, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	s, err := newSession(req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	srv.session = s
	// ServesMany: a Hello starts afresh and a Reset drops the session, so the harness may keep
	// this process from seed to seed and pay its start-up once per run.
	return &pb.HelloReply{
		ProtocolVersion: uint32(pb.ProtocolVersion_PROTOCOL_VERSION),
		Name:            "go-best-of-k",
		ServesMany:      true,
	}, nil
}

func (srv *server) Place(ctx context.Context, req *pb.PlaceRequest) (*pb.PlaceReply, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	s := srv.session
	if s == nil {
		return nil, status.Error(codes.FailedPrecondition, "Place before Hello")
	}
	for _, e := range req.Events {
		s.hear(e)
	}
	node := s.place(req.Create)
	if node < 0 {
		return &pb.PlaceReply{}, nil
	}
	return &pb.PlaceReply{Placed: true, Node: uint32(node)}, nil
}

func (srv *server) Reset(ctx context.Context, req *pb.ResetRequest) (*pb.ResetReply, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.session = nil
	return &pb.ResetReply{}, nil
}

// answer is the framed form's reply to one call.
func (srv *server) answer(call *pb.Call) (*pb.Answer, error) {
	switch c := call.Call.(type) {
	case *pb.Call_Hello:
		r, err := srv.Hello(context.Background(), c.Hello)
		return &pb.Answer{Answer: &pb.Answer_Hello{Hello: r}}, err
	case *pb.Call_Place:
		r, err := srv.Place(context.Background(), c.Place)
		return &pb.Answer{Answer: &pb.Answer_Place{Place: r}}, err
	case *pb.Call_Reset_:
		r, err := srv.Reset(context.Background(), c.Reset_)
		return &pb.Answer{Answer: &pb.Answer_Reset_{Reset_: r}}, err
	}
	return nil, fmt.Errorf("an empty call")
}

// serveFramed answers Calls on one connection, each after its length as a varint, until the
// harness closes it (or a call fails: then the connection closes, which the harness reports).
func (srv *server) serveFramed(conn net.Conn) {
	defer conn.Close()
	r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
	var size [binary.MaxVarintLen64]byte
	for {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		call := &pb.Call{}
		if err := proto.Unmarshal(buf, call); err != nil {
			fmt.Fprintln(os.Stderr, "scheduler:", err)
			return
		}
		answer, err := srv.answer(call)
		if err != nil {
			fmt.Fprintln(os.Stderr, "scheduler:", err)
			return
		}
		out, err := proto.Marshal(answer)
		if err != nil {
			return
		}
		w.Write(size[:binary.PutUvarint(size[:], uint64(len(out)))])
		w.Write(out)
		if w.Flush() != nil {
			return
		}
	}
}

func main() {
	port := flag.Int("port", 0, "port to listen on; 0: any free port")
	host := flag.String("host", "127.0.0.1", "address to listen on (loopback: 127.0.0.1 or ::1)")
	framed := flag.Bool("framed", false, "serve length-prefixed messages on plain TCP, not gRPC")
	flag.Parse()
	// JoinHostPort puts an IPv6 address in brackets: [::1]:50051.
	lis, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
	srv := &server{}
	fmt.Println(lis.Addr().(*net.TCPAddr).Port) // the harness reads the port from the first line
	if *framed {
		for {
			conn, err := lis.Accept()
			if err != nil {
				fmt.Fprintln(os.Stderr, "scheduler:", err)
				os.Exit(1)
			}
			conn.(*net.TCPConn).SetNoDelay(true)
			go srv.serveFramed(conn)
		}
	}
	s := grpc.NewServer()
	pb.RegisterSchedulerServer(s, srv)
	if err := s.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
}
