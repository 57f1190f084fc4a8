package transport

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/transport/transportpb"
)

// Envelope is one protocol message with the transport's routing and replay
// fields. A protocol sets Round, Type and Payload; Conn.Send and Hub.SendTo
// fill in Protocol, Session, Sender, Recipient and Seq (any values the
// caller put there are replaced).
type Envelope struct {
	// Protocol names the protocol ("secagg", "cape", "dppp").
	Protocol string
	// Session identifies one run of the protocol.
	Session []byte
	// Round is the protocol round the message belongs to.
	Round uint64
	// Type is the protocol's name for the message ("masked-input").
	Type string
	// Sender is the sending party's name: on the hub, the name proven by the
	// sender's certificate.
	Sender string
	// Recipient is the addressed party's name.
	Recipient string
	// Seq numbers the sender's envelopes to this recipient in this session,
	// strictly increasing from 1.
	Seq uint64
	// Payload is the protocol's own encoding of the message.
	Payload []byte
}

func (e Envelope) toPB() *transportpb.Envelope {
	return &transportpb.Envelope{
		Protocol:  e.Protocol,
		Session:   e.Session,
		Round:     e.Round,
		Type:      e.Type,
		Sender:    e.Sender,
		Recipient: e.Recipient,
		Seq:       e.Seq,
		Payload:   e.Payload,
	}
}

func fromPB(p *transportpb.Envelope) Envelope {
	return Envelope{
		Protocol:  p.GetProtocol(),
		Session:   p.GetSession(),
		Round:     p.GetRound(),
		Type:      p.GetType(),
		Sender:    p.GetSender(),
		Recipient: p.GetRecipient(),
		Seq:       p.GetSeq(),
		Payload:   p.GetPayload(),
	}
}

// clone returns a copy of e that shares no memory with it.
func (e Envelope) clone() Envelope {
	e.Session = append([]byte(nil), e.Session...)
	e.Payload = append([]byte(nil), e.Payload...)
	return e
}

// Limits on the envelope's string fields.
const (
	maxProtocolLen = 32
	maxSessionLen  = 64
	maxTypeLen     = 64
)

// DefaultMaxPayload is the payload cap when HubConfig.MaxPayload is zero:
// 16 MiB.
const DefaultMaxPayload = 16 << 20

// envelopeOverhead bounds the encoded size of an envelope's fields other
// than the payload (names ≤ 64 bytes, session ≤ 64, protocol ≤ 32, type ≤
// 64, two varints, tags and lengths); gRPC's message limits are the payload
// cap plus this.
const envelopeOverhead = 1024

// Conn is a party's connection to the hub: the same interface over gRPC
// (Dial) and in memory (Memory.Dial), so protocol code is identical.
type Conn interface {
	// Send delivers env to the hub and returns once the hub accepted it, or
	// with the hub's refusal (a *Refusal) or a transport error. It fills in
	// the envelope's Protocol, Session, Sender, Recipient and Seq.
	Send(ctx context.Context, env Envelope) error
	// Recv returns the next envelope from the hub, in order. An error that
	// is a *GapError reports lost envelopes and the Conn stays usable; any
	// other error (the connection was lost for good, the Conn was closed)
	// is final.
	Recv(ctx context.Context) (Envelope, error)
	// Close detaches from the hub. It does not wait for the hub.
	Close() error
}

// Hub is the aggregator's side: it receives every party's envelopes and
// addresses envelopes to single parties. Server (gRPC) and Memory
// implement it.
type Hub interface {
	// Inbox delivers every accepted envelope, in order per sender. The
	// channel is never closed; select on Done too.
	Inbox() <-chan Envelope
	// Events reports attachments, detachments and refusals. It is never
	// closed and never blocks the hub: if nobody reads it, events are
	// dropped (and counted in the log); Connected is always exact.
	Events() <-chan Event
	// SendTo queues env for party and returns once it is queued (it blocks
	// while the party's queue is full, until ctx is done). Envelopes
	// queued for a detached party are delivered when it attaches again.
	SendTo(ctx context.Context, party string, env Envelope) error
	// Connected lists the attached parties, sorted.
	Connected() []string
	// AwaitConnected waits until at least n parties are attached and
	// returns them, or returns ctx's error with those attached so far.
	AwaitConnected(ctx context.Context, n int) ([]string, error)
	// SetRound sets the current round: envelopes for any other round are
	// refused (ReasonWrongRound). Set the new round before sending its
	// first envelope. The initial round is 0.
	SetRound(round uint64)
	// SetGate installs a protocol check run on every envelope that passed
	// the transport's own checks; a non-nil error refuses the envelope
	// (ReasonRefusedByProtocol). The gate runs with the hub's lock held: it
	// must be quick and must not call the Hub. nil removes the gate.
	SetGate(gate func(Envelope) error)
	// Done is closed when the hub is closed.
	Done() <-chan struct{}
	// Close stops the hub; attached parties are disconnected.
	Close() error
}

// EventKind says what happened to a party.
type EventKind int

const (
	// Attached: the party opened its downstream (connected).
	Attached EventKind = iota + 1
	// Detached: the party's downstream ended (disconnected, dead peer
	// noticed by keepalive, or the hub closed).
	Detached
	// Refused: an envelope or an attachment of the party was refused.
	Refused
)

