package dpppnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dplearn/dplearn/dppp"
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
// (every contributor's ciphertext), or the vote signatures sent with a
// Decrypt (a certificate and a signature per contributor), with room to
// spare.
func MaxPayload(n, qpc, features int) int {
	return 8*qpc*features + 16*qpc + 2200*(n+1) + 64<<10
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
	// Logf receives progress lines (nil: none).
	Logf func(format string, args ...any)
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
	// Status returns the aggregator's budget line (spent and remaining),
	// printed at the end, sent to clients after each answer and to the
	// teachers with "done" (nil: the in-memory budget's, if the
	// aggregator keeps one).
	Status func() string
}

// Serve runs the aggregator of one DPPP deployment over hub (configured
// with HubConfig(p)): it offers p to the teachers, waits for their
// acceptance, labels rows batch by batch (QPC rows per batch) and tells
// every teacher when it is done. The first batch that cannot be answered
// ends the run with an error; the result then holds the batches answered
// before it.
func Serve(ctx context.Context, hub transport.Hub, p *dppp.Params, tpk *paillier.ThresholdPublicKey, rows [][]float64, opt ServeOptions) (*dppp.RunResult, error) {
	if opt.RoundTimeout <= 0 {
		opt.RoundTimeout = 30 * time.Second
	}
	if opt.JoinTimeout <= 0 {
		opt.JoinTimeout = opt.RoundTimeout
	}
	if opt.FinishTimeout <= 0 {
		opt.FinishTimeout = 5 * time.Second
	}
	if opt.MinTeachers < p.MinContributors {
		opt.MinTeachers = p.MinContributors
	}
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if len(rows) > p.MaxQueries {
		return nil, fmt.Errorf("%w: %d queries, the budget (ε = %g, δ = %g) allows %d at ε = %g, δ = %g each", dppp.ErrBudget, len(rows), p.BudgetEpsilon, p.BudgetDelta, p.MaxQueries, p.Epsilon, p.Delta)
	}
	if err := CheckRows(rows, p.Features); err != nil {
		return nil, err
	}
	agg, err := dppp.NewAggregator(p, tpk, opt.Aggregator)
	if err != nil {
		return nil, err
	}
	s := &server{hub: hub, p: p, agg: agg, logf: logf, opt: opt, dead: map[uint32]bool{}, members: map[uint32]bool{}, clients: map[string]bool{}, sigs: map[uint64]map[uint32]*voteSig{},
		res: &dppp.RunResult{BytesToTeacher: map[string]int{}, BytesFromTeacher: map[string]int{}, Refusals: map[string][]string{}}}
	hub.SetRound(0)
	hub.SetGate(sessionGate(p))
	for _, c := range opt.Clients {
		s.clients[c] = true
	}
	err = s.agree(ctx)
	if err == nil {
		_, _, err = s.label(ctx, rows)
	}
	if err == nil && len(opt.Clients) > 0 {
		err = s.serveRequests(ctx)
	}
	if st := s.status(); st != "" {
		s.res.Status = "aggregator: " + st
	}
	text := fmt.Sprintf("done: %d of %d queries labelled", len(s.res.Labels), len(rows))
	if err != nil {
		text += "; stopped: " + err.Error()
	}
	if s.res.Status != "" {
		text += "; " + s.res.Status
	}
	logf("%s", text)
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

type server struct {
	hub     transport.Hub
	p       *dppp.Params
	agg     *dppp.Aggregator
	logf    func(string, ...any)
	opt     ServeOptions
	res     *dppp.RunResult
	round   uint64
	dead    map[uint32]bool // disconnected and not back
	members map[uint32]bool // accepted the parameters
	clients map[string]bool
	// requests holds clients' requests not yet served.
	requests []request
	// sigs holds the teachers' vote signatures by batch, relayed with the
	// decryption requests.
	sigs map[uint64]map[uint32]*voteSig
}

type request struct {
	client string
	req    *dppp.Request
}

// label labels rows batch by batch, adding to the result.
func (s *server) label(ctx context.Context, rows [][]float64) ([]int, [][]float64, error) {
	var labels []int
	var hist [][]float64
	for start := 0; start < len(rows); start += s.p.QPC {
		end := min(start+s.p.QPC, len(rows))
		br, err := s.batch(ctx, rows[start:end])
		if err != nil {
			return labels, hist, err
		}
		s.res.Batches = append(s.res.Batches, br)
		s.res.Labels = append(s.res.Labels, br.Labels...)
		s.res.Hist = append(s.res.Hist, br.Hist...)
		labels = append(labels, br.Labels...)
		hist = append(hist, br.Hist...)
	}
	return labels, hist, nil
}

// serveRequests answers the clients' requests at round 0 (a request sent
// while a batch runs is refused by the hub as of another round, and the
// client sends it again).
func (s *server) serveRequests(ctx context.Context) error {
	answered := 0
	for s.opt.MaxRequests == 0 || answered < s.opt.MaxRequests {
		s.round = 0
		s.hub.SetRound(0)
		for len(s.requests) == 0 {
			if _, err := s.next(ctx); err != nil {
				return err
			}
		}
		r := s.requests[0]
		s.requests = s.requests[1:]
		s.logf("request %d from %s: %d rows", r.req.ID, r.client, len(r.req.Rows))
		if err := CheckRows(r.req.Rows, s.p.Features); err != nil {
			s.logf("request %d from %s refused: %v", r.req.ID, r.client, err)
			s.sendClient(ctx, r.client, TypeRefused, []byte(err.Error()))
			answered++
			continue
		}
		if left := s.p.MaxQueries - len(s.res.Labels); len(r.req.Rows) > left {
			err := fmt.Errorf("%w: %d queries requested, %d remain in the budget", dppp.ErrBudget, len(r.req.Rows), max(0, left))
			s.sendClient(ctx, r.client, TypeRefused, []byte(err.Error()))
			return err
		}
		labels, hist, err := s.label(ctx, r.req.Rows)
		s.round = 0
		s.hub.SetRound(0)
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
		s.logf("request %d from %s: answered %d queries", r.req.ID, r.client, len(labels))
		answered++
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
		s.logf("sending %s to %s: %v", typ, client, err)
	}
}

// incoming is one thing that happened: a message, or a lost teacher.
type incoming struct {
	from uint32
	msg  dppp.Message
	lost bool
	back bool // reconnected
}

func (s *server) send(ctx context.Context, id uint32, m dppp.Message) {
	b, err := m.MarshalBinary()
	if err != nil {
		s.logf("encoding %s: %v", m.Type(), err)
		return
	}
	name := s.p.TeacherName(id)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.hub.SendTo(sctx, name, transport.Envelope{Round: s.round, Type: m.Type(), Payload: b}); err != nil {
		s.logf("sending %s to %s: %v", m.Type(), name, err)
		return
	}
	s.res.BytesToTeacher[name] += len(b)
}

// sendRaw sends a payload of type typ to teacher id.
func (s *server) sendRaw(ctx context.Context, id uint32, typ string, payload []byte) {
	name := s.p.TeacherName(id)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.hub.SendTo(sctx, name, transport.Envelope{Round: s.round, Type: typ, Payload: payload}); err != nil {
		s.logf("sending %s to %s: %v", typ, name, err)
		return
	}
	s.res.BytesToTeacher[name] += len(payload)
}

// next waits for the next message or connection event until ctx is done.
// Messages already in the inbox come first: a teacher's envelope accepted
// by the hub before it disconnected is read before its Detached event.
func (s *server) next(ctx context.Context) (incoming, error) {
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
			return incoming{}, ctx.Err()
		case <-s.hub.Done():
			return incoming{}, errors.New("dpppnet: the hub closed")
		case ev := <-s.hub.Events():
			id := s.p.TeacherID(ev.Party)
			if s.clients[ev.Party] {
				s.logf("client %s: %s", ev.Party, ev.Kind)
				if ev.Kind == transport.Attached {
					if b, err := s.agg.Offer().MarshalBinary(); err == nil {
						s.sendClient(ctx, ev.Party, "offer", b)
					}
				}
				continue
			}
			switch ev.Kind {
			case transport.Attached:
				s.logf("%s connected", ev.Party)
				if id != 0 {
					delete(s.dead, id)
					return incoming{from: id, back: true}, nil
				}
			case transport.Detached:
				s.logf("%s disconnected (%v)", ev.Party, ev.Err)
				if id != 0 {
					s.dead[id] = true
					return incoming{from: id, lost: true}, nil
				}
			case transport.Refused:
				s.logf("refused a message from %s: %v", ev.Party, ev.Err)
			}
		case env := <-s.hub.Inbox():
			if in, ok := s.envelope(env); ok {
				return in, nil
			}
		}
	}
}

