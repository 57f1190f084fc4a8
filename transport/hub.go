package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dplearn/dplearn/internal/logx"
)

// HubConfig configures the hub side, shared by Server and Memory.
type HubConfig struct {
	// Name is the hub's party name. With a certificate (ServerConfig.
	// Identity) it is the certificate's name and may be left empty.
	Name string
	// Session is the protocol and session every envelope must carry.
	Session Session
	// Roster lists the parties that may attach and send. The hub's own
	// name may not be in it.
	Roster []string
	// MaxPayload caps an envelope's payload in bytes, in both directions;
	// zero means DefaultMaxPayload. Set it to the protocol's largest
	// message: a larger one is refused (ReasonOversized).
	MaxPayload int
	// AllowRepeats lets a party send several envelopes of the same type in
	// the same round. By default the second is refused (ReasonDuplicate).
	AllowRepeats bool
	// NoReattach refuses a party that attaches again after its first
	// attachment (ReasonNoReattach). By default a returning party is
	// re-attached: its new stream replaces the old one and the envelopes
	// queued or recently sent to it are delivered.
	NoReattach bool
	// InboxSize is the capacity of Inbox; a sender's Send waits while it is
	// full. Default 64.
	InboxSize int
	// QueueSize is the number of envelopes queued for one party and not yet
	// written to it; SendTo waits while it is reached. Default 64.
	QueueSize int
	// Resend is the number of envelopes already written to a party that
	// are kept to be resent if it re-attaches having missed them. Default
	// 16.
	Resend int
	// RefusalLogBurst and RefusalLogInterval bound what a flood of
	// refused envelopes costs the hub: of one party's refusals, the first
	// RefusalLogBurst in each RefusalLogInterval are logged and reported as
	// Refused events one by one; the rest are counted and summarised, when
	// the interval ends, in one line and one Refused event whose reason is
	// ReasonSummary ("1234 more refusals from site-1 in the last 10s
	// (replay 1200, wrong-round 34)"). Defaults DefaultRefusalLogBurst (5)
	// and DefaultRefusalLogInterval (10 s). Every refusal is still returned
	// to its sender.
	RefusalLogBurst    int
	RefusalLogInterval time.Duration
	// Logger receives attachments (Info), refusals (Warn) and accepted
	// envelopes (Debug), with party, round, type, seq, bytes, reason and
	// err as attributes; payloads are never logged. nil discards.
	Logger *slog.Logger
}

