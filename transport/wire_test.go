package transport

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn counts the bytes a party writes and reads (TLS records
// included).
type countingConn struct {
	net.Conn
	up, down *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.up.Add(int64(n))
	return n, err
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.down.Add(int64(n))
	return n, err
}

// The bytes on the wire beyond the payloads, for docs/transport.md:
// connection set-up, per upstream envelope (Send and its Ack) and per
// downstream envelope, measured at the party's socket.
func TestWireOverhead(t *testing.T) {
	pki := newPKI(t)
	var logs logBuffer
	hub := startHub(t, pki, &logs, func(c *ServerConfig) { c.AllowRepeats = true })
	var up, down atomic.Int64
	cfg := clientCfg(hub.Addr().String(), pki.parties["site-1"], &logs)
	cfg.Dialer = func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &up, &down}, nil
	}
	ctx := testCtx(t, 30*time.Second)
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("connect and attach: %d bytes up, %d down", up.Load(), down.Load())
	const n = 50
	for _, size := range []int{0, 41200} {
		u0, d0 := up.Load(), down.Load()
		for i := 0; i < n; i++ {
			if err := c.Send(ctx, Envelope{Type: "masked-input", Payload: make([]byte, size)}); err != nil {
				t.Fatal(err)
			}
			<-hub.Inbox()
		}
		upPer, downPer := float64(up.Load()-u0)/n-float64(size), float64(down.Load()-d0)/n
		t.Logf("Send of a %d-byte payload: %.0f bytes up beyond the payload, %.0f down (the Ack)", size, upPer, downPer)
		if upPer > 400 || downPer > 300 {
			t.Errorf("overhead per Send %.0f up, %.0f down", upPer, downPer)
		}
		u0, d0 = up.Load(), down.Load()
		for i := 0; i < n; i++ {
			if err := hub.SendTo(ctx, "site-1", Envelope{Type: "sum", Payload: make([]byte, size)}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Recv(ctx); err != nil {
				t.Fatal(err)
			}
		}
		downPer, upPer = float64(down.Load()-d0)/n-float64(size), float64(up.Load()-u0)/n
		t.Logf("downstream envelope of %d bytes: %.0f bytes down beyond the payload, %.0f up (flow control)", size, downPer, upPer)
		if downPer > 300 {
			t.Errorf("overhead per downstream envelope %.0f", downPer)
		}
	}
}