// envelope decodes one envelope (ok false: ignored, and logged; a vote
// signature is recorded).
func (s *server) envelope(env transport.Envelope) (incoming, bool) {
	id := s.p.TeacherID(env.Sender)
	if env.Type == TypeVoteSignature && id != 0 {
		session, batch, list, err := parseSigs(env.Payload, sigHeader)
		if err != nil || session != s.p.Session || list[0].From != id || batch != s.round {
			s.logf("ignored a vote signature from %s: %v", env.Sender, err)
			return incoming{}, false
		}
		if s.sigs[batch] == nil {
			s.sigs[batch] = map[uint32]*voteSig{}
		}
		s.sigs[batch][id] = list[0]
		s.res.BytesFromTeacher[env.Sender] += len(env.Payload)
		return incoming{}, false
	}
	m, err := dppp.Unmarshal(env.Payload)
	if err == nil && m.Type() != env.Type {
		err = fmt.Errorf("envelope says %q, payload is %q", env.Type, m.Type())
	}
	if s.clients[env.Sender] {
		if r, ok := m.(*dppp.Request); ok && err == nil && len(r.Rows) > 0 {
			s.requests = append(s.requests, request{client: env.Sender, req: r})
			return incoming{}, true // queued: wakes serveRequests
		}
		s.logf("ignored a message from client %s: %v", env.Sender, err)
		return incoming{}, false
	}
	if err != nil || id == 0 {
		s.logf("ignored a message from %s: %v", env.Sender, err)
		return incoming{}, false
	}
	s.res.BytesFromTeacher[env.Sender] += len(env.Payload)
	return incoming{from: id, msg: m}, true
}

