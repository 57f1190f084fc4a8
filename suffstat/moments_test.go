package suffstat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// naive computes N, Σz and Σzzᵀ with a plain double loop in big.Float
// (exact for these inputs up to the final rounding).
func naive(rows []float64, k int) (sum []float64, gram [][]float64) {
	n := len(rows) / k
	bs := make([]big.Float, k)
	bg := make([][]big.Float, k)
	for i := range bg {
		bg[i] = make([]big.Float, k)
	}
	for _, b := range bs {
		b.SetPrec(2000)
	}
	var p big.Float
	p.SetPrec(2000)
	for r := 0; r < n; r++ {
		z := rows[r*k : (r+1)*k]
		for i := 0; i < k; i++ {
			bs[i].SetPrec(2000).Add(&bs[i], big.NewFloat(z[i]))
			for j := i; j < k; j++ {
				p.SetPrec(2000).Mul(big.NewFloat(z[i]), big.NewFloat(z[j]))
				bg[i][j].SetPrec(2000).Add(&bg[i][j], &p)
			}
		}
	}
	sum = make([]float64, k)
	gram = make([][]float64, k)
	for i := range gram {
		gram[i] = make([]float64, k)
	}
	for i := range sum {
		sum[i], _ = bs[i].Float64()
		for j := i; j < k; j++ {
			gram[i][j], _ = bg[i][j].Float64()
			gram[j][i] = gram[i][j]
		}
	}
	return sum, gram
}

func randRows(rng *rand.Rand, n, k int) []float64 {
	x := make([]float64, n*k)
	for i := range x {
		x[i] = rng.Float64()*2 - 1
	}
	return x
}

// check compares m with the exact statistics (big.Float), with the
// tolerance ErrorBound(N) that the package proves.
func check(t *testing.T, m *Moments, rows []float64, k int) {
	t.Helper()
	n := len(rows) / k
	if m.N() != int64(n) {
		t.Fatalf("N = %d, want %d", m.N(), n)
	}
	sum, gram := naive(rows, k)
	tol := ErrorBound(int64(n))
	for i := 0; i < k; i++ {
		if d := math.Abs(m.Sum(i) - sum[i]); d > tol {
			t.Fatalf("Sum(%d) = %v, want %v (diff %g > %g)", i, m.Sum(i), sum[i], d, tol)
		}
		for j := 0; j < k; j++ {
			if d := math.Abs(m.At(i, j) - gram[i][j]); d > tol {
				t.Fatalf("At(%d,%d) = %v, want %v (diff %g > %g)", i, j, m.At(i, j), gram[i][j], d, tol)
			}
		}
	}
}

func TestAgainstNaive(t *testing.T) {
	for _, kn := range kernels() {
		for _, tc := range []struct{ n, k int }{
			{0, 1}, {1, 1}, {3, 1}, {1, 2}, {7, 3}, {255, 4}, {256, 5}, {257, 7},
			{600, 8}, {1000, 11}, {513, 16}, {300, 17}, {70, 33}, {150, 101},
		} {
			if testing.Short() && tc.k > 50 {
				continue
			}
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.k)))
			rows := randRows(rng, tc.n, tc.k)
			m := newWithKernel(tc.k, kn)
			// Feed in uneven batches to exercise the panel buffer.
			for r := 0; r < tc.n; {
				b := 1 + rng.IntN(300)
				if r+b > tc.n {
					b = tc.n - r
				}
				if err := m.AddRows(rows[r*tc.k : (r+b)*tc.k]); err != nil {
					t.Fatal(err)
				}
				r += b
			}
			t.Run(kn.name, func(t *testing.T) { check(t, m, rows, tc.k) })
		}
	}
}

func TestKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, k = 5000, 23
	rows := randRows(rng, n, k)
	ms := []*Moments{}
	for _, kn := range kernels() {
		m := newWithKernel(k, kn)
		if err := m.AddRows(rows); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	for _, m := range ms[1:] {
		for i := 0; i < k; i++ {
			for j := i; j < k; j++ {
				// Every kernel computes the exact panel sums: same bits.
				if math.Float64bits(m.At(i, j)) != math.Float64bits(ms[0].At(i, j)) {
					t.Fatalf("%s vs %s: At(%d,%d) = %v vs %v", m.kn.name, ms[0].kn.name, i, j, m.At(i, j), ms[0].At(i, j))
				}
			}
		}
	}
}

