package secagg

import (
	"fmt"
	"math"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"testing"
)

func TestEncodingOverflowBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Encoding
		ok   bool
	}{
		{"typical", Encoding{FracBits: 32, Bound: 1000, Parties: 1000}, true},
		// 2 · 2^31·2^31 = 2^63 > 2^63 − 1.
		{"at the edge", Encoding{FracBits: 31, Bound: math.Ldexp(1, 31), Parties: 2}, false},
		{"just inside", Encoding{FracBits: 31, Bound: math.Ldexp(1, 31) - 1, Parties: 2}, true},
		// 3 · 2^61 < 2^63 − 1 ≤ 4 · 2^61.
		{"three at 2^61", Encoding{FracBits: 0, Bound: math.Ldexp(1, 61), Parties: 3}, true},
		{"four at 2^61", Encoding{FracBits: 0, Bound: math.Ldexp(1, 61), Parties: 4}, false},
		{"bound beyond 2^63", Encoding{FracBits: 10, Bound: math.Ldexp(1, 60), Parties: 1}, false},
		{"too many parties", Encoding{FracBits: 40, Bound: 1, Parties: 1 << 23}, false},
		{"frac bits", Encoding{FracBits: 63, Bound: 1e-9, Parties: 1}, false},
		{"zero bound", Encoding{FracBits: 8, Bound: 0, Parties: 1}, false},
		{"NaN bound", Encoding{FracBits: 8, Bound: math.NaN(), Parties: 1}, false},
		{"no parties", Encoding{FracBits: 8, Bound: 1, Parties: 0}, false},
	} {
		if err := tc.e.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// The worst case the bound admits sums exactly: n parties all at +Bound or
// all at −Bound.
func TestEncodingWorstCaseSumIsExact(t *testing.T) {
	e := Encoding{FracBits: 20, Bound: math.Ldexp(1, 42) - 1, Parties: 2}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{e.Bound, -e.Bound} {
		x, err := e.Encode([]float64{v})
		if err != nil {
			t.Fatal(err)
		}
		sum := []uint64{x[0] + x[0]}
		if got := e.Decode(sum)[0]; got != 2*v {
			t.Fatalf("2 × %v decoded as %v", v, got)
		}
	}
}

func TestEncodingRoundTripAndRejections(t *testing.T) {
	e := Encoding{FracBits: 16, Bound: 10, Parties: 3}
	in := []float64{0, 1.5, -2.25, 10, -10, math.Ldexp(1, -16), math.Ldexp(1, -18)}
	w, err := e.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	got := e.Decode(w)
	for i, x := range in {
		if math.Abs(got[i]-x) > math.Ldexp(0.5, -16) {
			t.Errorf("%v decoded as %v", x, got[i])
		}
	}
	if got[1] != 1.5 || got[2] != -2.25 {
		t.Errorf("grid values not exact: %v", got)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 10.000001, -11} {
		_, err := e.Encode([]float64{0, bad})
		if err == nil || !strings.Contains(err.Error(), "coordinate 1") {
			t.Errorf("%v: got %v", bad, err)
		}
	}
	if b := e.SumBound(); b < 30 || b > 30.001 {
		t.Errorf("SumBound = %v", b)
	}
}

// Property: for values on the 2^−FracBits grid, the decoded fixed-point sum
// equals the exact rational sum (independent computation with big.Rat).
func TestEncodingSumMatchesExactRationalSum(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(5, 8))
	e := Encoding{FracBits: 24, Bound: 1e6, Parties: 50}
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(e.Parties)
		exact := new(big.Rat)
		var sum uint64
		for range n {
			v := math.Ldexp(float64(rng.Int64N(int64(2*e.Bound)*(1<<24))-int64(e.Bound)*(1<<24)), -24)
			w, err := e.Encode([]float64{v})
			if err != nil {
				t.Fatal(err)
			}
			sum += w[0]
			exact.Add(exact, new(big.Rat).SetFloat64(v))
		}
		got := new(big.Rat).SetFloat64(e.Decode([]uint64{sum})[0])
		if got.Cmp(exact) != 0 {
			t.Fatalf("trial %d: decoded %v, exact %v", trial, got.FloatString(10), exact.FloatString(10))
		}
	}
}

func ExampleEncoding() {
	// 1000 parties, each coordinate in [−50, 50], resolution 2^−32.
	enc := Encoding{FracBits: 32, Bound: 50, Parties: 1000}
	if err := enc.Validate(); err != nil {
		panic(err)
	}
	a, _ := enc.Encode([]float64{1.25, -49.5})
	b, _ := enc.Encode([]float64{0.75, -0.5})
	sum := []uint64{a[0] + b[0], a[1] + b[1]} // what secure aggregation computes
	fmt.Println(enc.Decode(sum))
	// A bound that could overflow is refused before anything is summed.
	fmt.Println(Encoding{FracBits: 40, Bound: 1e6, Parties: 1000}.Validate() != nil)
	// Output:
	// [2 -50]
	// true
}