// phase returns the context of one phase (its deadline).
func (s *server) phase(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

func (s *server) agree(ctx context.Context) error {
	pctx, cancel := s.phase(ctx, s.opt.JoinTimeout)
	defer cancel()
	offered := map[uint32]bool{}
	offer := func(id uint32) {
		if !offered[id] {
			offered[id] = true
			s.send(ctx, id, s.agg.Offer())
		}
	}
	for _, name := range s.hub.Connected() {
		if id := s.p.TeacherID(name); id != 0 {
			offer(id)
		} else if s.clients[name] {
			if b, err := s.agg.Offer().MarshalBinary(); err == nil {
				s.sendClient(ctx, name, "offer", b) // again on its Attached event: the client takes the first
			}
		}
	}
	refused := 0
	for len(s.members)+refused < s.p.N() {
		in, err := s.next(pctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				break
			}
			return err
		}
		switch m := in.msg.(type) {
		case nil:
			if in.back {
				offer(in.from)
			}
		case *dppp.Accept:
			if m.From != in.from || s.agg.CheckAccept(m) != nil {
				s.logf("%s accepted other parameters: left out", s.p.TeacherName(in.from))
				refused++
				continue
			}
			if !s.members[in.from] {
				s.members[in.from] = true
				s.logf("%s accepted the parameters (%d of %d)", s.p.TeacherName(in.from), len(s.members), s.p.N())
			}
		case *dppp.Refuse:
			s.logf("%s refused the parameters: %s", s.p.TeacherName(in.from), m.Reason)
			s.res.Refusals[s.p.TeacherName(in.from)] = append(s.res.Refusals[s.p.TeacherName(in.from)], m.Reason)
			refused++
		}
	}
	if len(s.members) < s.opt.MinTeachers {
		return fmt.Errorf("%w: %d teachers accepted the parameters within %v, need %d", dppp.ErrTooFewContributors, len(s.members), s.opt.JoinTimeout, s.opt.MinTeachers)
	}
	s.logf("%d of %d teachers agreed to parameters %x…", len(s.members), s.p.N(), s.p.Hash())
	return nil
}

