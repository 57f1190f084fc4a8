// Package roundup rounds exact rational results up to float64, for privacy
// figures that must never be printed or charged below their true value
// (the accountants' ε, δ and ρ, the ledger's totals).
package roundup

import (
	"math"
	"math/big"
)

// Rat returns the smallest float64 ≥ r (+Inf if r exceeds the float64
// range).
func Rat(r *big.Rat) float64 {
	f, _ := r.Float64()
	if math.IsInf(f, 1) {
		return f
	}
	if new(big.Rat).SetFloat64(f).Cmp(r) < 0 {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// Mul returns the product of nonnegative finite factors rounded up: the
// exact product is at most the result.
func Mul(xs ...float64) float64 {
	p := big.NewRat(1, 1)
	for _, x := range xs {
		p.Mul(p, new(big.Rat).SetFloat64(x))
	}
	return Rat(p)
}
