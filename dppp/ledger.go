package dppp

import (
	"fmt"
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