func TestMergeShardsEqualsOnePass(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, k = 20000, 9
	rows := randRows(rng, n, k)
	one := New(k)
	one.SetWorkers(1)
	if err := one.AddRows(rows); err != nil {
		t.Fatal(err)
	}
	for _, shards := range []int{2, 3, 7, 64} {
		total := New(k)
		for s := 0; s < shards; s++ {
			lo, hi := s*n/shards, (s+1)*n/shards
			part := New(k)
			if err := part.AddRows(rows[lo*k : hi*k]); err != nil {
				t.Fatal(err)
			}
			// Ship the shard through its binary encoding, as a site would.
			b, err := part.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var got Moments
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if err := total.Merge(&got); err != nil {
				t.Fatal(err)
			}
		}
		if total.N() != one.N() {
			t.Fatalf("%d shards: N = %d, want %d", shards, total.N(), one.N())
		}
		for i := 0; i < k; i++ {
			// Rounding: a few ulps of Σ|z_i z_j| ≤ n.
			if d := math.Abs(total.Sum(i) - one.Sum(i)); d > 1e-14*n {
				t.Fatalf("%d shards: Sum(%d) differs by %g", shards, i, d)
			}
			for j := 0; j < k; j++ {
				if d := math.Abs(total.At(i, j) - one.At(i, j)); d > 1e-14*n {
					t.Fatalf("%d shards: At(%d,%d) differs by %g", shards, i, j, d)
				}
			}
		}
	}
}

func TestParallelAddRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k = 6
	n := 3*parallelMin + 17
	rows := randRows(rng, n, k)
	serial := New(k)
	serial.SetWorkers(1)
	par := New(k)
	par.SetWorkers(3)
	for _, m := range []*Moments{serial, par} {
		if err := m.AddRows(rows[:k]); err != nil { // a pending partial panel
			t.Fatal(err)
		}
		if err := m.AddRows(rows[k:]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			if math.Float64bits(serial.At(i, j)) != math.Float64bits(par.At(i, j)) {
				t.Fatalf("At(%d,%d): serial %v, parallel %v", i, j, serial.At(i, j), par.At(i, j))
			}
		}
	}
	if par.N() != int64(n) {
		t.Fatalf("N = %d, want %d", par.N(), n)
	}
}

func TestAddRowsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []float64
		want string
	}{
		{"length", []float64{1, 2, 3}, "not a whole number of rows"},
		{"nan", []float64{0.1, 0.2, 0.3, math.NaN()}, "row 1, column 1: value NaN is not finite"},
		{"inf", []float64{math.Inf(-1), 0.5}, "row 0, column 0: value -Inf is not finite"},
		{"range", []float64{0.5, 0.25, 1, 1.0000000000000002}, "row 1, column 1: value 1.0000000000000002 is outside [-1, 1]"},
		{"negative range", []float64{-1.5, 0}, "row 0, column 0: value -1.5 is outside [-1, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every kernel: the integer (IFMA) and float paths check the
			// range in their own loops.
			for _, kn := range kernels() {
				m := newWithKernel(2, kn)
				err := m.AddRows(tc.rows)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("kernel %s: err = %v, want %q", kn.name, err, tc.want)
				}
			}
		})
	}
	m := New(2)
	if err := m.AddRows([]float64{math.NaN(), 0}); err == nil {
		t.Fatal("no error for NaN")
	}
	if err := m.AddRows([]float64{0.1, 0.2}); err == nil {
		t.Fatal("poisoned accumulator accepted rows")
	}
	if _, err := m.MarshalBinary(); err == nil {
		t.Fatal("poisoned accumulator marshalled")
	}
	if !math.IsNaN(m.At(0, 0)) {
		t.Fatal("poisoned accumulator returned a number")
	}
	if err := New(2).Merge(m); err == nil {
		t.Fatal("merged a poisoned accumulator")
	}
	if self := New(2); self.Merge(self) == nil {
		t.Fatal("merged an accumulator into itself")
	}
	if err := New(2).Merge(New(3)); err == nil {
		t.Fatal("merged widths 3 into 2")
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m := New(5)
	if err := m.AddRows(randRows(rng, 1000, 5)); err != nil {
		t.Fatal(err)
	}
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Moments
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	b2, _ := got.MarshalBinary()
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding differs")
	}
	if got.N() != 1000 || got.At(1, 3) != m.At(1, 3) || got.Sum(4) != m.Sum(4) {
		t.Fatal("decoded values differ")
	}
}

