package dppp

import (
	"math"
	"math/big"
)

// LastFit returns the largest m in [lo, hi] with ok(m), for ok true at lo
// and monotone (true up to the answer, false after it). Every decision is
// ok's; score only guesses where the answer is: a smooth, increasing
// function of m that is ≤ 0 about where ok holds (e.g. the spent fraction of
// a budget minus 1). The guess is the root of the line through the bracket's
// ends (regula falsi, Illinois variant: an end kept twice has its score
// halved), and each guess m is checked with its neighbour (m and m + 1, or
// m − 1 and m), so an accurate guess ends the search at once. With
// accountant-driven ok and score (each call a PLD composition) this takes a
// handful of compositions where bisection takes log₂(hi − lo).
func LastFit(lo, hi int, ok func(int) bool, score func(int) float64) int {
	if hi <= lo || ok(hi) {
		return max(lo, hi)
	}
	// Invariant: ok(lo), !ok(hi).
	slo, shi := score(lo), score(hi)
	side := 0
	for hi-lo > 1 {
		m := lo + (hi-lo)/2
		if d := shi - slo; d > 0 && !math.IsNaN(d) && !math.IsInf(d, 0) {
			m = lo + int(math.Round(float64(hi-lo)*(-slo)/d))
		}
		m = min(max(m, lo+1), hi-1)
		if ok(m) {
			if !ok(m + 1) {
				return m
			}
			lo, slo = m+1, score(m+1)
			if side == -1 {
				shi /= 2
			}
			side = -1
		} else {
			if m-1 > lo && ok(m-1) {
				return m - 1
			}
			hi, shi = max(m-1, lo+1), score(max(m-1, lo+1))
			if m-1 <= lo {
				return lo
			}
			if side == 1 {
				slo /= 2
			}
			side = 1
		}
	}
	return lo
}

// QueriesLeft returns how many more queries a run that has answered k can
// answer under a ledger file's budget: the largest m ≤ maxQueries − k such
// that the other entries' exact sum plus the run's total after k + m
// queries (charge(k + m), never below floor, the total the run already
// charged) fits budget in ε and in δ. The sums are exact (big.Rat), as
// ledger.Ledger.Raise decides; the float64 spent fractions only guide the
// search (LastFit). others are the file's other entries (ε, δ).
func QueriesLeft(charge func(int) (Guarantee, error), others []Guarantee, budget Guarantee, k, maxQueries int, floor float64) int {
	var oe, od float64 // the others' totals (for the guesses only)
	for _, c := range others {
		oe, od = oe+c.Epsilon, od+c.Delta
	}
	fits := func(m int) bool {
		g, err := charge(k + m)
		if err != nil {
			return false
		}
		eps, del := new(big.Rat).SetFloat64(math.Max(g.Epsilon, floor)), new(big.Rat).SetFloat64(g.Delta)
		for _, c := range others {
			eps.Add(eps, new(big.Rat).SetFloat64(c.Epsilon))
			del.Add(del, new(big.Rat).SetFloat64(c.Delta))
		}
		return eps.Cmp(new(big.Rat).SetFloat64(budget.Epsilon)) <= 0 && del.Cmp(new(big.Rat).SetFloat64(budget.Delta)) <= 0
	}
	score := func(m int) float64 {
		g, err := charge(k + m)
		if err != nil || k+m == 0 {
			return -1
		}
		return math.Max((oe+math.Max(g.Epsilon, floor))/budget.Epsilon, (od+g.Delta)/budget.Delta) - 1
	}
	// RunCharge grows with k (TestRunCharge); fits decides, score guesses.
	return LastFit(0, max(0, maxQueries-k), fits, score)
}
