package regress

import (
	"errors"
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// Calibration on the noise grid. Every Gaussian release draws a discrete
// Gaussian on a grid (noise.GaussianGrid); the grid's slack and the
// margin over the continuous curve enlarge the sensitivity a release must
// be calibrated at to noise.GaussianCalibrationSensitivity(sens, σ, m) ≤
// sens + r·σ with r = noise.GridSlackRatio/2. Two forms of the search for
// σ live here, one per way a mechanism states its budget:
//
//   - gaussianStdAt, by Gaussian-DP μ: the σ whose calibrated ratio
//     GaussianCalibrationSensitivity(sens, σ, m)/σ is at most μ (irls,
//     objpert's output and Hessian releases);
//   - gaussianStdFor, by noise multiplier z: the σ whose effective
//     multiplier σ/GaussianCalibrationSensitivity(sens, σ, m) is at least
//     z (noisygd, whose accountant takes multipliers).
//
// Both start where the bound sens + r·σ meets the target exactly (σ =
// sens/(μ − r), σ = z·sens/(1 − z·r)), which is never below the answer,
// and step up by a relative 1e-9 while the exact calibration still falls
// short; the bound makes the first start feasible but for rounding, so
// the loop runs a few times at most, and more than 100 steps is an error.

// gaussianStdAt returns the smallest σ, to a relative 1e-9, with
// GaussianCalibrationSensitivity(sens, σ, m)/σ ≤ mu: a Gaussian release of
// sensitivity sens over m entries with that σ is μ-GDP on the grid.
func gaussianStdAt(sens, mu float64, m int) (float64, error) {
	den := mu - noise.GridSlackRatio/2
	if !(den > 0) {
		return 0, fmt.Errorf("μ = %v too small for the noise grid", mu)
	}
	sigma := math.Nextafter(sens/den, math.Inf(1))
	for i := 0; noise.GaussianCalibrationSensitivity(sens, sigma, m)/sigma > mu; i++ {
		if i > 100 {
			return 0, fmt.Errorf("calibration with the grid margin failed at μ = %v", mu)
		}
		sigma *= 1 + 1e-9
	}
	return sigma, nil
}

// gaussianStdFor returns the smallest noise standard deviation s (to a
// relative 1e-9) whose effective multiplier s/(sens + grid slack) over m
// entries is at least z.
func gaussianStdFor(sens, z float64, m int) (float64, error) {
	r := noise.GridSlackRatio / 2 // slack(s) ≤ r·s
	if z*r >= 1 {
		return 0, fmt.Errorf("noise multiplier %v too large for the noise grid", z)
	}
	s := z * sens / (1 - z*r)
	for i := 0; s/noise.GaussianCalibrationSensitivity(sens, s, m) < z; i++ {
		if i > 100 {
			return 0, errors.New("calibration with the grid margin failed")
		}
		s *= 1 + 1e-9
	}
	return s, nil
}

// gaussianRho returns the zCDP ρ of a Gaussian release on the grid whose
// calibrated ratio is mu = GaussianCalibrationSensitivity(Δ, σ, n)/σ (or
// of jointly calibrated blocks whose whitened calibrated sensitivity is
// mu): ρ = mu²/2 (accounting.GDPToZCDP derives it), with mu nudged up one
// ulp first so that the division that produced it cannot make ρ low. The
// discrete Gaussian's Rényi divergence needs only the grid slack, which
// mu includes, so this ρ is a (slightly conservative) true bound (package
// noise, "Compositions and other accountants").
func gaussianRho(mu float64) (float64, error) {
	z, err := accounting.GDPToZCDP(math.Nextafter(mu, math.Inf(1)))
	if err != nil {
		return 0, fmt.Errorf("zCDP ρ: %w", err)
	}
	return z.Rho, nil
}
