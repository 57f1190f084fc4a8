package accounting

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dplearn/dplearn/internal/roundup"
)

// Gaussian differential privacy (Dong, Roth & Su 2019/2022, "Gaussian
// differential privacy", JRSS B).
//
// A mechanism is μ-GDP if distinguishing D from D' is never easier than
// distinguishing N(0, 1) from N(μ, 1). The Gaussian mechanism with L2
// sensitivity Δ and noise σ is exactly (Δ/σ)-GDP, and its privacy loss is
// N(μ²/2, μ²). Its (ε, δ) profile is the analytic Gaussian curve of Balle &
// Wang 2018 (DRS Cor. 2.13):
//
//	δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ),
//
// and it is the tightest (ε, δ) statement possible for that mechanism.
//
// Composition (DRS Cor. 3.3): k mechanisms that are μ_1, …, μ_k-GDP, run
// one after the other and each chosen adaptively from the outputs of the
// previous ones, are together exactly √(μ_1² + … + μ_k²)-GDP. For Gaussian
// releases (μ_i = Δ_i/σ_i) this is exact, not a bound: it is the profile of
// one Gaussian mechanism. Use it for every composition of Gaussian releases
// only (several Gaussian blocks, IRLS iterations, full-batch noisy gradient
// descent, CAPE rounds via CAPEGDPMu). It does not apply to Laplace
// releases; for mixtures of Laplace and Gaussian releases add their zCDP ρ's
// (GaussianZCDP, PureToZCDP, ComposeZCDP) and convert with
// ZCDP.EpsilonImproved, the default for mixtures.
//
// Neighbouring relation: whatever the sensitivities Δ_i were computed for
// (dplearn uses replace-one throughout); GDP composes under any fixed
// relation.
//
// Rounding: GDPMu rounds up, GDPEpsilon rounds up, GDPMuFor rounds down and
// is verified, so every figure errs on the safe side. No grid slack of
// dplearn's samplers is included: pass ratios computed from inflated
// sensitivities (see GaussianSigma).

// GDPMu returns μ = √(Σ μ_i²), the Gaussian-DP parameter of the adaptive
// composition of μ_i-GDP mechanisms (for a Gaussian release μ_i = Δ_i/σ_i).
// The sum of squares is exact and the square root is rounded up, so the
// result is never below the true μ. Each ratio must be finite and ≥ 0, and
// at least one must be given.
func GDPMu(ratios ...float64) (float64, error) {
	if len(ratios) == 0 {
		return 0, fmt.Errorf("accounting: GDP composition of nothing")
	}
	sum := new(big.Rat)
	for i, r := range ratios {
		if !finite(r) || r < 0 {
			return 0, fmt.Errorf("accounting: GDP ratio %d must be finite and ≥ 0, got %v", i, r)
		}
		x := new(big.Rat).SetFloat64(r)
		sum.Add(sum, x.Mul(x, x))
	}
	return sqrtUp(sum), nil
}

// GDPDelta returns δ(ε) of a μ-GDP mechanism: the analytic Gaussian curve
// at Δ/σ = μ (exact for a Gaussian mechanism). It is 0 at μ = 0.
func GDPDelta(mu, epsilon float64) (float64, error) {
	if !finite(mu) || mu < 0 {
		return 0, fmt.Errorf("accounting: GDP μ must be finite and ≥ 0, got %v", mu)
	}
	if !finite(epsilon) || epsilon < 0 {
		return 0, fmt.Errorf("accounting: ε must be finite and ≥ 0, got %v", epsilon)
	}
	if mu == 0 {
		return 0, nil
	}
	return analyticDelta(epsilon, mu), nil
}

// GDPEpsilon returns the smallest ε (relative precision 1e-12, rounded up)
// such that a μ-GDP mechanism is (ε, δ)-DP; 0 if δ already covers the total
// variation distance.
func GDPEpsilon(mu, delta float64) (float64, error) {
	if !finite(mu) || mu < 0 {
		return 0, fmt.Errorf("accounting: GDP μ must be finite and ≥ 0, got %v", mu)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if mu == 0 {
		return 0, nil
	}
	ok := func(e float64) bool { return analyticDelta(e, mu) <= delta }
	if ok(0) {
		return 0, nil
	}
	hi := 1.0
	for !ok(hi) {
		hi *= 2
		if hi > 1e12 {
			return 0, fmt.Errorf("accounting: no ε achieves δ=%g with GDP μ=%g", delta, mu)
		}
	}
	e, err := bisect(0, hi, 1e-12, ok)
	if err != nil {
		return 0, err
	}
	return math.Nextafter(e, math.Inf(1)), nil
}

// GDPMuFor returns the largest μ (relative precision about 1e-13, rounded
// down) such that a μ-GDP mechanism is (ε, δ)-DP: GDPDelta(μ, ε) ≤ δ is
// verified on the returned value. To calibrate k Gaussian releases with
// sensitivities Δ_i jointly, choose σ_i with √Σ(Δ_i/σ_i)² ≤ GDPMuFor(ε, δ);
// for k equal releases, σ = Δ·√k/μ (round σ up).
func GDPMuFor(epsilon, delta float64) (float64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	s, err := unitAnalyticSigma(epsilon, delta, 0)
	if err != nil {
		return 0, err
	}
	mu := math.Nextafter(1/s, 0)
	for i := 0; analyticDelta(epsilon, mu) > delta; i++ {
		if i > 64 {
			return 0, fmt.Errorf("accounting: GDP μ for (ε=%g, δ=%g) failed to verify", epsilon, delta)
		}
		mu = math.Nextafter(mu, 0)
	}
	return mu, nil
}

// sqrtUp returns the smallest float64 m with m² ≥ r (r ≥ 0), compared
// exactly.
func sqrtUp(r *big.Rat) float64 {
	m := math.Sqrt(roundup.Rat(r))
	for sqRat(m).Cmp(r) < 0 {
		m = math.Nextafter(m, math.Inf(1))
	}
	for m > 0 {
		p := math.Nextafter(m, 0)
		if sqRat(p).Cmp(r) < 0 {
			break
		}
		m = p
	}
	return m
}

// sqRat returns x² exactly.
func sqRat(x float64) *big.Rat {
	r := new(big.Rat).SetFloat64(x)
	return r.Mul(r, r)
}
