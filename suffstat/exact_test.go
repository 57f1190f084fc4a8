package suffstat

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactStats computes, independently of the accumulator (math.RoundToEven
// and big.Int instead of slices and kernels), the statistics the package
// defines: Σ q(z_i) and Σ q(z_i) q(z_j) with q(z) = round-half-even(z·2⁴⁶)·2⁻⁴⁶,
// each rounded once to the nearest float64.
func exactStats(rows []float64, k int) (sum []float64, gram [][]float64) {
	n := len(rows) / k
	s := make([]big.Int, k)
	g := make([][]big.Int, k)
	for i := range g {
		g[i] = make([]big.Int, k)
	}
	q := make([]big.Int, k)
	var p big.Int
	for r := 0; r < n; r++ {
		for i := 0; i < k; i++ {
			q[i].SetInt64(int64(math.RoundToEven(rows[r*k+i] * 0x1p46)))
			s[i].Add(&s[i], &q[i])
		}
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				g[i][j].Add(&g[i][j], p.Mul(&q[i], &q[j]))
			}
		}
	}
	round := func(v *big.Int, e int) float64 {
		f := new(big.Float).SetInt(v) // exact
		f.SetMantExp(f, -e)
		x, _ := f.Float64() // nearest, ties to even
		return x
	}
	sum = make([]float64, k)
	gram = make([][]float64, k)
	for i := range sum {
		sum[i] = round(&s[i], 46)
		gram[i] = make([]float64, k)
		for j := range gram[i] {
			gram[i][j] = round(&g[i][j], 92)
		}
	}
	return sum, gram
}

// hardRows makes rows of values that stress the rounding: exact midpoints
// of the 2⁻⁴⁶ grid (ties), neighbours of midpoints, ±1, ±0, subnormals,
// tiny values, and uniform values.
func hardRows(rng *rand.Rand, n, k int) []float64 {
	rows := make([]float64, n*k)
	for i := range rows {
		switch rng.IntN(8) {
		case 0:
			rows[i] = float64(2*rng.Int64N(1<<46)-(1<<46)+1) * 0x1p-47 // a midpoint
		case 1:
			m := float64(2*rng.Int64N(1<<46)-(1<<46)+1) * 0x1p-47
			rows[i] = math.Nextafter(m, float64(rng.IntN(3)-1))
		case 2:
			rows[i] = float64(2*rng.IntN(2) - 1)
		case 3:
			rows[i] = math.Copysign(0, float64(rng.IntN(2))-0.5)
		case 4:
			rows[i] = math.Ldexp(rng.Float64()-0.5, -rng.IntN(1074))
		default:
			rows[i] = 2*rng.Float64() - 1
		}
	}
	return rows
}

// TestExactAgainstIndependent checks every kernel, bit for bit, against the
// independent big.Int computation of the statistics the package defines.
func TestExactAgainstIndependent(t *testing.T) {
	for _, tc := range []struct{ n, k int }{{1, 1}, {127, 3}, {129, 5}, {1000, 7}, {3000, 17}, {300, 40}} {
		rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.k)))
		rows := hardRows(rng, tc.n, tc.k)
		sum, gram := exactStats(rows, tc.k)
		for _, kn := range kernels() {
			m := newWithKernel(tc.k, kn)
			if err := m.AddRows(rows); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.k; i++ {
				if got := m.Sum(i); math.Float64bits(got) != math.Float64bits(sum[i]) {
					t.Fatalf("%s n=%d k=%d: Sum(%d) = %v, want %v", kn.name, tc.n, tc.k, i, got, sum[i])
				}
				for j := 0; j < tc.k; j++ {
					if got := m.At(i, j); math.Float64bits(got) != math.Float64bits(gram[i][j]) {
						t.Fatalf("%s n=%d k=%d: At(%d,%d) = %v, want %v", kn.name, tc.n, tc.k, i, j, got, gram[i][j])
					}
				}
			}
		}
	}
}