func (c *HubConfig) normalize() error {
	if err := validName(c.Name); err != nil {
		return fmt.Errorf("transport: hub name: %w", err)
	}
	if err := c.Session.validate(); err != nil {
		return err
	}
	if len(c.Roster) == 0 {
		return errors.New("transport: empty roster")
	}
	seen := make(map[string]bool, len(c.Roster))
	for _, n := range c.Roster {
		if err := validName(n); err != nil {
			return fmt.Errorf("transport: roster: %w", err)
		}
		if n == c.Name {
			return fmt.Errorf("transport: roster: %q is the hub itself", n)
		}
		if seen[n] {
			return fmt.Errorf("transport: roster: %q listed twice", n)
		}
		seen[n] = true
	}
	if c.MaxPayload < 0 || c.InboxSize < 0 || c.QueueSize < 0 || c.Resend < 0 || c.RefusalLogBurst < 0 || c.RefusalLogInterval < 0 {
		return errors.New("transport: negative limit in HubConfig")
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.InboxSize == 0 {
		c.InboxSize = 64
	}
	if c.QueueSize == 0 {
		c.QueueSize = 64
	}
	if c.Resend == 0 {
		c.Resend = 16
	}
	if c.RefusalLogBurst == 0 {
		c.RefusalLogBurst = DefaultRefusalLogBurst
	}
	if c.RefusalLogInterval == 0 {
		c.RefusalLogInterval = DefaultRefusalLogInterval
	}
	c.Session.ID = bytes.Clone(c.Session.ID)
	c.Roster = slices.Clone(c.Roster)
	c.Logger = logx.OrDiscard(c.Logger)
	return nil
}

// hub is the transport-independent core of a Hub: the checks on every
// envelope, the per-party queues and the events. Server and Memory wrap it.
type hub struct {
	cfg    HubConfig
	log    *slog.Logger
	inbox  chan Envelope
	events chan Event
	done   chan struct{}
	// parties has one entry per roster name; the map itself is never
	// modified after newHub.
	parties map[string]*partyState

	mu      sync.Mutex
	closed  bool
	round   uint64
	gate    func(Envelope) error
	changed chan struct{} // closed and replaced when the attached set changes
	dropped int           // events dropped because Events was full

	// refusals limits the refusal lines and events per party; warnings
	// limits the hub's other peer-triggered warnings (refused handshakes,
	// dropped events).
	refusals, warnings *refusalLimiter
}

type partyState struct {
	name string
	// sendMu serialises the envelopes of one sender through the checks and
	// into the inbox, so that the checks and the commit below agree.
	sendMu sync.Mutex

	// Guarded by hub.mu:
	lastSeq        uint64             // last accepted inbound seq
	seen           map[roundType]bool // (round, type) accepted
	outSeq         uint64             // last assigned outbound seq
	out            []Envelope         // outbound envelopes kept: queued and recently written
	written        uint64             // highest outbound seq handed to a stream
	notify         chan struct{}      // closed and replaced when out or sub changes
	sub            *subscription      // current attachment
	attachedBefore bool               // attached at least once
}

type roundType struct {
	round uint64
	typ   string
}

// subscription is one attachment of a party (one downstream stream).
type subscription struct {
	party  *partyState
	cursor uint64        // seq of the last envelope handed to this stream
	stop   chan struct{} // closed to end the subscription from the party's side (Memory)
	// stopOnce guards close(stop).
	stopOnce sync.Once
}

func newHub(cfg HubConfig) (*hub, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	h := &hub{
		cfg:     cfg,
		log:     cfg.Logger,
		inbox:   make(chan Envelope, cfg.InboxSize),
		events:  make(chan Event, 4*len(cfg.Roster)+64),
		done:    make(chan struct{}),
		parties: make(map[string]*partyState, len(cfg.Roster)),
		changed: make(chan struct{}),
	}
	for _, n := range cfg.Roster {
		h.parties[n] = &partyState{name: n, seen: map[roundType]bool{}, notify: make(chan struct{})}
	}
	burst, every := cfg.RefusalLogBurst, cfg.RefusalLogInterval
	h.refusals = newRefusalLimiter(burst, every, func(party string, n int, reasons map[string]int, interval time.Duration) {
		msg := summaryText("refusals", party, n, reasons, interval, burst)
		h.log.Warn(msg, "party", party, "reason", string(ReasonSummary), "refused", n)
		h.emit(Event{Party: party, Kind: Refused, Err: &Refusal{Reason: ReasonSummary, msg: msg}})
	})
	h.warnings = newRefusalLimiter(burst, every, func(key string, n int, reasons map[string]int, interval time.Duration) {
		h.log.Warn(summaryText("warnings", key, n, reasons, interval, burst), "refused", n)
	})
	return h, nil
}

// hubClosed is the refusal of everything after Close.
func (h *hub) hubClosed() *Refusal {
	return &Refusal{Reason: ReasonHubClosed, msg: fmt.Sprintf("transport: hub %s is closed (session over)", h.cfg.Name)}
}

func (h *hub) Inbox() <-chan Envelope { return h.inbox }
func (h *hub) Events() <-chan Event   { return h.events }
func (h *hub) Done() <-chan struct{}  { return h.done }

func (h *hub) SetRound(round uint64) {
	h.mu.Lock()
	h.round = round
	h.mu.Unlock()
}

func (h *hub) SetGate(gate func(Envelope) error) {
	h.mu.Lock()
	h.gate = gate
	h.mu.Unlock()
}

// closeHub marks the hub closed and wakes every waiter.
func (h *hub) closeHub() bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false
	}
	h.closed = true
	close(h.done)
	h.mu.Unlock()
	// Summarise the refusals counted and not yet reported.
	h.refusals.close()
	h.warnings.close()
	return true
}

