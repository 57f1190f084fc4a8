// Package wire is what the consortium's parties say to each other over one
// transport session (package transport: gRPC, mutual TLS 1.3, the hub's
// identity checks and flood limits) and the multiplexer that lets one
// long-lived connection carry the capeFM protocol of several tasks.
//
// Every party (node, analyst) is a transport client of the coordinator's
// hub; its name is its certificate's. Control messages are JSON payloads
// with an envelope type naming them (TypeRegister, TypeOffer, ...). A
// task's capeFM messages travel unchanged (capefm's strict binary
// encoding) inside a Cape message naming the task, so the capeFM state
// machines and package capenet's adapters run as they do in a one-shot fit:
// TaskHub is a transport.Hub for one task at the coordinator, TaskConn a
// transport.Conn for one task at the node.
package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"time"

	"github.com/dplearn/dplearn/internal/roundup"
	"github.com/dplearn/dplearn/transport"
)

// Protocol and SessionID are the consortium's transport session. The
// session is long-lived (the consortium's), so it is fixed; each capeFM
// attempt carries its own random session inside its payloads.
const (
	Protocol  = "consortium"
	SessionID = "dplearn-consortium-v1"
)

// Session returns the consortium's transport session.
func Session() transport.Session {
	return transport.Session{Protocol: Protocol, ID: []byte(SessionID)}
}

// MaxPayload caps every consortium envelope: a capeFM message of a fit
// with up to about 200 features and 50 sites, base64 inside JSON.
const MaxPayload = 4 << 20

// Envelope types.
const (
	TypeRegister = "register" // node → coordinator: Register
	TypeOffer    = "offer"    // coordinator → node: Offer
	TypeAnswer   = "answer"   // node → coordinator: Answer
	TypeCape     = "cape"     // both ways: Cape
	TypeCancel   = "cancel"   // coordinator → node: Cancel
	TypeBudget   = "budget"   // node → coordinator: BudgetReport
	TypeRequest  = "request"  // analyst → coordinator: Request
	TypeReply    = "reply"    // coordinator → analyst: Reply
)

// Dataset is a dataset a node registers: its name, the fingerprint of the
// schema it was declared with, its public number of rows.
type Dataset struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
	N           int64  `json:"n"`
	// Kind is "" for a data file, "model" for a DPPP teacher's model (the
	// dataset's name is then its deployment's; Fingerprint is the model's
	// input fingerprint, dppp.Config.Model, N is 0).
	Kind     string `json:"kind,omitempty"`
	Classes  int    `json:"classes,omitempty"`
	Features int    `json:"features,omitempty"`
	// ClassNames are a model's classes (label k is ClassNames[k]).
	ClassNames []string `json:"class_names,omitempty"`
}

// Register is a node's registration, sent every time it connects.
type Register struct {
	Datasets []Dataset `json:"datasets"`
}

// TaskSpec is what an analyst submits: a fit over named datasets at named
// sites, or (Kind KindDPPP) query rows for a DPPP deployment to label.
type TaskSpec struct {
	// Kind is "" for a capeFM fit, KindDPPP for a DPPP query task.
	Kind string `json:"kind,omitempty"`
	// Deployment names the DPPP deployment (the teachers' model dataset).
	Deployment string `json:"deployment,omitempty"`
	// Rows are a DPPP task's query rows (the deployment's features, in
	// its input spec's encoding). The analyst signs them: a teacher node
	// votes only on these rows, so the coordinator cannot spend the
	// analyst's budget on rows of its own.
	Rows [][]float64 `json:"rows,omitempty"`
	// Sites maps a site (node name) to the dataset it fits on.
	Sites      map[string]string `json:"sites"`
	Model      string            `json:"model"`     // linear or logistic
	Mechanism  string            `json:"mechanism"` // capefm or a baseline
	Epsilon    float64           `json:"epsilon"`
	Delta      float64           `json:"delta"`
	Split      float64           `json:"split,omitempty"`
	NoiseRatio float64           `json:"noise_ratio,omitempty"`
	Colluders  int               `json:"colluders,omitempty"`
	MinSites   int               `json:"min_sites"`
	// Schema is the schema file's content; every site encodes its rows
	// with it.
	Schema json.RawMessage `json:"schema"`
	// Deadline is when the coordinator gives up waiting for MinSites.
	Deadline time.Time `json:"deadline"`
	// RedoAfterRelease: capeFM's redo rule (default: abort).
	RedoAfterRelease bool `json:"redo_after_release,omitempty"`
	// Nonce makes every submission's signed bytes unique (analyst.Sign
	// fills it): a node refuses a signed task it has already accepted.
	Nonce string `json:"nonce,omitempty"`
}

// SpecDomain is the signature domain of an analyst's task specification.
const SpecDomain = "dplearn-consortium-task-v1"

// Signed is a task specification as the analyst signed it: the exact JSON
// bytes of a TaskSpec, the analyst's certificate and its signature
// (certs.SignStatement with SpecDomain). A node verifies it against the
// CA before anything else, so the analyst a node's policy sees is the one
// who signed, not a name the coordinator claims.
type Signed struct {
	Spec []byte `json:"spec"`
	Cert []byte `json:"cert"`
	Sig  []byte `json:"sig"`
}

