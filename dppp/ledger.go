package dppp

import (
	"fmt"
	"maps"
	"math"
	"sync"
)

// Ledger records the budget a party spends. Charge must refuse (return an
// error) a charge the party's budget does not allow; it is called before
// anything is released. ledger.Ledger (a file, basic composition) can
// be adapted; Budget is the in-memory ledger with the tightest accountant.
type Ledger interface {
	Charge(label string, epsilon, delta float64) error
}

// Budget is an in-memory Ledger for one deployment: it accepts charges of
// exactly the per-query (ε, δ) of its Params, each label once, and refuses
// once MaxQueries (the largest number of queries whose composition, by
// Params.Composed, stays within the budget) would be exceeded.
type Budget struct {
	p      *Params
	mu     sync.Mutex
	labels map[string]bool
}

// NewBudget returns an empty ledger for p.
func NewBudget(p *Params) *Budget { return &Budget{p: p, labels: map[string]bool{}} }

// Charge records one answered query.
func (b *Budget) Charge(label string, epsilon, delta float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if math.Float64bits(epsilon) != math.Float64bits(b.p.Epsilon) || math.Float64bits(delta) != math.Float64bits(b.p.Delta) {
		return fmt.Errorf("dppp: ledger: charge (%v, %v) is not the agreed per-query (%v, %v)", epsilon, delta, b.p.Epsilon, b.p.Delta)
	}
	if b.labels[label] {
		return fmt.Errorf("dppp: ledger: %s charged twice", label)
	}
	if len(b.labels)+1 > b.p.MaxQueries {
		return fmt.Errorf("%w: %d of %d queries answered, budget (%v, %v)", ErrBudget, len(b.labels), b.p.MaxQueries, b.p.BudgetEpsilon, b.p.BudgetDelta)
	}
	b.labels[label] = true
	return nil
}

// Answered returns the number of queries charged.
func (b *Budget) Answered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.labels)
}

// Spent returns the composed guarantee of the queries charged so far.
func (b *Budget) Spent() (Guarantee, error) { return b.p.Composed(b.Answered()) }

// Status is one line: spent and remaining budget.
func (b *Budget) Status() string {
	k := b.Answered()
	g, err := b.p.Composed(k)
	if err != nil {
		return fmt.Sprintf("%d queries answered (%v)", k, err)
	}
	return fmt.Sprintf("spent %v of the budget (%g, %g); %d of %d queries remain", g, b.p.BudgetEpsilon, b.p.BudgetDelta, b.p.MaxQueries-k, b.p.MaxQueries)
}

// BatchLedger is a Ledger that charges the queries of one batch at once
// (one write of a ledger file instead of one per query). The aggregator
// and teachers use it when their Ledger implements it.
type BatchLedger interface {
	Ledger
	ChargeQueries(labels []string, epsilon, delta float64) error
}

// chargeQueries charges one query per label to l, at once if l is a
// BatchLedger.
func chargeQueries(l Ledger, labels []string, epsilon, delta float64) error {
	if bl, ok := l.(BatchLedger); ok {
		return bl.ChargeQueries(labels, epsilon, delta)
	}
	for _, label := range labels {
		if err := l.Charge(label, epsilon, delta); err != nil {
			return err
		}
	}
	return nil
}