// emit sends an event without ever blocking. Called with h.mu held or not.
func (h *hub) emit(ev Event) {
	ev.Time = time.Now()
	select {
	case h.events <- ev:
	default:
		logLimited(h.warnings, h.log, "(events channel)", "event-dropped", "transport: events channel full; event dropped", "party", ev.Party, "event", ev.Kind.String())
	}
}

func (h *hub) wakeParty(p *partyState) {
	close(p.notify)
	p.notify = make(chan struct{})
}

func (h *hub) wakeChanged() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// refused logs and reports a refusal (the first RefusalLogBurst of the
// party per RefusalLogInterval; the rest are counted and summarised) and
// returns it.
func (h *hub) refused(party string, r *Refusal) *Refusal {
	if h.refusals.allow(party, string(r.Reason)) {
		h.log.Warn("transport: refused an envelope", "party", party, "reason", string(r.Reason), logx.Err(r))
		h.emit(Event{Party: party, Kind: Refused, Err: r})
	}
	return r
}

// deliver runs every check on env, which arrived from the party proven to
// be identity, and queues it in the inbox. It returns a *Refusal, or an
// error if ctx ended or the hub closed before the inbox had room.
func (h *hub) deliver(ctx context.Context, identity string, env Envelope) error {
	p := h.parties[identity]
	if p == nil {
		return h.refused(identity, refuse(ReasonUnknownParty, identity, env.Sender, "%s is not in the roster of this session", identity))
	}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if r := h.check(p, identity, env); r != nil {
		return h.refused(identity, r)
	}
	select {
	case <-h.done:
		return h.hubClosed()
	default:
	}
	select {
	case h.inbox <- env:
	case <-ctx.Done():
		return fmt.Errorf("transport: message from %s (seq %d) not accepted: %w", identity, env.Seq, ctx.Err())
	case <-h.done:
		return h.hubClosed()
	}
	h.mu.Lock()
	p.lastSeq = env.Seq
	if !h.cfg.AllowRepeats {
		p.seen[roundType{env.Round, env.Type}] = true
	}
	h.mu.Unlock()
	h.log.Debug("transport: accepted", "party", identity, "round", env.Round, "type", env.Type, "seq", env.Seq, "bytes", len(env.Payload))
	return nil
}

// check runs the envelope checks in a fixed order: identity, addressing,
// form, size, replay, round, duplicate, protocol gate.
func (h *hub) check(p *partyState, identity string, env Envelope) *Refusal {
	s := h.cfg.Session
	switch {
	case env.Sender != identity:
		return refuse(ReasonSenderMismatch, identity, env.Sender, "the sender field says %s but the certificate says %q", clip(env.Sender), identity)
	case env.Protocol != s.Protocol:
		return refuse(ReasonWrongProtocol, identity, env.Sender, "message for protocol %s; this hub runs %q", clip(env.Protocol), s.Protocol)
	case !bytes.Equal(env.Session, s.ID):
		return refuse(ReasonWrongSession, identity, env.Sender, "message for another session (%s); this session is %s", shortHex(env.Session), shortHex(s.ID))
	case env.Recipient != h.cfg.Name:
		return refuse(ReasonWrongRecipient, identity, env.Sender, "message addressed to %s; this hub is %q", clip(env.Recipient), h.cfg.Name)
	case env.Type == "" || len(env.Type) > maxTypeLen:
		return refuse(ReasonMalformed, identity, env.Sender, "message type of %d bytes (want 1 to %d)", len(env.Type), maxTypeLen)
	case env.Seq == 0:
		return refuse(ReasonMalformed, identity, env.Sender, "sequence number 0 (they start at 1)")
	case len(env.Payload) > h.cfg.MaxPayload:
		return refuse(ReasonOversized, identity, env.Sender, "payload of %d bytes exceeds the %s cap of %d bytes", len(env.Payload), s.Protocol, h.cfg.MaxPayload)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil // deliver notices
	}
	if env.Seq <= p.lastSeq {
		return refuse(ReasonReplay, identity, env.Sender, "sequence number %d was already used (last accepted %d): replayed or duplicated message", env.Seq, p.lastSeq)
	}
	if env.Round != h.round {
		return refuse(ReasonWrongRound, identity, env.Sender, "%q message for round %d; the current round is %d", env.Type, env.Round, h.round)
	}
	if !h.cfg.AllowRepeats && p.seen[roundType{env.Round, env.Type}] {
		return refuse(ReasonDuplicate, identity, env.Sender, "a %q message for round %d was already received", env.Type, env.Round)
	}
	if h.gate != nil {
		if err := h.gate(env); err != nil {
			return refuse(ReasonRefusedByProtocol, identity, env.Sender, "%v", err)
		}
	}
	return nil
}

