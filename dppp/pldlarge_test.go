package dppp

import (
	"testing"

	"github.com/dplearn/dplearn/accounting"
)

// TestPLDLargeQueries: calibration to a total budget (10, 1e-5) over
// Q = 20,000 queries (N = 20 at the default trust model, binomial) — which
// failed at the fixed grid of 10⁻³ (over-charge Q·Δ = 20 > 10) — succeeds
// on the fine, widening grid (pldOptionsFor); Q queries are within the
// budget (MaxQueries ≥ Q); the accountant's ε is non-decreasing in k; and
// it is tight: the optimistic PLD on the same options (a lower bound on
// the true ε) is within 3% below it.
func TestPLDLargeQueries(t *testing.T) {
	if testing.Short() {
		t.Skip("short: calibrates over 20,000 queries (tens of seconds on a loaded machine)")
	}
	const q = 20000
	cfg := Config{Teachers: rosterOf(20), Classes: 10, Features: 1, Noise: Binomial, BudgetEpsilon: 10, BudgetDelta: 1e-5, Queries: q}
	if o := pldOptionsFor(cfg.BudgetEpsilon, q); o.MaxPoints == 0 || o.Grid >= PLDGrid {
		t.Fatalf("options at Q = %d: %+v, want a finer, widening grid", q, o)
	}
	c := cfg.withDefaults()
	p := &Params{Config: c}
	if _, _, err := p.calibrateNoise(); err != nil {
		t.Fatalf("calibration over %d queries: %v", q, err)
	}
	k, err := p.maxQueries()
	if err != nil || k < q {
		t.Fatalf("MaxQueries = %d (%v), want ≥ %d", k, err, q)
	}
	prev := 0.0
	for _, k := range []int{1, 10, 100, 1000, 5000, q} {
		g, err := p.Composed(k)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon < prev || g.Epsilon > 10 {
			t.Fatalf("Composed(%d).ε = %v after %v: want non-decreasing and ≤ 10", k, g.Epsilon, prev)
		}
		prev = g.Epsilon
	}
	o := p.pldOptions()
	o.Optimistic = true
	lo, err := accounting.BinomialHistogramEpsilon(int64(p.Honest)*p.Coins, q, p.BudgetDelta, o)
	if err != nil {
		t.Fatal(err)
	}
	if lo > prev || lo < 0.97*prev {
		t.Errorf("ε over %d queries: accountant %v, optimistic lower bound %v: want within 3%% below", q, prev, lo)
	}
	t.Logf("Q = %d: %d coins (H = %d), ε = %.4f, optimistic %.4f, grid %v, %d points", q, p.HistogramCoins, p.Honest, prev, lo, o.Grid, o.MaxPoints)
}
