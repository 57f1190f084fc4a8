package wire

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestRemainingEpsilonRoundsDown: the remainder printed to analysts is the
// largest float64 not above budget − spent (computed exactly), and 0 when
// nothing is left.
func TestRemainingEpsilonRoundsDown(t *testing.T) {
	cases := [][2]float64{{1, 0.25}, {1, 1}, {1, 2}, {0.3, 0.1}, {1, 0x1p-60}, {0.7, 0.6}}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		cases = append(cases, [2]float64{r.Float64() * 10, r.Float64() * 10})
	}
	for _, c := range cases {
		got := LedgerState{BudgetEpsilon: c[0], SpentEpsilon: c[1]}.RemainingEpsilon()
		exact := new(big.Rat).Sub(new(big.Rat).SetFloat64(c[0]), new(big.Rat).SetFloat64(c[1]))
		if exact.Sign() <= 0 {
			if got != 0 {
				t.Errorf("budget %v spent %v: remaining %v, want 0", c[0], c[1], got)
			}
			continue
		}
		up := math.Nextafter(got, math.Inf(1))
		if new(big.Rat).SetFloat64(got).Cmp(exact) > 0 || new(big.Rat).SetFloat64(up).Cmp(exact) <= 0 {
			t.Errorf("budget %v spent %v: remaining %v is not the largest float64 ≤ %s", c[0], c[1], got, exact.FloatString(25))
		}
	}
	if got := (LedgerState{BudgetEpsilon: 1, SpentEpsilon: 0x1p-60}).RemainingEpsilon(); got != math.Nextafter(1, 0) {
		t.Errorf("1 − 2^−60: %v", got)
	}
}
