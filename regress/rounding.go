package regress

import (
	"math"

	"github.com/dplearn/dplearn/suffstat"
)

// Floating-point rounding and the sensitivities (PRIVACY-NOTES items 17 and
// 20; docs/numerics.md). A mechanism releases the value its code computes,
// not the exact one, so its sensitivity must bound the difference of the
// computed values on neighbouring datasets. Two sources of error:
//
//  1. Sums over rows. The FM family reads suffstat's sums, whose error is
//     at most suffstat.ErrorBound(N) per entry (proved there). Per entry of
//     the objective's coefficients (values of magnitude ≤ 1, u = 2⁻⁵³,
//     e_S = ErrorBound(N)/N; docs/numerics.md): linear Λ1 2e_S + 2.01u,
//     linear Λ2 e_S + 2.01u, logistic Λ1 1.5e_S + 3.01u, logistic Λ2
//     (e_S + 2.01u)/8. irls and noisygd sum per-row terms in a plain loop:
//     the terms of the rows the neighbours share are computed by the same
//     instructions on the same inputs, so they are bitwise equal, and the
//     exact sums of the computed terms differ only by the replaced row's
//     term; recursive summation of n terms of magnitude ≤ M is within
//     γ_{n−1}·n·M of that exact sum (Higham, Accuracy and Stability of
//     Numerical Algorithms, §4.2), and the division by N adds one rounding
//     (u times a value ≤ M).
//  2. The replaced row's own term is computed with a few roundings: a
//     relative γ_k on a bound that holds exactly.
//
// So the computed values' difference is at most Δ·(1 + γ_k) + 2·e per entry,
// where e is the per-entry error bound, and in L2 over m entries at most
// Δ·(1 + γ_k) + 2·√m·e. roundedSensitivity returns that, rounded up
// generously. The grid slack of the noise sampler is separate and added by
// noise.GaussianCalibrationSensitivity.

const unitRoundoff = 0x1p-53

// gamma returns γ_k = ku/(1 − ku), rounded up generously.
func gamma(k float64) float64 {
	g := k * unitRoundoff / (1 - k*unitRoundoff)
	return g * (1 + 1e-6)
}

// roundedSensitivity returns Δ·(1 + γ_k) + 2·√m·e (L2 over m entries, each
// within e of its exact value), or Δ·(1 + γ_k) + 2·m·e for an L1
// sensitivity, rounded up.
func roundedSensitivity(sens float64, k float64, m int, e float64, l1 bool) float64 {
	spread := math.Sqrt(float64(m))
	if l1 {
		spread = float64(m)
	}
	v := sens*(1+gamma(k)) + 2*spread*e
	return math.Nextafter(v*(1+4*unitRoundoff), math.Inf(1))
}

// objectiveEntryErrors returns the per-entry error bounds of the FM
// family's Λ1 and Λ2 (from suffstat's sums; see item 1 above). For logistic
// regression Λ2 = (a2/N)·S is computed as (a2/N)·S: two roundings on top of
// S's error, times a2 ≤ ⅛ (a2 is the public constant the code multiplies
// by, so it is exact; for a2 = ⅛ this is the Taylor bound (e_S + 2.01u)/8).
func objectiveEntryErrors(kind Kind, n int64, a2 float64) (e1, e2 float64) {
	eS := suffstat.ErrorBound(n) / float64(n)
	const u = unitRoundoff
	if kind == Logistic {
		return 1.5*eS + 3.01*u, (eS + 2.01*u) * a2
	}
	return 2*eS + 2.01*u, eS + 2.01*u
}

// loopSumError returns the per-entry error bound of an average (1/N)Σ t_i of
// n terms with |t_i| ≤ m computed by a plain loop and one division: γ_{n−1}·n·m
// for the sum, divided by N, plus one rounding of the quotient.
func loopSumError(n int64, bound float64, divisor float64) float64 {
	nf := float64(n)
	return (gamma(nf)*nf*bound/divisor + unitRoundoff*nf*bound/divisor) * (1 + 1e-6)
}