// RunCharge is what a run of k answered queries is charged to a ledger
// kept across runs (RunLedger): δ_k = BudgetDelta·(k/MaxQueries) and ε_k the
// PLD accountant's ε of k queries at δ_k, rounded up.
//
// Derivation. Within one run the k queries are adaptively composed
// releases of the same noisy histogram, so by the PLD accountant (Composed;
// accounting/pld.go: pessimistic, every ε reported is ≥ the true one) they
// are (ε_k, δ_k)-DP together, at any δ_k, in particular at δ_k above. Runs
// over the same data are composed in the ledger file by basic composition
// (Σ ε_r, Σ δ_r: valid for adaptively chosen (ε_r, δ_r)-DP mechanisms,
// Dwork-Roth Theorem 3.16), which the file checks exactly against the
// total budget (E, D). The δ split: a run is charged δ in proportion to its
// share of the queries one run may answer, so a run that answers all
// MaxQueries queries is charged exactly (Composed(MaxQueries).ε ≤ E, D) —
// the whole budget, as before — and a run that stops early leaves the rest
// of δ to later runs. k/MaxQueries is rounded by float division, which is
// monotone in k and exactly 1 at k = MaxQueries; ε_k is computed at the
// float δ_k charged, whatever its rounding, so the pair is a guarantee.
// Basic composition across runs is the price of runs with their own
// sessions, noise and parameters: two runs of K/2 queries compose to
// 2·ε(K/2, D/2) ≥ ε(K, D) (TestRunCharge prints both).
func (p *Params) RunCharge(k int) (Guarantee, error) {
	if k <= 0 {
		return Guarantee{Accountant: "none"}, nil
	}
	if k > p.MaxQueries {
		return Guarantee{}, fmt.Errorf("%w: a run of %d queries, the budget allows %d", ErrBudget, k, p.MaxQueries)
	}
	delta := p.BudgetDelta * (float64(k) / float64(p.MaxQueries))
	e, err := p.pldEpsilon(k, delta)
	if err != nil {
		return Guarantee{}, fmt.Errorf("dppp: run of %d queries at δ = %v: %w", k, delta, err)
	}
	return Guarantee{Queries: k, Epsilon: e, Delta: delta, Accountant: p.pldName() + "; one ledger entry per run"}, nil
}

// RunStore keeps the running total of one run in a ledger kept across runs
// (ledger.Ledger.Raise): Raise replaces the total recorded under label by
// (epsilon, delta), never smaller, or refuses, recording nothing, when the
// runs together would exceed the budget.
type RunStore interface {
	Raise(label string, epsilon, delta float64) error
}

// RunLedger is a Ledger that charges a run's PLD-composed total to a
// RunStore: one entry per run, raised before each batch is answered to
// the run's RunCharge of all the queries answered so far (at least the
// total it held: ε never goes down, δ_k grows with k). It refuses what the
// run's Budget would (charges other than the agreed per-query (ε, δ), a
// label twice, more than MaxQueries queries) and what the store refuses.
type RunLedger struct {
	p     *Params
	label string
	store RunStore
	mu    sync.Mutex
	run   *Budget
	total Guarantee
}

// NewRunLedger returns a RunLedger for a run of p charged under label.
func NewRunLedger(p *Params, label string, store RunStore) *RunLedger {
	return &RunLedger{p: p, label: label, store: store, run: NewBudget(p)}
}

// Charge implements Ledger.
func (r *RunLedger) Charge(label string, epsilon, delta float64) error {
	return r.ChargeQueries([]string{label}, epsilon, delta)
}

// ChargeQueries implements BatchLedger: one raise of the run's total for
// all the labels.
func (r *RunLedger) ChargeQueries(labels []string, epsilon, delta float64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	trial := &Budget{p: r.p, labels: maps.Clone(r.run.labels)}
	for _, l := range labels {
		if err := trial.Charge(l, epsilon, delta); err != nil {
			return err
		}
	}
	g, err := r.p.RunCharge(len(trial.labels))
	if err != nil {
		return err
	}
	g.Epsilon = math.Max(g.Epsilon, r.total.Epsilon)
	if err := r.store.Raise(r.label, g.Epsilon, g.Delta); err != nil {
		return fmt.Errorf("%w: %w", ErrBudget, err)
	}
	r.run, r.total = trial, g
	return nil
}

// Answered returns the number of queries charged in this run.
func (r *RunLedger) Answered() int { return r.run.Answered() }

// Total returns the run's total as last charged to the store.
func (r *RunLedger) Total() Guarantee {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}
