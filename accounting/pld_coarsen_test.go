package accounting

import (
	"math"
	"strings"
	"testing"
)

// TestPLDCoarsenKnownAnswers: with PLDOptions.MaxPoints the composition is
// re-discretised on wider grids as it grows, and must stay pessimistic and
// tight. k Gaussians of σ compose exactly to one of σ/√k (the analytic
// formula is the truth): three of σ = √3 give dp_accounting's δ(1) =
// 0.126936, and 20,000 of σ = √20,000 (μ = 1) the analytic δ of σ = 1.
// The accountant must lie between the optimistic PLD and the truth at
// ε − EpsilonSlack plus the counted δ slack, and its ε(δ) within tol of
// the truth (2% for three Gaussians on 4,096 points and for μ = 1 at ε = 3
// on 2^16; the counted slack is absolute, about 3.4·k·(one release's loss
// width)/MaxPoints, so it is relatively larger at small ε).
func TestPLDCoarsenKnownAnswers(t *testing.T) {
	cases := []struct {
		sigma     float64
		k         int
		eps       float64
		grid      float64
		maxPoints int
		tol       float64 // asserted relative excess of ε(δ_exact) over ε
	}{
		{math.Sqrt(3), 3, 1, 1e-4, 256, 0.2},
		{math.Sqrt(3), 3, 1, 1e-4, 4096, 0.02},
		{math.Sqrt(20000), 20000, 1, 1e-6, 1 << 16, 0.05},
		{math.Sqrt(20000), 20000, 3, 1e-6, 1 << 16, 0.02},
		{30, 1000, 1, 1e-5, 1 << 12, 0.15},
	}
	for _, c := range cases {
		o := PLDOptions{Grid: c.grid, MaxPoints: c.maxPoints}
		pess := mustSelf(t, mustPLD(t)(GaussianPLD(c.sigma, 1, o)), c.k)
		o.Optimistic = true
		opt := mustSelf(t, mustPLD(t)(GaussianPLD(c.sigma, 1, o)), c.k)
		eff := c.sigma / math.Sqrt(float64(c.k))
		exact, _ := AnalyticGaussianDelta(c.eps, eff, 1)
		b := pess.ErrorBound()
		upper, _ := AnalyticGaussianDelta(c.eps-b.EpsilonSlack, eff, 1)
		dp, do := mustDelta(t, pess, c.eps), mustDelta(t, opt, c.eps)
		if !(do <= exact && exact <= dp && dp <= upper+b.DeltaSlack) {
			t.Errorf("σ=%v k=%d ε=%v M=%d: want opt %v ≤ exact %v ≤ pess %v ≤ bound %v", c.sigma, c.k, c.eps, c.maxPoints, do, exact, dp, upper+b.DeltaSlack)
		}
		if pess.GridSize() > c.maxPoints {
			t.Errorf("σ=%v k=%d: %d grid points, MaxPoints %d", c.sigma, c.k, pess.GridSize(), c.maxPoints)
		}
		if c.k == 3 && c.tol <= 0.02 && math.Abs(dp-0.126936) > 0.02*0.126936 {
			t.Errorf("three Gaussians σ=√3, M=%d: δ(1) = %v, want 0.126936 within 2%% (dp_accounting)", c.maxPoints, dp)
		}
		e := mustEpsilon(t, pess, exact)
		if e < c.eps-1e-9 || e > c.eps+b.EpsilonSlack+1e-9 || e > (1+c.tol)*c.eps {
			t.Errorf("σ=%v k=%d M=%d: ε(δ=%v) = %v, want in [%v, min(%v, %v·ε)]", c.sigma, c.k, c.maxPoints, exact, e, c.eps, c.eps+b.EpsilonSlack, 1+c.tol)
		}
		t.Logf("σ=%.4g k=%d ε=%v M=%d: δ exact %.6g, pessimistic %.6g, optimistic %.6g; ε slack %.4g, final grid %.3g, %d points",
			c.sigma, c.k, c.eps, c.maxPoints, exact, dp, do, b.EpsilonSlack, pess.Options().Grid, pess.GridSize())
	}
}

