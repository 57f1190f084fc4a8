package suffstat

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestErrorBoundValues(t *testing.T) {
	if ErrorBound(0) != 0 {
		t.Errorf("ErrorBound(0) = %v", ErrorBound(0))
	}
	for _, n := range []int64{-1, MaxBoundRows + 1, math.MaxInt64} {
		if !math.IsInf(ErrorBound(n), 1) {
			t.Errorf("ErrorBound(%d) = %v, want +Inf", n, ErrorBound(n))
		}
	}
	prev := 0.0
	for _, n := range []int64{1, 2, 100, 28155, 1e6, 1e7, 1e9, 1 << 30, 1 << 35, MaxBoundRows} {
		b := ErrorBound(n)
		if b <= prev {
			t.Errorf("ErrorBound(%d) = %v not increasing", n, b)
		}
		prev = b
		// The proof's n·(2⁻⁴⁶ + 2⁻⁵³), computed exactly in big.Float.
		want := new(big.Float).SetPrec(200).SetInt64(n)
		want.Mul(want, new(big.Float).SetPrec(200).Add(big.NewFloat(0x1p-46), big.NewFloat(0x1p-53)))
		if new(big.Float).SetFloat64(b).Cmp(want) != 0 {
			t.Errorf("ErrorBound(%d) = %v, want exactly %v", n, b, want)
		}
	}
}

// exactEntries returns the exact Σ z_i z_j (j = k: Σ z_i) and Σ|z_i z_j| of
// the rows, as big.Float (products of float64 are exact in 106 bits).
func exactEntries(rows []float64, k int) (val, abs [][]*big.Float) {
	newF := func() *big.Float { return new(big.Float).SetPrec(2200) }
	val = make([][]*big.Float, k+1)
	abs = make([][]*big.Float, k+1)
	for i := range val {
		val[i] = make([]*big.Float, k+1)
		abs[i] = make([]*big.Float, k+1)
		for j := range val[i] {
			val[i][j], abs[i][j] = newF(), newF()
		}
	}
	p := newF()
	for r := 0; r < len(rows)/k; r++ {
		z := rows[r*k : (r+1)*k]
		for i := 0; i < k; i++ {
			for j := i; j <= k; j++ {
				zj := 1.0
				if j < k {
					zj = z[j]
				}
				p.Mul(big.NewFloat(z[i]), big.NewFloat(zj))
				val[i][j].Add(val[i][j], p)
				abs[i][j].Add(abs[i][j], p.Abs(p))
			}
		}
	}
	return val, abs
}

// checkBound compares every entry of m with the exact values and
// ErrorBound, and returns the largest ratio error/bound.
func checkBound(t *testing.T, name string, m *Moments, val [][]*big.Float, k int) float64 {
	t.Helper()
	worst := 0.0
	b := ErrorBound(m.N())
	for i := 0; i < k; i++ {
		for j := i; j <= k; j++ {
			var got float64
			if j == k {
				got = m.Sum(i)
			} else {
				got = m.At(i, j)
			}
			d := new(big.Float).SetPrec(2200).Sub(big.NewFloat(got), val[i][j])
			err, _ := d.Abs(d).Float64()
			if err > b {
				t.Errorf("%s: entry (%d,%d): error %.3g exceeds ErrorBound(%d) = %.3g", name, i, j, err, m.N(), b)
			}
			worst = math.Max(worst, err/b)
		}
	}
	return worst
}

// TestErrorBoundAttained feeds rows whose every value lies just below a
// midpoint of the 2⁻⁴⁶ grid near 1, so every value is rounded down by
// almost δ = 2⁻⁴⁷ and every product by almost 2δ, all in the same
// direction: the measured error of the Gram diagonal must reach more than
// 99% of ErrorBound (the bound is tight) and never exceed it, with every
// kernel.
func TestErrorBoundAttained(t *testing.T) {
	const k, n = 2, 3000
	rows := make([]float64, n*k)
	for i := range rows {
		rows[i] = 1 - 0x1p-47 - 0x1p-60
	}
	val, _ := exactEntries(rows, k)
	for _, kn := range kernels() {
		m := newWithKernel(k, kn)
		if err := m.AddRows(rows); err != nil {
			t.Fatal(err)
		}
		r := checkBound(t, kn.name, m, val, k)
		t.Logf("kernel %s: measured error / bound = %.4f", kn.name, r)
		if r < 0.99 {
			t.Errorf("kernel %s: error reaches only %.4f of the bound; the rounding is not what the proof says", kn.name, r)
		}
	}
}

// TestErrorBoundCallPatterns checks the bound for random rows in [−1, 1]
// accumulated in every way the package allows: one call, one row per call
// with a read after each (a partial block per row), parallel AddRows,
// shards merged, shards shipped through MarshalBinary, and a deep chain of
// merges.
func TestErrorBoundCallPatterns(t *testing.T) {
	const k = 3
	n := 20000
	if testing.Short() {
		n = 6000
	}
	rng := rand.New(rand.NewPCG(3, 5))
	rows := make([]float64, n*k)
	for i := range rows {
		switch rng.IntN(4) {
		case 0:
			rows[i] = 1 - rng.Float64()*0x1p-40 // near the bound
		case 1:
			rows[i] = -rng.Float64()
		default:
			rows[i] = 2*rng.Float64() - 1
		}
	}
	val, _ := exactEntries(rows, k)
	shards := func(size int) [][]float64 {
		var out [][]float64
		for lo := 0; lo < n; lo += size {
			out = append(out, rows[lo*k:min(lo+size, n)*k])
		}
		return out
	}
	patterns := map[string]func() *Moments{
		"one call": func() *Moments {
			m := New(k)
			m.SetWorkers(1)
			_ = m.AddRows(rows)
			return m
		},
		"row by row, read after each": func() *Moments {
			m := New(k)
			for r := 0; r < n; r++ {
				_ = m.AddRows(rows[r*k : (r+1)*k])
				_ = m.Sum(0)
			}
			return m
		},
		"parallel": func() *Moments {
			m := New(k)
			m.SetWorkers(2)
			_ = m.AddRows(rows)
			return m
		},
		"merged shards": func() *Moments {
			m := New(k)
			for _, s := range shards(997) {
				p := New(k)
				_ = p.AddRows(s)
				if err := m.Merge(p); err != nil {
					t.Fatal(err)
				}
			}
			return m
		},
		"shipped shards": func() *Moments {
			m := New(k)
			for _, s := range shards(1500) {
				p := New(k)
				_ = p.AddRows(s)
				b, err := p.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				var q Moments
				if err := q.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
				if err := m.Merge(&q); err != nil {
					t.Fatal(err)
				}
			}
			return m
		},
		"merge chain of depth 12": func() *Moments {
			sh := shards((n + 11) / 12)
			acc := New(k)
			_ = acc.AddRows(sh[0])
			for _, s := range sh[1:] {
				next := New(k)
				_ = next.AddRows(s)
				if err := next.Merge(acc); err != nil {
					t.Fatal(err)
				}
				acc = next
			}
			return acc
		},
	}
	for name, build := range patterns {
		m := build()
		if m.N() != int64(n) {
			t.Fatalf("%s: N = %d", name, m.N())
		}
		r := checkBound(t, name, m, val, k)
		t.Logf("%s: largest error / bound = %.3g", name, r)
	}
}
