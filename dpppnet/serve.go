package dpppnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/transport"
)

// Protocol is the transport protocol name of DPPP.
const Protocol = "dppp"

// SessionID is the transport session of a DPPP deployment: one hub serves
// one run; the run's own 32-byte dppp session is inside every payload.
const SessionID = "dplearn-dppp-v1"

// DefaultHubName is the aggregator's party name (its certificate's).
const DefaultHubName = "aggregator"

// TypeDone is the envelope type of the aggregator's last word to a teacher
// (payload: a line of text).
const TypeDone = "done"

// Session returns the transport session DPPP runs in.
func Session() transport.Session {
	return transport.Session{Protocol: Protocol, ID: []byte(SessionID)}
}

// MaxPayload returns the payload cap for n teachers and batches of qpc rows
// of features columns: the largest message is a Query (rows) or a Decrypt
// (per contributor its ciphertext, its proof of plaintext knowledge, and
// its certificate and signature of the contributor set: about 3.5 KB at
// 2048 bits, 6 KB at 3072), with room to spare.
func MaxPayload(n, qpc, features int) int {
	return 8*qpc*features + 16*qpc + 8192*(n+1) + 64<<10
}

// TypeBudget is the envelope type of the aggregator's budget line to a
// client after each answer (payload: a line of text, spent and remaining).
const TypeBudget = "budget"

// TypeRefused is the envelope type of the aggregator's refusal of a
// client's request (payload: a line of text).
const TypeRefused = "request-refused"

// HubConfig returns the transport configuration of a DPPP hub for the
// roster of p and the client parties (repeats allowed: the state machines
// refuse duplicates).
func HubConfig(p *dppp.Params, clients ...string) transport.HubConfig {
	return transport.HubConfig{
		Session:      Session(),
		Roster:       append(slices.Clone(p.Teachers), clients...),
		MaxPayload:   MaxPayload(p.N(), p.QPC, p.Features),
		AllowRepeats: true,
	}
}

// ServeOptions configures Serve.
type ServeOptions struct {
	// RoundTimeout bounds each phase of a batch (default 30 s).
	RoundTimeout time.Duration
	// JoinTimeout bounds the wait for the teachers to connect and accept
	// the parameters (default RoundTimeout). Serve starts as soon as every
	// teacher accepted, or after JoinTimeout with at least MinTeachers.
	JoinTimeout time.Duration
	// MinTeachers is the least number of accepting teachers to start with
	// (default and minimum: the parameters' MinContributors).
	MinTeachers int
	// Aggregator tunes the state machine (verification, ledger).
	Aggregator dppp.AggregatorOptions
	// FinishTimeout bounds the wait for the teachers to hang up after the
	// "done" envelope (default 5 s).
	FinishTimeout time.Duration
	// Logger receives the aggregator's records (nil: none): those of
	// dppp.DriverOptions.Logger and the server's own (connections,
	// clients' requests, the final line), with names, counts and errors
	// as attributes, never a vote or a decrypted sum; ProgressLine
	// renders them as progress lines.
	Logger *slog.Logger
	// Clients are the parties (on the hub's roster, not teachers) that may
	// send dppp.Request messages; each is sent the Offer when it connects
	// (the public parameters, whose session its requests must carry) and
	// an Answer per request. After rows, Serve answers requests until
	// MaxRequests were answered or refused as malformed (0: until ctx is
	// done).
	Clients     []string
	MaxRequests int
	// CanPay, if set, is asked before each batch whether the aggregator's
	// budget can pay for that many queries; an error refuses the batch
	// before anything is charged or sent (a ledger that charges query by
	// query would otherwise keep the charges of a batch refused half way).
	CanPay func(queries int) error
	// Left, if set, returns the number of queries the aggregator can still
	// pay for (e.g. by its ledger file across runs); a client's request is
	// labelled up to the fewer of it and what this run's MaxQueries leaves.
	Left func() int
	// Status returns the aggregator's budget line (spent and remaining),
	// printed at the end, sent to clients after each answer and to the
	// teachers with "done" (nil: the in-memory budget's, if the
	// aggregator keeps one).
	Status func() string
}

