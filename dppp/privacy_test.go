package dppp

import (
	"fmt"
	"strings"
	"testing"
)

// exactBinomialPairEpsilon is the smallest ε (to 1e-4, rounded up) with
// exactBinomialPairDelta(n, ε) ≤ delta.
func exactBinomialPairEpsilon(n int64, delta float64) float64 {
	lo, hi := 0.0, 64.0
	for hi-lo > 1e-5 {
		mid := (lo + hi) / 2
		if exactBinomialPairDelta(n, mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// TestPrivacyByTeachers recomputes, for N ∈ {3, 4, 5, 10, 20, 250} at the
// defaults (t = ⌊2N/3⌋, A = N − t, C = ⌈N/3⌉ − 1), the exact privacy of
// the worst view inside the trust model — the aggregator with C colluders
// subtracting their shares from a sum of the minimum N − A votes, so H =
// N − A − C honest shares are left (every other party sees less: a client
// the same histograms or only labels, an honest teacher no plaintext) —
// from the implemented noise (Params.Coins and Params.Sigma, which Share
// draws), and compares it with the printed per-query (ε, δ):
//
//   - binomial: the exact δ(ε) of the two counts a changed vote moves, each
//     with H·Coins fair coins, from the binomial pmf
//     (exactBinomialPairDelta, independent of package accounting), must be
//     ≤ the printed δ at the printed ε;
//   - dgauss: the Kairouz-Liu-Steinke bound with H parties (accounting's
//     DDGRDP, the accountant the calibration inverted) must give ε ≤ the
//     printed ε at the printed δ.
//
// And the calibration is for H, not more: binomial Coins is the smallest
// share count with H·Coins ≥ n, dgauss σ is too small for H − 1 parties
// (what the attack of TestAttackMinimumHonestShares exploited at 42fe189,
// when the noise assumed every contributor honest). The exact pair is
// tighter than the calibration's basic composition of the two counts
// (exact ε about 0.69 at δ = 1e-5 for a printed 1): the printed guarantee
// is conservative.
func TestPrivacyByTeachers(t *testing.T) {
	for _, n := range []int{3, 4, 5, 10, 20, 250} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("t%03d", i+1)
		}
		for _, kind := range []NoiseKind{Binomial, DGauss} {
			cfg := Config{Teachers: names, Classes: 10, Features: 1, Noise: kind, Epsilon: 1, Delta: 1e-5, BudgetEpsilon: 10, BudgetDelta: 1e-3}
			c := cfg.withDefaults()
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			p := &Params{Config: c}
			if _, _, err := p.calibrateNoise(); err != nil {
				t.Fatal(err)
			}
			cc, aa := p.Trust()
			h := n - aa - cc
			if p.Honest != h || p.MinContributors != n-aa || cc != (n+2)/3-1 || aa != n-p.Threshold || p.Threshold <= cc {
				t.Fatalf("N = %d: t = %d, C = %d, A = %d, H = %d, min %d", n, p.Threshold, cc, aa, p.Honest, p.MinContributors)
			}
			switch kind {
			case Binomial:
				coins := int64(h) * p.Coins
				d := exactBinomialPairDelta(coins, p.Epsilon)
				e := exactBinomialPairEpsilon(coins, p.Delta)
				t.Logf("N = %3d binomial: t = %d, C = %d, A = %d, H = %d, %d coins each: exact δ(ε = 1) = %.3g, exact ε(δ = 1e-5) = %.4f; printed (%g, %g)",
					n, p.Threshold, cc, aa, h, p.Coins, d, e, p.Epsilon, p.Delta)
				if d > p.Delta || e > p.Epsilon {
					t.Errorf("N = %d: exact (%.4f, %.3g) exceeds the printed (%g, %g)", n, e, d, p.Epsilon, p.Delta)
				}
				// Coins is the smallest share with H shares ≥ n coins (the
				// calibration's n: (ε/2, δ/2) on each count).
				if coins < p.HistogramCoins || int64(h)*(p.Coins-1) >= p.HistogramCoins {
					t.Errorf("N = %d: H = %d shares of %d coins against n = %d", n, h, p.Coins, p.HistogramCoins)
				}
				if line := strings.Join(p.Report(), "\n"); !strings.Contains(line, fmt.Sprintf("H = N − A − C = %d honest", h)) || !strings.Contains(line, fmt.Sprintf("%d coins (⌈n/%d⌉)", p.Coins, h)) {
					t.Errorf("N = %d: the report does not print H = %d and the coins:\n%s", n, h, line)
				}
			case DGauss:
				// Exact δ(ε) of the sum of H shares, by enumeration
				// (independent convolution of the shares).
				mass, loss := histLosses(trimPMF(dgaussSumPMF(p.Sigma, h)))
				d := exactDelta(mass, loss, 1, p.Epsilon)
				t.Logf("N = %3d dgauss: H = %d, σ = %.4f per teacher: exact δ(ε = %g) = %.4g; printed δ %g", n, h, p.Sigma, p.Epsilon, d, p.Delta)
				if d > p.Delta*(1+1e-6) {
					t.Errorf("N = %d: exact δ %.4g exceeds the printed %g", n, d, p.Delta)
				}
				if h > 1 {
					mass, loss := histLosses(trimPMF(dgaussSumPMF(p.Sigma, h-1)))
					if d1 := exactDelta(mass, loss, 1, p.Epsilon); d1 <= p.Delta {
						t.Errorf("N = %d: H − 1 shares give δ %.4g ≤ printed: σ not for H", n, d1)
					}
				}
			}
		}
	}
}

// TestTrustValidation: configurations outside C < t ≤ N − A, H ≥ 1 are
// refused, naming the condition.
func TestTrustValidation(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f"}
	base := Config{Teachers: names, Classes: 3, Features: 1, Noise: Binomial, Epsilon: 1, Delta: 1e-5, BudgetEpsilon: 10, BudgetDelta: 1e-3}
	for _, tc := range []struct {
		name                   string
		thr, colluders, absent int
		want                   string
	}{
		{"t ≤ C", 3, 3, NoneAssumed, "must exceed the colluders"},
		{"t > N − A", 4, 1, 3, "at most N − A"},
		{"H = 0", 5, 1, 5, "at most N − A"},
		{"negative", 4, -2, 0, "must be ≥ 0"},
	} {
		c := base
		c.Threshold, c.Colluders, c.Absent = tc.thr, tc.colluders, tc.absent
		d := c.withDefaults()
		err := d.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// C < t ≤ N − A implies H = N − A − C ≥ t − C ≥ 1; the smallest
	// case, H = 1, is valid.
	c := base
	c.Threshold, c.Colluders, c.Absent = 3, 2, 3
	d := c.withDefaults()
	if err := d.Validate(); err != nil {
		t.Errorf("H = 1: %v", err)
	}
	// Defaults applied twice change nothing, and "none" has one encoding:
	// at N = 3 the default C is none, as is an explicit NoneAssumed.
	three := base
	three.Teachers = names[:3]
	def := three.withDefaults()
	if again := def.withDefaults(); again.Colluders != def.Colluders || again.Absent != def.Absent {
		t.Errorf("defaults not idempotent: %+v then %+v", def, again)
	}
	none := three
	none.Colluders = NoneAssumed
	if n := none.withDefaults(); n.Colluders != def.Colluders || def.Colluders != NoneAssumed {
		t.Errorf("N = 3: default C %d, explicit none %d", def.Colluders, n.Colluders)
	}
}
