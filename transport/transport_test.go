package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/transport/transportpb"
	"google.golang.org/protobuf/proto"
)

// Three sites and a hub exchange envelopes over mutual TLS on 127.0.0.1.
func TestRoundTripMTLS(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, nil)
	ctx := testCtx(t, 20*time.Second)
	clients := map[string]*Client{}
	for _, n := range roster3 {
		clients[n] = dialParty(t, hub.Addr().String(), pki.parties[n], &logs)
	}
	if got, err := hub.AwaitConnected(ctx, 3); err != nil || strings.Join(got, ",") != "site-1,site-2,site-3" {
		t.Fatalf("AwaitConnected = %v, %v", got, err)
	}
	for _, n := range roster3 {
		if err := clients[n].Send(ctx, Envelope{Type: "hello", Payload: []byte("from " + n)}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for range roster3 {
		env := recvInbox(t, hub, 5*time.Second)
		if string(env.Payload) != "from "+env.Sender || env.Seq != 1 || env.Recipient != "aggregator" || env.Protocol != "test" {
			t.Fatalf("hub received %+v", env)
		}
		seen[env.Sender] = true
	}
	if len(seen) != 3 {
		t.Fatalf("senders %v", seen)
	}
	hub.SetRound(1)
	for _, n := range roster3 {
		if err := hub.SendTo(ctx, n, Envelope{Round: 1, Type: "reply", Payload: []byte("to " + n)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range roster3 {
		env, err := clients[n].Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if env.Sender != "aggregator" || env.Recipient != n || string(env.Payload) != "to "+n || env.Round != 1 || env.Seq != 1 {
			t.Fatalf("%s received %+v", n, env)
		}
		if err := clients[n].Send(ctx, Envelope{Round: 1, Type: "answer"}); err != nil {
			t.Fatal(err)
		}
	}
	for range roster3 {
		if env := recvInbox(t, hub, 5*time.Second); env.Seq != 2 || env.Type != "answer" {
			t.Fatalf("hub received %+v", env)
		}
	}
}

// A client whose certificate comes from another CA fails the handshake; so
// does a hub whose certificate comes from another CA, or that is not the
// party the client asked for.
func TestRefuseCertificateFromAnotherCA(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, nil)
	// The stranger trusts the deployment's CA (its certificate is public)
	// but its own certificate is signed by another CA: the hub refuses it.
	stranger := *pki.stranger
	stranger.Roots, stranger.CA = pki.parties["site-1"].Roots, pki.parties["site-1"].CA
	cfg := clientCfg(hub.Addr().String(), &stranger, &logs)
	cfg.Attempts = 2
	_, err := Dial(testCtx(t, 10*time.Second), cfg)
	if err == nil {
		t.Fatal("a client from another CA attached")
	}
	t.Logf("client from another CA: %v", err)
	logs.waitLog(t, "TLS handshake refused")
	// Go's TLS client does not even offer a certificate the hub's CA list
	// does not name; one that is forced on the hub fails verification
	// (certs.TestTLSMutualAuthentication). Either way the hub says why.
	if l := logs.String(); !strings.Contains(l, "unknown authority") && !strings.Contains(l, "didn't provide a certificate") {
		t.Fatalf("the hub's log does not say why:\n%s", logs.String())
	}
	if c := hub.Connected(); len(c) != 0 {
		t.Fatalf("connected: %v", c)
	}

	// The hub's certificate from another CA.
	fake := startHub(t, pki, &logs, func(c *ServerConfig) { c.Identity = pki.fakeHub })
	cfg = clientCfg(fake.Addr().String(), pki.parties["site-1"], &logs)
	cfg.Attempts = 8 // a failed handshake is not retried, whatever the budget
	start := time.Now()
	if _, err := Dial(testCtx(t, 10*time.Second), cfg); err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "after 1 attempt") {
		t.Fatalf("dial to a hub from another CA: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a certificate failure took %v: it was retried", d)
	}
	// A genuine party of the deployment serving, but not the aggregator.
	wrong := startHub(t, pki, &logs, func(c *ServerConfig) {
		c.Identity = pki.parties["site-9"]
	})
	cfg = clientCfg(wrong.Addr().String(), pki.parties["site-1"], &logs)
	cfg.Attempts = 1
	if _, err := Dial(testCtx(t, 10*time.Second), cfg); err == nil || !strings.Contains(err.Error(), "site-9") {
		t.Fatalf("dial to site-9 posing as the aggregator: %v", err)
	}
}

// site-2's certificate with site-1 in the sender field is refused.
func TestRefuseSenderMismatch(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, nil)
	c := dialParty(t, hub.Addr().String(), pki.parties["site-2"], &logs)
	ctx := testCtx(t, 10*time.Second)
	forged := &transportpb.Envelope{Protocol: "test", Session: testSession.ID, Type: "hello", Sender: "site-1", Recipient: "aggregator", Seq: 1}
	_, err := c.rpc.Send(ctx, forged)
	err = c.convert(err, "send to")
	wantRefusal(t, err, ReasonSenderMismatch, "message from site-1 (certificate site-2)", "refused by aggregator")
	ev, _ := nextEvent(t, hub, "site-2", Refused, 5*time.Second)
	wantRefusal(t, ev.Err, ReasonSenderMismatch)
	logs.waitLog(t, "sender-mismatch")
	// Attaching under another name is refused too.
	_, err = c.rpc.Receive(ctx, &transportpb.Attach{Protocol: "test", Session: testSession.ID, Sender: "site-1"})
	if err == nil {
		s, _ := c.rpc.Receive(ctx, &transportpb.Attach{Protocol: "test", Session: testSession.ID, Sender: "site-1"})
		_, err = s.Recv()
	}
	wantRefusal(t, c.convert(err, "attach to"), ReasonSenderMismatch)
	select {
	case env := <-hub.Inbox():
		t.Fatalf("forged envelope delivered: %+v", env)
	default:
	}
}

// A certificate from the right CA whose name is not in the roster.
func TestRefuseUnknownName(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, nil)
	_, err := Dial(testCtx(t, 10*time.Second), clientCfg(hub.Addr().String(), pki.parties["site-9"], &logs))
	wantRefusal(t, err, ReasonUnknownParty, "site-9 is not in the roster")
	logs.waitLog(t, "unknown-party")
}

