package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/report"
)

// runFile is a party's DPPP ledger file ('dppp serve|teach --ledger'):
// the same file format and code as a capeFM site's (package ledger: exact
// sums under a file lock), holding ONE entry per run, raised before each
// batch is answered to the run's PLD-composed total (dppp.RunLedger,
// dppp.Params.RunCharge: k queries charged (ε(k, δ_k), δ_k) with
// δ_k = D·k/K); runs are composed across restarts by basic composition,
// so a restarted serve past its budget refuses before any teacher is
// asked. The run's in-memory count (MaxQueries) is enforced too.
type runFile struct {
	path  string
	file  siteLedger
	label string
	note  string
	p     *dppp.Params
	run   *dppp.RunLedger
	// restart: status also says what a new run could answer (the
	// aggregator's; a teacher's status skips it, each search costs a few
	// PLD compositions and N teachers print at once).
	restart bool
	mu      sync.Mutex
	memo    map[int]dppp.Guarantee // RunCharge by k (each costs up to log₂ k convolutions)
}

// runCharge is p.RunCharge(k), memoised.
func (r *runFile) runCharge(k int) (dppp.Guarantee, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g, ok := r.memo[k]; ok {
		return g, nil
	}
	g, err := r.p.RunCharge(k)
	if err != nil {
		return g, err
	}
	if r.memo == nil {
		r.memo = map[int]dppp.Guarantee{}
	}
	r.memo[k] = g
	return g, nil
}

// openRunFile opens (or creates, with the total budget (eps, delta)) the
// ledger at path for party; bind must be called with the run's Params
// before anything is charged.
func openRunFile(ctx context.Context, path, party string, eps, delta float64) (*runFile, error) {
	l, note, err := openSiteLedger(ctx, path, party, eps, delta, true)
	if err != nil {
		return nil, err
	}
	sl, ok := l.(siteLedger)
	if !ok {
		return nil, fmt.Errorf("ledger %s: not a ledger file", path)
	}
	var id [6]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	label := fmt.Sprintf("dppp %s run %s %x", party, time.Now().UTC().Format(time.RFC3339), id)
	return &runFile{path: path, file: sl, label: label, note: note}, nil
}

// bind sets the run's Params.
func (r *runFile) bind(p *dppp.Params) {
	r.p = p
	r.run = dppp.NewRunLedger(p, r.label, r)
}

// Raise implements dppp.RunStore.
func (r *runFile) Raise(label string, eps, delta float64) error {
	_, err := r.file.l.Raise(r.file.ctx, label, ledger.Charge{Epsilon: eps, Delta: delta})
	return err
}

// Charge implements dppp.Ledger.
func (r *runFile) Charge(label string, eps, delta float64) error {
	return r.ChargeQueries([]string{label}, eps, delta)
}

// ChargeQueries implements dppp.BatchLedger.
func (r *runFile) ChargeQueries(labels []string, eps, delta float64) error {
	if r.run == nil {
		return fmt.Errorf("ledger %s: charged before the run's parameters are known", r.path)
	}
	if err := r.run.ChargeQueries(labels, eps, delta); err != nil {
		return fmt.Errorf("ledger %s: %w", r.path, err)
	}
	return nil
}

// answered is the number of queries this run has charged.
func (r *runFile) answered() int {
	if r.run == nil {
		return 0
	}
	return r.run.Answered()
}

// left returns the number of queries this run can still answer: the
// largest m ≤ MaxQueries − k such that the other entries plus this run's
// total after k + m queries (dppp.Params.RunCharge, and never below the
// total already charged, as RunLedger charges) fit the file's budget,
// summed exactly as ledger.Ledger.Raise decides; the file's state.
func (r *runFile) left() (int, ledger.State, error) { return r.leftFor(false) }

// leftFor is left, or with fresh, what a new run (a restart) could answer:
// this run's entry then counts among the others.
func (r *runFile) leftFor(fresh bool) (int, ledger.State, error) {
	if r.p == nil {
		return 0, ledger.State{}, fmt.Errorf("ledger %s: the run's parameters are not known yet", r.path)
	}
	st, err := r.file.l.State(r.file.ctx)
	if err != nil {
		return 0, st, err
	}
	k := r.answered()
	floor := 0.0
	if r.run != nil {
		floor = r.run.Total().Epsilon
	}
	self := r.label
	if fresh {
		k, floor, self = 0, 0, ""
	}
	var others []dppp.Guarantee
	for _, c := range st.Charges {
		if c.Label != self {
			others = append(others, dppp.Guarantee{Epsilon: c.Epsilon, Delta: c.Delta})
		}
	}
	budget := dppp.Guarantee{Epsilon: st.Budget.Epsilon, Delta: st.Budget.Delta}
	return dppp.QueriesLeft(r.runCharge, others, budget, k, r.p.MaxQueries, floor), st, nil
}

// canPay checks, without charging, that this run can pay for k more
// queries (dpppnet.ServeOptions.CanPay).
func (r *runFile) canPay(k int) error {
	left, _, err := r.left()
	if err != nil {
		return fmt.Errorf("ledger %s: %w", r.path, err)
	}
	if left < k {
		return fmt.Errorf("ledger %s cannot pay for %d queries, %d remain: %w; %s", r.path, k, left, ledger.ErrOverBudget, r.status())
	}
	return nil
}

// remaining is dpppnet.ServeOptions.Left: the queries this run can still
// answer (0 when the file cannot be read).
func (r *runFile) remaining() int {
	left, _, err := r.left()
	if err != nil {
		return 0
	}
	return left
}

// status is one line: this run's total as charged, and the file's spend
// and the one number of queries that remain.
func (r *runFile) status() string {
	k := r.answered()
	run := fmt.Sprintf("this run: %d queries answered", k)
	if r.run != nil && k > 0 {
		run = fmt.Sprintf("this run: %d queries charged %v", k, r.run.Total())
	}
	left, st, err := r.left()
	if err != nil {
		return run + fmt.Sprintf("; ledger %s: %v", r.path, err)
	}
	spent := st.Spent()
	line := fmt.Sprintf("%s; ledger %s (one entry per run, runs by basic composition): spent ε = %s, δ = %s of (%g, %g) in %d runs; %d more queries remain in this run",
		run, r.path, report.Up(spent.Epsilon), report.Up(spent.Delta), st.Budget.Epsilon, st.Budget.Delta, len(st.Charges), left)
	// A restart composes with this run by basic composition, so it may
	// answer fewer than this run still could.
	if !r.restart {
		return line
	}
	if fresh, _, err := r.leftFor(true); err == nil && fresh != left {
		line += fmt.Sprintf("; a new run could answer %d", fresh)
	}
	return line
}

// runStatus is a party's spend within one run of p: k queries composed by
// the noise kind's accountant, and the queries the run's budget has left.
func runStatus(p *dppp.Params, k int) string {
	g, err := p.Composed(k)
	if err != nil {
		return fmt.Sprintf("%d queries answered (%v)", k, err)
	}
	return fmt.Sprintf("spent %v of the budget (%g, %g); %d of %d queries remain", g, p.BudgetEpsilon, p.BudgetDelta, max(0, p.MaxQueries-k), p.MaxQueries)
}