// Offer asks a node to take part in a task.
type Offer struct {
	Task    string `json:"task"`
	Analyst string `json:"analyst"`
	Dataset string `json:"dataset"`
	Signed  Signed `json:"signed"`
}

// Answer is a node's decision on an Offer: accepted, or refused with the
// policy rule (or "data", "schema", ... for a task the node cannot run).
type Answer struct {
	Task   string `json:"task"`
	Accept bool   `json:"accept"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Cape carries one capeFM envelope of a task.
type Cape struct {
	Task    string `json:"task"`
	Round   uint64 `json:"round"`
	Type    string `json:"type"`
	Payload []byte `json:"payload"`
}

// Cancel tells a node a task is over for it.
type Cancel struct {
	Task   string `json:"task"`
	Reason string `json:"reason"`
}

// LedgerState is one of a node's ledgers as the node reports it.
type LedgerState struct {
	Kind          string  `json:"kind"` // "analyst" or "dataset"
	Name          string  `json:"name"`
	BudgetEpsilon float64 `json:"budget_epsilon"`
	BudgetDelta   float64 `json:"budget_delta"`
	SpentEpsilon  float64 `json:"spent_epsilon"`
	SpentDelta    float64 `json:"spent_delta"`
	Charges       int     `json:"charges"`
}

// BudgetReport is a node's ledgers.
type BudgetReport struct {
	Ledgers []LedgerState `json:"ledgers"`
	Time    time.Time     `json:"time"`
}

// Request is an analyst's call.
type Request struct {
	ID     uint64  `json:"id"`
	Op     string  `json:"op"` // submit, status, result, cancel, budget, list
	Task   string  `json:"task,omitempty"`
	Signed *Signed `json:"signed,omitempty"`
}

// Reply answers a Request.
type Reply struct {
	ID    uint64          `json:"id"`
	Error string          `json:"error,omitempty"`
	Body  json.RawMessage `json:"body,omitempty"`
}

// Encode returns an envelope of type typ carrying v as JSON.
func Encode(typ string, v any) (transport.Envelope, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return transport.Envelope{}, fmt.Errorf("wire: encode %s: %w", typ, err)
	}
	return transport.Envelope{Type: typ, Payload: b}, nil
}

// Decode parses an envelope's JSON payload into v (unknown fields refused).
func Decode(env transport.Envelope, v any) error {
	if err := json.Unmarshal(env.Payload, v); err != nil {
		return fmt.Errorf("wire: %s from %s: %w", env.Type, env.Sender, err)
	}
	return nil
}

// TaskHub is a transport.Hub for one task's capeFM protocol, multiplexed
// over the coordinator's consortium hub: the coordinator's dispatcher
// feeds it the task's Cape messages (Deliver) and its parties' connection
// events (Event); SendTo wraps a capeFM envelope in a Cape message. The
// round and gate that capenet sets are applied by Deliver, as the real hub
// applies them: a capeFM envelope for another round, or one the gate
// refuses, is dropped and reported as a Refused event.
type TaskHub struct {
	task   string
	roster []string
	hub    transport.Hub

	inbox  chan transport.Envelope
	events chan transport.Event
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	round uint64
	gate  func(transport.Envelope) error
}

var _ transport.Hub = (*TaskHub)(nil)

// NewTaskHub returns the hub of one task whose parties are roster.
func NewTaskHub(task string, roster []string, hub transport.Hub) *TaskHub {
	return &TaskHub{task: task, roster: slices.Clone(roster), hub: hub,
		inbox: make(chan transport.Envelope, 64*len(roster)+64), events: make(chan transport.Event, 64*len(roster)+64), done: make(chan struct{})}
}

// Roster returns the task's parties.
func (t *TaskHub) Roster() []string { return slices.Clone(t.roster) }

// Deliver hands the task a Cape message from sender. It never blocks: the
// inbox holds far more than one round of every site; a message that does
// not fit is dropped and reported (a flooding node loses its own messages).
func (t *TaskHub) Deliver(sender string, c Cape) {
	if !slices.Contains(t.roster, sender) {
		t.Event(transport.Event{Party: sender, Kind: transport.Refused, Err: fmt.Errorf("wire: task %s: %s is not one of its sites", t.task, sender), Time: time.Now()})
		return
	}
	env := transport.Envelope{Protocol: "capefm", Sender: sender, Round: c.Round, Type: c.Type, Payload: c.Payload}
	t.mu.Lock()
	var err error
	if env.Round != t.round {
		err = fmt.Errorf("wire: task %s: %q message from %s for round %d; the current round is %d", t.task, env.Type, sender, env.Round, t.round)
	} else if t.gate != nil {
		err = t.gate(env)
	}
	t.mu.Unlock()
	if err != nil {
		t.Event(transport.Event{Party: sender, Kind: transport.Refused, Err: err, Time: time.Now()})
		return
	}
	select {
	case t.inbox <- env:
	case <-t.done:
	default:
		t.Event(transport.Event{Party: sender, Kind: transport.Refused, Err: fmt.Errorf("wire: task %s: inbox full, dropped a %q from %s", t.task, env.Type, sender), Time: time.Now()})
	}
}

// Event hands the task a connection event of one of its parties.
func (t *TaskHub) Event(ev transport.Event) {
	select {
	case t.events <- ev:
	case <-t.done:
	default: // a full event queue drops refusal reports, never the protocol's messages
	}
}

func (t *TaskHub) Inbox() <-chan transport.Envelope { return t.inbox }
func (t *TaskHub) Events() <-chan transport.Event   { return t.events }
func (t *TaskHub) Done() <-chan struct{}            { return t.done }

// SendTo wraps env in a Cape message of the task and sends it to party.
func (t *TaskHub) SendTo(ctx context.Context, party string, env transport.Envelope) error {
	if !slices.Contains(t.roster, party) {
		return fmt.Errorf("wire: task %s: cannot send to %q: not one of its sites", t.task, party)
	}
	out, err := Encode(TypeCape, Cape{Task: t.task, Round: env.Round, Type: env.Type, Payload: env.Payload})
	if err != nil {
		return err
	}
	return t.hub.SendTo(ctx, party, out)
}

// Connected returns the task's parties connected to the consortium hub.
func (t *TaskHub) Connected() []string {
	var out []string
	for _, p := range t.hub.Connected() {
		if slices.Contains(t.roster, p) {
			out = append(out, p)
		}
	}
	return out
}

// AwaitConnected waits until n of the task's parties are connected.
func (t *TaskHub) AwaitConnected(ctx context.Context, n int) ([]string, error) {
	for {
		if c := t.Connected(); len(c) >= n {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return t.Connected(), ctx.Err()
		case <-t.done:
			return t.Connected(), errors.New("wire: task hub closed")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (t *TaskHub) SetRound(round uint64) {
	t.mu.Lock()
	t.round = round
	t.mu.Unlock()
}

func (t *TaskHub) SetGate(gate func(transport.Envelope) error) {
	t.mu.Lock()
	t.gate = gate
	t.mu.Unlock()
}

// Close ends the task's hub (the consortium hub stays).
func (t *TaskHub) Close() error {
	t.once.Do(func() { close(t.done) })
	return nil
}

// TaskConn is a transport.Conn for one task's capeFM protocol at a node,
// multiplexed over the node's consortium connection: the node's receive
// loop feeds it the task's Cape messages (Deliver); Send wraps a capeFM
// envelope in a Cape message.
type TaskConn struct {
	task string
	conn transport.Conn
	in   chan transport.Envelope
	done chan struct{}
	once sync.Once
	err  error
}

var _ transport.Conn = (*TaskConn)(nil)

// NewTaskConn returns the connection of one task over conn.
func NewTaskConn(task string, conn transport.Conn) *TaskConn {
	return &TaskConn{task: task, conn: conn, in: make(chan transport.Envelope, 256), done: make(chan struct{})}
}

// Deliver hands the task a Cape message from the coordinator (dropped if
// the task's queue is full: the protocol sends a handful per round).
func (c *TaskConn) Deliver(m Cape) {
	select {
	case c.in <- transport.Envelope{Protocol: "capefm", Round: m.Round, Type: m.Type, Payload: m.Payload}:
	default:
	}
}

// Send wraps env in a Cape message of the task.
func (c *TaskConn) Send(ctx context.Context, env transport.Envelope) error {
	out, err := Encode(TypeCape, Cape{Task: c.task, Round: env.Round, Type: env.Type, Payload: env.Payload})
	if err != nil {
		return err
	}
	return c.conn.Send(ctx, out)
}

// Recv returns the task's next capeFM envelope.
func (c *TaskConn) Recv(ctx context.Context) (transport.Envelope, error) {
	select {
	case env := <-c.in:
		return env, nil
	case <-c.done:
		return transport.Envelope{}, c.err
	case <-ctx.Done():
		return transport.Envelope{}, ctx.Err()
	}
}

// Fail ends the task's connection with err (the node lost its consortium
// connection, or the coordinator cancelled the task).
func (c *TaskConn) Fail(err error) {
	c.once.Do(func() { c.err = err; close(c.done) })
}

// Close ends the task's connection (the consortium connection stays).
func (c *TaskConn) Close() error {
	c.Fail(errors.New("wire: task connection closed"))
	return nil
}

// RemainingEpsilon is the ε the ledger has left, as reported: budget minus
// spent computed exactly and rounded down (spent is already rounded up by
// package ledger), so the printed remainder never overstates what is left.
// Display only: the node's ledger decides every charge exactly.
func (l LedgerState) RemainingEpsilon() float64 {
	r := new(big.Rat).Sub(new(big.Rat).SetFloat64(l.SpentEpsilon), new(big.Rat).SetFloat64(l.BudgetEpsilon))
	if r.Sign() >= 0 {
		return 0
	}
	return -roundup.Rat(r) // −(smallest float64 ≥ spent − budget) = largest float64 ≤ budget − spent
}
