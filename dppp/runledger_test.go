package dppp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/ledger"
)

// runParams calibrates the noise and MaxQueries of cfg without a key (the
// accountant needs neither the key nor the packing).
func runParams(t testing.TB, cfg Config) *Params {
	t.Helper()
	c := cfg.withDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p := &Params{Config: c}
	if _, _, err := p.calibrateNoise(); err != nil {
		t.Fatal(err)
	}
	k, err := p.maxQueries()
	if err != nil {
		t.Fatal(err)
	}
	p.MaxQueries = k
	return p
}

func rosterOf(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%02d", i+1)
	}
	return out
}

// fileStore is a RunStore over a ledger file.
type fileStore struct{ l *ledger.Ledger }

func (s fileStore) Raise(label string, eps, delta float64) error {
	_, err := s.l.Raise(context.Background(), label, ledger.Charge{Epsilon: eps, Delta: delta})
	return err
}

// TestRunCharge: a run's charge is the PLD ε of its k queries at
// δ_k = D·k/K, recomputed here independently (accounting's SelfCompose of
// the binomial histogram with H·Coins coins); the full run is charged
// exactly δ = D and ε ≤ E; the charge grows with k. Known answers for
// N = 20 at the defaults (C = 6, A = 7, H = 7), per-query (1, 1e-5), budget
// (10, 1e-5): K = 90 queries, the full run (9.9773, 1e-5), half of it
// (6.7766, 5e-6), so two runs of 45 compose to 13.55 > 10 by basic
// composition.
func TestRunCharge(t *testing.T) {
	p := runParams(t, Config{Teachers: rosterOf(20), Classes: 10, Features: 1, Noise: Binomial,
		Epsilon: 1, Delta: 1e-7, BudgetEpsilon: 10, BudgetDelta: 1e-5})
	t.Logf("H = %d, coins %d each, K = %d", p.Honest, p.Coins, p.MaxQueries)
	if p.MaxQueries != 90 || p.Honest != 7 || p.Coins != 26 {
		t.Errorf("H = %d, coins %d, MaxQueries = %d, want 7, 26, 90 (recorded)", p.Honest, p.Coins, p.MaxQueries)
	}
	known := map[int]float64{1: 0.9913, 10: 3.0736, 45: 6.7766, 90: 9.9773}
	prev := 0.0
	for _, k := range []int{1, 2, 5, 10, 23, 45, 89, 90} {
		g, err := p.RunCharge(k)
		if err != nil {
			t.Fatal(err)
		}
		wantDelta := p.BudgetDelta * float64(k) / float64(p.MaxQueries)
		if math.Abs(g.Delta-wantDelta) > 1e-15*wantDelta {
			t.Errorf("k = %d: δ = %v, want D·k/K = %v", k, g.Delta, wantDelta)
		}
		ref, err := accounting.BinomialHistogramEpsilon(int64(p.Honest)*p.Coins, k, g.Delta, p.pldOptions())
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(g.Epsilon-ref) > 1e-6*ref {
			t.Errorf("k = %d: ε = %v, independent recomputation %v", k, g.Epsilon, ref)
		}
		if g.Epsilon < prev {
			t.Errorf("k = %d: ε = %v went down from %v", k, g.Epsilon, prev)
		}
		prev = g.Epsilon
		if w, ok := known[k]; ok && math.Abs(g.Epsilon-w) > 1e-4 {
			t.Errorf("k = %d: ε = %.4f, recorded %.4f", k, g.Epsilon, w)
		}
		t.Logf("run of %2d queries: (%.4f, %.3g)", k, g.Epsilon, g.Delta)
	}
	full, _ := p.RunCharge(p.MaxQueries)
	if full.Delta != p.BudgetDelta || full.Epsilon > p.BudgetEpsilon {
		t.Errorf("full run charged %v, want δ = D exactly and ε ≤ %v", full, p.BudgetEpsilon)
	}
	half, _ := p.RunCharge(p.MaxQueries / 2)
	t.Logf("one run of K: ε = %.4f; two runs of K/2 by basic composition: %.4f", full.Epsilon, 2*half.Epsilon)
	if 2*half.Epsilon < full.Epsilon {
		t.Errorf("two half runs compose below one full run: %v < %v", 2*half.Epsilon, full.Epsilon)
	}
	if _, err := p.RunCharge(p.MaxQueries + 1); !errors.Is(err, ErrBudget) {
		t.Errorf("a run past MaxQueries charged: %v", err)
	}
}

