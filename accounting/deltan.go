package accounting

import (
	"fmt"
	"math"
)

// CheckDeltaN refuses a δ that is not below 1/N for N records (rows, or
// privacy units when there is a unit): an (ε, δ) guarantee with δ ≥ 1/N
// permits the mechanism that publishes one record, chosen at random, in the
// clear (each record's output distribution then moves by at most 1/N ≤ δ
// in total variation), so such a "guarantee" protects no one. It is the one
// rule for δ against N of every front end: package fit (hence the CLI, Beam
// and the experiments) and the capeFM site when it accepts a roster.
// δ = 0 or an unknown N (n ≤ 0) passes.
func CheckDeltaN(delta float64, n int64) error {
	if delta > 0 && n > 0 && delta >= 1/float64(n) {
		noun := "rows"
		if n == 1 {
			noun = "row"
		}
		return fmt.Errorf("--delta %g is not below 1/N = %g (N = %d %s): an (ε, δ) guarantee with δ ≥ 1/N permits publishing a whole record with probability δ; choose δ well below 1/N, e.g. %g",
			delta, 1/float64(n), n, noun, SuggestDelta(n))
	}
	return nil
}

// SuggestDelta returns 1/(10·N) rounded down to a power of ten: a common
// choice of δ for N records, below the bound CheckDeltaN enforces.
func SuggestDelta(n int64) float64 {
	return math.Pow(10, math.Floor(math.Log10(1/(10*float64(n)))))
}
