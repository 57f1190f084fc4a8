// Package audit is an empirical privacy auditor: it runs a mechanism many
// times on two neighbouring inputs, picks threshold events, bounds their
// probabilities with Clopper-Pearson intervals and returns a statistically
// valid lower bound on the mechanism's ε. A lower bound above the claimed ε
// proves (at the stated confidence) that the claim is false; a lower bound
// below it is evidence, not proof, that the claim holds.
//
// Method. The samples of each neighbour are split in two parts. The first
// third selects the event: among the thresholds at the pooled quantiles
// {0.05%, 0.1%, …, 1%, 2%, …, 99%, …, 99.95%}, both tails ({x > t} and
// {x ≤ t}) and both orientations (neighbour 0 vs 1 and 1 vs 0), it picks the
// event E with the largest lower bound on the selection part. The other two
// thirds, independent of the choice, then give one-sided Clopper-Pearson bounds
// p_a ≥ Lo(P_a(E)) and p_b ≤ Hi(P_b(E)), each at level (1−confidence)/2, and
//
//	ε ≥ ln((p_a − δ)/p_b),
//
// since (ε, δ)-DP implies P_a(E) ≤ e^ε P_b(E) + δ for every event. Because
// the event is chosen on independent data, the bound holds with probability
// at least `confidence`.
package audit

import (
	"context"
	"fmt"
	"math"
	"sort"
)

// Result is the outcome of an audit.
type Result struct {
	// EpsilonLower is the lower bound on ε (0 if nothing could be shown).
	EpsilonLower float64 `json:"epsilon_lower"`
	// Event: the mechanism output is above (Above) or at most Threshold.
	Threshold float64 `json:"threshold"`
	Above     bool    `json:"above"`
	// Numerator is the neighbour whose probability is bounded below.
	Numerator int `json:"numerator"`
	// PLower and PUpper are the Clopper-Pearson bounds on the evaluation part.
	PLower     float64 `json:"p_lower"`
	PUpper     float64 `json:"p_upper"`
	Trials     int     `json:"trials"`
	Confidence float64 `json:"confidence"`
	Delta      float64 `json:"delta"`
}

// Check returns an error if the audit disproves the claimed ε.
func (r Result) Check(claimedEpsilon float64) error {
	if r.EpsilonLower > claimedEpsilon {
		return fmt.Errorf("audit: mechanism violates its claim: ε ≥ %.4g with confidence %.4g, claimed ε = %.4g (event x %s %.6g, P ≥ %.4g vs ≤ %.4g)",
			r.EpsilonLower, r.Confidence, claimedEpsilon, map[bool]string{true: ">", false: "≤"}[r.Above], r.Threshold, r.PLower, r.PUpper)
	}
	return nil
}

// Audit runs m on neighbour 0 and on neighbour 1, trials times each, and
// returns a lower bound on the ε of a pure ε-DP mechanism at the given
// confidence (e.g. 0.95). trials must be ≥ 1000.
func Audit(ctx context.Context, m func(neighbour int) (float64, error), trials int, confidence float64) (Result, error) {
	return AuditDelta(ctx, m, trials, confidence, 0)
}

// AuditDelta is Audit for an (ε, δ)-DP claim: the bound is
// ln((P_a(E) − δ)/P_b(E)).
func AuditDelta(ctx context.Context, m func(neighbour int) (float64, error), trials int, confidence, delta float64) (Result, error) {
	if m == nil {
		return Result{}, fmt.Errorf("audit: nil mechanism")
	}
	if trials < 1000 {
		return Result{}, fmt.Errorf("audit: need ≥ 1000 trials, got %d", trials)
	}
	if math.IsNaN(confidence) || confidence <= 0 || confidence >= 1 {
		return Result{}, fmt.Errorf("audit: confidence must be in (0, 1), got %v", confidence)
	}
	if math.IsNaN(delta) || delta < 0 || delta >= 1 {
		return Result{}, fmt.Errorf("audit: δ must be in [0, 1), got %v", delta)
	}
	var s [2][]float64
	for nb := 0; nb < 2; nb++ {
		s[nb] = make([]float64, trials)
		for i := range s[nb] {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return Result{}, fmt.Errorf("audit: %w", err)
				}
			}
			v, err := m(nb)
			if err != nil {
				return Result{}, fmt.Errorf("audit: mechanism on neighbour %d, trial %d: %w", nb, i, err)
			}
			if math.IsNaN(v) {
				return Result{}, fmt.Errorf("audit: mechanism on neighbour %d returned NaN", nb)
			}
			s[nb][i] = v
		}
	}
	half := trials / 3 // selection third; the rest bounds the chosen event
	var sel, ev [2][]float64
	for nb := 0; nb < 2; nb++ {
		sel[nb] = append([]float64(nil), s[nb][:half]...)
		ev[nb] = append([]float64(nil), s[nb][half:]...)
		sort.Float64s(sel[nb])
		sort.Float64s(ev[nb])
	}
	alpha := (1 - confidence) / 2
	pooled := append(append([]float64(nil), sel[0]...), sel[1]...)
	sort.Float64s(pooled)
	qs := []float64{0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075}
	for p := 1; p < 100; p++ {
		qs = append(qs, float64(p)/100)
	}
	qs = append(qs, 0.9925, 0.995, 0.997, 0.998, 0.999, 0.9995)

	best := Result{EpsilonLower: math.Inf(-1)}
	for _, q := range qs {
		t := pooled[int(q*float64(len(pooled)-1))]
		for _, above := range []bool{true, false} {
			for num := 0; num < 2; num++ {
				e, _, _ := bound(sel[num], sel[1-num], t, above, alpha, delta)
				if e > best.EpsilonLower {
					best = Result{EpsilonLower: e, Threshold: t, Above: above, Numerator: num}
				}
			}
		}
	}
	e, lo, hi := bound(ev[best.Numerator], ev[1-best.Numerator], best.Threshold, best.Above, alpha, delta)
	best.EpsilonLower = math.Max(e, 0)
	best.PLower, best.PUpper = lo, hi
	best.Trials, best.Confidence, best.Delta = trials, confidence, delta
	return best, nil
}

// count returns how many sorted samples are > t (above) or ≤ t.
func count(sorted []float64, t float64, above bool) int {
	k := sort.Search(len(sorted), func(i int) bool { return sorted[i] > t })
	if above {
		return len(sorted) - k
	}
	return k
}

// bound returns ln((Lo(P_a) − δ)/Hi(P_b)) and the two bounds.
func bound(a, b []float64, t float64, above bool, alpha, delta float64) (eps, lo, hi float64) {
	ka, kb := count(a, t, above), count(b, t, above)
	lo = ClopperPearsonLower(ka, len(a), alpha)
	hi = ClopperPearsonUpper(kb, len(b), alpha)
	if lo-delta <= 0 || hi <= 0 {
		return math.Inf(-1), lo, hi
	}
	return math.Log((lo - delta) / hi), lo, hi
}