// Serve runs the aggregator of one DPPP deployment over hub (configured
// with HubConfig(p)): dppp's Driver (the protocol's one loop, also behind
// dppp.Run) over the hub. It offers p to the teachers, waits for their
// acceptance, labels rows batch by batch (QPC rows per batch), then serves
// the clients' requests, and tells every teacher when it is done. The
// first batch that cannot be answered ends the run with an error; the
// result then holds the batches answered before it.
func Serve(ctx context.Context, hub transport.Hub, p *dppp.Params, tpk *paillier.ThresholdPublicKey, rows [][]float64, opt ServeOptions) (*dppp.RunResult, error) {
	if opt.RoundTimeout <= 0 {
		opt.RoundTimeout = 30 * time.Second
	}
	if opt.FinishTimeout <= 0 {
		opt.FinishTimeout = 5 * time.Second
	}
	log := logx.OrDiscard(opt.Logger)
	if err := CheckRows(rows, p.Features); err != nil {
		return nil, err
	}
	agg, err := dppp.NewAggregator(p, tpk, opt.Aggregator)
	if err != nil {
		return nil, err
	}
	s := &server{hub: hub, p: p, agg: agg, log: log, opt: opt, clients: map[string]bool{},
		res: &dppp.RunResult{BytesToTeacher: map[string]int{}, BytesFromTeacher: map[string]int{}, Refusals: map[string][]string{}}}
	s.drv = dppp.NewDriver(agg, s, dppp.DriverOptions{RoundTimeout: opt.RoundTimeout, JoinTimeout: opt.JoinTimeout, MinTeachers: opt.MinTeachers, CanPay: opt.CanPay, Left: opt.Left, Logger: log}, s.res)
	hub.SetRound(0)
	hub.SetGate(sessionGate(p))
	for _, c := range opt.Clients {
		s.clients[c] = true
	}
	var offerTo []uint32
	for _, name := range hub.Connected() {
		if id := p.TeacherID(name); id != 0 {
			offerTo = append(offerTo, id)
		} else if s.clients[name] {
			if b, err := agg.Offer().MarshalBinary(); err == nil {
				s.sendClient(ctx, name, "offer", b) // again on its Attached event: the client takes the first
			}
		}
	}
	err = s.drv.Agree(ctx, offerTo)
	if err == nil {
		_, _, s.res.Partial, err = s.drv.LabelAllowed(ctx, rows)
	}
	if err == nil && len(opt.Clients) > 0 {
		err = s.serveRequests(ctx)
	}
	if st := s.status(); st != "" {
		s.res.Status = "aggregator: " + st
	}
	// The unit is a query row: the rows of --queries, then the clients'.
	fromRows := min(len(s.res.Labels), len(rows))
	text := fmt.Sprintf("done: %d of %d query rows labelled", fromRows, len(rows))
	if len(rows) == 0 {
		text = "done: no query rows of our own"
	}
	if c := len(s.res.Labels) - fromRows; c > 0 || len(opt.Clients) > 0 {
		text += fmt.Sprintf(", %d rows labelled for clients", c)
	}
	if s.res.Partial != "" {
		text += "; " + s.res.Partial
	}
	if err != nil {
		text += "; stopped: " + err.Error()
	}
	if s.res.Status != "" {
		text += "; " + s.res.Status
	}
	log.Info(msgDone, "text", text)
	s.finish(ctx, text)
	return s.res, err
}

// CheckRows checks query rows before they are sent or labelled: each has
// features values, all finite. The error names the row and column (from 1).
func CheckRows(rows [][]float64, features int) error {
	for i, r := range rows {
		if len(r) != features {
			return fmt.Errorf("dpppnet: row %d has %d features, the deployment takes %d", i+1, len(r), features)
		}
		for j, x := range r {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("dpppnet: row %d, column %d: %v is not a finite number", i+1, j+1, x)
			}
		}
	}
	return nil
}

// sessionGate returns the hub gate of a run of p: only payloads carrying
// the run's dppp session get in (a replay from another run, or a straggler
// of a previous one, is refused and logged by the hub).
func sessionGate(p *dppp.Params) func(transport.Envelope) error {
	session := p.Session
	return func(env transport.Envelope) error {
		if len(env.Payload) < 34 || !bytes.Equal(env.Payload[2:34], session[:]) {
			return fmt.Errorf("dppp: a %q message that is not of this run (session %x…): a replay or a straggler", env.Type, session[:6])
		}
		return nil
	}
}

