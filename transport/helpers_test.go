package transport

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/internal/syncbuf"
)

// testPKI is one deployment's identities plus a stranger from another CA.
type testPKI struct {
	ca       *certs.CA
	parties  map[string]*certs.Party
	stranger *certs.Party // "site-1" under another CA
	fakeHub  *certs.Party // "aggregator" under another CA
}

var roster3 = []string{"site-1", "site-2", "site-3"}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{ca: ca, parties: map[string]*certs.Party{}}
	for _, n := range []string{"aggregator", "site-1", "site-2", "site-3", "site-9"} {
		if p.parties[n], err = ca.IssueParty(n, certs.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	other, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.stranger, err = other.IssueParty("site-1", certs.Options{}); err != nil {
		t.Fatal(err)
	}
	if p.fakeHub, err = other.IssueParty("aggregator", certs.Options{}); err != nil {
		t.Fatal(err)
	}
	return p
}

var testSession = Session{Protocol: "test", ID: []byte("session-0001")}

// logBuffer is a concurrency-safe log sink for assertions.
type logBuffer struct{ syncbuf.Buffer }

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// waitLog waits until the log contains s.
func (b *logBuffer) waitLog(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("log never contained %q; log:\n%s", s, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startHub starts an mTLS hub on 127.0.0.1:0 for roster3; mod adjusts the
// configuration.
func startHub(t *testing.T, pki *testPKI, logs *logBuffer, mod func(*ServerConfig)) *Server {
	t.Helper()
	cfg := ServerConfig{
		HubConfig: HubConfig{Session: testSession, Roster: roster3, Logger: logs.logger()},
		Address:   "127.0.0.1:0",
		Identity:  pki.parties["aggregator"],
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := Listen(testCtx(t, 60*time.Second), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func clientCfg(addr string, id *certs.Party, logs *logBuffer) ClientConfig {
	return ClientConfig{
		Address:  addr,
		Server:   "aggregator",
		Identity: id,
		Session:  testSession,
		Attempts: 3,
		Backoff:  50 * time.Millisecond,
		Logger:   logs.logger(),
	}
}

func dialParty(t *testing.T, addr string, id *certs.Party, logs *logBuffer) *Client {
	t.Helper()
	c, err := Dial(testCtx(t, 10*time.Second), clientCfg(addr, id, logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// nextEvent waits for the next event of the given kind for party
// (skipping others) and returns it with the time it took.
func nextEvent(t *testing.T, h Hub, party string, kind EventKind, within time.Duration) (Event, time.Duration) {
	t.Helper()
	start := time.Now()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case ev := <-h.Events():
			if ev.Party == party && ev.Kind == kind {
				return ev, time.Since(start)
			}
		case <-timer.C:
			t.Fatalf("no %s event for %s within %v", kind, party, within)
		}
	}
}

func recvInbox(t *testing.T, h Hub, within time.Duration) Envelope {
	t.Helper()
	select {
	case env := <-h.Inbox():
		return env
	case <-time.After(within):
		t.Fatalf("inbox empty after %v", within)
	}
	return Envelope{}
}

func wantRefusal(t *testing.T, err error, want Reason, contains ...string) {
	t.Helper()
	got, ok := RefusalReason(err)
	if !ok || got != want {
		t.Fatalf("error %v: want a %s refusal", err, want)
	}
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
}

// proxy forwards TCP connections from a loopback listener to target; tests
// kill or freeze the forwarded connections to simulate crashes and silent
// network failures.
type proxy struct {
	lis    net.Listener
	target string

	mu     sync.Mutex
	conns  []*net.TCPConn
	thaw   chan struct{} // closed while not frozen
	frozen bool
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, target: target, thaw: make(chan struct{})}
	close(p.thaw)
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.lis.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.lis.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in.(*net.TCPConn), out.(*net.TCPConn))
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(out, in)
		go p.pipe(in, out)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thaw := p.thaw
			p.mu.Unlock()
			<-thaw // frozen: hold the bytes, forward nothing
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			} else if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}

// kill resets every forwarded connection, as a killed process's kernel
// would; the listener keeps accepting new ones.
func (p *proxy) kill() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.SetLinger(0)
		c.Close()
	}
}

// freeze stops forwarding without closing anything: the peers see silence.
func (p *proxy) freeze() {
	p.mu.Lock()
	if !p.frozen {
		p.frozen = true
		p.thaw = make(chan struct{})
	}
	p.mu.Unlock()
}

func (p *proxy) unfreeze() {
	p.mu.Lock()
	if p.frozen {
		p.frozen = false
		close(p.thaw)
	}
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.lis.Close()
	p.unfreeze()
	p.kill()
	p.wg.Wait()
}
