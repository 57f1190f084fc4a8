package dppp

import (
	"math"
	"testing"

	"github.com/dplearn/dplearn/accounting"
)

// binomialPMF is B(n, ½) by exact lgamma-free products (small n only).
func binomialPMF(n int) []float64 {
	p := make([]float64, n+1)
	p[0] = math.Exp2(-float64(n))
	for y := 0; y < n; y++ {
		p[y+1] = p[y] * float64(n-y) / float64(y+1)
	}
	return p
}

// dgaussSumPMF is the pmf of the sum of h discrete Gaussians N_ℤ(0, σ²),
// each normalised on |z| ≤ 40σ + 2 and convolved directly (independent of
// accounting.DGaussSumPMF); index i is the value i − lo.
func dgaussSumPMF(sigma float64, h int) []float64 {
	w := int(math.Ceil(40*sigma)) + 2
	one := make([]float64, 2*w+1)
	s := 0.0
	for i := range one {
		z := float64(i - w)
		one[i] = math.Exp(-z * z / (2 * sigma * sigma))
		s += one[i]
	}
	for i := range one {
		one[i] /= s
	}
	out := []float64{1}
	for range h {
		next := make([]float64, len(out)+len(one)-1)
		for i, a := range out {
			for j, b := range one {
				next[i+j] += a * b
			}
		}
		out = next
	}
	return out
}

// histLosses enumerates one query of the two moved counts: P draws
// (y_a, y_b) independently from g; Q is P with count a moved by −1 and b by
// +1, so Q(y_a, y_b) = g(y_a+1)·g(y_b−1). It returns the P-masses and losses
// ln P/Q of all outcomes (+∞ where Q = 0).
func histLosses(g []float64) (mass, loss []float64) {
	at := func(i int) float64 {
		if i < 0 || i >= len(g) {
			return 0
		}
		return g[i]
	}
	for a := range g {
		for b := range g {
			pm := g[a] * g[b]
			if pm == 0 {
				continue
			}
			qm := at(a+1) * at(b-1)
			l := math.Inf(1)
			if qm > 0 {
				l = math.Log(pm / qm)
			}
			mass, loss = append(mass, pm), append(loss, l)
		}
	}
	return mass, loss
}

// exactDelta is δ(ε) = E_P[(1 − e^{ε − L})₊] of k independent queries
// (the sum of k losses), by enumerating all k-tuples of outcomes (no grid,
// no truncation). By symmetry of the two classes the reverse direction has
// the same law.
func exactDelta(mass, loss []float64, k int, eps float64) float64 {
	var rec func(depth int, m, l float64) float64
	rec = func(depth int, m, l float64) float64 {
		if depth == k {
			if math.IsInf(l, 1) {
				return m
			}
			if l > eps {
				return m * (1 - math.Exp(eps-l))
			}
			return 0
		}
		s := 0.0
		for i := range mass {
			s += rec(depth+1, m*mass[i], l+loss[i])
		}
		return s
	}
	return rec(0, 1, 0)
}

// TestComposedPLDExactEnumeration recomputes Composed's printed ε for 1–3
// queries of small binomial histograms by enumerating every outcome: the
// printed ε is valid (exact δ at it ≤ the budget's δ) and over-charges by
// at most the grid (k·PLDGrid plus a float margin).
func TestComposedPLDExactEnumeration(t *testing.T) {
	for _, tc := range []struct {
		honest int
		coins  int64
		k      int
		delta  float64
	}{
		{2, 5, 1, 0.05}, {2, 5, 2, 0.05}, {1, 12, 3, 0.02}, {3, 4, 2, 0.03},
	} {
		p := &Params{Config: Config{Noise: Binomial, BudgetDelta: tc.delta}, Honest: tc.honest, Coins: tc.coins}
		g, err := p.Composed(tc.k)
		if err != nil {
			t.Fatal(err)
		}
		mass, loss := histLosses(binomialPMF(int(int64(tc.honest) * tc.coins)))
		at := exactDelta(mass, loss, tc.k, g.Epsilon)
		below := exactDelta(mass, loss, tc.k, g.Epsilon-float64(tc.k)*PLDGrid-1e-3)
		t.Logf("n = %d coins, %d queries: printed ε = %.5f at δ = %g; exact δ there %.6g, at ε − kΔ − 0.001: %.6g", int64(tc.honest)*tc.coins, tc.k, g.Epsilon, tc.delta, at, below)
		if at > tc.delta {
			t.Errorf("printed ε %.5f is not valid: exact δ %.6g > %g", g.Epsilon, at, tc.delta)
		}
		if below <= tc.delta {
			t.Errorf("printed ε %.5f over-charges by more than the grid: exact δ %.6g ≤ %g below it", g.Epsilon, below, tc.delta)
		}
	}
}