func shortHex(b []byte) string {
	const max = 16
	if len(b) > max {
		return fmt.Sprintf("%x…", b[:max])
	}
	return fmt.Sprintf("%x", b)
}

// SendTo queues env for party (see Hub).
func (h *hub) SendTo(ctx context.Context, party string, env Envelope) error {
	p := h.parties[party]
	if p == nil {
		return fmt.Errorf("transport: cannot send to %q: not in the roster", party)
	}
	if env.Type == "" || len(env.Type) > maxTypeLen {
		return fmt.Errorf("transport: send to %s: message type of %d bytes (want 1 to %d)", party, len(env.Type), maxTypeLen)
	}
	if len(env.Payload) > h.cfg.MaxPayload {
		return &Refusal{Reason: ReasonOversized, msg: fmt.Sprintf("transport: send to %s: payload of %d bytes exceeds the %s cap of %d bytes", party, len(env.Payload), h.cfg.Session.Protocol, h.cfg.MaxPayload)}
	}
	env.Protocol = h.cfg.Session.Protocol
	env.Session = h.cfg.Session.ID
	env.Sender = h.cfg.Name
	env.Recipient = party
	env.Payload = bytes.Clone(env.Payload)
	h.mu.Lock()
	for !h.closed && p.outSeq-p.written >= uint64(h.cfg.QueueSize) {
		ch := p.notify
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("transport: send to %s: queue full (%d envelopes not yet delivered): %w", party, h.cfg.QueueSize, ctx.Err())
		case <-h.done:
		}
		h.mu.Lock()
	}
	defer h.mu.Unlock()
	if h.closed {
		return h.hubClosed()
	}
	p.outSeq++
	env.Seq = p.outSeq
	p.out = append(p.out, env)
	h.trim(p)
	h.wakeParty(p)
	return nil
}

// trim drops the written envelopes beyond the resend window. h.mu held.
func (h *hub) trim(p *partyState) {
	for len(p.out) > 0 && p.out[0].Seq <= p.written && p.written-p.out[0].Seq+1 > uint64(h.cfg.Resend) {
		p.out[0] = Envelope{}
		p.out = p.out[1:]
	}
}

// errReplaced ends a subscription that a newer one of the same party
// replaced.
func replacedRefusal(party string) *Refusal {
	return &Refusal{Reason: ReasonReplaced, msg: fmt.Sprintf("transport: %s attached again on another connection; this one is closed", party)}
}

// connClosed is the error of a subscription ended from the party's side.
func connClosed(party string) error {
	return fmt.Errorf("transport: %s: connection closed", party)
}

// next returns the next envelope for subscription s, waiting for one.
func (h *hub) next(ctx context.Context, s *subscription) (Envelope, error) {
	p := s.party
	h.mu.Lock()
	for {
		if h.closed {
			h.mu.Unlock()
			return Envelope{}, h.hubClosed()
		}
		if p.sub != s {
			h.mu.Unlock()
			return Envelope{}, replacedRefusal(p.name)
		}
		if len(p.out) > 0 {
			i := 0
			if first := p.out[0].Seq; s.cursor >= first {
				i = int(s.cursor - first + 1)
			}
			if i < len(p.out) {
				env := p.out[i]
				s.cursor = env.Seq
				if env.Seq > p.written {
					p.written = env.Seq
					h.trim(p)
					h.wakeParty(p) // room in the queue
				}
				h.mu.Unlock()
				return env, nil
			}
		}
		ch := p.notify
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Envelope{}, ctx.Err()
		case <-s.stop:
			return Envelope{}, connClosed(p.name)
		case <-h.done:
		}
		h.mu.Lock()
	}
}

