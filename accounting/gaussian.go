package accounting

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dplearn/dplearn/internal/roundup"
	"github.com/dplearn/dplearn/noise"
)

// AnalyticGaussianDelta returns the exact δ of the Gaussian mechanism with
// noise σ and L2 sensitivity Δ at privacy level ε (Balle & Wang 2018,
// Theorem 8; DPPP seed Eq. 5):
//
//	δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).
//
// It holds for every ε ≥ 0. No grid slack is included: use it for a
// continuous Gaussian or pass the inflated sensitivity yourself.
func AnalyticGaussianDelta(epsilon, sigma, sens float64) (float64, error) {
	if err := checkDeltaArgs(epsilon, sigma, sens); err != nil {
		return 0, err
	}
	return analyticDelta(epsilon, ratioUp(sens, sigma)), nil
}

// checkDeltaArgs validates the arguments of the δ(ε) functions: ε finite and
// ≥ 0, σ and the sensitivity finite and > 0.
func checkDeltaArgs(epsilon, sigma, sens float64) error {
	if !finite(epsilon) || epsilon < 0 {
		return fmt.Errorf("accounting: ε must be finite and ≥ 0, got %v", epsilon)
	}
	if err := checkPositive("σ", sigma); err != nil {
		return err
	}
	return checkPositive("sensitivity", sens)
}

// analyticDelta is δ(ε) for the Gaussian mechanism with Δ/σ = r.
func analyticDelta(eps, r float64) float64 {
	a := r/2 - eps/r
	b := -r/2 - eps/r
	d := normCDF(a) - math.Exp(eps+logNormCDF(b))
	if d < 0 {
		return 0
	}
	return d
}

// AnalyticGaussianSigma returns the smallest σ (to relative precision 1e-12,
// rounded up) for which the Gaussian mechanism with L2 sensitivity Δ is
// (ε, δ)-DP, by the exact characterisation of Balle & Wang 2018. It holds for
// every ε > 0. No grid slack is included (see GaussianSigma).
func AnalyticGaussianSigma(epsilon, delta, sens float64) (float64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if err := checkPositive("sensitivity", sens); err != nil {
		return 0, err
	}
	s, err := unitAnalyticSigma(epsilon, delta, 0)
	if err != nil {
		return 0, err
	}
	return s * sens, nil
}

// unitAnalyticSigma returns the smallest σ with δ(ε; Δ/σ + slack) ≤ delta for
// unit sensitivity, where slack is extra sensitivity per unit of σ.
func unitAnalyticSigma(eps, delta, slack float64) (float64, error) {
	ok := func(s float64) bool { return analyticDelta(eps, 1/s+slack) <= delta }
	lo, hi := 1e-6, 1.0
	for !ok(hi) {
		lo = hi
		hi *= 2
		if hi > 1e15 {
			return 0, fmt.Errorf("accounting: no Gaussian σ achieves (ε=%g, δ=%g)", eps, delta)
		}
	}
	for ok(lo) && lo > 1e-300 {
		hi = lo
		lo /= 2
	}
	s, err := bisect(lo, hi, 1e-13, ok)
	if err != nil {
		return 0, err
	}
	return math.Nextafter(s, math.Inf(1)), nil
}