// server is dppp's Link over a transport hub, plus the clients' requests.
type server struct {
	hub     transport.Hub
	p       *dppp.Params
	agg     *dppp.Aggregator
	drv     *dppp.Driver
	log     *slog.Logger
	opt     ServeOptions
	res     *dppp.RunResult
	round   uint64
	clients map[string]bool
	// requests holds clients' requests not yet served.
	requests []request
}

type request struct {
	client string
	req    *dppp.Request
}

// serveRequests answers the clients' requests at round 0 (a request sent
// while a batch runs is refused by the hub as of another round, and the
// client sends it again).
func (s *server) serveRequests(ctx context.Context) error {
	answered := 0
	for s.opt.MaxRequests == 0 || answered < s.opt.MaxRequests {
		s.SetRound(0)
		for len(s.requests) == 0 {
			if _, err := s.next(ctx); err != nil {
				return err
			}
		}
		r := s.requests[0]
		s.requests = s.requests[1:]
		s.log.Info(msgRequest, "request", r.req.ID, "client", r.client, "rows", len(r.req.Rows))
		if err := CheckRows(r.req.Rows, s.p.Features); err != nil {
			s.log.Warn(msgRequestRefused, "request", r.req.ID, "client", r.client, logx.Err(err))
			s.sendClient(ctx, r.client, TypeRefused, []byte(err.Error()))
			answered++
			continue
		}
		// Partial answer: the rows the budget still allows, in order; the
		// client is told how many (issue 27).
		labels, hist, partial, err := s.drv.LabelAllowed(ctx, r.req.Rows)
		s.SetRound(0)
		if err != nil {
			s.sendClient(ctx, r.client, TypeRefused, []byte(err.Error()))
			return err
		}
		ans := &dppp.Answer{Session: s.p.Session, ID: r.req.ID, Labels: make([]uint32, len(labels))}
		for i, l := range labels {
			ans.Labels[i] = uint32(l)
		}
		if r.req.Histogram {
			ans.Hist = hist
		}
		b, err := ans.MarshalBinary()
		if err != nil {
			return err
		}
		s.sendClient(ctx, r.client, ans.Type(), b)
		if st := s.status(); st != "" {
			s.sendClient(ctx, r.client, TypeBudget, []byte("aggregator: "+st))
		}
		s.log.Info(msgRequestAnswered, "request", r.req.ID, "client", r.client, "answered", len(labels), "rows", len(r.req.Rows))
		answered++
		if partial != "" {
			return fmt.Errorf("%w: request %d from %s: %s", dppp.ErrBudget, r.req.ID, r.client, partial)
		}
	}
	return nil
}

// status is the aggregator's budget line ("" if it has none).
func (s *server) status() string {
	if s.opt.Status != nil {
		return s.opt.Status()
	}
	if b := s.agg.Budget(); b != nil {
		return b.Status()
	}
	return ""
}

func (s *server) sendClient(ctx context.Context, client, typ string, payload []byte) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.hub.SendTo(sctx, client, transport.Envelope{Round: s.round, Type: typ, Payload: payload}); err != nil {
		s.log.Warn(msgSendFailed, "type", typ, "party", client, logx.Err(err))
	}
}

// SetRound sets the round of the envelopes sent and of the hub's gate.
func (s *server) SetRound(round uint64) {
	s.round = round
	s.hub.SetRound(round)
}

// Send sends a dppp message to teacher id (dppp.Link).
func (s *server) Send(ctx context.Context, id uint32, m dppp.Message) { s.send(ctx, id, m) }

// Next returns the next teacher message or connection event (dppp.Link);
// clients' requests are queued on the way.
func (s *server) Next(ctx context.Context) (dppp.Incoming, error) {
	for {
		in, err := s.next(ctx)
		if err != nil || in.Msg != nil || in.Lost || in.Back {
			return in, err
		}
	}
}

func (s *server) send(ctx context.Context, id uint32, m dppp.Message) {
	b, err := m.MarshalBinary()
	if err != nil {
		s.log.Error(msgEncoding, "type", m.Type(), logx.Err(err))
		return
	}
	name := s.p.TeacherName(id)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.hub.SendTo(sctx, name, transport.Envelope{Round: s.round, Type: m.Type(), Payload: b}); err != nil {
		s.log.Warn(msgSendFailed, "type", m.Type(), "party", name, logx.Err(err))
		return
	}
	s.res.BytesToTeacher[name] += len(b)
	s.log.Debug(msgSent, "type", m.Type(), "party", name, "round", s.round, "bytes", len(b))
}

