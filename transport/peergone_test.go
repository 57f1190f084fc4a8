package transport

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// wantGone checks that err is a *HubGoneError saying so, and that it came
// within bound.
func wantGone(t *testing.T, what string, err error, took, bound time.Duration) {
	t.Helper()
	var gone *HubGoneError
	if !errors.As(err, &gone) || !strings.Contains(err.Error(), "is gone: no answer for") {
		t.Fatalf("%s after %v: %v; want a HubGoneError", what, took, err)
	}
	if took > bound {
		t.Fatalf("%s returned after %v; the bound is %v", what, took, bound)
	}
	t.Logf("%s: %v after %v", what, err, took.Round(time.Millisecond))
}

// TestHubGone: a hub that disappears (its connections reset and its port
// closed, as when the aggregator is killed with -9) ends every wait of its
// parties within ClientConfig.PeerTimeout, whatever the caller's context
// (here 60 s): a Send waiting for the hub's acknowledgement when it died, a
// Send started after, and a Recv, each with a *HubGoneError saying the hub
// is gone. Attempts is set high so that only the peer timeout can end the
// re-attaching. On 42fe189 the first Send waited for its context (60 s).
func TestHubGone(t *testing.T) {
	const peerTimeout = 1500 * time.Millisecond
	bound := peerTimeout + 2*time.Second
	for _, tc := range []struct {
		name string
		op   string // what the party is doing when the hub dies
	}{
		{"send in flight", "inflight"},
		{"send after", "send"},
		{"recv", "recv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pki := newPKI(t)
			var logs logBuffer
			// Inbox of 1 that nobody reads: the second Send waits in the hub.
			hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.InboxSize = 1; c.AllowRepeats = true })
			px := newProxy(t, hub.Addr().String())
			cfg := clientCfg(px.addr(), pki.parties["site-1"], &logs)
			cfg.Attempts, cfg.Backoff, cfg.MaxBackoff = 1000, 50*time.Millisecond, 200*time.Millisecond
			cfg.PeerTimeout = peerTimeout
			c, err := Dial(testCtx(t, 10*time.Second), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := testCtx(t, 60*time.Second)
			if err := c.Send(ctx, Envelope{Type: "a"}); err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			var start time.Time
			switch tc.op {
			case "inflight":
				go func() { errc <- c.Send(ctx, Envelope{Type: "a"}) }()
				time.Sleep(200 * time.Millisecond)
				select {
				case err := <-errc:
					t.Fatalf("Send to a full inbox returned %v", err)
				default:
				}
				start = time.Now()
				px.close()
			case "send":
				px.close()
				start = time.Now()
				go func() { errc <- c.Send(ctx, Envelope{Type: "a"}) }()
			case "recv":
				px.close()
				start = time.Now()
				go func() { _, err := c.Recv(ctx); errc <- err }()
			}
			select {
			case err := <-errc:
				wantGone(t, tc.op, err, time.Since(start), bound)
			case <-ctx.Done():
				t.Fatalf("%s still waiting after 60 s", tc.op)
			}
			// Everything after fails at once, with the same reason.
			t0 := time.Now()
			err = c.Send(ctx, Envelope{Type: "a"})
			wantGone(t, "a later Send", err, time.Since(t0), 100*time.Millisecond)
			_, err = c.Recv(ctx)
			wantGone(t, "a later Recv", err, time.Since(t0), 100*time.Millisecond)
		})
	}
}

// TestHubGoneByAttempts: with the default peer timeout (20 s), a party whose
// hub's port is closed gives up after its re-attach attempts instead
// (Attempts 3, backoff 50 ms: well under a second), again with a
// *HubGoneError, also for a Send waiting on the dead hub.
func TestHubGoneByAttempts(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.InboxSize = 1; c.AllowRepeats = true })
	px := newProxy(t, hub.Addr().String())
	c, err := Dial(testCtx(t, 10*time.Second), clientCfg(px.addr(), pki.parties["site-1"], &logs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testCtx(t, 60*time.Second)
	if err := c.Send(ctx, Envelope{Type: "a"}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Send(ctx, Envelope{Type: "a"}) }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	px.close()
	select {
	case err := <-errc:
		wantGone(t, "Send", err, time.Since(start), 5*time.Second)
		if !strings.Contains(err.Error(), "attempt(s) to re-attach failed") {
			t.Fatalf("the error does not say how the hub was found gone: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Send still waiting after 60 s")
	}
}

// TestHubFrozen: a hub that stops answering without closing anything (a
// frozen process, a cut cable) is noticed by the party's keepalive (10 s +
// 5 s) and given up PeerTimeout later; a Send waiting on it returns a
// *HubGoneError within KeepaliveTime + KeepaliveTimeout + PeerTimeout.
func TestHubFrozen(t *testing.T) {
	if testing.Short() {
		t.Skip("short: waits for the 10 s keepalive")
	}
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.InboxSize = 1; c.AllowRepeats = true })
	px := newProxy(t, hub.Addr().String())
	cfg := clientCfg(px.addr(), pki.parties["site-1"], &logs)
	cfg.Attempts, cfg.PeerTimeout = 1000, time.Second
	c, err := Dial(testCtx(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testCtx(t, 60*time.Second)
	if err := c.Send(ctx, Envelope{Type: "a"}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Send(ctx, Envelope{Type: "a"}) }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	px.freeze()
	px.lis.Close() // and no new connections
	select {
	case err := <-errc:
		wantGone(t, "Send", err, time.Since(start), DefaultClientKeepaliveTime+DefaultClientKeepaliveTimeout+cfg.PeerTimeout+6*time.Second)
	case <-ctx.Done():
		t.Fatal("Send still waiting after 60 s")
	}
}

// TestSendAckTimeout: a hub that is connected but whose protocol stopped
// taking messages (inbox full, never read) holds a Send no longer than
// AckTimeout (300 ms here), even under a context without a deadline; the
// error says so. On 42fe189 the Send waited for its context.
func TestSendAckTimeout(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.InboxSize = 1; c.AllowRepeats = true })
	cfg := clientCfg(hub.Addr().String(), pki.parties["site-1"], &logs)
	cfg.AckTimeout = 300 * time.Millisecond
	c, err := Dial(testCtx(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testCtx(t, 30*time.Second)
	if err := c.Send(ctx, Envelope{Type: "a"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.Send(ctx, Envelope{Type: "b"})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "did not acknowledge envelope 2 (b) within 300ms") || took > 3*time.Second {
		t.Fatalf("Send to a hub not taking messages: %v after %v", err, took)
	}
	// The connection is fine: once the protocol reads, Sends go through
	// (the timed-out envelope may still have been accepted a moment later,
	// as with any deadline: see TestSendDeadline).
	recvInbox(t, hub, time.Second)
	select {
	case <-hub.Inbox():
	case <-time.After(300 * time.Millisecond):
	}
	if err := c.Send(ctx, Envelope{Type: "c"}); err != nil {
		t.Fatal(err)
	}
}