// GaussianSigma returns the noise σ to pass to noise.AddGaussian so that the
// release of a vector (of any length) with L2 sensitivity Δ is (ε, δ)-DP. It
// uses the analytic Gaussian mechanism with the sensitivity inflated by the
// grid slack: AddGaussian's rounding adds at most noise.GridSlackRatio·σ to
// the sensitivity (noise.GaussianGridSlack), so σ solves
// δ_analytic(ε; (Δ + GridSlackRatio·σ)/σ) ≤ δ.
//
// Why the continuous formula covers the grid sampler: AddGaussian is exactly
// the discrete Gaussian mechanism in grid units (σ/g ≥ 2^21). Its δ exceeds
// the continuous curve's by at most what a sensitivity inflated by the factor
// 1 + noise.DiscreteGaussianMargin (2^-32) covers; the proof is in
// noise.GaussianCalibrationSensitivity, and the exact discrete δ at the
// library's grids is within ±3e-13 relative of the continuous one
// (noise/discrete_test.go). This function charges GridSlackRatio·σ of slack,
// twice the largest rounding (GridSlackRatio·σ/2); the spare covers the
// margin whenever Δ/σ < 2047, i.e. for every useful ε. Callers composing
// several releases should use noise.GaussianCalibrationSensitivity directly.
func GaussianSigma(epsilon, delta, l2Sensitivity float64) (float64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if err := checkPositive("L2 sensitivity", l2Sensitivity); err != nil {
		return 0, err
	}
	// With σ = s·Δ: (Δ + rσ)/σ = 1/s + r.
	s, err := unitAnalyticSigma(epsilon, delta, noise.GridSlackRatio)
	if err != nil {
		return 0, err
	}
	return math.Nextafter(s*l2Sensitivity, math.Inf(1)), nil
}