// TestRunLedger: a run's ledger file holds one entry per run, raised per
// batch to RunCharge of the queries so far; a second run is refused as soon
// as the two runs' totals, by basic composition, would exceed the budget.
func TestRunLedger(t *testing.T) {
	p := runParams(t, Config{Teachers: rosterOf(20), Classes: 10, Features: 1, Noise: Binomial,
		Epsilon: 1, Delta: 1e-7, BudgetEpsilon: 10, BudgetDelta: 1e-5})
	l, err := ledger.Create(context.Background(), filepath.Join(t.TempDir(), "l.json"), "agg", ledger.Budget{Epsilon: p.BudgetEpsilon, Delta: p.BudgetDelta})
	if err != nil {
		t.Fatal(err)
	}
	run1 := NewRunLedger(p, "run 1", fileStore{l})
	batch := func(r *RunLedger, b, rows int) error {
		labels := make([]string, rows)
		for i := range labels {
			labels[i] = fmt.Sprintf("batch %d query %d", b, i)
		}
		return chargeQueries(r, labels, p.Epsilon, p.Delta)
	}
	half := p.MaxQueries / 2
	for b := 0; b*5 < half; b++ {
		if err := batch(run1, b, min(5, half-b*5)); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch(run1, 0, 1); err == nil {
		t.Error("a query charged twice")
	}
	if err := run1.Charge("x", p.Epsilon*2, p.Delta); err == nil {
		t.Error("a charge other than the per-query (ε, δ) accepted")
	}
	st, _ := l.State(context.Background())
	want, _ := p.RunCharge(half)
	if len(st.Charges) != 1 || st.Charges[0].Epsilon != want.Epsilon || st.Charges[0].Delta != want.Delta || run1.Answered() != half {
		t.Fatalf("after %d queries in batches of 5 the ledger holds %+v, want one entry %v", half, st.Charges, want)
	}
	// Second run: basic composition with run 1.
	run2 := NewRunLedger(p, "run 2", fileStore{l})
	k2 := 0
	for ; k2 < p.MaxQueries; k2++ {
		if err := batch(run2, k2, 1); err != nil {
			if !errors.Is(err, ErrBudget) || !errors.Is(err, ledger.ErrOverBudget) {
				t.Fatalf("run 2 refused with %v", err)
			}
			break
		}
	}
	g2, _ := p.RunCharge(k2)
	g3, _ := p.RunCharge(k2 + 1)
	if want.Epsilon+g2.Epsilon > p.BudgetEpsilon || want.Epsilon+g3.Epsilon <= p.BudgetEpsilon && want.Delta+g3.Delta <= p.BudgetDelta {
		t.Errorf("run 2 stopped at %d queries: totals %v + %v (next %v) against (%v, %v)", k2, want, g2, g3, p.BudgetEpsilon, p.BudgetDelta)
	}
	st, _ = l.State(context.Background())
	t.Logf("run 1: %d queries (%.4f, %.3g); run 2: %d queries (%.4f, %.3g); ledger entries %d", half, want.Epsilon, want.Delta, k2, g2.Epsilon, g2.Delta, len(st.Charges))
	if len(st.Charges) != 2 {
		t.Errorf("ledger has %d entries after two runs, want 2", len(st.Charges))
	}
}
