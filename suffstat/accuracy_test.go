package suffstat

import (
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"testing"
)

// RepeatedPattern returns, for the statistics of a pattern of p rows repeated
// reps times, the exact values (computed in big.Float: each product of two
// float64 is exact in 106 bits and the sums are exact at 2000 bits).
func exactRepeated(pattern []float64, k int, reps int64) (sum []*big.Float, gram [][]*big.Float) {
	p := len(pattern) / k
	newF := func() *big.Float { return new(big.Float).SetPrec(2000) }
	sum = make([]*big.Float, k)
	gram = make([][]*big.Float, k)
	for i := range sum {
		sum[i] = newF()
		gram[i] = make([]*big.Float, k)
		for j := range gram[i] {
			gram[i][j] = newF()
		}
	}
	for r := 0; r < p; r++ {
		z := pattern[r*k : (r+1)*k]
		for i := 0; i < k; i++ {
			sum[i].Add(sum[i], newF().SetFloat64(z[i]))
			for j := 0; j < k; j++ {
				gram[i][j].Add(gram[i][j], newF().Mul(newF().SetFloat64(z[i]), newF().SetFloat64(z[j])))
			}
		}
	}
	rb := newF().SetInt64(reps)
	for i := range sum {
		sum[i].Mul(sum[i], rb)
		for j := range gram[i] {
			gram[i][j].Mul(gram[i][j], rb)
		}
	}
	return sum, gram
}

func relErr(got float64, want *big.Float) float64 {
	w, _ := want.Float64()
	if w == 0 {
		return math.Abs(got)
	}
	d := new(big.Float).SetPrec(2000).Sub(new(big.Float).SetPrec(2000).SetFloat64(got), want)
	df, _ := d.Float64()
	return math.Abs(df / w)
}

// TestLargeNAccuracy streams N rows (a pattern of 1000 random rows with
// positive entries, repeated) and compares with the exact result. With
// entries in [0.1, 1], Σ z_i z_j ≥ 0.01·N, so ErrorBound gives a relative
// error below 1.5e-12 for any N; a plain running sum has no such bound and
// is measured for comparison.
func TestLargeNAccuracy(t *testing.T) {
	n := int64(20_000_000)
	if testing.Short() {
		n = 2_000_000
	}
	if os.Getenv("DPLEARN_LONG_TESTS") == "1" {
		n = 500_000_000
	}
	const k, p = 3, 1000
	rng := rand.New(rand.NewPCG(11, 12))
	pattern := make([]float64, p*k)
	for i := range pattern {
		pattern[i] = 0.1 + 0.9*rng.Float64() // inexact decimals, positive, ≤ 1
	}
	reps := n / p
	n = reps * p
	wantSum, wantGram := exactRepeated(pattern, k, reps)

	m := New(k)
	m.SetWorkers(1)
	var naive [k][k]float64
	block := make([]float64, 0, 50*p*k)
	for r := int64(0); r < reps; r += 50 {
		block = block[:0]
		for q := int64(0); q < 50 && r+q < reps; q++ {
			block = append(block, pattern...)
		}
		if err := m.AddRows(block); err != nil {
			t.Fatal(err)
		}
		if !testing.Short() && n <= 20_000_000 {
			for q := 0; q < len(block); q += k {
				for i := 0; i < k; i++ {
					for j := 0; j < k; j++ {
						naive[i][j] += block[q+i] * block[q+j]
					}
				}
			}
		}
	}
	bound := ErrorBound(n) / (0.01 * float64(n)) // relative: Σ z_i z_j ≥ 0.01·n here
	worst, worstNaive := 0.0, 0.0
	for i := 0; i < k; i++ {
		if e := relErr(m.Sum(i), wantSum[i]); e > bound {
			t.Errorf("Sum(%d): relative error %.3g > %.3g", i, e, bound)
		}
		for j := 0; j < k; j++ {
			e := relErr(m.At(i, j), wantGram[i][j])
			worst = math.Max(worst, e)
			worstNaive = math.Max(worstNaive, relErr(naive[i][j], wantGram[i][j]))
			if e > bound {
				t.Errorf("At(%d,%d): relative error %.3g > %.3g", i, j, e, bound)
			}
		}
	}
	t.Logf("N=%d: worst relative error %.3g (bound %.3g); plain running sum %.3g", n, worst, bound, worstNaive)
}