// TestPerQueryCalibrationPLD: the per-query noise is the least the exact
// two-count profile allows — 115 binomial coins for (1, 10⁻⁵), not 223 —
// checked by exact enumeration of the histogram's outcomes (one coin fewer
// misses), and the discrete Gaussian σ meets (1, 10⁻⁵) by an independent
// convolution of the H shares.
func TestPerQueryCalibrationPLD(t *testing.T) {
	f := getFixture(t)
	p, err := Calibrate(f.config(Binomial), f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	if p.HistogramCoins != 115 {
		t.Errorf("histogram coins %d, want 115 (exact two-count profile for (1, 1e-5))", p.HistogramCoins)
	}
	h := int64(p.Honest)
	for _, n := range []int64{h * p.Coins, p.HistogramCoins} {
		mass, loss := histLosses(binomialPMF(int(n)))
		if d := exactDelta(mass, loss, 1, p.Epsilon); d > p.Delta {
			t.Errorf("%d coins: exact δ(%g) = %.4g > %g", n, p.Epsilon, d, p.Delta)
		}
	}
	mass, loss := histLosses(binomialPMF(int(p.HistogramCoins - 1)))
	if d := exactDelta(mass, loss, 1, p.Epsilon); d <= p.Delta {
		t.Errorf("%d coins already meet (%g, %g): δ = %.4g", p.HistogramCoins-1, p.Epsilon, p.Delta, d)
	}
	q, err := Calibrate(f.config(DGauss), f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	mass, loss = histLosses(dgaussSumPMF(q.Sigma, q.Honest))
	d := exactDelta(mass, loss, 1, q.Epsilon)
	t.Logf("dgauss σ = %.5f × %d honest shares: exact δ(%g) = %.4g", q.Sigma, q.Honest, q.Epsilon, d)
	if d > q.Delta*(1+1e-6) {
		t.Errorf("dgauss σ %v: exact δ %.4g > %g", q.Sigma, d, q.Delta)
	}
	mass, loss = histLosses(dgaussSumPMF(q.Sigma*0.99, q.Honest))
	if d := exactDelta(mass, loss, 1, q.Epsilon); d <= q.Delta {
		t.Errorf("σ·0.99 already meets (%g, %g): δ = %.4g", q.Epsilon, q.Delta, d)
	}
}

// TestMaxQueriesPLD: MaxQueries composes within the budget and one more
// query does not, by the same accountant recomputed from scratch
// (accounting.BinomialHistogramEpsilon, no cache).
func TestMaxQueriesPLD(t *testing.T) {
	f := getFixture(t)
	cfg := f.config(Binomial)
	cfg.BudgetEpsilon, cfg.BudgetDelta = 10, 1e-5
	p, err := Calibrate(cfg, f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(p.Honest) * p.Coins
	o := accounting.PLDOptions{Grid: PLDGrid}
	in, err := accounting.BinomialHistogramEpsilon(n, p.MaxQueries, cfg.BudgetDelta, o)
	if err != nil || in > cfg.BudgetEpsilon {
		t.Errorf("MaxQueries %d composes to ε %v (%v)", p.MaxQueries, in, err)
	}
	out, err := accounting.BinomialHistogramEpsilon(n, p.MaxQueries+1, cfg.BudgetDelta, o)
	if err == nil && out <= cfg.BudgetEpsilon {
		t.Errorf("MaxQueries + 1 = %d also fits (ε %v)", p.MaxQueries+1, out)
	}
	g, _ := p.Composed(p.MaxQueries)
	// The same compositions in another order (float rounding only).
	if math.Abs(g.Epsilon-in) > 1e-6*in || g.Epsilon > cfg.BudgetEpsilon {
		t.Errorf("cached Composed %v, from scratch %v", g.Epsilon, in)
	}
	t.Logf("%d coins: %d queries within (10, 1e-5): ε %.4f; %d: %.4f", n, p.MaxQueries, in, p.MaxQueries+1, out)
}

// TestCalibrateTotalBudget: with Queries = Q the noise is the least for
// which Q queries compose to the budget (one coin fewer, or σ 0.5% smaller,
// misses), MaxQueries ≥ Q, the per-query (ε, δ) is derived, and a
// configuration that gives both a per-query ε and Q is refused.
func TestCalibrateTotalBudget(t *testing.T) {
	f := getFixture(t)
	o := accounting.PLDOptions{Grid: PLDGrid}
	for _, kind := range []NoiseKind{Binomial, DGauss} {
		cfg := f.config(kind)
		cfg.Epsilon, cfg.Delta = 0, 0
		cfg.BudgetEpsilon, cfg.BudgetDelta, cfg.Queries = 10, 1e-5, 100
		p, err := Calibrate(cfg, f.TPK)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := p.Composed(100)
		if g.Epsilon > 10 || g.Delta > 1e-5 || p.MaxQueries < 100 {
			t.Errorf("%v: 100 queries compose to %v, MaxQueries %d", kind, g, p.MaxQueries)
		}
		var fewer float64
		if kind == Binomial {
			fewer, err = accounting.BinomialHistogramEpsilon(p.HistogramCoins-1, 100, 1e-5, o)
		} else {
			fewer, err = accounting.DGaussSumHistogramEpsilon(p.Sigma*0.995, p.Honest, 100, 1e-5, o)
		}
		if err == nil && fewer <= 10 {
			t.Errorf("%v: less noise also meets the budget (ε %v)", kind, fewer)
		}
		if p.Delta != cfg.BudgetDelta/float64(cfg.Queries) || !(p.Epsilon > 0) {
			t.Errorf("%v: derived per-query (%v, %v)", kind, p.Epsilon, p.Delta)
		}
		t.Logf("%v: coins %d (%d each), σ %.4f; 100 queries: %v; ε(101 coins fewer) %.4f; MaxQueries %d; per query (%.4f, %g)", kind, p.HistogramCoins, p.Coins, p.Sigma, g, fewer, p.MaxQueries, p.Epsilon, p.Delta)
		// A teacher recomputes identically.
		q, err := Calibrate(cfg, f.TPK)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Check("t", p); err != nil {
			t.Error(err)
		}
	}
	cfg := f.config(Binomial)
	cfg.Queries = 10
	if _, err := Calibrate(cfg, f.TPK); err == nil {
		t.Error("per-query ε and a query count both accepted")
	}
}

// budgetFor sets cfg's budget ε to the PLD composition of k queries at its
// budget δ, so that MaxQueries is k.
func budgetFor(t *testing.T, f *fixture, cfg *Config, k int) {
	t.Helper()
	p, err := Calibrate(*cfg, f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Composed(k)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BudgetEpsilon = g.Epsilon
}

// trimPMF drops the ends of a pmf below 10⁻²⁵ of its peak (mass ≪ any δ
// tested; the trimmed outcomes' neighbours then count at +∞ loss, which
// only raises δ).
func trimPMF(g []float64) []float64 {
	peak := 0.0
	for _, v := range g {
		peak = math.Max(peak, v)
	}
	lo, hi := 0, len(g)
	for lo < hi && g[lo] < 1e-25*peak {
		lo++
	}
	for hi > lo && g[hi-1] < 1e-25*peak {
		hi--
	}
	return g[lo:hi]
}
