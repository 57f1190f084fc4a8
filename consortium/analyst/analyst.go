// Package analyst is an analyst's client of the consortium coordinator: it
// signs task specifications with the analyst's certificate (so every node
// can check who asked) and makes one request at a time over the
// consortium's transport session.
package analyst

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/consortium/coordinator"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/transport"
)

// Client is a connection to the coordinator.
type Client struct {
	id   *certs.Party
	conn *transport.Client
	next atomic.Uint64
}

// Dial connects to the coordinator at addr (certificate name server,
// default "coordinator").
func Dial(ctx context.Context, id *certs.Party, addr, server string) (*Client, error) {
	if server == "" {
		server = "coordinator"
	}
	conn, err := transport.Dial(ctx, transport.ClientConfig{Address: addr, Server: server, Identity: id, Session: wire.Session(),
		MaxPayload: wire.MaxPayload, PeerTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	c := &Client{id: id, conn: conn}
	c.next.Store(uint64(time.Now().UnixNano()))
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Sign signs a task specification as the analyst, with a fresh random
// nonce unless spec has one (so that each submission is a new task to the
// nodes, which refuse a signed task they have already accepted).
func Sign(id *certs.Party, spec wire.TaskSpec) (wire.Signed, error) {
	if spec.Nonce == "" {
		var n [16]byte
		if _, err := rand.Read(n[:]); err != nil {
			return wire.Signed{}, err
		}
		spec.Nonce = hex.EncodeToString(n[:])
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return wire.Signed{}, err
	}
	cert, sig, err := certs.SignStatement(id, wire.SpecDomain, b)
	if err != nil {
		return wire.Signed{}, err
	}
	return wire.Signed{Spec: b, Cert: cert, Sig: sig}, nil
}

// Call makes one request and decodes the reply's body into out.
func (c *Client) Call(ctx context.Context, r wire.Request, out any) error {
	r.ID = c.next.Add(1)
	env, err := wire.Encode(wire.TypeRequest, r)
	if err != nil {
		return err
	}
	if err := c.conn.Send(ctx, env); err != nil {
		return err
	}
	for {
		env, err := c.conn.Recv(ctx)
		var gap *transport.GapError
		if errors.As(err, &gap) {
			// Envelopes sent to this analyst's earlier connection (replies
			// to its requests, which carry other IDs): not this reply.
			continue
		}
		if err != nil {
			return fmt.Errorf("analyst: waiting for the coordinator's reply: %w", err)
		}
		if env.Type != wire.TypeReply {
			continue
		}
		var rep wire.Reply
		if err := wire.Decode(env, &rep); err != nil {
			return err
		}
		if rep.ID != r.ID {
			continue
		}
		if rep.Error != "" {
			return errors.New(rep.Error)
		}
		if out != nil {
			return json.Unmarshal(rep.Body, out)
		}
		return nil
	}
}

// Submit signs and submits a task.
func (c *Client) Submit(ctx context.Context, spec wire.TaskSpec) (*coordinator.Task, error) {
	sg, err := Sign(c.id, spec)
	if err != nil {
		return nil, err
	}
	var t coordinator.Task
	return &t, c.Call(ctx, wire.Request{Op: "submit", Signed: &sg}, &t)
}

// Task returns a task's status ("status") or its result ("result").
func (c *Client) Task(ctx context.Context, op, id string) (*coordinator.Task, error) {
	var t coordinator.Task
	return &t, c.Call(ctx, wire.Request{Op: op, Task: id}, &t)
}

// Cancel cancels a task.
func (c *Client) Cancel(ctx context.Context, id string) (*coordinator.Task, error) {
	var t coordinator.Task
	return &t, c.Call(ctx, wire.Request{Op: "cancel", Task: id}, &t)
}

// Budgets returns every node's last budget report.
func (c *Client) Budgets(ctx context.Context) ([]coordinator.Budget, error) {
	var b []coordinator.Budget
	return b, c.Call(ctx, wire.Request{Op: "budget"}, &b)
}

// Wait polls a task until it is over or ctx ends.
func (c *Client) Wait(ctx context.Context, id string) (*coordinator.Task, error) {
	for {
		t, err := c.Task(ctx, "status", id)
		if err != nil {
			return nil, err
		}
		if t.Terminal() {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
