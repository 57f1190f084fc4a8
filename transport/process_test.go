package transport

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dplearn/dplearn/certs"
)

// The process tests re-execute the test binary as a hub or a party
// (TestMain below), so that a hub can be killed with SIGKILL as a real
// aggregator would be.
const childEnv = "DPLEARN_TRANSPORT_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "hub":
		os.Exit(childHub())
	case "party":
		os.Exit(childParty())
	case "floodhub":
		os.Exit(childFloodHub())
	}
	os.Exit(m.Run())
}

// childHub serves a hub for the roster in DPLEARN_ROSTER with the identity
// in DPLEARN_CERTS, prints its address and echoes every envelope back to
// its sender, slowly (20 ms each, inbox of 1), so that parties wait in Send.
func childHub() int {
	id, err := certs.LoadParty(os.Getenv("DPLEARN_CERTS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	s, err := Listen(ctx, ServerConfig{
		HubConfig: HubConfig{Session: testSession, Roster: strings.Split(os.Getenv("DPLEARN_ROSTER"), ","), AllowRepeats: true, InboxSize: 1, Logger: discardLogger()},
		Address:   "127.0.0.1:0",
		Identity:  id,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("listening %s\n", s.Addr())
	for env := range s.Inbox() {
		time.Sleep(20 * time.Millisecond)
		_ = s.SendTo(ctx, env.Sender, Envelope{Type: "echo", Payload: env.Payload})
	}
	return 0
}

// childFloodHub serves a hub for site-1..site-3 with the identity in
// DPLEARN_CERTS and its default flood limits (or, with DPLEARN_UNLIMITED=1,
// limits too high to matter: the reference), logging at Info level to the
// file DPLEARN_LOG; it prints its address, accepts whatever arrives in its
// inbox, and closes the hub (summarising the refusals it counted) and exits
// when its standard input closes.
func childFloodHub() int {
	id, err := certs.LoadParty(os.Getenv("DPLEARN_CERTS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	logf, err := os.Create(os.Getenv("DPLEARN_LOG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer logf.Close()
	cfg := ServerConfig{
		HubConfig: HubConfig{Session: testSession, Roster: roster3, Logger: slog.New(slog.NewTextHandler(logf, nil))},
		Address:   "127.0.0.1:0",
		Identity:  id,
	}
	if os.Getenv("DPLEARN_UNLIMITED") == "1" {
		cfg.RefusalLogBurst, cfg.MaxConnsPerParty, cfg.MaxCallsPerParty, cfg.MaxHandshakes = 1<<30, 1<<30, 1<<30, 1<<20
	}
	s, err := Listen(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	go func() {
		for range s.Inbox() {
		}
	}()
	fmt.Printf("listening %s\n", s.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	s.Close()
	return 0
}

// childParty dials DPLEARN_ADDR as the party in DPLEARN_CERTS with the
// peer timeout DPLEARN_PEER_TIMEOUT and otherwise default settings (as the
// CLI does), then sends and receives until an error, which it prints
// before exiting 1. It prints "ready" after three exchanges.
func childParty() int {
	id, err := certs.LoadParty(os.Getenv("DPLEARN_CERTS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pt, _ := time.ParseDuration(os.Getenv("DPLEARN_PEER_TIMEOUT"))
	ctx := context.Background() // no deadline, as in the CLI
	c, err := Dial(ctx, ClientConfig{Address: os.Getenv("DPLEARN_ADDR"), Server: "aggregator", Identity: id, Session: testSession, PeerTimeout: pt, Logger: discardLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		return 1
	}
	defer c.Close()
	for i := 1; ; i++ {
		if err := c.Send(ctx, Envelope{Type: "m", Payload: []byte(fmt.Sprint(i))}); err != nil {
			fmt.Fprintln(os.Stderr, "send:", err)
			return 1
		}
		if _, err := c.Recv(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "recv:", err)
			return 1
		}
		if i == 3 {
			fmt.Println("ready")
		}
	}
}

// child is a running child process.
type child struct {
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	lines  chan string // stdout lines
	done   chan struct{}
	err    error
	exited time.Time
	stdin  io.WriteCloser
}

func startChild(t *testing.T, name string, env ...string) *child {
	t.Helper()
	return startChildWith(t, name, false, env...)
}

func startChildWith(t *testing.T, name string, withStdin bool, env ...string) *child {
	t.Helper()
	c := &child{name: name, lines: make(chan string, 16), done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), env...)
	if withStdin {
		in, err := c.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.stdin = in
	}
	c.cmd.Stderr = lockedWriter{&c.mu, &c.stderr}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		c.err = c.cmd.Wait()
		c.exited = time.Now()
		close(c.done)
	}()
	return c
}

// startChildStdin is startChild with a pipe to the child's standard input.
func startChildStdin(t *testing.T, name string, env ...string) *child {
	t.Helper()
	return startChildWith(t, name, true, env...)
}

func (c *child) errText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestKilledHubProcess: a hub process and eight party processes (each
// with the default settings of the CLI and no deadline on its context)
// exchange envelopes over mutual TLS on 127.0.0.1, the hub slow enough
// that most parties are waiting in Send; the hub is killed with SIGKILL.
// Every party must exit non-zero within its peer timeout (2 s) plus 3 s,
// saying the hub is gone. On 42fe189 parties waited forever (the test
// gave up on them after 20 s).
func TestKilledHubProcess(t *testing.T) {
	const parties = 8
	const peerTimeout = 2 * time.Second
	bound := peerTimeout + 3*time.Second
	dir := t.TempDir()
	var names []string
	for i := range parties {
		names = append(names, fmt.Sprintf("site-%d", i+1))
	}
	pki := filepath.Join(dir, "pki")
	if _, err := certs.Create(pki, append([]string{"aggregator"}, names...), certs.Options{}); err != nil {
		t.Fatal(err)
	}
	hub := startChild(t, "hub", childEnv+"=hub", "DPLEARN_CERTS="+filepath.Join(pki, "aggregator"), "DPLEARN_ROSTER="+strings.Join(names, ","))
	var addr string
	select {
	case l := <-hub.lines:
		addr = strings.TrimPrefix(l, "listening ")
	case <-hub.done:
		t.Fatalf("hub exited: %v\n%s", hub.err, hub.errText())
	case <-time.After(20 * time.Second):
		t.Fatal("hub did not listen")
	}
	var ps []*child
	for _, n := range names {
		ps = append(ps, startChild(t, n, childEnv+"=party", "DPLEARN_CERTS="+filepath.Join(pki, n), "DPLEARN_ADDR="+addr, "DPLEARN_PEER_TIMEOUT="+peerTimeout.String()))
	}
	for _, p := range ps {
		select {
		case <-p.lines:
		case <-p.done:
			t.Fatalf("%s exited before the kill: %v\n%s", p.name, p.err, p.errText())
		case <-time.After(30 * time.Second):
			t.Fatalf("%s not ready", p.name)
		}
	}
	time.Sleep(100 * time.Millisecond)
	killed := time.Now()
	if err := hub.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hub.done
	var worst time.Duration
	for _, p := range ps {
		select {
		case <-p.done:
		case <-time.After(20*time.Second - time.Since(killed)):
			t.Errorf("%s still running 20 s after the hub was killed", p.name)
			continue
		}
		took := p.exited.Sub(killed)
		worst = max(worst, took)
		msg := p.errText()
		if p.err == nil || took > bound || !strings.Contains(msg, "is gone: no answer for") {
			t.Errorf("%s: exit %v after %v (bound %v); stderr: %s", p.name, p.err, took, bound, msg)
		}
	}
	t.Logf("all %d parties exited within %v of the kill; e.g. %s", parties, worst.Round(time.Millisecond), strings.TrimSpace(ps[0].errText()))
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