// The same envelope sent twice, and an older sequence number, are refused.
func TestRefuseReplay(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.AllowRepeats = true })
	c := dialParty(t, hub.Addr().String(), pki.parties["site-1"], &logs)
	ctx := testCtx(t, 10*time.Second)
	env := &transportpb.Envelope{Protocol: "test", Session: testSession.ID, Type: "vote", Sender: "site-1", Recipient: "aggregator", Seq: 5, Payload: []byte{1}}
	if _, err := c.rpc.Send(ctx, env); err != nil {
		t.Fatal(err)
	}
	recvInbox(t, hub, 5*time.Second)
	_, err := c.rpc.Send(ctx, env)
	wantRefusal(t, c.convert(err, "send to"), ReasonReplay, "sequence number 5 was already used")
	env.Seq = 3
	_, err = c.rpc.Send(ctx, env)
	wantRefusal(t, c.convert(err, "send to"), ReasonReplay)
	select {
	case env := <-hub.Inbox():
		t.Fatalf("replayed envelope delivered: %+v", env)
	default:
	}
	// The client's own numbering continues after what the hub accepted
	// (Dial read it from the Receive header only at attach time, so it
	// learns seq 5 at its next attach); a fresh Dial of the same party
	// resumes at 6.
	c.Close()
	c2 := dialParty(t, hub.Addr().String(), pki.parties["site-1"], &logs)
	if err := c2.Send(ctx, Envelope{Type: "vote"}); err != nil {
		t.Fatal(err)
	}
	if got := recvInbox(t, hub, 5*time.Second); got.Seq != 6 {
		t.Fatalf("seq %d after reconnect, want 6", got.Seq)
	}
}

// A payload over the protocol's cap is refused by the hub (and by the
// client before sending); one over gRPC's limit never gets read.
func TestRefuseOversized(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.MaxPayload = 1000 })
	c := dialParty(t, hub.Addr().String(), pki.parties["site-1"], &logs)
	ctx := testCtx(t, 10*time.Second)
	err := c.Send(ctx, Envelope{Type: "big", Payload: make([]byte, 1001)})
	wantRefusal(t, err, ReasonOversized, "not sent")
	env := &transportpb.Envelope{Protocol: "test", Session: testSession.ID, Type: "big", Sender: "site-1", Recipient: "aggregator", Seq: 9, Payload: make([]byte, 1001)}
	_, err = c.rpc.Send(ctx, env)
	wantRefusal(t, c.convert(err, "send to"), ReasonOversized, "1001 bytes exceeds the test cap of 1000 bytes")
	env.Payload = make([]byte, 1000+envelopeOverhead+1)
	_, err = c.rpc.Send(ctx, env)
	wantRefusal(t, c.convert(err, "send to"), ReasonOversized, "larger than max")
	// The hub refuses to send oversized envelopes too.
	if err := hub.SendTo(ctx, "site-1", Envelope{Type: "big", Payload: make([]byte, 1001)}); err == nil {
		t.Fatal("hub sent an oversized envelope")
	}
	if err := c.Send(ctx, Envelope{Type: "small", Payload: make([]byte, 1000)}); err != nil {
		t.Fatalf("a payload at the cap: %v", err)
	}
}