// attachRequest is what a party asks when it attaches.
type attachRequest struct {
	Protocol     string
	Session      []byte
	Sender       string
	LastReceived uint64
}

// attach makes s the party's current subscription (replacing any other)
// and returns the seq of the last envelope accepted from the party.
func (h *hub) attach(identity string, req attachRequest) (*subscription, uint64, error) {
	p := h.parties[identity]
	if p == nil {
		return nil, 0, h.refused(identity, refuse(ReasonUnknownParty, identity, req.Sender, "%s is not in the roster of this session", identity))
	}
	s := h.cfg.Session
	switch {
	case req.Sender != identity:
		return nil, 0, h.refused(identity, refuse(ReasonSenderMismatch, identity, req.Sender, "attaching as %s with the certificate of %q", clip(req.Sender), identity))
	case req.Protocol != s.Protocol:
		return nil, 0, h.refused(identity, refuse(ReasonWrongProtocol, identity, req.Sender, "attaching for protocol %s; this hub runs %q", clip(req.Protocol), s.Protocol))
	case !bytes.Equal(req.Session, s.ID):
		return nil, 0, h.refused(identity, refuse(ReasonWrongSession, identity, req.Sender, "attaching for another session (%s); this session is %s", shortHex(req.Session), shortHex(s.ID)))
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, 0, h.hubClosed()
	}
	if h.cfg.NoReattach && p.attachedBefore {
		h.mu.Unlock()
		return nil, 0, h.refused(identity, refuse(ReasonNoReattach, identity, req.Sender, "%s was attached before and this protocol does not take parties back", identity))
	}
	if req.LastReceived > p.outSeq {
		h.mu.Unlock()
		return nil, 0, h.refused(identity, refuse(ReasonMalformed, identity, req.Sender, "claims to have received envelope %d; only %d were sent in this session", req.LastReceived, p.outSeq))
	}
	sub := &subscription{party: p, cursor: req.LastReceived, stop: make(chan struct{})}
	replacing := p.sub != nil
	p.sub = sub
	returning := p.attachedBefore
	p.attachedBefore = true
	lastSeq := p.lastSeq
	lost := uint64(0)
	if len(p.out) > 0 && p.out[0].Seq > req.LastReceived+1 {
		lost = p.out[0].Seq - req.LastReceived - 1
	} else if len(p.out) == 0 && p.outSeq > req.LastReceived {
		lost = p.outSeq - req.LastReceived
	}
	h.wakeParty(p)
	h.wakeChanged()
	h.mu.Unlock()
	h.log.Info("transport: party attached", "party", identity, "returning", returning, "replacing", replacing, "last_received", req.LastReceived)
	if lost > 0 {
		h.log.Warn("transport: envelopes to a returning party fell out of the resend window", "party", identity, "lost", lost)
	}
	h.emit(Event{Party: identity, Kind: Attached, Returning: returning})
	return sub, lastSeq, nil
}

// detach ends subscription s if it is still the party's current one.
func (h *hub) detach(s *subscription, cause error) {
	p := s.party
	h.mu.Lock()
	if p.sub != s {
		h.mu.Unlock()
		return
	}
	p.sub = nil
	h.wakeChanged()
	h.mu.Unlock()
	if cause == nil {
		cause = connClosed(p.name)
	}
	h.log.Info("transport: party detached", "party", p.name, "cause", cause.Error())
	h.emit(Event{Party: p.name, Kind: Detached, Err: cause})
}

// Connected lists the attached parties, sorted.
func (h *hub) Connected() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.connectedLocked()
}

func (h *hub) connectedLocked() []string {
	var names []string
	for n, p := range h.parties {
		if p.sub != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// AwaitConnected waits until at least n parties are attached.
func (h *hub) AwaitConnected(ctx context.Context, n int) ([]string, error) {
	h.mu.Lock()
	for {
		names := h.connectedLocked()
		if len(names) >= n {
			h.mu.Unlock()
			return names, nil
		}
		if h.closed {
			h.mu.Unlock()
			return names, h.hubClosed()
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return h.Connected(), fmt.Errorf("transport: %d of %d parties attached: %w", len(h.Connected()), n, ctx.Err())
		case <-h.done:
		}
		h.mu.Lock()
	}
}
