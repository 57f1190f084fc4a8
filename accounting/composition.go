package accounting

import (
	"fmt"
	"math"
)

// BasicComposition returns (Σε, Σδ): the sequential (adaptive) composition
// of (εᵢ, δᵢ)-DP mechanisms (Dwork & Roth, Theorem 3.16).
func BasicComposition(parts ...EpsDelta) (EpsDelta, error) {
	var out EpsDelta
	for i, p := range parts {
		if err := p.Validate(); err != nil {
			return EpsDelta{}, fmt.Errorf("accounting: part %d: %w", i, err)
		}
		out.Epsilon += p.Epsilon
		out.Delta += p.Delta
	}
	if out.Delta >= 1 {
		return EpsDelta{}, fmt.Errorf("accounting: composed δ = %v ≥ 1: no guarantee", out.Delta)
	}
	return out, nil
}

func checkHomogeneous(eps, delta float64, k int, slack float64) error {
	if err := (EpsDelta{eps, delta}).Validate(); err != nil {
		return err
	}
	if k < 1 {
		return fmt.Errorf("accounting: number of compositions must be ≥ 1, got %d", k)
	}
	return checkDelta(slack)
}

// AdvancedComposition returns the guarantee of the k-fold adaptive
// composition of (ε, δ)-DP mechanisms by Dwork, Rothblum & Vadhan 2010
// (Dwork & Roth Theorem 3.20): (ε√(2k ln(1/δ′)) + kε(e^ε − 1), kδ + δ′).
func AdvancedComposition(eps, delta float64, k int, deltaPrime float64) (EpsDelta, error) {
	if err := checkHomogeneous(eps, delta, k, deltaPrime); err != nil {
		return EpsDelta{}, err
	}
	fk := float64(k)
	out := EpsDelta{
		Epsilon: eps*math.Sqrt(2*fk*math.Log(1/deltaPrime)) + fk*eps*math.Expm1(eps),
		Delta:   fk*delta + deltaPrime,
	}
	if out.Delta >= 1 {
		return EpsDelta{}, fmt.Errorf("accounting: composed δ = %v ≥ 1: no guarantee", out.Delta)
	}
	return out, nil
}

// OptimalComposition returns the smallest ε_g such that the k-fold adaptive
// composition of (ε, δ)-DP mechanisms is (ε_g, deltaTotal)-DP, by the exact
// characterisation of Kairouz, Oh & Viswanath 2015 (Theorem 3.3): the
// composition is (ε_g, 1 − (1−δ)^k (1 − δ_RR(ε_g)))-DP, and no better, where
// δ_RR is the privacy profile of k-fold randomised response with parameter ε,
//
//	δ_RR(ε_g) = Σ_{l=0}^{k} C(k,l) max(0, p^{k−l}(1−p)^l − e^{ε_g} p^l (1−p)^{k−l}),
//
// p = e^ε/(1+e^ε). The sum is computed in log space; ε_g is found by
// bisection to relative precision 1e-10 and rounded up. k ≤ 10⁶.
func OptimalComposition(eps, delta float64, k int, deltaTotal float64) (float64, error) {
	if err := checkHomogeneous(eps, delta, k, deltaTotal); err != nil {
		return 0, err
	}
	if k > 1_000_000 {
		return 0, fmt.Errorf("accounting: optimal composition supports k ≤ 1e6, got %d", k)
	}
	if eps == 0 {
		if d := 1 - math.Pow(1-delta, float64(k)); d <= deltaTotal {
			return 0, nil
		}
		return 0, fmt.Errorf("accounting: k·δ already exceeds δ_total=%v", deltaTotal)
	}
	// Need δ_RR(ε_g) ≤ 1 − (1 − deltaTotal)/(1−δ)^k.
	logSurvive := float64(k) * math.Log1p(-delta)
	target := 1 - (1-deltaTotal)/math.Exp(logSurvive)
	if target < 0 {
		return 0, fmt.Errorf("accounting: k=%d mechanisms with δ=%v already exceed δ_total=%v", k, delta, deltaTotal)
	}
	deltaRR := func(eg float64) float64 { return kovDeltaRR(eps, k, eg) }
	ok := func(eg float64) bool { return deltaRR(eg) <= target }
	hi := float64(k) * eps
	if ok(0) {
		return 0, nil
	}
	return bisect(0, hi, 1e-10, ok)
}

// kovDeltaRR is the privacy profile δ(ε_g) of k-fold randomised response with
// parameter ε (see OptimalComposition).
func kovDeltaRR(eps float64, k int, eg float64) float64 {
	lp := eps - logAdd(0, eps) // ln p
	l1p := -logAdd(0, eps)     // ln(1−p)
	var s float64
	for l := 0; l <= k; l++ {
		lb := logBinom(float64(k), float64(l))
		a := lb + float64(k-l)*lp + float64(l)*l1p
		b := lb + eg + float64(l)*lp + float64(k-l)*l1p
		if a > b {
			s += math.Exp(a) * -math.Expm1(b-a)
		}
	}
	return s
}