// TestOrderIndependence is the property the cluster pipeline relies on:
// rows split at random into random chunks, accumulated with random kernels,
// worker counts and AddRows batch sizes, some shipped through
// MarshalBinary, and merged in a random tree, give the same bytes (and so
// the same values, to the last bit) as one serial pass.
func TestOrderIndependence(t *testing.T) {
	const k = 6
	n := 3*parallelMin + 777
	rng := rand.New(rand.NewPCG(21, 22))
	rows := hardRows(rng, n, k)
	ref := New(k)
	ref.SetWorkers(1)
	if err := ref.AddRows(rows); err != nil {
		t.Fatal(err)
	}
	want, err := ref.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	kns := kernels()
	trials := 30
	if testing.Short() {
		trials = 8
	}
	for trial := 0; trial < trials; trial++ {
		// Random cut points.
		cuts := []int{0, n}
		for c := rng.IntN(20); c > 0; c-- {
			cuts = append(cuts, rng.IntN(n+1))
		}
		sortInts(cuts)
		var parts []*Moments
		for c := 0; c+1 < len(cuts); c++ {
			lo, hi := cuts[c], cuts[c+1]
			p := newWithKernel(k, kns[rng.IntN(len(kns))])
			p.SetWorkers(1 + rng.IntN(3))
			for r := lo; r < hi; {
				b := min(hi-r, 1+rng.IntN(3*parallelMin))
				if err := p.AddRows(rows[r*k : (r+b)*k]); err != nil {
					t.Fatal(err)
				}
				r += b
				if rng.IntN(4) == 0 {
					_ = p.Sum(0) // a read mid-stream
				}
			}
			if rng.IntN(2) == 0 {
				b, err := p.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				p = new(Moments)
				if err := p.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
			}
			parts = append(parts, p)
		}
		// Merge in a random tree.
		for len(parts) > 1 {
			i, j := rng.IntN(len(parts)), rng.IntN(len(parts)-1)
			if j >= i {
				j++
			}
			if err := parts[i].Merge(parts[j]); err != nil {
				t.Fatal(err)
			}
			parts[j] = parts[len(parts)-1]
			parts = parts[:len(parts)-1]
		}
		got, err := parts[0].MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("trial %d (%d chunks): merged state differs from the single pass", trial, len(cuts)-1)
		}
		for i := 0; i < k; i++ {
			if math.Float64bits(parts[0].Sum(i)) != math.Float64bits(ref.Sum(i)) {
				t.Fatalf("trial %d: Sum(%d) differs", trial, i)
			}
		}
	}
}

func sortInts(x []int) {
	for i := 1; i < len(x); i++ {
		for j := i; j > 0 && x[j] < x[j-1]; j-- {
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
}

// TestAccFloat checks the 192-bit to float64 rounding against big.Float on
// random magnitudes, exact ties and their neighbours, both signs.
func TestAccFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	check := func(a acc, e int) {
		t.Helper()
		v := new(big.Int).SetBits(nil)
		for w := 2; w >= 0; w-- {
			v.Lsh(v, 64)
			v.Or(v, new(big.Int).SetUint64(a[w]))
		}
		if a.neg() {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 192))
		}
		f := new(big.Float).SetInt(v)
		f.SetMantExp(f, -e)
		want, _ := f.Float64()
		if got := a.float(e); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%x·2^-%d: got %v, want %v", a, e, got, want)
		}
	}
	for it := 0; it < 20000; it++ {
		var a acc
		bitsLen := 1 + rng.IntN(190)
		for w := 0; w < 3; w++ {
			a[w] = rng.Uint64()
		}
		// Keep bitsLen bits, then optionally make the low part a tie.
		for b := bitsLen; b < 192; b++ {
			a[b/64] &^= 1 << uint(b%64)
		}
		if bitsLen > 54 && rng.IntN(2) == 0 {
			drop := bitsLen - 53
			for b := 0; b < drop-1; b++ {
				a[b/64] &^= 1 << uint(b%64)
			}
			a[(drop-1)/64] |= 1 << uint((drop-1)%64)
			if rng.IntN(2) == 0 { // neighbour of the tie
				var one acc
				one.addShifted(int64(rng.IntN(3)-1), 0)
				a.add(&one)
			}
		}
		if rng.IntN(2) == 0 {
			var z acc
			z.addShifted(0, 0)
			m := a
			a = acc{}
			var c uint64
			a[0], c = bitsSub(z[0], m[0], 0)
			a[1], c = bitsSub(z[1], m[1], c)
			a[2], _ = bitsSub(z[2], m[2], c)
		}
		check(a, []int{0, 46, 92}[rng.IntN(3)])
	}
}

func bitsSub(x, y, borrow uint64) (uint64, uint64) {
	d := x - y - borrow
	return d, ((^x & y) | (^(x ^ y) & d)) >> 63
}