// An envelope or an attachment for another session is refused.
func TestRefuseWrongSession(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, nil)
	c := dialParty(t, hub.Addr().String(), pki.parties["site-1"], &logs)
	ctx := testCtx(t, 10*time.Second)
	env := &transportpb.Envelope{Protocol: "test", Session: []byte("session-0000"), Type: "hello", Sender: "site-1", Recipient: "aggregator", Seq: 1}
	_, err := c.rpc.Send(ctx, env)
	wantRefusal(t, c.convert(err, "send to"), ReasonWrongSession, "another session", "this session is")
	env.Session, env.Protocol = testSession.ID, "dppp"
	_, err = c.rpc.Send(ctx, env)
	wantRefusal(t, c.convert(err, "send to"), ReasonWrongProtocol)
	cfg := clientCfg(hub.Addr().String(), pki.parties["site-2"], &logs)
	cfg.Session = Session{Protocol: "test", ID: []byte("old-session")}
	_, err = Dial(ctx, cfg)
	wantRefusal(t, err, ReasonWrongSession)
}

// Envelopes outside the round the protocol set, and a second envelope of
// the same type in a round, are refused; the protocol's gate refuses what
// it wants.
func TestRefuseWrongRound(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, nil)
	c := dialParty(t, hub.Addr().String(), pki.parties["site-1"], &logs)
	ctx := testCtx(t, 10*time.Second)
	hub.SetRound(2)
	err := c.Send(ctx, Envelope{Round: 1, Type: "masked-input"})
	wantRefusal(t, err, ReasonWrongRound, `"masked-input" message for round 1; the current round is 2`)
	if err := c.Send(ctx, Envelope{Round: 2, Type: "masked-input"}); err != nil {
		t.Fatal(err)
	}
	err = c.Send(ctx, Envelope{Round: 2, Type: "masked-input"})
	wantRefusal(t, err, ReasonDuplicate)
	hub.SetGate(func(e Envelope) error {
		if e.Type != "unmask" {
			return fmt.Errorf("round %d takes unmask messages only, not %q", e.Round, e.Type)
		}
		return nil
	})
	err = c.Send(ctx, Envelope{Round: 2, Type: "other"})
	wantRefusal(t, err, ReasonRefusedByProtocol, "takes unmask messages only")
	if err := c.Send(ctx, Envelope{Round: 2, Type: "unmask"}); err != nil {
		t.Fatal(err)
	}
	if got := []string{recvInbox(t, hub, time.Second).Type, recvInbox(t, hub, time.Second).Type}; got[0] != "masked-input" || got[1] != "unmask" {
		t.Fatalf("delivered %v", got)
	}
}

