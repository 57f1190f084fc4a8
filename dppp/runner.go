package dppp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dplearn/dplearn/paillier"
)

// Faults injects failures into Run (tests, simulate).
type Faults struct {
	// KillAfterVote: these teachers vanish after their vote of batch
	// KillAtBatch (0: the first batch) was sent.
	KillAfterVote map[string]bool
	KillAtBatch   uint64
	// DeadBeforeVote: these teachers vanish before voting.
	DeadBeforeVote map[string]bool
	// SingleVote: a malicious aggregator asks every other contributor to
	// decrypt this teacher's vote alone, instead of the sum.
	SingleVote string
	// Replay: every message is delivered twice, and a copy of every vote
	// with another session is injected.
	Replay bool
}

// RunOptions tune Run.
type RunOptions struct {
	Aggregator AggregatorOptions
	Faults     Faults
	// Timeout bounds the whole run (0: 2 minutes).
	Timeout time.Duration
	// Logf receives progress lines (nil: none).
	Logf func(format string, args ...any)
}

// RunResult is the outcome of Run.
type RunResult struct {
	Labels  []int
	Hist    [][]float64
	Batches []*BatchResult
	// Status is the aggregator's spent and remaining budget.
	Status string
	// BytesToTeacher and BytesFromTeacher count protocol payload bytes per
	// teacher (offer and accept included).
	BytesToTeacher, BytesFromTeacher map[string]int
	// Refusals are the teachers' refusals, by teacher.
	Refusals map[string][]string
}

type envelope struct {
	from    uint32
	payload []byte
	lost    bool
}

