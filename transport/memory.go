package transport

import (
	"context"
	"fmt"
	"sync"
)

// Memory is a Hub whose parties are in the same process: the same checks,
// queues, events and Conn interface as Server, without sockets. It serves
// `simulate` runs in one process and protocol unit tests.
type Memory struct {
	*hub
}

// NewMemory returns an in-memory hub. cfg.Name is required.
func NewMemory(cfg HubConfig) (*Memory, error) {
	h, err := newHub(cfg)
	if err != nil {
		return nil, err
	}
	return &Memory{hub: h}, nil
}

// Close closes the hub; every party's Recv returns an error.
func (m *Memory) Close() error {
	m.closeHub()
	return nil
}

// Dial attaches party name and returns its Conn. Dialling a name again
// (after Close or Disconnect) is a reconnect: the new Conn replaces the old
// one and the hub's queued and recently sent envelopes are delivered to it,
// subject to HubConfig.NoReattach. Envelopes carry copies of the payload in
// both directions, as they would over a network.
func (m *Memory) Dial(ctx context.Context, name string) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := m.cfg.Session
	sub, lastAccepted, err := m.attach(name, attachRequest{Protocol: s.Protocol, Session: s.ID, Sender: name})
	if err != nil {
		return nil, err
	}
	return &memConn{
		m:       m,
		name:    name,
		sub:     sub,
		nextSeq: lastAccepted + 1,
		ds:      downstream{session: s, me: name, hub: m.cfg.Name},
	}, nil
}

// Disconnect drops party name's current connection as a crash or a network
// failure would: the hub reports it Detached and the Conn's Recv fails.
func (m *Memory) Disconnect(name string) {
	p := m.parties[name]
	if p == nil {
		return
	}
	m.mu.Lock()
	sub := p.sub
	m.mu.Unlock()
	if sub == nil {
		return
	}
	sub.stopOnce.Do(func() { close(sub.stop) })
	m.detach(sub, fmt.Errorf("transport: %s disconnected", name))
}

type memConn struct {
	m    *Memory
	name string
	sub  *subscription

	sendMu  sync.Mutex
	nextSeq uint64

	recvMu  sync.Mutex
	ds      downstream
	pending *Envelope // an envelope held back behind a GapError
}

func (c *memConn) Send(ctx context.Context, env Envelope) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	select {
	case <-c.sub.stop:
		return fmt.Errorf("transport: send: %w", connClosed(c.name))
	default:
	}
	s := c.m.cfg.Session
	env.Protocol, env.Session, env.Sender, env.Recipient = s.Protocol, s.ID, c.name, c.m.cfg.Name
	env.Seq = c.nextSeq
	c.nextSeq++
	return c.m.deliver(ctx, c.name, env.clone())
}

func (c *memConn) Recv(ctx context.Context) (Envelope, error) {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	if c.pending != nil {
		env := *c.pending
		c.pending = nil
		return env, nil
	}
	for {
		env, err := c.m.next(ctx, c.sub)
		if err != nil {
			return Envelope{}, fmt.Errorf("transport: %s: receive: %w", c.name, err)
		}
		env = env.clone()
		ok, gap, err := c.ds.accept(env)
		if err != nil {
			return Envelope{}, err
		}
		if !ok {
			continue
		}
		if gap != nil {
			c.pending = &env
			return Envelope{}, gap
		}
		return env, nil
	}
}

func (c *memConn) Close() error {
	c.sub.stopOnce.Do(func() { close(c.sub.stop) })
	c.m.detach(c.sub, fmt.Errorf("transport: %s closed its connection", c.name))
	return nil
}