// A client killed abruptly (connection reset) is noticed at once; a client
// that falls silent (its packets stop) is noticed by keepalive within
// KeepaliveTime + KeepaliveTimeout.
func TestDeadClientNoticed(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) {
		c.KeepaliveTime, c.KeepaliveTimeout = time.Second, time.Second
	})
	px := newProxy(t, hub.Addr().String())
	cfg := clientCfg(px.addr(), pki.parties["site-1"], &logs)
	cfg.Attempts = 1
	c, err := Dial(testCtx(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nextEvent(t, hub, "site-1", Attached, 5*time.Second)
	px.kill()
	_, took := nextEvent(t, hub, "site-1", Detached, 3*time.Second)
	t.Logf("killed client noticed after %v", took)

	cfg2 := clientCfg(px.addr(), pki.parties["site-2"], &logs)
	c2, err := Dial(testCtx(t, 10*time.Second), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	nextEvent(t, hub, "site-2", Attached, 5*time.Second)
	px.freeze()
	ev, took := nextEvent(t, hub, "site-2", Detached, 8*time.Second)
	t.Logf("silent client noticed after %v: %v", took, ev.Err)
	if took < 500*time.Millisecond {
		t.Fatalf("a silent client was noticed after %v: before any keepalive could fire", took)
	}
}

// A client whose connection breaks re-attaches by itself; the hub reports
// it returning and delivers what was sent while it was away; its numbering
// continues.
func TestReconnect(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.AllowRepeats = true })
	px := newProxy(t, hub.Addr().String())
	c := dialParty(t, px.addr(), pki.parties["site-1"], &logs)
	ctx := testCtx(t, 20*time.Second)
	nextEvent(t, hub, "site-1", Attached, 5*time.Second)
	if err := hub.SendTo(ctx, "site-1", Envelope{Type: "m", Payload: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if env, err := c.Recv(ctx); err != nil || string(env.Payload) != "1" {
		t.Fatalf("Recv = %+v, %v", env, err)
	}
	if err := c.Send(ctx, Envelope{Type: "up"}); err != nil {
		t.Fatal(err)
	}
	recvInbox(t, hub, 5*time.Second)

	px.kill()
	nextEvent(t, hub, "site-1", Detached, 5*time.Second)
	// Queued while the party is away.
	if err := hub.SendTo(ctx, "site-1", Envelope{Type: "m", Payload: []byte("2")}); err != nil {
		t.Fatal(err)
	}
	ev, _ := nextEvent(t, hub, "site-1", Attached, 10*time.Second)
	if !ev.Returning {
		t.Fatal("re-attachment not marked Returning")
	}
	env, err := c.Recv(ctx)
	if err != nil || string(env.Payload) != "2" || env.Seq != 2 {
		t.Fatalf("after reconnect Recv = %+v, %v", env, err)
	}
	if err := c.Send(ctx, Envelope{Type: "up"}); err != nil {
		t.Fatal(err)
	}
	if got := recvInbox(t, hub, 5*time.Second); got.Seq != 2 {
		t.Fatalf("seq after reconnect = %d, want 2", got.Seq)
	}
	logs.waitLog(t, "re-attached to hub")

	// A party that is not taken back is refused when it tries.
	strict := startHub(t, pki, &logs, func(c *ServerConfig) { c.NoReattach = true })
	c2 := dialParty(t, strict.Addr().String(), pki.parties["site-2"], &logs)
	c2.Close()
	_, err = Dial(ctx, clientCfg(strict.Addr().String(), pki.parties["site-2"], &logs))
	wantRefusal(t, err, ReasonNoReattach)
}

// Closing the hub ends every party's Conn at once with a clear reason.
func TestHubCloseEndsParties(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, nil)
	c := dialParty(t, hub.Addr().String(), pki.parties["site-1"], &logs)
	ctx := testCtx(t, 10*time.Second)
	start := time.Now()
	hub.Close()
	_, err := c.Recv(ctx)
	wantRefusal(t, err, ReasonHubClosed, "session over")
	wantRefusal(t, c.Send(ctx, Envelope{Type: "late"}), ReasonHubClosed)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the party learned the hub closed after %v", took)
	}
}

// Send's deadline comes from its context: a hub whose protocol does not
// read its inbox holds a sender no longer than the caller allows.
func TestSendDeadline(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.InboxSize = 1; c.AllowRepeats = true })
	c := dialParty(t, hub.Addr().String(), pki.parties["site-1"], &logs)
	ctx := testCtx(t, 10*time.Second)
	if err := c.Send(ctx, Envelope{Type: "a"}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Send(short, Envelope{Type: "a"})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Fatalf("Send to a full inbox: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Send took %v with a 300 ms deadline", took)
	}
	// The envelope that timed out may still have been accepted (the hub's
	// side of the call can end a moment after the caller's deadline, as
	// with any network call); either way nothing is delivered twice and
	// the next envelope is accepted.
	if got := recvInbox(t, hub, time.Second); got.Seq != 1 {
		t.Fatalf("first delivered seq %d", got.Seq)
	}
	select {
	case got := <-hub.Inbox():
		if got.Seq != 2 {
			t.Fatalf("then seq %d", got.Seq)
		}
	case <-time.After(300 * time.Millisecond):
	}
	if err := c.Send(ctx, Envelope{Type: "a"}); err != nil {
		t.Fatal(err)
	}
	if got := recvInbox(t, hub, time.Second); got.Seq != 3 {
		t.Fatalf("delivered seq %d, want 3", got.Seq)
	}
}

