package roundup

import (
	"math"
	"math/big"
	"testing"
)

// smallestAbove reports whether f is the smallest float64 ≥ r.
func smallestAbove(f float64, r *big.Rat) bool {
	if new(big.Rat).SetFloat64(f).Cmp(r) < 0 {
		return false
	}
	below := math.Nextafter(f, math.Inf(-1))
	return new(big.Rat).SetFloat64(below).Cmp(r) < 0
}

func TestRat(t *testing.T) {
	for _, r := range []*big.Rat{
		big.NewRat(1, 2), big.NewRat(1, 3), big.NewRat(2, 3), big.NewRat(1, 10),
		big.NewRat(7, 1000003), big.NewRat(123456789, 1000),
	} {
		if got := Rat(r); !smallestAbove(got, r) {
			t.Errorf("Rat(%s) = %v is not the smallest float64 ≥ it", r.FloatString(25), got)
		}
	}
	if got := Rat(big.NewRat(1, 2)); got != 0.5 {
		t.Errorf("an exact value moved: %v", got)
	}
	huge := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 1100))
	if got := Rat(huge); !math.IsInf(got, 1) {
		t.Errorf("beyond float64: %v, want +Inf", got)
	}
}

func TestMul(t *testing.T) {
	for _, xs := range [][]float64{{0.1, 0.3}, {1.0 / 3, 3}, {0.7, 0.7, 0.5}} {
		exact := big.NewRat(1, 1)
		for _, x := range xs {
			exact.Mul(exact, new(big.Rat).SetFloat64(x))
		}
		if got := Mul(xs...); !smallestAbove(got, exact) {
			t.Errorf("Mul%v = %v is not the smallest float64 ≥ %s", xs, got, exact.FloatString(30))
		}
	}
	if Mul() != 1 {
		t.Errorf("empty product %v", Mul())
	}
}
