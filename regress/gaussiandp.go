package regress

import (
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
)

// Gaussian differential privacy (Dong, Roth & Su 2019) for calibrating
// compositions of Gaussian releases. A Gaussian release with L2 sensitivity
// Δ and noise σ is μ-GDP with μ = Δ/σ; any adaptive composition of μ_i-GDP
// mechanisms is √(Σμ_i²)-GDP (their Corollary 3.3), and μ-GDP is exactly the
// (ε, δ(ε)) curve of the analytic Gaussian mechanism (Balle & Wang 2018) with
// Δ/σ = μ. Neighbouring relation: whichever the sensitivities Δ refer to
// (replace-one throughout dplearn).

// gaussianDPMu returns the largest μ (relative precision 1e-12, rounded
// down) whose μ-GDP curve meets (ε, δ).
func gaussianDPMu(epsilon, delta float64) (float64, error) {
	s, err := accounting.AnalyticGaussianSigma(epsilon, delta, 1) // smallest σ, rounded up
	if err != nil {
		return 0, err
	}
	mu := math.Nextafter(1/s, 0)
	if d, err := accounting.AnalyticGaussianDelta(epsilon, 1, mu); err != nil || d > delta {
		return 0, fmt.Errorf("gaussian DP: calibration failed at (ε=%v, δ=%v): δ(μ=%v) = %v", epsilon, delta, mu, d)
	}
	return mu, nil
}

// gaussianDPEpsilon returns the smallest ε (relative precision 1e-12,
// rounded up) at which μ-GDP meets δ.
func gaussianDPEpsilon(mu, delta float64) (float64, error) {
	if !(mu > 0) || math.IsInf(mu, 0) {
		return 0, fmt.Errorf("gaussian DP: μ must be finite and > 0, got %v", mu)
	}
	if !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("gaussian DP: δ must be in (0, 1), got %v", delta)
	}
	ok := func(e float64) bool {
		d, err := accounting.AnalyticGaussianDelta(e, 1, mu)
		return err == nil && d <= delta
	}
	if ok(0) {
		return 0, nil
	}
	lo, hi := 0.0, 1.0
	for !ok(hi) {
		lo, hi = hi, 2*hi
		if hi > 1e12 {
			return 0, fmt.Errorf("gaussian DP: no ε meets δ = %v at μ = %v", delta, mu)
		}
	}
	for hi-lo > 1e-12*hi {
		if mid := (lo + hi) / 2; ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