// next waits for the next message or connection event until ctx is done.
// Messages already in the inbox come first: a teacher's envelope accepted
// by the hub before it disconnected is read before its Detached event.
func (s *server) next(ctx context.Context) (dppp.Incoming, error) {
	for {
		select {
		case env := <-s.hub.Inbox():
			if in, ok := s.envelope(env); ok {
				return in, nil
			}
			continue
		default:
		}
		select {
		case <-ctx.Done():
			return dppp.Incoming{}, ctx.Err()
		case <-s.hub.Done():
			return dppp.Incoming{}, errors.New("dpppnet: the hub closed")
		case ev := <-s.hub.Events():
			id := s.p.TeacherID(ev.Party)
			if s.clients[ev.Party] {
				s.log.Info(msgClientEvent, "client", ev.Party, "event", ev.Kind.String())
				if ev.Kind == transport.Attached {
					if b, err := s.agg.Offer().MarshalBinary(); err == nil {
						s.sendClient(ctx, ev.Party, "offer", b)
					}
				}
				continue
			}
			switch ev.Kind {
			case transport.Attached:
				s.log.Info(msgConnected, "party", ev.Party)
				if id != 0 {
					return dppp.Incoming{From: id, Back: true}, nil
				}
			case transport.Detached:
				s.log.Warn(msgDisconnected, "party", ev.Party, "err", fmt.Sprint(ev.Err))
				if id != 0 {
					return dppp.Incoming{From: id, Lost: true}, nil
				}
			case transport.Refused:
				s.log.Warn(msgRefusedMessage, "party", ev.Party, "err", fmt.Sprint(ev.Err))
			}
		case env := <-s.hub.Inbox():
			if in, ok := s.envelope(env); ok {
				return in, nil
			}
		}
	}
}

// envelope decodes one envelope (ok false: ignored, and logged; a
// client's request is queued and returned as an empty Incoming).
func (s *server) envelope(env transport.Envelope) (dppp.Incoming, bool) {
	id := s.p.TeacherID(env.Sender)
	m, err := dppp.Unmarshal(env.Payload)
	if err == nil && m.Type() != env.Type {
		err = fmt.Errorf("envelope says %q, payload is %q", env.Type, m.Type())
	}
	if s.clients[env.Sender] {
		if r, ok := m.(*dppp.Request); ok && err == nil && len(r.Rows) > 0 {
			s.requests = append(s.requests, request{client: env.Sender, req: r})
			return dppp.Incoming{}, true // queued: wakes serveRequests
		}
		s.log.Warn(msgIgnoredClient, "client", env.Sender, "err", fmt.Sprint(err))
		return dppp.Incoming{}, false
	}
	if err != nil || id == 0 {
		s.log.Warn(msgIgnored, "party", env.Sender, "err", fmt.Sprint(err))
		return dppp.Incoming{}, false
	}
	s.res.BytesFromTeacher[env.Sender] += len(env.Payload)
	s.log.Debug(msgReceived, "type", m.Type(), "party", env.Sender, "round", env.Round, "bytes", len(env.Payload))
	return dppp.Incoming{From: id, Msg: m}, true
}

// finish sends every member the last word and waits (up to FinishTimeout)
// until they have disconnected, so it is delivered before the hub closes.
func (s *server) finish(ctx context.Context, text string) {
	s.hub.SetGate(func(transport.Envelope) error { return errors.New("dppp: the run is over") })
	var names []string
	for _, id := range s.drv.Live() {
		name := s.p.TeacherName(id)
		names = append(names, name)
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = s.hub.SendTo(sctx, name, transport.Envelope{Round: s.round, Type: TypeDone, Payload: []byte(text)})
		cancel()
	}
	deadline := time.Now().Add(s.opt.FinishTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		connected := s.hub.Connected()
		if !slices.ContainsFunc(names, func(n string) bool { return slices.Contains(connected, n) }) {
			return
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		case <-s.hub.Done():
			return
		}
	}
}
