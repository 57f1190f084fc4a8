package dppp

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/paillier"
)

// Faults injects failures into Run (tests, simulate).
type Faults struct {
	// KillAfterVote: these teachers vanish after their vote of batch
	// KillAtBatch (0: the first batch) was sent.
	KillAfterVote map[string]bool
	KillAtBatch   uint64
	// KillBeforeSign: these teachers vanish when asked to sign the
	// contributor set of batch KillAtBatch (0: the first): the batch is
	// abandoned and voted again.
	KillBeforeSign map[string]bool
	// DeadBeforeVote: these teachers vanish before voting.
	DeadBeforeVote map[string]bool
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
	// RoundTimeout bounds each phase (0: Timeout).
	RoundTimeout time.Duration
	// Logger receives the run's records (nil: none); see
	// DriverOptions.Logger.
	Logger *slog.Logger
}

// RunResult is the outcome of Run (and of dpppnet.Serve).
type RunResult struct {
	Labels  []int
	Hist    [][]float64
	Batches []*BatchResult
	// Status is the aggregator's spent and remaining budget.
	Status string
	// Partial is PartialText when the budget allowed only the first rows
	// of those given ("" when all were labelled or none was allowed).
	Partial string
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

// chanLink is Run's in-process Link: channels carrying the binary
// encodings.
type chanLink struct {
	p      *Params
	res    *RunResult
	out    chan envelope
	inbox  map[uint32]chan []byte
	dead   map[uint32]bool
	replay bool
	log    *slog.Logger
}

func (l *chanLink) SetRound(uint64) {}

func (l *chanLink) Send(ctx context.Context, id uint32, m Message) {
	if l.dead[id] || l.inbox[id] == nil {
		return
	}
	b, err := m.MarshalBinary()
	if err != nil {
		l.log.Error(msgEncoding, "type", m.Type(), logx.Err(err))
		return
	}
	copies := 1
	if l.replay {
		copies = 2
	}
	for range copies {
		l.res.BytesToTeacher[l.p.TeacherName(id)] += len(b)
		l.log.Debug(msgSent, "type", m.Type(), "teacher", l.p.TeacherName(id), "bytes", len(b))
		select {
		case l.inbox[id] <- b:
		case <-ctx.Done():
		}
	}
}

func (l *chanLink) Next(ctx context.Context) (Incoming, error) {
	for {
		select {
		case <-ctx.Done():
			return Incoming{}, ctx.Err()
		case e := <-l.out:
			if e.lost {
				l.dead[e.from] = true
				l.log.Warn(msgTeacherLost, "teacher", l.p.TeacherName(e.from))
				return Incoming{From: e.from, Lost: true}, nil
			}
			l.res.BytesFromTeacher[l.p.TeacherName(e.from)] += len(e.payload)
			m, err := Unmarshal(e.payload)
			if err != nil {
				l.log.Warn(msgUnreadable, "teacher", l.p.TeacherName(e.from), logx.Err(err))
				continue
			}
			l.log.Debug(msgReceived, "type", m.Type(), "teacher", l.p.TeacherName(e.from), "bytes", len(e.payload))
			return Incoming{From: e.from, Msg: m}, nil
		}
	}
}

// Run runs a deployment in process: the aggregator (the Driver, in this
// goroutine) and one goroutine per teacher, wired by channels carrying the
// binary encodings. rows are split into batches of QPC queries; each batch
// is voted on, closed, its contributor set signed by every contributor,
// decrypted by t contributors (more are asked when some fail, refuse or
// forge) and tallied. The first batch that cannot be answered ends the run
// with an error; the result then holds the batches answered before it.
// More rows than the budget allows: the first ones it allows are labelled
// and RunResult.Partial says how many (none allowed: ErrBudget before any
// teacher is asked).
func Run(ctx context.Context, p *Params, tpk *paillier.ThresholdPublicKey, teachers []*Teacher, rows [][]float64, opt RunOptions) (*RunResult, error) {
	if opt.Timeout == 0 {
		opt.Timeout = 2 * time.Minute
	}
	if opt.RoundTimeout == 0 {
		opt.RoundTimeout = opt.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	log := logx.OrDiscard(opt.Logger)
	agg, err := NewAggregator(p, tpk, opt.Aggregator)
	if err != nil {
		return nil, err
	}
	res := &RunResult{BytesToTeacher: map[string]int{}, BytesFromTeacher: map[string]int{}, Refusals: map[string][]string{}}
	link := &chanLink{p: p, res: res, out: make(chan envelope, 16*len(teachers)+16), inbox: map[uint32]chan []byte{}, dead: map[uint32]bool{}, replay: opt.Faults.Replay, log: log}
	var ids []uint32
	for _, t := range teachers {
		id := p.TeacherID(t.Name())
		if id == 0 {
			return nil, fmt.Errorf("dppp: teacher %s is not on the roster", t.Name())
		}
		ch := make(chan []byte, 8)
		link.inbox[id] = ch
		ids = append(ids, id)
		go runTeacher(ctx, t, id, ch, link.out, opt.Faults)
	}
	drv := NewDriver(agg, link, DriverOptions{RoundTimeout: opt.RoundTimeout, MinTeachers: len(ids), Logger: log}, res)
	if err := drv.Agree(ctx, ids); err != nil {
		var refusal string
		for _, rs := range res.Refusals {
			refusal = rs[0]
		}
		if refusal != "" {
			return res, fmt.Errorf("%w: %s", ErrRefused, refusal)
		}
		return res, err
	}
	_, _, res.Partial, err = drv.LabelAllowed(ctx, rows)
	res.Status = statusOf(agg)
	if err == nil {
		log.Info(msgStatus, "status", res.Status)
	}
	return res, err
}

func statusOf(a *Aggregator) string {
	if a.Budget() == nil {
		return ""
	}
	return "aggregator: " + a.Budget().Status()
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
		case *SignSet:
			if f.KillBeforeSign[t.Name()] && (f.KillAtBatch == 0 || f.KillAtBatch == m.Batch) {
				lost()
				return
			}
			s, err := t.HandleSignSet(m)
			if err != nil {
				emit(&Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()})
				continue
			}
			emit(s)
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
