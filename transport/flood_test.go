package transport

import (
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/transport/transportpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// TestRefusalLogLimited: 1,000 refused envelopes from one party cost the
// hub RefusalLogBurst (3) full log lines and Refused events, then one
// summary line and one ReasonSummary event when the interval (300 ms)
// ends, counting the other 997 by reason; another party's refusals are
// counted apart; a refusal after the interval is logged in full again.
// Every refusal still reaches its sender. On 42fe189 each of the 1,000
// refusals was one log line.
func TestRefusalLogLimited(t *testing.T) {
	var logs logBuffer
	m, err := NewMemory(HubConfig{Name: "aggregator", Session: testSession, Roster: roster3, Logger: logs.logger(),
		RefusalLogBurst: 3, RefusalLogInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := testCtx(t, 10*time.Second)
	c1, err := m.Dial(ctx, "site-1")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := m.Dial(ctx, "site-2")
	if err != nil {
		t.Fatal(err)
	}
	m.SetRound(1)
	for i := range 1000 {
		err := c1.Send(ctx, Envelope{Round: 0, Type: "x"})
		wantRefusal(t, err, ReasonWrongRound)
		if i < 2 {
			wantRefusal(t, c2.Send(ctx, Envelope{Round: 7, Type: "x"}), ReasonWrongRound)
		}
	}
	count := func(sub string) int { return strings.Count(logs.String(), sub) }
	if n := count("reason=wrong-round"); n != 3+2 {
		t.Fatalf("%d full refusal lines, want 3 of site-1 and 2 of site-2; log:\n%s", n, logs.String())
	}
	logs.waitLog(t, "997 more refusals from site-1 in the last 300ms (wrong-round 997)")
	if n := count("more refusals from"); n != 1 {
		t.Fatalf("%d summary lines, want 1 (site-2 stayed under the burst)", n)
	}
	var full, summaries int
	for done := false; !done; {
		select {
		case ev := <-m.Events():
			if ev.Kind != Refused {
				continue
			}
			if r, _ := RefusalReason(ev.Err); r == ReasonSummary {
				summaries++
				if ev.Party != "site-1" || !strings.Contains(ev.Err.Error(), "997 more") {
					t.Errorf("summary event %s: %v", ev.Party, ev.Err)
				}
			} else {
				full++
			}
		default:
			done = true
		}
	}
	if full != 5 || summaries != 1 {
		t.Fatalf("%d full Refused events and %d summaries, want 5 and 1", full, summaries)
	}
	time.Sleep(350 * time.Millisecond)
	wantRefusal(t, c1.Send(ctx, Envelope{Round: 0, Type: "x"}), ReasonWrongRound)
	if n := count("reason=wrong-round"); n != 6 {
		t.Fatalf("after the interval: %d full lines, want 6", n)
	}
}

// rawRelay opens a gRPC connection to the hub with a party's certificate
// and no transport.Client around it (an attacker's view).
func rawRelay(t *testing.T, addr string, pki *testPKI, name string) (*grpc.ClientConn, transportpb.RelayClient) {
	t.Helper()
	tc, err := pki.parties[name].ClientTLS("aggregator")
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc, transportpb.NewRelayClient(cc)
}

// TestConnCapPerParty: with MaxConnsPerParty 2, of 6 TLS connections made
// with one party's valid certificate two are served (the hub speaks
// HTTP/2 on them) and four are closed right after the handshake, with a
// too-many refusal logged (at most the burst) and reported; another
// party's connection is unaffected, and closing one connection frees its
// place. On 42fe189 all six were served.
func TestConnCapPerParty(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.MaxConnsPerParty = 2 })
	tc, err := pki.parties["site-1"].ClientTLS("aggregator")
	if err != nil {
		t.Fatal(err)
	}
	tc.NextProtos = []string{"h2"}
	served := func(conn *tls.Conn) bool {
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 9)
		n, _ := conn.Read(buf) // the hub's HTTP/2 SETTINGS frame, or EOF
		return n > 0
	}
	dial := func(cfg *tls.Config) *tls.Conn {
		conn, err := tls.Dial("tcp", hub.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	var conns []*tls.Conn
	var ok int
	for range 6 {
		c := dial(tc)
		conns = append(conns, c)
		if served(c) {
			ok++
		}
	}
	if ok != 2 {
		t.Fatalf("%d of 6 connections of site-1 served, want 2 (the cap)", ok)
	}
	logs.waitLog(t, "it already has 2 connections open, the cap per party")
	ev, _ := nextEvent(t, hub, "site-1", Refused, time.Second)
	if r, _ := RefusalReason(ev.Err); r != ReasonTooMany {
		t.Fatalf("event %v, want too-many", ev.Err)
	}
	other, err := pki.parties["site-2"].ClientTLS("aggregator")
	if err != nil {
		t.Fatal(err)
	}
	other.NextProtos = []string{"h2"}
	if !served(dial(other)) {
		t.Fatal("site-2's connection was refused by site-1's cap")
	}
	conns[0].Close()
	time.Sleep(200 * time.Millisecond) // let the hub notice
	if !served(dial(tc)) {
		t.Fatal("a closed connection did not free its place")
	}
}

// TestCallCapPerParty: with MaxCallsPerParty 2, a party's Receive stream
// (from Dial) and one Send waiting on a full inbox use its two places; one
// more concurrent call is refused at once (too-many), and once the inbox
// has room the party is served again.
func TestCallCapPerParty(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.MaxCallsPerParty = 2; c.InboxSize = 1; c.AllowRepeats = true })
	c := dialParty(t, hub.Addr().String(), pki.parties["site-1"], &logs)
	ctx := testCtx(t, 10*time.Second)
	if err := c.Send(ctx, Envelope{Type: "a"}); err != nil { // fills the inbox
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() { waiting <- c.Send(ctx, Envelope{Type: "a"}) }() // waits in the hub
	time.Sleep(300 * time.Millisecond)
	_, rc := rawRelay(t, hub.Addr().String(), pki, "site-1")
	_, err := rc.Send(ctx, &transportpb.Envelope{Protocol: testSession.Protocol, Session: testSession.ID, Type: "a", Sender: "site-1", Recipient: "aggregator", Seq: 99})
	if err == nil || !strings.Contains(err.Error(), "calls in progress, the cap per party") {
		t.Fatalf("third concurrent call: %v; want a too-many refusal", err)
	}
	recvInbox(t, hub, time.Second)
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	recvInbox(t, hub, time.Second)
	if err := c.Send(ctx, Envelope{Type: "a"}); err != nil {
		t.Fatalf("after the flood: %v", err)
	}
}

var _ = fmt.Sprint
var _ sync.Mutex