// Run runs a deployment in process: the aggregator (this goroutine) and
// one goroutine per teacher, wired by channels carrying the binary
// encodings. rows are split into batches of QPC queries; each batch is
// voted on, closed, decrypted by t contributors (more are asked when some
// fail, refuse or forge) and tallied. The first batch that cannot be
// answered ends the run with an error; the result then holds the batches
// answered before it.
func Run(ctx context.Context, p *Params, tpk *paillier.ThresholdPublicKey, teachers []*Teacher, rows [][]float64, opt RunOptions) (*RunResult, error) {
	if opt.Timeout == 0 {
		opt.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	agg, err := NewAggregator(p, tpk, opt.Aggregator)
	if err != nil {
		return nil, err
	}
	res := &RunResult{BytesToTeacher: map[string]int{}, BytesFromTeacher: map[string]int{}, Refusals: map[string][]string{}}
	out := make(chan envelope, 16*len(teachers)+16)
	inbox := map[uint32]chan []byte{}
	for _, t := range teachers {
		id := p.TeacherID(t.Name())
		if id == 0 {
			return nil, fmt.Errorf("dppp: teacher %s is not on the roster", t.Name())
		}
		ch := make(chan []byte, 8)
		inbox[id] = ch
		go runTeacher(ctx, t, id, ch, out, opt.Faults)
	}
	dead := map[uint32]bool{}
	send := func(id uint32, m Message) {
		if dead[id] || inbox[id] == nil {
			return
		}
		b, err := m.MarshalBinary()
		if err != nil {
			panic(err) // our own messages always encode
		}
		copies := 1
		if opt.Faults.Replay {
			copies = 2
		}
		for range copies {
			res.BytesToTeacher[p.TeacherName(id)] += len(b)
			select {
			case inbox[id] <- b:
			case <-ctx.Done():
			}
		}
	}
	// next returns the next decoded message, marking lost teachers.
	next := func() (uint32, Message, error) {
		for {
			select {
			case <-ctx.Done():
				return 0, nil, ctx.Err()
			case e := <-out:
				if e.lost {
					dead[e.from] = true
					logf("teacher %s lost", p.TeacherName(e.from))
					return e.from, nil, nil
				}
				res.BytesFromTeacher[p.TeacherName(e.from)] += len(e.payload)
				m, err := Unmarshal(e.payload)
				if err != nil {
					logf("teacher %s: %v", p.TeacherName(e.from), err)
					continue
				}
				return e.from, m, nil
			}
		}
	}
	// Agreement.
	pending := map[uint32]bool{}
	for id := range inbox {
		pending[id] = true
		send(id, agg.Offer())
	}
	for len(pending) > 0 {
		from, m, err := next()
		if err != nil {
			return res, err
		}
		switch m := m.(type) {
		case nil:
			delete(pending, from)
		case *Accept:
			if m.From != from || agg.CheckAccept(m) != nil {
				return res, fmt.Errorf("dppp: teacher %s accepted other parameters", p.TeacherName(from))
			}
			delete(pending, from)
		case *Refuse:
			if pending[from] {
				return res, fmt.Errorf("%w: %s", ErrRefused, m.Reason)
			}
		}
	}
	logf("%d teachers agreed to parameters %x", len(inbox), p.Hash())
	for start := 0; start < len(rows); start += p.QPC {
		end := min(start+p.QPC, len(rows))
		br, err := runBatch(ctx, agg, rows[start:end], inbox, dead, send, next, res, opt, logf)
		if err != nil {
			res.Status = statusOf(agg)
			return res, err
		}
		res.Batches = append(res.Batches, br)
		res.Labels = append(res.Labels, br.Labels...)
		res.Hist = append(res.Hist, br.Hist...)
	}
	res.Status = statusOf(agg)
	logf("%s", res.Status)
	return res, nil
}

func statusOf(a *Aggregator) string {
	if a.Budget() == nil {
		return ""
	}
	return "aggregator: " + a.Budget().Status()
}

func runBatch(ctx context.Context, agg *Aggregator, rows [][]float64, inbox map[uint32]chan []byte, dead map[uint32]bool,
	send func(uint32, Message), next func() (uint32, Message, error), res *RunResult, opt RunOptions, logf func(string, ...any)) (*BatchResult, error) {
	p := agg.Params()
	q, err := agg.NewBatch(rows)
	if err != nil {
		return nil, err
	}
	pending := map[uint32]bool{}
	for id := range inbox {
		if !dead[id] {
			pending[id] = true
			send(id, q)
		}
	}
	refused := func(from uint32, reason string) {
		res.Refusals[p.TeacherName(from)] = append(res.Refusals[p.TeacherName(from)], reason)
	}
	for len(pending) > 0 {
		from, m, err := next()
		if err != nil {
			return nil, err
		}
		switch m := m.(type) {
		case nil:
			delete(pending, from)
		case *Vote:
			err := agg.AddVote(from, m)
			switch {
			case err == nil:
				delete(pending, from)
			case errors.Is(err, ErrDuplicate), errors.Is(err, ErrStale):
			default:
				logf("batch %d: %v", q.Batch, err)
				delete(pending, from)
			}
		case *Refuse:
			if m.Batch == q.Batch && pending[from] {
				refused(from, m.Reason)
				delete(pending, from)
			}
		}
	}
	logf("batch %d: %d of %d teachers voted", q.Batch, agg.Votes(q.Batch), p.N())
	d, err := agg.Close(q.Batch)
	if err != nil {
		return nil, err
	}
	if opt.Faults.SingleVote != "" {
		victim := p.TeacherID(opt.Faults.SingleVote)
		bad, err := agg.SingleVoteRequest(q.Batch, victim)
		if err != nil {
			return nil, err
		}
		asked := map[uint32]bool{}
		for _, id := range d.Contributors {
			if id != victim && !dead[id] {
				asked[id] = true
				send(id, bad)
			}
		}
		got := 0
		for len(asked) > 0 {
			from, m, err := next()
			if err != nil {
				return nil, err
			}
			switch m := m.(type) {
			case nil:
				delete(asked, from)
			case *Partial:
				if asked[from] && m.Batch == q.Batch {
					got++
					delete(asked, from)
				}
			case *Refuse:
				if asked[from] && m.Batch == q.Batch {
					refused(from, m.Reason)
					delete(asked, from)
				}
			}
		}
		return nil, fmt.Errorf("dppp: malicious single-vote request for %s: %d teachers decrypted it, the others refused", opt.Faults.SingleVote, got)
	}
	exclude := map[uint32]bool{}
	for id := range dead {
		exclude[id] = true
	}
	for {
		valid := agg.Ready(q.Batch)
		if valid >= p.Threshold {
			br, err := agg.Combine(q.Batch)
			if err == nil {
				logf("batch %d: %d contributors, decrypted by %v, rejected %v", q.Batch, len(br.Contributors), br.Decryptors, br.Rejected)
				return br, nil
			}
			if !errors.Is(err, ErrTooFewDecryptors) || agg.Ready(q.Batch) >= valid {
				return nil, err
			}
			continue
		}
		for id := range dead {
			exclude[id] = true
		}
		ask := agg.Ask(q.Batch, p.Threshold-valid, exclude)
		if len(ask) == 0 {
			return nil, fmt.Errorf("%w: batch %d: %d valid of t = %d, no live contributor left to ask (refusals: %v)", ErrTooFewDecryptors, q.Batch, valid, p.Threshold, res.Refusals)
		}
		pending := map[uint32]bool{}
		for _, id := range ask {
			pending[id] = true
			send(id, d)
		}
		for len(pending) > 0 {
			from, m, err := next()
			if err != nil {
				return nil, err
			}
			switch m := m.(type) {
			case nil:
				if pending[from] {
					agg.Reject(q.Batch, from, "lost")
				}
				delete(pending, from)
			case *Partial:
				if m.Batch != q.Batch || !pending[from] {
					continue
				}
				if err := agg.AddPartial(from, m); err != nil {
					if errors.Is(err, ErrDuplicate) || errors.Is(err, ErrStale) {
						continue
					}
					logf("batch %d: %v", q.Batch, err)
				}
				delete(pending, from)
			case *Refuse:
				if m.Batch == q.Batch && pending[from] {
					refused(from, m.Reason)
					agg.Reject(q.Batch, from, m.Reason)
					delete(pending, from)
				}
			}
		}
	}
}

func runTeacher(ctx context.Context, t *Teacher, id uint32, in <-chan []byte, out chan<- envelope, f Faults) {
	emit := func(m Message) {
		b, err := m.MarshalBinary()
		if err != nil {
			return
		}
		copies := 1
		if f.Replay {
			copies = 2
		}
		for range copies {
			select {
			case out <- envelope{from: id, payload: b}:
			case <-ctx.Done():
			}
		}
	}
	lost := func() {
		select {
		case out <- envelope{from: id, lost: true}:
		case <-ctx.Done():
		}
	}
	for {
		var b []byte
		select {
		case <-ctx.Done():
			return
		case b = <-in:
		}
		m, err := Unmarshal(b)
		if err != nil {
			continue
		}
		switch m := m.(type) {
		case *Offer:
			a, err := t.Accept(m)
			if err != nil {
				emit(&Refuse{Session: m.Params.Session, From: id, Reason: err.Error()})
				continue
			}
			emit(a)
		case *Query:
			if f.DeadBeforeVote[t.Name()] {
				lost()
				return
			}
			v, err := t.HandleQuery(ctx, m)
			if err != nil {
				emit(&Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()})
				continue
			}
			emit(v)
			if f.Replay {
				stale := *v
				stale.Session[0] ^= 1
				emit(&stale)
			}
			if f.KillAfterVote[t.Name()] && (f.KillAtBatch == 0 || f.KillAtBatch == m.Batch) {
				lost()
				return
			}
		case *Decrypt:
			pd, err := t.HandleDecrypt(m)
			if err != nil {
				emit(&Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()})
				continue
			}
			emit(pd)
		}
	}
}