// Insecure mode runs on loopback only and says so.
func TestInsecureLoopbackOnly(t *testing.T) {
	var logs logBuffer
	ctx := testCtx(t, 10*time.Second)
	base := ServerConfig{HubConfig: HubConfig{Name: "aggregator", Session: testSession, Roster: roster3, Logger: logs.logger()}, Insecure: true}
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.org:7000"} {
		cfg := base
		cfg.Address = addr
		if s, err := Listen(ctx, cfg); err == nil {
			s.Close()
			t.Fatalf("insecure hub listened on %s", addr)
		}
	}
	for _, addr := range []string{"192.0.2.1:7000", "example.org:7000", "[2001:db8::1]:7000"} {
		start := time.Now()
		_, err := Dial(ctx, ClientConfig{Address: addr, Server: "aggregator", Name: "site-1", Insecure: true, Session: testSession, Logger: logs.logger()})
		if err == nil || !strings.Contains(err.Error(), "loopback only") || time.Since(start) > time.Second {
			t.Fatalf("insecure dial to %s: %v", addr, err)
		}
	}
	cfg := base
	cfg.Address = "127.0.0.1:0"
	s, err := Listen(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(logs.String(), "INSECURE") {
		t.Fatal("no insecure warning logged")
	}
	c, err := Dial(ctx, ClientConfig{Address: s.Addr().String(), Server: "aggregator", Name: "site-3", Insecure: true, Session: testSession, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(ctx, Envelope{Type: "hello"}); err != nil {
		t.Fatal(err)
	}
	if env := recvInbox(t, s, 5*time.Second); env.Sender != "site-3" {
		t.Fatalf("got %+v", env)
	}
	// Neither an identity with Insecure nor no identity without it.
	if _, err := Listen(ctx, ServerConfig{HubConfig: base.HubConfig, Address: "127.0.0.1:0"}); err == nil {
		t.Fatal("a hub without certificate and without Insecure started")
	}
}

// Protocol code written against Hub and Conn runs unchanged in memory and
// over gRPC.
func TestSameCodeInMemoryAndOverGRPC(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	run := func(t *testing.T, hub Hub, dial func(ctx context.Context, name string) (Conn, error)) {
		ctx := testCtx(t, 20*time.Second)
		conns := map[string]Conn{}
		for _, n := range roster3 {
			c, err := dial(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns[n] = c
		}
		if _, err := hub.AwaitConnected(ctx, 3); err != nil {
			t.Fatal(err)
		}
		// A two-round toy protocol: each party sends its value, the hub
		// returns the sum to each, each confirms it.
		hub.SetRound(1)
		for i, n := range roster3 {
			if err := conns[n].Send(ctx, Envelope{Round: 1, Type: "value", Payload: []byte{byte(i + 1)}}); err != nil {
				t.Fatal(err)
			}
		}
		sum := byte(0)
		for range roster3 {
			sum += recvInbox(t, hub, 5*time.Second).Payload[0]
		}
		hub.SetRound(2)
		for _, n := range roster3 {
			if err := hub.SendTo(ctx, n, Envelope{Round: 2, Type: "sum", Payload: []byte{sum}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range roster3 {
			env, err := conns[n].Recv(ctx)
			if err != nil || env.Payload[0] != 6 {
				t.Fatalf("%s: %+v, %v", n, env, err)
			}
			if err := conns[n].Send(ctx, Envelope{Round: 2, Type: "ok"}); err != nil {
				t.Fatal(err)
			}
			// Stale round: refused identically by both implementations.
			wantRefusal(t, conns[n].Send(ctx, Envelope{Round: 1, Type: "value"}), ReasonWrongRound)
		}
		for range roster3 {
			recvInbox(t, hub, 5*time.Second)
		}
	}
	t.Run("memory", func(t *testing.T) {
		m, err := NewMemory(HubConfig{Name: "aggregator", Session: testSession, Roster: roster3, Logger: logs.logger()})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		run(t, m, m.Dial)
	})
	t.Run("grpc", func(t *testing.T) {
		s := startHub(t, pki, &logs, nil)
		run(t, s, func(ctx context.Context, name string) (Conn, error) {
			return Dial(ctx, clientCfg(s.Addr().String(), pki.parties[name], &logs))
		})
	})
}

// The in-memory hub's dropouts and reconnects.
func TestMemoryDisconnectAndRedial(t *testing.T) {
	m, err := NewMemory(HubConfig{Name: "aggregator", Session: testSession, Roster: roster3, Resend: 2, Logger: (&logBuffer{}).logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := testCtx(t, 10*time.Second)
	if _, err := m.Dial(ctx, "site-7"); err == nil {
		t.Fatal("memory hub attached an unknown party")
	}
	c, err := m.Dial(ctx, "site-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, Envelope{Type: "x", Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
	env := recvInbox(t, m, time.Second)
	env.Payload[0] = 'q' // the hub's copy is its own
	m.Disconnect("site-1")
	if _, err := c.Recv(ctx); err == nil {
		t.Fatal("Recv on a disconnected Conn succeeded")
	}
	if err := c.Send(ctx, Envelope{Type: "y"}); err == nil {
		t.Fatal("Send on a disconnected Conn succeeded")
	}
	nextEvent(t, m, "site-1", Detached, time.Second)
	for i := 1; i <= 4; i++ {
		if err := m.SendTo(ctx, "site-1", Envelope{Type: "m", Payload: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	c2, err := m.Dial(ctx, "site-1")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if ev, _ := nextEvent(t, m, "site-1", Attached, time.Second); !ev.Returning {
		t.Fatal("redial not Returning")
	}
	for i := 1; i <= 4; i++ {
		env, err := c2.Recv(ctx)
		if err != nil || env.Payload[0] != byte(i) {
			t.Fatalf("message %d: %+v, %v", i, env, err)
		}
	}
	if err := c2.Send(ctx, Envelope{Type: "y"}); err != nil {
		t.Fatalf("send after redial: %v", err)
	}
	if got := recvInbox(t, m, time.Second); got.Seq != 2 {
		t.Fatalf("seq after redial %d, want 2", got.Seq)
	}
}

// A party that comes back after the resend window moved on is told what it
// lost.
func TestGapReported(t *testing.T) {
	m, err := NewMemory(HubConfig{Name: "aggregator", Session: testSession, Roster: roster3, Resend: 1, QueueSize: 8, Logger: (&logBuffer{}).logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := testCtx(t, 10*time.Second)
	c, err := m.Dial(ctx, "site-2")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := m.SendTo(ctx, "site-2", Envelope{Type: "m", Payload: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		if _, err := c.Recv(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A new process for site-2 (knows nothing) gets only the last one.
	c.Close()
	c2, err := m.Dial(ctx, "site-2")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, err = c2.Recv(ctx)
	var gap *GapError
	if !errors.As(err, &gap) || gap.First != 1 || gap.Last != 2 {
		t.Fatalf("Recv = %v, want a gap of seq 1-2", err)
	}
	if env, err := c2.Recv(ctx); err != nil || env.Seq != 3 {
		t.Fatalf("after the gap: %+v, %v", env, err)
	}
}

// SendTo blocks while a party's queue is full, until its context ends.
func TestSendToQueueBound(t *testing.T) {
	m, err := NewMemory(HubConfig{Name: "aggregator", Session: testSession, Roster: roster3, QueueSize: 2, Logger: (&logBuffer{}).logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := testCtx(t, 10*time.Second)
	for i := 0; i < 2; i++ {
		if err := m.SendTo(ctx, "site-3", Envelope{Type: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := m.SendTo(short, "site-3", Envelope{Type: "m"}); err == nil || !strings.Contains(err.Error(), "queue full") {
		t.Fatalf("SendTo on a full queue: %v", err)
	}
	if err := m.SendTo(ctx, "nobody", Envelope{Type: "m"}); err == nil {
		t.Fatal("SendTo an unknown party succeeded")
	}
}

// The bytes the envelope adds to a payload, for docs/transport.md.
func TestEnvelopeOverhead(t *testing.T) {
	env := Envelope{
		Protocol:  "cape",
		Session:   bytes.Repeat([]byte{0xab}, 16),
		Round:     3,
		Type:      "masked-input",
		Sender:    "site-12",
		Recipient: "aggregator",
		Seq:       4,
	}
	empty := proto.Size(env.toPB())
	env.Payload = make([]byte, 41200) // D = 100: L = 5150 fixed-point words
	full := proto.Size(env.toPB())
	overhead := full - len(env.Payload)
	t.Logf("envelope fields: %d bytes without payload, %d bytes of overhead on a 41,200-byte payload (+5 bytes gRPC framing)", empty, overhead)
	if overhead > 100 || overhead > envelopeOverhead {
		t.Fatalf("envelope overhead %d bytes", overhead)
	}
}