func (s *server) live() []uint32 {
	var out []uint32
	for id := range s.members {
		if !s.dead[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (s *server) refused(from uint32, reason string) {
	name := s.p.TeacherName(from)
	s.res.Refusals[name] = append(s.res.Refusals[name], reason)
	s.logf("batch %d: %s refused: %s", s.round, name, reason)
}

func (s *server) batch(ctx context.Context, rows [][]float64) (*dppp.BatchResult, error) {
	p := s.p
	if s.opt.CanPay != nil {
		if err := s.opt.CanPay(len(rows)); err != nil {
			return nil, fmt.Errorf("%w: %d queries refused before anything was sent: %w", dppp.ErrBudget, len(rows), err)
		}
	}
	q, err := s.agg.NewBatch(rows)
	if err != nil {
		return nil, err
	}
	s.round = q.Batch
	s.hub.SetRound(q.Batch)
	start := time.Now()
	pending := map[uint32]bool{}
	for _, id := range s.live() {
		pending[id] = true
		s.send(ctx, id, q)
	}
	pctx, cancel := s.phase(ctx, s.opt.RoundTimeout)
	for len(pending) > 0 {
		in, err := s.next(pctx)
		if err != nil {
			if ctx.Err() != nil {
				cancel()
				return nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				s.logf("batch %d: no vote within %v from %s", q.Batch, s.opt.RoundTimeout, s.names(pending))
				break
			}
			cancel()
			return nil, err
		}
		switch m := in.msg.(type) {
		case nil:
			if in.lost {
				delete(pending, in.from)
			}
		case *dppp.Vote:
			err := s.agg.AddVote(in.from, m)
			switch {
			case err == nil:
				delete(pending, in.from)
			case errors.Is(err, dppp.ErrDuplicate), errors.Is(err, dppp.ErrStale):
			default:
				s.logf("batch %d: %v", q.Batch, err)
				delete(pending, in.from)
			}
		case *dppp.Refuse:
			if m.Batch == q.Batch && pending[in.from] {
				s.refused(in.from, m.Reason)
				delete(pending, in.from)
			}
		}
	}
	cancel()
	s.logf("batch %d: %d queries, %d of %d teachers voted (%.2f s)", q.Batch, len(rows), s.agg.Votes(q.Batch), p.N(), time.Since(start).Seconds())
	d, err := s.agg.Close(q.Batch)
	if err != nil {
		s.logf("batch %d: refused, nothing decrypted: %v", q.Batch, err)
		return nil, err
	}
	var list []*voteSig
	for _, id := range d.Contributors {
		if v := s.sigs[q.Batch][id]; v != nil {
			list = append(list, v)
		}
	}
	delete(s.sigs, q.Batch)
	bundle := marshalVoteSigs(p.Session, q.Batch, list)
	exclude := map[uint32]bool{}
	for {
		valid := s.agg.Ready(q.Batch)
		if valid >= p.Threshold {
			br, err := s.agg.Combine(q.Batch)
			if err == nil {
				s.logf("batch %d: answered: %d contributors, decrypted by %s, rejected %s (%.2f s)", q.Batch, len(br.Contributors), s.idNames(br.Decryptors), s.rejected(br.Rejected), time.Since(start).Seconds())
				return br, nil
			}
			if !errors.Is(err, dppp.ErrTooFewDecryptors) || s.agg.Ready(q.Batch) >= valid {
				return nil, err
			}
			continue
		}
		for id := range s.dead {
			exclude[id] = true
		}
		ask := s.agg.Ask(q.Batch, p.Threshold-valid, exclude)
		if len(ask) == 0 {
			return nil, fmt.Errorf("%w: batch %d: %d valid of t = %d, no live contributor left to ask (refusals: %v)", dppp.ErrTooFewDecryptors, q.Batch, valid, p.Threshold, s.res.Refusals)
		}
		s.logf("batch %d: asking %s to decrypt (%d of t = %d valid so far)", q.Batch, s.idNames(ask), valid, p.Threshold)
		pending := map[uint32]bool{}
		for _, id := range ask {
			pending[id] = true
			s.sendRaw(ctx, id, TypeVoteSignatures, bundle)
			s.send(ctx, id, d)
		}
		pctx, cancel := s.phase(ctx, s.opt.RoundTimeout)
		for len(pending) > 0 {
			in, err := s.next(pctx)
			if err != nil {
				if ctx.Err() != nil {
					cancel()
					return nil, ctx.Err()
				}
				if errors.Is(err, context.DeadlineExceeded) {
					for id := range pending {
						s.logf("batch %d: no partial decryption within %v from %s", q.Batch, s.opt.RoundTimeout, p.TeacherName(id))
						s.agg.Reject(q.Batch, id, "timed out")
						exclude[id] = true
					}
					break
				}
				cancel()
				return nil, err
			}
			switch m := in.msg.(type) {
			case nil:
				if in.lost && pending[in.from] {
					s.logf("batch %d: %s lost before its partial decryption", q.Batch, p.TeacherName(in.from))
					s.agg.Reject(q.Batch, in.from, "lost")
					delete(pending, in.from)
				}
			case *dppp.Partial:
				if m.Batch != q.Batch || !pending[in.from] {
					continue
				}
				if err := s.agg.AddPartial(in.from, m); err != nil {
					if errors.Is(err, dppp.ErrDuplicate) || errors.Is(err, dppp.ErrStale) {
						continue
					}
					s.logf("batch %d: %v", q.Batch, err)
				}
				delete(pending, in.from)
			case *dppp.Refuse:
				if m.Batch == q.Batch && pending[in.from] {
					s.refused(in.from, m.Reason)
					s.agg.Reject(q.Batch, in.from, m.Reason)
					delete(pending, in.from)
				}
			}
		}
		cancel()
	}
}

func (s *server) names(ids map[uint32]bool) string {
	var l []uint32
	for id := range ids {
		l = append(l, id)
	}
	slices.Sort(l)
	return s.idNames(l)
}

func (s *server) idNames(ids []uint32) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = s.p.TeacherName(id)
	}
	return fmt.Sprint(out)
}

func (s *server) rejected(m map[uint32]string) string {
	if len(m) == 0 {
		return "none"
	}
	var ids []uint32
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += ", "
		}
		out += s.p.TeacherName(id) + " (" + m[id] + ")"
	}
	return out
}

// finish sends every member the last word and waits (up to FinishTimeout)
// until they have disconnected, so it is delivered before the hub closes.
func (s *server) finish(ctx context.Context, text string) {
	s.hub.SetGate(func(transport.Envelope) error { return errors.New("dppp: the run is over") })
	var names []string
	for _, id := range s.live() {
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