func TestUnmarshalRejects(t *testing.T) {
	m := New(2)
	_ = m.AddRows([]float64{0.1, 0.2, 0.3, 0.4})
	good, _ := m.MarshalBinary()
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated", good[:len(good)-1]},
		{"extended", append(bytes.Clone(good), 0)},
		{"magic", mut(func(b []byte) []byte { b[0] = 'X'; return b })},
		{"version", mut(func(b []byte) []byte { b[4] = 9; return b })},
		{"width0", mut(func(b []byte) []byte { b[8] = 0; return b })},
		{"checksum", mut(func(b []byte) []byte { b[25] ^= 1; return b })},
		// Four rows of 0.5 claimed as one row: Σz = 2 > N = 1 while
		// Σz² = 1 ≤ N, so only the bound on the sums can refuse it (a
		// file that is no sum of N rows in [−1, 1] would break every
		// sensitivity computed from N).
		{"sum above N", func() []byte {
			q := New(1)
			_ = q.AddRows([]float64{0.5, 0.5, 0.5, 0.5})
			b, _ := q.MarshalBinary()
			binary.LittleEndian.PutUint64(b[12:], 1)
			body := b[:len(b)-4]
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(body, castagnoli))
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Moments
			err := got.UnmarshalBinary(tc.data)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestConcurrentReadsAfterFlush is meaningful under -race.
func TestConcurrentReadsAfterFlush(t *testing.T) {
	m := New(4)
	if err := m.AddRows(randRows(rand.New(rand.NewPCG(9, 9)), 300, 4)); err != nil {
		t.Fatal(err)
	}
	m.Flush()
	done := make(chan float64)
	for g := 0; g < 4; g++ {
		go func() {
			s := 0.0
			for i := 0; i < 4; i++ {
				s += m.Sum(i)
				for j := 0; j < 4; j++ {
					s += m.At(i, j)
				}
			}
			done <- s
		}()
	}
	first := <-done
	for g := 1; g < 4; g++ {
		if v := <-done; v != first {
			t.Fatalf("concurrent reads disagree: %v vs %v", v, first)
		}
	}
}

func TestSumsGramReset(t *testing.T) {
	m := New(2)
	if err := m.AddRows([]float64{0.125, 0.25, 0.375, 0.5}); err != nil {
		t.Fatal(err)
	}
	if s := m.Sums(); s[0] != 0.5 || s[1] != 0.75 {
		t.Fatalf("Sums = %v", s)
	}
	if g := m.Gram(); g[0] != 10.0/64 || g[1] != 14.0/64 || g[2] != 14.0/64 || g[3] != 20.0/64 {
		t.Fatalf("Gram = %v", g)
	}
	if m.Err() != nil {
		t.Fatal(m.Err())
	}
	m.Reset()
	if m.N() != 0 || m.At(1, 1) != 0 || m.Sum(0) != 0 {
		t.Fatal("Reset left data")
	}
	if err := m.AddRows([]float64{math.Inf(1), 0}); err == nil || m.Err() == nil {
		t.Fatal("Err not recorded")
	}
	m.Reset()
	if m.Err() != nil || m.AddRows([]float64{1, -1}) != nil || m.N() != 1 {
		t.Fatal("Reset did not clear the error")
	}
	for _, f := range []func(){func() { m.At(2, 0) }, func() { m.Sum(-1) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("out-of-range index did not panic")
				}
			}()
			f()
		}()
	}
}

// TestOutOfRangeMidStream: a value outside [−1, 1] after whole panels were
// accumulated poisons the accumulator (no silent clipping, no partial
// result).
func TestOutOfRangeMidStream(t *testing.T) {
	rows := make([]float64, 3*panelRows+1)
	for i := range rows {
		rows[i] = 0.5
	}
	rows[len(rows)-1] = 2
	for _, kn := range kernels() {
		m := newWithKernel(1, kn)
		if err := m.AddRows(rows); err == nil || !strings.Contains(err.Error(), "row 384, column 0: value 2 is outside") {
			t.Fatalf("kernel %s: err = %v", kn.name, err)
		}
		if v := m.At(0, 0); !math.IsNaN(v) {
			t.Fatalf("kernel %s: At = %v, want NaN after a rejected value", kn.name, v)
		}
		if _, err := m.MarshalBinary(); err == nil {
			t.Fatalf("kernel %s: MarshalBinary of a poisoned accumulator succeeded", kn.name)
		}
	}
}

// TestParallelAddRowsError puts one bad value at rows spread over the
// blocks of a parallel AddRows: the error names that row and column
// whichever goroutine took its block, and the accumulator is poisoned.
func TestParallelAddRowsError(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const k = 3
	n := 4*parallelMin + 5
	for _, r := range []int{0, parallelMin/2 - 1, parallelMin / 2, 2*parallelMin + 1, n - 1} {
		rows := randRows(rng, n, k)
		rows[r*k+2] = 1.5
		m := New(k)
		m.SetWorkers(3)
		err := m.AddRows(rows)
		want := fmt.Sprintf("row %d, column 2: value 1.5 is outside [-1, 1]", r)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("bad row %d: err = %v, want %q", r, err, want)
		}
		if m.Err() == nil || !math.IsNaN(m.At(0, 0)) {
			t.Fatalf("bad row %d: accumulator not poisoned", r)
		}
	}
}