func (k EventKind) String() string {
	switch k {
	case Attached:
		return "attached"
	case Detached:
		return "detached"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is a change in a party's connection, or a refusal.
type Event struct {
	Party string
	Kind  EventKind
	// Returning is set on Attached when the party had been attached before
	// in this session (a reconnect).
	Returning bool
	// Err is why a party detached, or the refusal.
	Err  error
	Time time.Time
}

// Session names one run of one protocol.
type Session struct {
	// Protocol names the protocol: 1 to 32 characters from a-z, 0-9, '-'.
	Protocol string
	// ID identifies the run: 1 to 64 bytes, chosen by the hub (random).
	ID []byte
}

func (s Session) validate() error {
	if s.Protocol == "" || len(s.Protocol) > maxProtocolLen {
		return fmt.Errorf("transport: protocol name %q: want 1 to %d characters", s.Protocol, maxProtocolLen)
	}
	for i := 0; i < len(s.Protocol); i++ {
		c := s.Protocol[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("transport: protocol name %q: character %q not allowed", s.Protocol, c)
		}
	}
	if len(s.ID) == 0 || len(s.ID) > maxSessionLen {
		return fmt.Errorf("transport: session ID of %d bytes: want 1 to %d", len(s.ID), maxSessionLen)
	}
	return nil
}

// Reason classifies a refusal.
type Reason string

// The reasons an envelope or attachment is refused.
const (
	ReasonUnknownParty      Reason = "unknown-party"       // the name is not in the roster
	ReasonSenderMismatch    Reason = "sender-mismatch"     // sender field ≠ certificate name
	ReasonWrongProtocol     Reason = "wrong-protocol"      // another protocol
	ReasonWrongSession      Reason = "wrong-session"       // another session
	ReasonWrongRecipient    Reason = "wrong-recipient"     // addressed to someone else
	ReasonWrongRound        Reason = "wrong-round"         // not the current round
	ReasonReplay            Reason = "replay"              // seq already seen
	ReasonDuplicate         Reason = "duplicate"           // (round, type) already received
	ReasonOversized         Reason = "oversized"           // payload over the cap
	ReasonMalformed         Reason = "malformed"           // missing or overlong fields
	ReasonRefusedByProtocol Reason = "refused-by-protocol" // the hub's gate said no
	ReasonNoReattach        Reason = "no-reattach"         // the protocol does not take parties back
	ReasonReplaced          Reason = "replaced"            // a newer connection of the same party took over
	ReasonHubClosed         Reason = "hub-closed"          // the hub closed: the session is over
)

// Refusal is a refused envelope or attachment, on the hub (returned by the
// checks, logged, reported as an Event) and at the sender (returned by
// Conn.Send or Dial, rebuilt from the gRPC status).
type Refusal struct {
	Reason Reason
	msg    string
}

func (r *Refusal) Error() string { return r.msg }

// RefusalReason returns the Reason of the *Refusal in err's chain.
func RefusalReason(err error) (Reason, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason, true
	}
	return "", false
}

// refuse builds the hub-side refusal of an envelope from claimed sender
// `from` that arrived with certificate name `identity`.
func refuse(reason Reason, identity, from, format string, args ...any) *Refusal {
	who := "message from " + identity
	if from != identity {
		who = fmt.Sprintf("message from %s (certificate %s)", printableName(from), identity)
	}
	return &Refusal{Reason: reason, msg: fmt.Sprintf("transport: %s: %s: %s", who, reason, fmt.Sprintf(format, args...))}
}

// printableName returns a claimed (unchecked) name fit for a log line: as
// is if it is a valid party name, else quoted and cut to 64 bytes.
func printableName(name string) string {
	if validName(name) == nil {
		return name
	}
	return clip(name)
}

// clip quotes an unchecked string from the network for a message, cut to
// 64 bytes.
func clip(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "…"
	}
	return strconv.Quote(s)
}

// GapError reports envelopes that were lost between the hub and this
// party (they fell out of the hub's resend window while the party was away).
type GapError struct {
	From          string
	First, Last   uint64 // the missing sequence numbers
	ReceivedAfter uint64
}

func (e *GapError) Error() string {
	return fmt.Sprintf("transport: %d envelope(s) from %s lost (seq %d to %d)", e.Last-e.First+1, e.From, e.First, e.Last)
}

// downstream checks envelopes arriving at a party from the hub: right
// protocol, session, sender and recipient; sequence numbers increasing;
// duplicates (resent envelopes already seen) dropped; gaps reported.
type downstream struct {
	session  Session
	me, hub  string
	lastRecv uint64
}

// accept returns whether env is new and should be delivered, and a
// *GapError to deliver before it if envelopes were skipped, or an error if
// env is not for this party.
func (d *downstream) accept(env Envelope) (deliver bool, gap *GapError, err error) {
	switch {
	case env.Protocol != d.session.Protocol:
		return false, nil, fmt.Errorf("transport: envelope from %s for protocol %q, want %q", d.hub, env.Protocol, d.session.Protocol)
	case string(env.Session) != string(d.session.ID):
		return false, nil, fmt.Errorf("transport: envelope from %s for another session", d.hub)
	case env.Sender != d.hub:
		return false, nil, fmt.Errorf("transport: envelope from %q on the connection to %s", env.Sender, d.hub)
	case env.Recipient != d.me:
		return false, nil, fmt.Errorf("transport: envelope from %s addressed to %q, not %s", d.hub, env.Recipient, d.me)
	}
	if env.Seq <= d.lastRecv {
		return false, nil, nil // a resent envelope already delivered
	}
	if env.Seq > d.lastRecv+1 {
		gap = &GapError{From: d.hub, First: d.lastRecv + 1, Last: env.Seq - 1, ReceivedAfter: d.lastRecv}
	}
	d.lastRecv = env.Seq
	return true, gap, nil
}

// validName checks a party name with the certificates' rule.
func validName(name string) error { return certs.ValidateName(name) }

// Both implementations satisfy both interfaces.
var (
	_ Hub  = (*Server)(nil)
	_ Hub  = (*Memory)(nil)
	_ Conn = (*Client)(nil)
	_ Conn = (*memConn)(nil)
)
