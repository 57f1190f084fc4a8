package noise

import (
	"math"
	"math/big"
	"testing"
)

// TestGeometricFast checks GeometricFast against the exact pmf
// (1 − e^{−γ}) e^{−γv}: a χ² test for moderate γ and, for γ = 10⁻⁴ (mean
// ≈ 10⁴, where Geometric would need 10⁴ coins per draw), a χ² test of the
// decile bins of the exact distribution. Per-assertion false-alarm rate
// alpha = 1e-3 (stats_test.go).
func TestGeometricFast(t *testing.T) {
	for i, tc := range []struct {
		name  string
		gamma *big.Rat
	}{
		{"γ=1/3", big.NewRat(1, 3)},
		{"γ=7/5", big.NewRat(7, 5)},
		{"γ=1/10000", big.NewRat(1, 10000)},
	} {
		g, _ := tc.gamma.Float64()
		q := math.Exp(-g)
		n := samples(20000)
		xs, err := GeometricFast(testSource(uint64(100+i)), tc.gamma, n)
		if err != nil {
			t.Fatal(err)
		}
		if g > 0.01 {
			chiSquareTest(t, tc.name, xs, func(k int64) float64 { return (1 - q) * math.Pow(q, float64(k)) }, 0, 2000)
			continue
		}
		// Deciles: P(V ≥ k) = q^k, so the cut points k_j = ⌈ln(1 − j/10)/ln q⌉.
		cuts := make([]int64, 0, 9)
		for j := 1; j < 10; j++ {
			cuts = append(cuts, int64(math.Ceil(math.Log(1-float64(j)/10)/math.Log(q))))
		}
		obs := make([]float64, 10)
		for _, x := range xs {
			b := 0
			for b < len(cuts) && x >= cuts[b] {
				b++
			}
			obs[b]++
		}
		var stat float64
		prev := 1.0
		for b := 0; b < 10; b++ {
			next := 0.0
			if b < len(cuts) {
				next = math.Pow(q, float64(cuts[b]))
			}
			e := float64(n) * (prev - next)
			stat += (obs[b] - e) * (obs[b] - e) / e
			prev = next
		}
		if crit := chiSquareCritical(9); stat > crit {
			t.Errorf("%s: decile χ² = %.1f > %.1f", tc.name, stat, crit)
		}
	}
}

func TestGeometricFastRejectsBadInput(t *testing.T) {
	for _, g := range []*big.Rat{nil, big.NewRat(0, 1), big.NewRat(-1, 2)} {
		if _, err := GeometricFast(NewInsecureSeeded(1), g, 3); err == nil {
			t.Errorf("γ=%v accepted", g)
		}
	}
	if _, err := GeometricFast(NewInsecureSeeded(1), big.NewRat(1, 2), -1); err == nil {
		t.Error("negative count accepted")
	}
}

// TestGeometricFastCensored: censoring at L gives P(V = L) = e^{−γL} and
// the uncensored pmf below L (χ², alpha = 1e-3); a γ so small that every
// draw would overflow int64 returns the limit.
func TestGeometricFastCensored(t *testing.T) {
	gamma := big.NewRat(1, 4)
	const limit = 6
	n := samples(20000)
	xs, err := GeometricFastCensored(testSource(200), gamma, n, limit)
	if err != nil {
		t.Fatal(err)
	}
	q := math.Exp(-0.25)
	chiSquareTest(t, "censored Geometric(1/4) at 6", xs, func(k int64) float64 {
		if k == limit {
			return math.Pow(q, limit)
		}
		return (1 - q) * math.Pow(q, float64(k))
	}, 0, limit)
	tiny := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), 200))
	ys, err := GeometricFastCensored(testSource(201), tiny, 5, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range ys {
		if y != 1<<40 {
			t.Errorf("γ = 2^-200: draw %d below the limit 2^40 (probability < 2^-150)", y)
		}
	}
	if _, err := GeometricFastCensored(testSource(1), gamma, 1, -1); err == nil {
		t.Error("negative limit accepted")
	}
}