// TestPLDCoarsenExactEnumeration: the binomial histogram of n coins, 1 to
// 3 releases, on a grid of 10⁻⁴ coarsened to at most 64 points (the
// minimum: several coarsenings per composition), against δ(ε) summed over
// the whole product outcome space: optimistic ≤ exact ≤ pessimistic.
func TestPLDCoarsenExactEnumeration(t *testing.T) {
	eps := []float64{0, 0.1, 0.5, 1, 2, 4}
	for _, n := range []int{10, 7} {
		one := histogramOutcomes(binomialPMF(n))
		o := PLDOptions{Grid: 1e-4, MaxPoints: 64}
		pess1 := mustPLD(t)(BinomialHistogramPLD(int64(n), o))
		o.Optimistic = true
		opt1 := mustPLD(t)(BinomialHistogramPLD(int64(n), o))
		for k := 2; k <= 3; k++ {
			exact := exactDeltas(one, k, eps)
			pess, opt := mustSelf(t, pess1, k), mustSelf(t, opt1, k)
			if pess.Options().Grid == 1e-4 {
				t.Fatalf("n=%d k=%d: not coarsened (%d points)", n, k, pess.GridSize())
			}
			for i, e := range eps {
				dp, do := mustDelta(t, pess, e), mustDelta(t, opt, e)
				if !(do <= exact[i]*(1+1e-12) && exact[i] <= dp) {
					t.Errorf("n=%d k=%d ε=%v: want opt %v ≤ exact %v ≤ pess %v", n, k, e, do, exact[i], dp)
				}
			}
		}
	}
}

// TestPLDCoarsenReviewNumbers: the three review cases (binomial
// 224 coins × 20 queries at δ = 1e-3: 2.59; × 100 queries: 7.23; 68 coins
// × 20 queries: 5.42) with powers kept to 2^12 points are within 2% of the
// review's values and not below the fixed-grid optimistic bound.
func TestPLDCoarsenReviewNumbers(t *testing.T) {
	cases := []struct {
		n       int64
		queries int
		review  float64
	}{
		{224, 20, 2.59}, {224, 100, 7.23}, {68, 20, 5.42},
	}
	for _, c := range cases {
		e, err := BinomialHistogramEpsilon(c.n, c.queries, 1e-3, PLDOptions{Grid: 1e-4, MaxPoints: 1 << 12})
		if err != nil {
			t.Fatal(err)
		}
		lo, err := BinomialHistogramEpsilon(c.n, c.queries, 1e-3, PLDOptions{Grid: 1e-4, Optimistic: true})
		if err != nil {
			t.Fatal(err)
		}
		if e < lo || math.Abs(e-c.review) > 0.02*c.review {
			t.Errorf("%d coins × %d: ε = %v, want ≥ %v (optimistic) and within 2%% of %v", c.n, c.queries, e, lo, c.review)
		}
		t.Logf("%d coins × %d queries: ε = %.5f (review %v, optimistic %.5f)", c.n, c.queries, e, c.review, lo)
	}
}

// TestPLDComposeGrids: PLDs whose grids differ by a power of two compose
// (the finer coarsened first) only with MaxPoints; otherwise, or with a
// ratio that is not a power of two, Compose refuses.
func TestPLDComposeGrids(t *testing.T) {
	a := mustPLD(t)(GaussianPLD(2, 1, PLDOptions{Grid: 1e-3, MaxPoints: 64}))
	b := mustPLD(t)(GaussianPLD(2, 1, PLDOptions{Grid: 4e-3, MaxPoints: 64}))
	c, err := a.Compose(b)
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := AnalyticGaussianDelta(1, 2/math.Sqrt2, 1)
	if d := mustDelta(t, c, 1); d < exact {
		t.Errorf("composed across grids: δ(1) = %v below the exact %v", d, exact)
	}
	if c.Options().Grid < 4e-3 || c.GridSize() > 64 {
		t.Errorf("grid %v, %d points", c.Options().Grid, c.GridSize())
	}
	for _, bad := range []PLDOptions{{Grid: 3e-3, MaxPoints: 64}, {Grid: 4e-3}} {
		x := mustPLD(t)(GaussianPLD(2, 1, bad))
		y := a
		if bad.MaxPoints == 0 {
			y = mustPLD(t)(GaussianPLD(2, 1, PLDOptions{Grid: 1e-3}))
		}
		if _, err := y.Compose(x); err == nil || !strings.Contains(err.Error(), "grid") {
			t.Errorf("grids %v and %v composed: %v", y.Options(), bad, err)
		}
	}
}
