package dpppnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/internal/syncbuf"
	"github.com/dplearn/dplearn/transport"
	"github.com/dplearn/dplearn/transport/transportpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// netKind is how a test deployment is connected.
type netKind int

const (
	memoryNet netKind = iota // transport.Memory, in process
	grpcNet                  // transport.Listen/Dial: gRPC, mutual TLS 1.3, 127.0.0.1
)

func (k netKind) String() string { return [...]string{"memory", "grpc"}[k] }

// logBuffer collects a hub's or party's slog output for assertions.
type logBuffer struct{ syncbuf.Buffer }

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testNet is a hub with a way to connect parties to it.
type testNet struct {
	hub       transport.Hub
	logs      *logBuffer // the hub's log
	partyLogs logBuffer  // the parties' transport logs
	// parties' certificates (grpcNet), from the deployment's CA; strangers
	// holds the same names under another CA.
	parties, strangers map[string]*certs.Party
	addr               string
	mem                *transport.Memory
}

// newNet starts a hub named DefaultHubName for cfg, in memory or as a
// gRPC server on 127.0.0.1:0, with certificates for the aggregator and
// every roster name (the teachers sign their votes with them, over either
// transport) and "stranger" copies of them from another CA. It is closed
// when the test ends.
func newNet(t testing.TB, ctx context.Context, kind netKind, cfg transport.HubConfig) *testNet {
	t.Helper()
	n := &testNet{logs: &logBuffer{}}
	cfg.Name = DefaultHubName
	cfg.Logger = n.logs.logger()
	n.parties, n.strangers = map[string]*certs.Party{}, map[string]*certs.Party{}
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{DefaultHubName}, cfg.Roster...) {
		if _, ok := n.parties[name]; ok {
			continue
		}
		if n.parties[name], err = ca.IssueParty(name, certs.Options{}); err != nil {
			t.Fatal(err)
		}
		if n.strangers[name], err = other.IssueParty(name, certs.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if kind == memoryNet {
		mem, err := transport.NewMemory(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n.hub, n.mem = mem, mem
		t.Cleanup(func() { mem.Close() })
		return n
	}
	srv, err := transport.Listen(ctx, transport.ServerConfig{HubConfig: cfg, Address: "127.0.0.1:0", Identity: n.parties[DefaultHubName]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	n.hub, n.addr = srv, srv.Addr().String()
	return n
}

// dial connects party name with its certificate from the deployment's CA.
func (n *testNet) dial(ctx context.Context, name string) (transport.Conn, error) {
	if n.mem != nil {
		return n.mem.Dial(ctx, name)
	}
	return n.dialAs(ctx, n.parties[name], nil)
}

// dialAs connects over gRPC with the certificate id; logs (if not nil)
// receives the party's transport log.
func (n *testNet) dialAs(ctx context.Context, id *certs.Party, logs *logBuffer) (transport.Conn, error) {
	cfg := transport.ClientConfig{Address: n.addr, Server: DefaultHubName, Identity: id, Session: Session(), Attempts: 2, Backoff: 50 * time.Millisecond}
	if logs == nil {
		logs = &n.partyLogs
	}
	cfg.Logger = logs.logger()
	return transport.Dial(ctx, cfg)
}

// waitLog waits up to 5 s for the hub's log to contain every one of subs.
func (n *testNet) waitLog(t *testing.T, subs ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := n.logs.String()
		missing := ""
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				missing = sub
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub's log lacks %q:\n%s", missing, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var bothNets = []netKind{memoryNet, grpcNet}

// startTeachers connects the teachers through n and runs Teach for each in
// the background (options changed by opt
// if not nil; the connection wrapped by
// wrap if not nil; skip lists teachers left out). Teach's errors are
// logged (a killed teacher's errKilled is expected); the test checks the
// outcome. Wait on the result for all to return.
func startTeachers(t *testing.T, ctx context.Context, n *testNet, teachers []*dppp.Teacher, opt func(name string, o TeachOptions) TeachOptions,
	wrap func(name string, c transport.Conn) transport.Conn, skip ...string) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	for _, tt := range teachers {
		if slices.Contains(skip, tt.Name()) {
			continue
		}
		conn, err := n.dial(ctx, tt.Name())
		if err != nil {
			t.Fatal(err)
		}
		if wrap != nil {
			conn = wrap(tt.Name(), conn)
		}
		o := TeachOptions{IdleTimeout: 30 * time.Second}
		if opt != nil {
			o = opt(tt.Name(), o)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			r, err := Teach(ctx, conn, tt, o)
			if err != nil && !errors.Is(err, errKilled) {
				t.Logf("%s: %v", tt.Name(), err)
			} else if err == nil {
				t.Logf("%s: %d votes, %d partials, %d refusals, %d charged: %s", tt.Name(), r.Votes, r.Partials, r.Refusals, r.Answered, r.Done)
			}
		}()
	}
	return &wg
}

// TestNetKilledAfterVote: over gRPC with mutual TLS, A = N − t = 4
// teachers that die after their vote arrived (the connection closed)
// cannot sign the contributor set: the batch is abandoned, nothing
// decrypted, and its rows voted again by the six others, whose answer is
// the plaintext path's; A + 1 = 5 is a clear refusal
// (ErrTooFewContributors) and nothing is labelled.
func TestNetKilledAfterVote(t *testing.T) {
	f := getFixture(t)
	for _, nk := range []netKind{grpcNet} {
		for _, dead := range []int{4, 5} {
			t.Run(fmt.Sprintf("%v/f=%d", nk, dead), func(t *testing.T) {
				hook := func(name string) func(dppp.Message) error {
					if f.tpkIndex(name) > dead {
						return nil
					}
					return func(m dppp.Message) error {
						if _, ok := m.(*dppp.Vote); ok {
							return errKilled
						}
						return nil
					}
				}
				d := f.deploy(t)
				res, err := d.runOn(t, nk, f, f.Rows[:5], hook, ServeOptions{RoundTimeout: 5 * time.Second})
				if dead == 4 {
					if err != nil {
						t.Fatal(err)
					}
					d.checkReference(t, res)
					if n := len(res.Batches[0].Contributors); n != 6 || res.Batches[0].Batch != 2 {
						t.Errorf("batch %d with %d contributors, want batch 2 (1 abandoned) with the 6 live votes", res.Batches[0].Batch, n)
					}
					for _, id := range res.Batches[0].Decryptors {
						if id <= 4 {
							t.Errorf("dead teacher %d decrypted", id)
						}
					}
					return
				}
				if !errors.Is(err, dppp.ErrTooFewContributors) {
					t.Fatalf("err = %v, want ErrTooFewContributors", err)
				}
				if len(res.Labels) != 0 {
					t.Fatalf("labels %v after a refusal", res.Labels)
				}
				if !strings.Contains(err.Error(), "5 valid votes") || !strings.Contains(err.Error(), "N − A = 6") {
					t.Errorf("the refusal does not say what was missing: %v", err)
				}
			})
		}
	}
}

// tpkIndex returns the 1-based roster position of a teacher name.
func (f *fixture) tpkIndex(name string) int {
	for i, n := range f.Names {
		if n == name {
			return i + 1
		}
	}
	return 0
}

// TestNetTooFewContributors: over each transport, 5 teachers die before
// voting, so 5 votes arrive where the calibration needs N − A = 6: the
// batch is refused and nothing is decrypted; the voters were charged when
// they voted (their votes were sent), the others not.
func TestNetTooFewContributors(t *testing.T) {
	f := getFixture(t)
	hook := func(name string) func(dppp.Message) error {
		if f.tpkIndex(name) > 5 {
			return nil
		}
		return func(m dppp.Message) error {
			if _, ok := m.(*dppp.Accept); ok {
				return errKilled
			}
			return nil
		}
	}
	for _, nk := range bothNets {
		t.Run(nk.String(), func(t *testing.T) {
			d := f.deploy(t)
			res, err := d.runOn(t, nk, f, f.Rows[:5], hook, ServeOptions{MinTeachers: 1, JoinTimeout: 3 * time.Second, RoundTimeout: 5 * time.Second})
			if !errors.Is(err, dppp.ErrTooFewContributors) || !strings.Contains(err.Error(), "nothing decrypted") {
				t.Fatalf("err = %v, want ErrTooFewContributors, nothing decrypted", err)
			}
			if len(res.Labels) != 0 || len(res.Batches) != 0 {
				t.Fatalf("labels %v", res.Labels)
			}
			for i, tt := range d.teachers {
				want := map[bool]int{true: 0, false: 5}[i < 5]
				if tt.Answered() != want || tt.Decrypted() != 0 {
					t.Errorf("%s charged %d queries (want %d), decrypted %d", tt.Name(), tt.Answered(), want, tt.Decrypted())
				}
			}
		})
	}
}

// TestNetForgedPartial: over gRPC, teacher01 and teacher02 (the first
// asked) answer with partial decryptions of another ciphertext. Their
// proofs fail, the aggregator names them and asks others, and the answer
// is exactly the plaintext path's.
func TestNetForgedPartial(t *testing.T) {
	if testing.Short() {
		t.Skip("short: a full run over gRPC")
	}
	f := getFixture(t)
	d := f.deploy(t, func(i int, tc *dppp.TeacherConfig) { tc.ForgePartial = i < 2 })
	res, err := d.runOn(t, grpcNet, f, f.Rows[:5], nil, ServeOptions{RoundTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
	br := res.Batches[0]
	for _, id := range []uint32{1, 2} {
		r, ok := br.Rejected[id]
		if !ok || !strings.Contains(r, "verif") {
			t.Errorf("forger %d not rejected by the verification of its proof: %v", id, br.Rejected)
		}
		t.Logf("teacher %d rejected: %s", id, r)
	}
	for _, id := range br.Decryptors {
		if id <= 2 {
			t.Errorf("forger %d's share was combined", id)
		}
	}
	if len(br.Decryptors) != 6 {
		t.Errorf("%d decryptors, want t = 6", len(br.Decryptors))
	}
}

// TestNetUnknownCertificate: a party presenting a certificate for a roster
// name from another CA is refused at the TLS handshake (its Dial fails,
// the hub logs the refusal) and the run goes on with the other nine; and a
// hub with a certificate from another CA is refused by the teachers.
func TestNetUnknownCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("short: a full run over gRPC")
	}
	f := getFixture(t)
	d := f.deploy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := newNet(t, ctx, grpcNet, HubConfig(d.p))
	var plogs logBuffer
	_, err := n.dialAs(ctx, n.strangers["teacher03"], &plogs)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a teacher03 certificate from another CA: Dial err = %v", err)
	}
	t.Logf("stranger's Dial: %v", err)
	n.waitLog(t, "TLS handshake refused")
	// The run itself, without teacher03.
	wg := startTeachers(t, ctx, n, d.teachers, nil, nil, "teacher03")
	res, err := Serve(ctx, n.hub, d.p, f.TPK, f.Rows[:2], ServeOptions{JoinTimeout: 2 * time.Second, RoundTimeout: 5 * time.Second, Logger: testLogger(t)})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
	for _, id := range res.Batches[0].Contributors {
		if id == 3 {
			t.Fatal("teacher03 contributed")
		}
	}
	// A fake aggregator: same name, another CA. The teacher refuses it.
	fake, err := transport.Listen(ctx, transport.ServerConfig{HubConfig: func() transport.HubConfig {
		c := HubConfig(d.p)
		c.Name = DefaultHubName
		return c
	}(), Address: "127.0.0.1:0", Identity: n.strangers[DefaultHubName]})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cfg := transport.ClientConfig{Address: fake.Addr().String(), Server: DefaultHubName, Identity: n.parties["teacher01"], Session: Session(), Attempts: 2, Backoff: 50 * time.Millisecond}
	if _, err := transport.Dial(ctx, cfg); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("teacher01 connected to an aggregator from another CA: %v", err)
	} else {
		t.Logf("teacher01 dialling a fake aggregator: %v", err)
	}
}

// replayConn wraps a teacher's connection and, after it sent its vote of
// batch 2, replays: its vote of batch 1 with a fresh sequence number (the
// hub is at round 2: a straggler or replay of an old round), and its vote
// of batch 2 with sequence number 1, already used by its Accept (sent raw:
// the transport client never reuses a number).
type replayConn struct {
	transport.Conn
	raw   func(ctx context.Context, env transport.Envelope) error
	votes map[uint64][]byte
	errs  chan error
}

func (c *replayConn) Send(ctx context.Context, env transport.Envelope) error {
	if err := c.Conn.Send(ctx, env); err != nil {
		return err
	}
	if env.Type != "vote" {
		return nil
	}
	c.votes[env.Round] = env.Payload
	if env.Round == 2 {
		c.errs <- c.Conn.Send(ctx, transport.Envelope{Round: 1, Type: "vote", Payload: c.votes[1]})
		c.errs <- c.raw(ctx, transport.Envelope{Round: 2, Type: "vote", Seq: 1, Payload: env.Payload})
	}
	return nil
}

// rawSend sends one envelope as party id over a separate gRPC connection,
// with the sequence number given (bypassing the transport client).
func rawSend(ctx context.Context, n *testNet, id *certs.Party, env transport.Envelope) error {
	tc, err := id.ClientTLS(DefaultHubName)
	if err != nil {
		return err
	}
	cc, err := grpc.NewClient("passthrough:///"+n.addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		return err
	}
	defer cc.Close()
	s := Session()
	_, err = transportpb.NewRelayClient(cc).Send(ctx, &transportpb.Envelope{Protocol: s.Protocol, Session: s.ID, Round: env.Round, Type: env.Type,
		Sender: id.Name, Recipient: DefaultHubName, Seq: env.Seq, Payload: env.Payload})
	return err
}

// TestNetReplays: replayed messages are refused and logged, and do not
// change the answer:
//   - a vote of batch 1 sent again during batch 2 (wrong round);
//   - a vote sent again with a sequence number already used (replay);
//   - a vote of a previous run (another dppp session) sent in a new run
//     with a fresh sequence number (refused by the protocol's gate).
func TestNetReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("short: a full run over gRPC")
	}
	f := getFixture(t)
	cfg := f.config()
	cfg.QueriesPerCiphertext = 1
	d := f.deployConfig(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := newNet(t, ctx, grpcNet, HubConfig(d.p))
	rc := &replayConn{votes: map[uint64][]byte{}, errs: make(chan error, 2)}
	rc.raw = func(ctx context.Context, env transport.Envelope) error {
		return rawSend(ctx, n, n.parties["teacher04"], env)
	}
	wg := startTeachers(t, ctx, n, d.teachers, nil, func(name string, c transport.Conn) transport.Conn {
		if name != "teacher04" {
			return c
		}
		rc.Conn = c
		return rc
	})
	var logs logBuffer
	res, err := Serve(ctx, n.hub, d.p, f.TPK, f.Rows[:2], ServeOptions{RoundTimeout: 10 * time.Second, Logger: slog.New(logx.LineHandler(&logs, "", ProgressLine))})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
	if len(res.Batches) != 2 {
		t.Fatalf("%d batches", len(res.Batches))
	}
	if len(rc.errs) != 2 {
		t.Fatal("the replays were not sent")
	}
	if err := <-rc.errs; !isRefusal(err, transport.ReasonWrongRound) {
		t.Errorf("the vote of batch 1 again in batch 2: %v, want a wrong-round refusal", err)
	}
	if err := <-rc.errs; err == nil || !strings.Contains(err.Error(), "sequence number 1 was already used") {
		t.Errorf("the vote of batch 2 again with sequence number 1: %v, want a replay refusal", err)
	}
	n.waitLog(t, "reason=wrong-round", "reason=replay", "party=teacher04")
	if s := logs.String(); !strings.Contains(s, "refused a message from teacher04") {
		t.Errorf("the aggregator's log does not show the refusals:\n%s", s)
	}

	// A new run (new session) on a new hub: teacher04 sends its vote of
	// the first run with a fresh sequence number.
	p2, err := d.p.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	n2 := newNet(t, ctx, grpcNet, HubConfig(p2))
	n2.hub.SetGate(sessionGate(p2))
	n2.hub.SetRound(1)
	conn, err := n2.dial(ctx, "teacher04")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Send(ctx, transport.Envelope{Round: 1, Type: "vote", Payload: rc.votes[1]})
	if !isRefusal(err, transport.ReasonRefusedByProtocol) || !strings.Contains(err.Error(), "not of this run") {
		t.Fatalf("a vote of the previous run: %v, want refused by the protocol as not of this run", err)
	}
	n2.waitLog(t, "reason=refused-by-protocol", "a replay or a straggler")
	select {
	case env := <-n2.hub.Inbox():
		t.Fatalf("a replay was delivered: %s from %s", env.Type, env.Sender)
	default:
	}
}

func isRefusal(err error, want transport.Reason) bool {
	r, ok := transport.RefusalReason(err)
	return ok && r == want
}

// testLogger prints a run's progress lines in the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(logx.LineHandler(t.Output(), "", ProgressLine))
}
