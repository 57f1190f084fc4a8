package dppp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/dplearn/dplearn/internal/logx"
)

// Link is the aggregator's side of a transport as the Driver uses it: Run
// provides an in-process one (channels), package dpppnet one over a
// transport Hub (gRPC with mutual TLS, or its in-memory hub).
type Link interface {
	// Send sends m to teacher id, counting its bytes; failures are the
	// link's to log (a lost teacher comes back as an Incoming with Lost).
	Send(ctx context.Context, id uint32, m Message)
	// Next returns the next message from a teacher or connection event,
	// until ctx is done (its error then).
	Next(ctx context.Context) (Incoming, error)
	// SetRound announces the current round (0: agreement; a batch's ID
	// while it runs): a transport refuses messages of other rounds.
	SetRound(round uint64)
}

// Incoming is one thing that happened on a Link: a teacher's message, or
// a teacher lost (disconnected) or back (reconnected).
type Incoming struct {
	From       uint32
	Msg        Message
	Lost, Back bool
}

// DriverOptions configure a Driver.
type DriverOptions struct {
	// RoundTimeout bounds each phase of a batch: votes, set signatures,
	// each round of decryption requests (0: 30 s).
	RoundTimeout time.Duration
	// JoinTimeout bounds the agreement (0: RoundTimeout).
	JoinTimeout time.Duration
	// MinTeachers is the least number of accepting teachers to start with
	// (and at least MinContributors).
	MinTeachers int
	// MaxAbandoned is the number of times the rows of one batch are voted
	// again after a batch was abandoned because a contributor did not sign
	// its set (0: 2; negative: never).
	MaxAbandoned int
	// CanPay, if set, is asked before each batch whether the aggregator's
	// budget can pay for that many queries.
	CanPay func(queries int) error
	// Left, if set, returns the number of queries the aggregator's budget
	// can still pay for beyond this run's MaxQueries (e.g. a ledger file
	// across runs); LabelAllowed labels no more rows than it allows.
	Left func() int
	// Logger receives the driver's records (nil: none): fixed messages
	// (Templates renders them as progress lines) with the teachers'
	// names, batch numbers, counts and timings as attributes, never a
	// vote, a noise share or a decrypted sum.
	Logger *slog.Logger
}

// Driver runs the aggregator's side of DPPP over a Link: the one loop of
// the protocol (agreement; per batch: query, votes, close, consistency
// round, decryption requests until t valid partial decryptions, combine),
// used by Run in process and by package dpppnet over a network.
type Driver struct {
	agg     *Aggregator
	p       *Params
	link    Link
	opt     DriverOptions
	log     *slog.Logger
	res     *RunResult
	members map[uint32]bool
	dead    map[uint32]bool
}

// NewDriver returns a driver of agg over link; res collects the outcome
// (labels, batches, refusals) as batches are answered.
func NewDriver(agg *Aggregator, link Link, opt DriverOptions, res *RunResult) *Driver {
	if opt.RoundTimeout <= 0 {
		opt.RoundTimeout = 30 * time.Second
	}
	if opt.JoinTimeout <= 0 {
		opt.JoinTimeout = opt.RoundTimeout
	}
	if opt.MaxAbandoned == 0 {
		opt.MaxAbandoned = 2
	}
	p := agg.Params()
	if opt.MinTeachers < p.MinContributors {
		opt.MinTeachers = p.MinContributors
	}
	if res.Refusals == nil {
		res.Refusals = map[string][]string{}
	}
	return &Driver{agg: agg, p: p, link: link, opt: opt, log: logx.OrDiscard(opt.Logger), res: res, members: map[uint32]bool{}, dead: map[uint32]bool{}}
}

// Result returns the outcome so far.
func (d *Driver) Result() *RunResult { return d.res }

