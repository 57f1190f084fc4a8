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
//
// AuditGaussianDP tests a stronger claim that every Gaussian mechanism
// makes: μ-Gaussian differential privacy (Dong, Roth & Su 2019), i.e. for
// every event E, P_a(E) ≤ Φ(Φ⁻¹(P_b(E)) + μ). Its lower bound
// μ ≥ Φ⁻¹(Lo(P_a(E))) − Φ⁻¹(Hi(P_b(E))) uses events of moderate probability,
// where Clopper-Pearson intervals are tight, so it has far more power than
// the (ε, δ) audit: it catches a Gaussian mechanism with half its noise in
// 20,000 trials, which the (ε, δ) audit at δ = 1e-5 does not.
//
// What an audit can and cannot show (PRIVACY-NOTES item 22). A lower bound
// above the claim disproves the claim. A pass proves nothing: the audit sees
// one neighbouring pair, one scalar statistic and finitely many trials, and
// it is blind to failures that live in rare events (probability ≲ 10/trials),
// in other neighbouring pairs, or in structure the statistic discards
// (lattice or floating-point artefacts, noise recoverable from the output).
// dplearn's guarantees rest on exact computation of each mechanism's privacy
// profile and on attacks aimed at the implementation; the audit is a smoke
// test.
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
	// MuLower is the lower bound on the Gaussian-DP μ (AuditGaussianDP
	// only; EpsilonLower is then 0).
	MuLower float64 `json:"mu_lower,omitempty"`
}

// CheckMu returns an error if the audit disproves a claimed μ-Gaussian-DP
// guarantee.
func (r Result) CheckMu(claimedMu float64) error {
	if r.MuLower > claimedMu {
		return fmt.Errorf("audit: mechanism violates its claim: μ ≥ %.4g with confidence %.4g, claimed μ = %.4g (event x %s %.6g, P ≥ %.4g vs ≤ %.4g)",
			r.MuLower, r.Confidence, claimedMu, map[bool]string{true: ">", false: "≤"}[r.Above], r.Threshold, r.PLower, r.PUpper)
	}
	return nil
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
	if math.IsNaN(delta) || delta < 0 || delta >= 1 {
		return Result{}, fmt.Errorf("audit: δ must be in [0, 1), got %v", delta)
	}
	score := func(lo, hi float64) float64 {
		if lo-delta <= 0 || hi <= 0 {
			return math.Inf(-1)
		}
		return math.Log((lo - delta) / hi)
	}
	r, err := run(ctx, m, trials, confidence, score)
	r.Delta = delta
	r.EpsilonLower = r.score
	return r.Result, err
}

// AuditGaussianDP runs m on both neighbours, trials times each, and returns
// a lower bound (Result.MuLower) on the μ of a μ-Gaussian-DP mechanism at
// the given confidence: for the chosen event E,
// μ ≥ Φ⁻¹(Lo(P_a(E))) − Φ⁻¹(Hi(P_b(E))), since μ-GDP means the trade-off
// function is at least G_μ(α) = Φ(Φ⁻¹(1−α) − μ), i.e. P_a(E) ≤
// Φ(Φ⁻¹(P_b(E)) + μ) for every event E.
func AuditGaussianDP(ctx context.Context, m func(neighbour int) (float64, error), trials int, confidence float64) (Result, error) {
	score := func(lo, hi float64) float64 {
		if lo <= 0 || hi >= 1 {
			return math.Inf(-1)
		}
		return probit(lo) - probit(hi)
	}
	r, err := run(ctx, m, trials, confidence, score)
	r.MuLower = r.score
	return r.Result, err
}

// probit is Φ⁻¹.
func probit(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

type scored struct {
	Result
	score float64
}

// run samples the mechanism, selects the event maximising score on the
// selection third and evaluates it on the other two thirds.
func run(ctx context.Context, m func(neighbour int) (float64, error), trials int, confidence float64, score func(lo, hi float64) float64) (scored, error) {
	if m == nil {
		return scored{}, fmt.Errorf("audit: nil mechanism")
	}
	if trials < 1000 {
		return scored{}, fmt.Errorf("audit: need ≥ 1000 trials, got %d", trials)
	}
	if math.IsNaN(confidence) || confidence <= 0 || confidence >= 1 {
		return scored{}, fmt.Errorf("audit: confidence must be in (0, 1), got %v", confidence)
	}
	var s [2][]float64
	for nb := 0; nb < 2; nb++ {
		s[nb] = make([]float64, trials)
		for i := range s[nb] {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return scored{}, fmt.Errorf("audit: %w", err)
				}
			}
			v, err := m(nb)
			if err != nil {
				return scored{}, fmt.Errorf("audit: mechanism on neighbour %d, trial %d: %w", nb, i, err)
			}
			if math.IsNaN(v) {
				return scored{}, fmt.Errorf("audit: mechanism on neighbour %d returned NaN", nb)
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

	best := scored{score: math.Inf(-1)}
	for _, q := range qs {
		t := pooled[int(q*float64(len(pooled)-1))]
		for _, above := range []bool{true, false} {
			for num := 0; num < 2; num++ {
				lo, hi := bounds(sel[num], sel[1-num], t, above, alpha)
				if e := score(lo, hi); e > best.score {
					best = scored{Result: Result{Threshold: t, Above: above, Numerator: num}, score: e}
				}
			}
		}
	}
	lo, hi := bounds(ev[best.Numerator], ev[1-best.Numerator], best.Threshold, best.Above, alpha)
	best.score = math.Max(score(lo, hi), 0)
	best.PLower, best.PUpper = lo, hi
	best.Trials, best.Confidence = trials, confidence
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

// bounds returns the Clopper-Pearson lower bound on P_a(E) and upper bound
// on P_b(E) for the event E = {x > t} (above) or {x ≤ t}.
func bounds(a, b []float64, t float64, above bool, alpha float64) (lo, hi float64) {
	ka, kb := count(a, t, above), count(b, t, above)
	return ClopperPearsonLower(ka, len(a), alpha), ClopperPearsonUpper(kb, len(b), alpha)
}
