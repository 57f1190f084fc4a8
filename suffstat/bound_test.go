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
		if n <= 1<<30 && b >= 2.88e-14*float64(n) {
			t.Errorf("ErrorBound(%d) = %v ≥ 2.88e-14·n", n, b)
		}
		if b < 259*0x1p-53*float64(n) {
			t.Errorf("ErrorBound(%d) = %v below (257+2)·u·n", n, b)
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

// checkBound compares every entry of m with the exact values and the bound
// for its own absolute sum, and returns the largest ratio error/bound.
func checkBound(t *testing.T, name string, m *Moments, val, abs [][]*big.Float, k int) float64 {
	t.Helper()
	worst := 0.0
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
			T, _ := abs[i][j].Float64()
			b := boundFor(m.N(), T)
			if err > b {
				t.Errorf("%s: entry (%d,%d): error %.3g exceeds the bound %.3g", name, i, j, err, b)
			}
			if err > ErrorBound(m.N())*math.Max(1, maxAbs2) {
				t.Errorf("%s: entry (%d,%d): error %.3g exceeds ErrorBound(%d)", name, i, j, err, m.N())
			}
			if b > 0 {
				worst = math.Max(worst, err/b)
			}
		}
	}
	return worst
}

// maxAbs2 is the largest |z_i z_j| the call-pattern test uses (rows in [−1, 1]).
const maxAbs2 = 1

// TestErrorBoundAdversarial feeds rows chosen so that every addition
// rounds the same way (ties to even, small terms lost against a 1), at the
// kernel's register level and at the block level, and checks the measured
// error against the proven bound, with every kernel. The measured error
// reaches about half the bound: the bound's 257 roundings per term are the
// chain lengths, and these patterns lose one of the two chains' worth.
func TestErrorBoundAdversarial(t *testing.T) {
	const u = 0x1p-53
	panel := func(first, rest float64) []float64 {
		p := make([]float64, panelRows)
		p[0] = first
		for i := 1; i < panelRows; i++ {
			p[i] = rest
		}
		return p
	}
	patterns := []struct {
		name   string
		blocks int
		block  func() []float64
	}{
		// Each panel: a 1 and 127 terms of u, each lost against the 1
		// (1 + u is a tie, rounded to even).
		{"register chain", 3, func() []float64 {
			var b []float64
			for p := 0; p < blockPanels; p++ {
				b = append(b, panel(1, u)...)
			}
			return b
		}},
		// The block's first panel holds a 1; each later panel sums
		// exactly to u, which is then lost against the block's 1.
		{"block chain", 3, func() []float64 {
			b := panel(1, 0x1p-60)
			for p := 1; p < blockPanels; p++ {
				b = append(b, panel(0x1p-60, 0x1p-60)...)
			}
			return b
		}},
	}
	best := 0.0
	for _, pat := range patterns {
		var rows []float64
		for b := 0; b < pat.blocks; b++ {
			rows = append(rows, pat.block()...)
		}
		val, abs := exactEntries(rows, 1)
		for _, kn := range kernels() {
			m := newWithKernel(1, kn)
			m.SetWorkers(1)
			if err := m.AddRows(rows); err != nil {
				t.Fatal(err)
			}
			r := checkBound(t, pat.name+"/"+kn.name, m, val, abs, 1)
			t.Logf("%s, kernel %s: measured error / bound = %.3f", pat.name, kn.name, r)
			best = math.Max(best, r)
		}
	}
	if best < 0.4 {
		t.Errorf("adversarial patterns reach only %.3f of the bound; expected about half", best)
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
	val, abs := exactEntries(rows, k)
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
		r := checkBound(t, name, m, val, abs, k)
		t.Logf("%s: largest error / bound = %.3g", name, r)
	}
}