// Live returns the teachers that accepted the parameters and are not lost,
// ascending.
func (d *Driver) Live() []uint32 {
	var out []uint32
	for id := range d.members {
		if !d.dead[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// next waits for the next event within pctx, tracking lost and returning
// teachers.
func (d *Driver) next(pctx context.Context) (Incoming, error) {
	in, err := d.link.Next(pctx)
	if err != nil {
		return in, err
	}
	if in.Lost {
		d.dead[in.From] = true
	}
	if in.Back {
		delete(d.dead, in.From)
	}
	return in, nil
}

// timedOut reports whether err ends a phase (the phase's deadline) rather
// than the run (ctx done, or the link closed).
func timedOut(ctx context.Context, err error) bool {
	return ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
}

// Agree offers the parameters to connected is (every roster teacher the
// link can reach) and waits until every teacher accepted or refused, or
// JoinTimeout passed with at least MinTeachers accepting. offerTo lists
// the teachers to offer to at once (others get the offer when they
// connect: an Incoming with Back).
func (d *Driver) Agree(ctx context.Context, offerTo []uint32) error {
	d.link.SetRound(0)
	pctx, cancel := context.WithTimeout(ctx, d.opt.JoinTimeout)
	defer cancel()
	offered := map[uint32]bool{}
	offer := func(id uint32) {
		if !offered[id] {
			offered[id] = true
			d.link.Send(ctx, id, d.agg.Offer())
		}
	}
	for _, id := range offerTo {
		offer(id)
	}
	refused := 0
	for len(d.members)+refused < d.p.N() {
		in, err := d.next(pctx)
		if err != nil {
			if timedOut(ctx, err) {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		name := d.p.TeacherName(in.From)
		switch m := in.Msg.(type) {
		case nil:
			if in.Back {
				offer(in.From)
			}
		case *Accept:
			if m.From != in.From || d.agg.CheckAccept(m) != nil {
				d.log.Warn(msgAcceptedOther, "teacher", name)
				refused++
				continue
			}
			if !d.members[in.From] {
				d.members[in.From] = true
				d.log.Info(msgAccepted, "teacher", name, "members", len(d.members), "teachers", d.p.N())
			}
		case *Refuse:
			d.log.Warn(msgRefusedParams, "teacher", name, "reason", m.Reason)
			d.res.Refusals[name] = append(d.res.Refusals[name], m.Reason)
			refused++
		}
	}
	if len(d.members) < d.opt.MinTeachers {
		return fmt.Errorf("%w: %d teachers accepted the parameters within %v, need %d", ErrTooFewContributors, len(d.members), d.opt.JoinTimeout, d.opt.MinTeachers)
	}
	d.log.Info(msgAgreed, "members", len(d.members), "teachers", d.p.N(), "params", fmt.Sprintf("%x", d.p.Hash()))
	return nil
}

// Allowed returns the number of further queries this run may answer: what
// MaxQueries leaves after the queries answered (the aggregator's in-memory
// budget, or the labels of this driver's result), and no more than
// DriverOptions.Left. An aggregator built with the IgnoreBudget test hook
// (and no Left) sends every row: its teachers must refuse.
func (d *Driver) Allowed() int {
	if d.agg.opt.IgnoreBudget && d.opt.Left == nil {
		return maxQueriesCap // the malicious test aggregator: the teachers refuse
	}
	left := d.p.MaxQueries - len(d.res.Labels)
	if b := d.agg.Budget(); b != nil {
		left = d.p.MaxQueries - b.Answered()
	}
	if d.opt.Left != nil {
		left = min(left, d.opt.Left())
	}
	return max(0, left)
}

// PartialText is the one line telling who asked for `requested` query rows
// that only the first `labelled` were labelled because the budget allowed
// no more (issue 27: more rows than remain are labelled up to what
// remains, not refused).
func PartialText(labelled, requested int) string {
	return fmt.Sprintf("labelled %d of %d requested: budget allows %d more", labelled, requested, labelled)
}

// LabelAllowed is Label on the first Allowed() rows: a request for more
// rows than the budget still allows gets those rows labelled and a
// PartialText ("" when every row was labelled). With no row allowed it
// refuses with ErrBudget before any teacher is asked.
func (d *Driver) LabelAllowed(ctx context.Context, rows [][]float64) ([]int, [][]float64, string, error) {
	if len(rows) == 0 {
		return nil, nil, "", nil
	}
	left := d.Allowed()
	if left == 0 {
		return nil, nil, "", fmt.Errorf("%w: %d queries requested, none remain in the budget", ErrBudget, len(rows))
	}
	partial := ""
	if left < len(rows) {
		partial = PartialText(left, len(rows))
		d.log.Warn(msgPartial, "text", partial)
		rows = rows[:left]
	}
	labels, hist, err := d.Label(ctx, rows)
	return labels, hist, partial, err
}

// Label labels rows batch by batch (QPC rows each), adding every answered
// batch to the result; it returns the labels and histograms of these rows.
// The first batch that cannot be answered ends it with an error.
func (d *Driver) Label(ctx context.Context, rows [][]float64) ([]int, [][]float64, error) {
	var labels []int
	var hist [][]float64
	for start := 0; start < len(rows); start += d.p.QPC {
		end := min(start+d.p.QPC, len(rows))
		var br *BatchResult
		var err error
		for try := 0; ; try++ {
			br, err = d.batch(ctx, rows[start:end])
			if !errors.Is(err, ErrUnsigned) || try >= d.opt.MaxAbandoned {
				break
			}
			d.log.Warn(msgRevote, logx.Err(err), "queries", end-start)
		}
		if err != nil {
			return labels, hist, err
		}
		d.res.Batches = append(d.res.Batches, br)
		d.res.Labels = append(d.res.Labels, br.Labels...)
		d.res.Hist = append(d.res.Hist, br.Hist...)
		labels = append(labels, br.Labels...)
		hist = append(hist, br.Hist...)
	}
	return labels, hist, nil
}

func (d *Driver) refused(batch uint64, from uint32, reason string) {
	name := d.p.TeacherName(from)
	d.res.Refusals[name] = append(d.res.Refusals[name], reason)
	d.log.Warn(msgRefused, "batch", batch, "teacher", name, "reason", reason)
}

// collect waits (one RoundTimeout) until pending is empty; handle is
// called with each message from a teacher and returns whether it ends the
// teacher's wait. Teachers lost or silent are removed from pending and
// answered reports whether a teacher's vote or set signature, added with
// result err, ends the wait for that teacher: a duplicate or a stale
// message does not; any other refusal by the aggregator's state machine
// does, logged (and, with keep, kept among the run's refusals).
func (d *Driver) answered(batch uint64, from uint32, err error, keep bool) bool {
	if errors.Is(err, ErrDuplicate) || errors.Is(err, ErrStale) {
		return false
	}
	if err != nil {
		d.log.Warn(msgBatchErr, "batch", batch, logx.Err(err))
		if keep {
			name := d.agg.Params().TeacherName(from)
			d.res.Refusals[name] = append(d.res.Refusals[name], err.Error())
		}
	}
	return true
}

// refusal handles any other message of a round: a Refuse for this batch
// ends the wait for its teacher; anything else is ignored.
func (d *Driver) refusal(batch uint64, from uint32, m Message) bool {
	if r, ok := m.(*Refuse); ok && r.Batch == batch {
		d.refused(batch, from, r.Reason)
		return true
	}
	return false
}

// returned.
func (d *Driver) collect(ctx context.Context, batch uint64, what string, pending map[uint32]bool, handle func(from uint32, m Message) bool) ([]uint32, error) {
	pctx, cancel := context.WithTimeout(ctx, d.opt.RoundTimeout)
	defer cancel()
	var gone []uint32
	for id := range pending {
		if d.dead[id] {
			d.log.Warn(msgLostBefore, "batch", batch, "teacher", d.p.TeacherName(id), "what", what)
			gone = append(gone, id)
			delete(pending, id)
		}
	}
	for len(pending) > 0 {
		in, err := d.next(pctx)
		if err != nil {
			if timedOut(ctx, err) {
				for id := range pending {
					d.log.Warn(msgNoAnswer, "batch", batch, "what", what, "timeout", d.opt.RoundTimeout, "teacher", d.p.TeacherName(id))
					gone = append(gone, id)
				}
				clear(pending)
				break
			}
			if ctx.Err() != nil {
				return gone, ctx.Err()
			}
			return gone, err
		}
		if in.Msg == nil {
			if in.Lost && pending[in.From] {
				d.log.Warn(msgLostBefore, "batch", batch, "teacher", d.p.TeacherName(in.From), "what", what)
				gone = append(gone, in.From)
				delete(pending, in.From)
			}
			continue
		}
		if pending[in.From] && handle(in.From, in.Msg) {
			delete(pending, in.From)
		}
	}
	slices.Sort(gone)
	return gone, nil
}

func (d *Driver) batch(ctx context.Context, rows [][]float64) (*BatchResult, error) {
	p := d.p
	if d.opt.CanPay != nil {
		if err := d.opt.CanPay(len(rows)); err != nil {
			return nil, fmt.Errorf("%w: %d queries refused before anything was sent: %w", ErrBudget, len(rows), err)
		}
	}
	q, err := d.agg.NewBatch(rows)
	if err != nil {
		return nil, err
	}
	d.link.SetRound(q.Batch)
	start := time.Now()
	pending := map[uint32]bool{}
	for _, id := range d.Live() {
		pending[id] = true
		d.link.Send(ctx, id, q)
	}
	if _, err := d.collect(ctx, q.Batch, "vote", pending, func(from uint32, m Message) bool {
		v, ok := m.(*Vote)
		if !ok {
			return d.refusal(q.Batch, from, m)
		}
		return d.answered(q.Batch, from, d.agg.AddVote(from, v), false)
	}); err != nil {
		return nil, err
	}
	d.log.Info(msgVoted, "batch", q.Batch, "queries", len(rows), "votes", d.agg.Votes(q.Batch), "teachers", p.N(), "seconds", time.Since(start).Seconds())
	set, err := d.agg.Close(q.Batch)
	for id, why := range d.agg.BadVotes(q.Batch) {
		d.log.Warn(msgDropped, "batch", q.Batch, "teacher", p.TeacherName(id), "reason", why)
		d.res.Refusals[p.TeacherName(id)] = append(d.res.Refusals[p.TeacherName(id)], "vote dropped: "+why)
	}
	if err != nil {
		d.log.Warn(msgNothingDecrypted, "batch", q.Batch, logx.Err(err))
		return nil, err
	}
	// The consistency round: every contributor signs the set.
	pending = map[uint32]bool{}
	for _, e := range set.Set {
		pending[e.From] = true
		d.link.Send(ctx, e.From, set)
	}
	if _, err := d.collect(ctx, q.Batch, "set signature", pending, func(from uint32, m Message) bool {
		sig, ok := m.(*SetSignature)
		if !ok {
			return d.refusal(q.Batch, from, m)
		}
		return d.answered(q.Batch, from, d.agg.AddSetSignature(from, sig), true)
	}); err != nil {
		return nil, err
	}
	req, err := d.agg.DecryptRequest(q.Batch)
	if err != nil {
		for _, id := range d.agg.Unsigned(q.Batch) {
			d.dead[id] = true // left out of the next batches until it reconnects
		}
		return nil, err
	}
	var empty []uint32
	for i, id := range req.Contributors {
		if len(req.Sigs[i]) == 0 {
			empty = append(empty, id)
		}
	}
	if len(empty) > 0 {
		d.log.Warn(msgUnsigned, "batch", q.Batch, "unsigned", d.idNames(empty))
	} else {
		d.log.Info(msgSigned, "batch", q.Batch, "contributors", len(req.Contributors))
	}
	exclude := map[uint32]bool{}
	for {
		valid := d.agg.Ready(q.Batch)
		if valid >= p.Threshold {
			br, err := d.agg.Combine(q.Batch)
			if err == nil {
				d.log.Info(msgAnswered, "batch", q.Batch, "contributors", len(br.Contributors), "decryptors", d.idNames(br.Decryptors), "rejected", d.rejected(br.Rejected), "seconds", time.Since(start).Seconds())
				return br, nil
			}
			if !errors.Is(err, ErrTooFewDecryptors) || d.agg.Ready(q.Batch) >= valid {
				return nil, err
			}
			continue
		}
		for id := range d.dead {
			exclude[id] = true
		}
		ask := d.agg.Ask(q.Batch, p.Threshold-valid, exclude)
		if len(ask) == 0 {
			return nil, fmt.Errorf("%w: batch %d: %d valid of t = %d, no live contributor left to ask (refusals: %v)", ErrTooFewDecryptors, q.Batch, valid, p.Threshold, d.res.Refusals)
		}
		d.log.Info(msgAsking, "batch", q.Batch, "asked", d.idNames(ask), "valid", valid, "threshold", p.Threshold)
		pending := map[uint32]bool{}
		for _, id := range ask {
			pending[id] = true
			d.link.Send(ctx, id, req)
		}
		gone, err := d.collect(ctx, q.Batch, "partial decryption", pending, func(from uint32, m Message) bool {
			switch m := m.(type) {
			case *Partial:
				if m.Batch != q.Batch {
					return false
				}
				if err := d.agg.AddPartial(from, m); err != nil {
					if errors.Is(err, ErrDuplicate) || errors.Is(err, ErrStale) {
						return false
					}
					d.log.Warn(msgBatchErr, "batch", q.Batch, logx.Err(err))
				}
				return true
			case *Refuse:
				if m.Batch == q.Batch {
					d.refused(q.Batch, from, m.Reason)
					d.agg.Reject(q.Batch, from, m.Reason)
					return true
				}
			}
			return false
		})
		if err != nil {
			return nil, err
		}
		for _, id := range gone {
			d.agg.Reject(q.Batch, id, "lost or timed out")
			exclude[id] = true
		}
	}
}

func (d *Driver) idNames(ids []uint32) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = d.p.TeacherName(id)
	}
	return fmt.Sprint(out)
}

func (d *Driver) rejected(m map[uint32]string) string {
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
		out += d.p.TeacherName(id) + " (" + m[id] + ")"
	}
	return out
}