// ClassicGaussianSigma returns σ = (Δ + GridSlackRatio·σ)·√(2 ln(1.25/δ))/ε,
// the classic calibration of Dwork & Roth (Theorem A.1) with the grid slack of
// noise.AddGaussian included. The classic theorem holds only for ε < 1, so it
// refuses ε ≥ 1 (PRIVACY-NOTES item 3); prefer GaussianSigma, which is valid
// for every ε and needs less noise.
func ClassicGaussianSigma(epsilon, delta, l2Sensitivity float64) (float64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if epsilon >= 1 {
		return 0, fmt.Errorf("accounting: the classic Gaussian calibration holds only for ε < 1, got ε=%v; use the analytic Gaussian", epsilon)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if err := checkPositive("L2 sensitivity", l2Sensitivity); err != nil {
		return 0, err
	}
	c := math.Sqrt(2*math.Log(1.25/delta)) / epsilon
	// σ = c(Δ + rσ) ⇒ σ = cΔ/(1 − cr).
	den := 1 - c*noise.GridSlackRatio
	if den <= 0 {
		return 0, fmt.Errorf("accounting: classic Gaussian: ε=%v too small for the grid slack", epsilon)
	}
	return math.Nextafter(c*l2Sensitivity/den, math.Inf(1)), nil
}

// LaplaceScale returns the scale b to pass to noise.AddLaplace so that the
// release of a vector (of any length) with L1 sensitivity Δ is ε-DP:
// b = Δ/(ε − GridSlackRatio), since AddLaplace's rounding adds at most
// GridSlackRatio·b to the L1 sensitivity (noise.LaplaceGridSlack), and
// (Δ + GridSlackRatio·b)/b ≤ ε.
func LaplaceScale(epsilon, l1Sensitivity float64) (float64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkPositive("L1 sensitivity", l1Sensitivity); err != nil {
		return 0, err
	}
	if epsilon <= 2*noise.GridSlackRatio {
		return 0, fmt.Errorf("accounting: ε=%v is below the grid resolution %g", epsilon, 2*noise.GridSlackRatio)
	}
	b := l1Sensitivity / (epsilon - noise.GridSlackRatio)
	for (l1Sensitivity+noise.GridSlackRatio*b)/b > epsilon {
		b = math.Nextafter(b, math.Inf(1))
	}
	return math.Nextafter(b, math.Inf(1)), nil
}

// GaussianZCDP returns ρ = Δ²/(2σ²), computed exactly from the two floats
// and rounded up: the Gaussian mechanism with noise σ and L2 sensitivity Δ
// is ρ-zCDP (Bun & Steinke 2016, Prop. 1.6). No grid slack is included.
func GaussianZCDP(sigma, sens float64) (float64, error) {
	if err := checkPositive("σ", sigma); err != nil {
		return 0, err
	}
	if err := checkPositive("sensitivity", sens); err != nil {
		return 0, err
	}
	r := new(big.Rat).SetFloat64(sens)
	r.Mul(r, r)
	s := new(big.Rat).SetFloat64(sigma)
	r.Quo(r, s.Mul(s, s))
	return roundup.Rat(r.Quo(r, big.NewRat(2, 1))), nil
}

// DiscreteGaussianDelta returns the exact δ(ε) of the discrete Gaussian
// mechanism with variance parameter σ² and integer sensitivity Δ (CKS 2020,
// Theorem 7): δ = Σ_y max(0, P[Z = y] − e^ε P[Z = y − Δ]), computed by summing
// the probability mass over |y| ≤ 40σ + Δ (the rest is below 1e-300).
func DiscreteGaussianDelta(epsilon, sigma, sens float64) (float64, error) {
	if err := checkDeltaArgs(epsilon, sigma, sens); err != nil {
		return 0, err
	}
	if sens != math.Trunc(sens) || sens > 1e6 {
		return 0, fmt.Errorf("accounting: discrete Gaussian needs an integer sensitivity ≤ 1e6, got %v", sens)
	}
	if sigma > 1e5 {
		return 0, fmt.Errorf("accounting: discrete Gaussian σ=%v too large to sum exactly (> 1e5); it is within 1e-9 of the continuous one there", sigma)
	}
	s2 := sigma * sigma
	lim := int64(math.Ceil(40*sigma+sens)) + 1
	// log normaliser
	logZ := math.Inf(-1)
	for y := -lim; y <= lim; y++ {
		logZ = logAdd(logZ, -float64(y*y)/(2*s2))
	}
	d := int64(sens)
	var delta float64
	for y := -lim; y <= lim+d; y++ {
		lp := -float64(y*y) / (2 * s2)
		z := y - d
		lq := -float64(z*z) / (2 * s2)
		if t := math.Exp(lp-logZ) - math.Exp(epsilon+lq-logZ); t > 0 {
			delta += t
		}
	}
	return delta, nil
}

// DiscreteGaussianSigma returns the smallest σ (rounded up, relative precision
// 1e-9) for which the discrete Gaussian mechanism with integer sensitivity Δ
// is (ε, δ)-DP, by DiscreteGaussianDelta.
func DiscreteGaussianSigma(epsilon, delta, sens float64) (float64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if _, err := DiscreteGaussianDelta(epsilon, 1, sens); err != nil {
		return 0, err
	}
	// Start from the continuous answer; the discrete one is close to it.
	s0, err := AnalyticGaussianSigma(epsilon, delta, sens)
	if err != nil {
		return 0, err
	}
	ok := func(s float64) bool {
		d, err := DiscreteGaussianDelta(epsilon, s, sens)
		return err == nil && d <= delta
	}
	lo, hi := s0/2, s0*1.5
	for !ok(hi) {
		lo, hi = hi, hi*2
		if hi > 1e5 {
			return 0, fmt.Errorf("accounting: no discrete Gaussian σ ≤ 1e5 achieves (ε=%g, δ=%g)", epsilon, delta)
		}
	}
	return bisect(lo, hi, 1e-9, ok)
}

// AnalyticGaussianEpsilon returns the smallest ε (relative precision 1e-12,
// rounded up) such that the Gaussian mechanism with noise σ and L2
// sensitivity Δ is (ε, δ)-DP: the inverse of AnalyticGaussianDelta in ε.
// It is 0 when δ already covers the total variation distance. It is
// GDPEpsilon at μ = Δ/σ (rounded up).
func AnalyticGaussianEpsilon(delta, sigma, sens float64) (float64, error) {
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if err := checkPositive("σ", sigma); err != nil {
		return 0, err
	}
	if err := checkPositive("sensitivity", sens); err != nil {
		return 0, err
	}
	return GDPEpsilon(ratioUp(sens, sigma), delta)
}

// ratioUp returns a/b rounded up (a ≥ 0, b > 0, both finite).
func ratioUp(a, b float64) float64 {
	return roundup.Rat(new(big.Rat).Quo(new(big.Rat).SetFloat64(a), new(big.Rat).SetFloat64(b)))
}
