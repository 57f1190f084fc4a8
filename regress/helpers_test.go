package regress

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dplearn/dplearn/suffstat"
)

// Shared test helpers of package regress.

// stats returns the sufficient statistics of row-major rows of width k.
func stats(t testing.TB, rows []float64, k int) *suffstat.Moments {
	t.Helper()
	m := suffstat.New(k)
	if err := m.AddRows(rows); err != nil {
		t.Fatal(err)
	}
	return m
}

// xpData returns the statistics and the rows.
func xpData(t testing.TB, rows []float64, k int) Data {
	t.Helper()
	return Data{Stats: stats(t, rows, k), Rows: rows}
}

// xpRows makes n encoded rows with d features (an intercept 1/√d and d−1
// uniform features scaled by 1/√d, so ‖x‖ ≤ 1). The target is clip(xᵀβ +
// 0.1·noise) (linear) or Bernoulli(σ(xᵀβ)) (logistic).
func xpRows(kind Kind, n, d int, seed uint64) (rows, beta []float64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	beta = make([]float64, d)
	for j := range beta {
		beta[j] = rng.NormFloat64()
		if kind == Logistic {
			beta[j] *= 3
		}
	}
	k := d + 1
	rows = make([]float64, n*k)
	s := 1 / math.Sqrt(float64(d))
	for i := 0; i < n; i++ {
		r := rows[i*k : (i+1)*k]
		r[0] = s
		for j := 1; j < d; j++ {
			r[j] = s * (2*rng.Float64() - 1)
		}
		z := dot(r[:d], beta)
		if kind == Logistic {
			if rng.Float64() < sigmoid(z) {
				r[d] = 1
			}
		} else {
			r[d] = math.Max(-1, math.Min(1, z+0.1*rng.NormFloat64()))
		}
	}
	return rows, beta
}

// inUnitBall returns a random point of the d-dimensional unit ball: a
// uniform direction with radius U^(1/5), which favours the boundary (where
// the sensitivities are attained).
func inUnitBall(rng *rand.Rand, d int) []float64 {
	v := make([]float64, d)
	s := 0.0
	for i := range v {
		v[i] = rng.NormFloat64()
		s += v[i] * v[i]
	}
	r := math.Pow(rng.Float64(), 0.2) / math.Sqrt(s)
	for i := range v {
		v[i] *= r
	}
	return v
}
