package regress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// Robust (least-absolute-deviations) regression, Kind Robust:
// minimise Σ|y_i − x_iᵀω|.
//
// # Non-private reference ("nonprivate" with Kind Robust)
//
// The exact LAD fit: IRLS with a residual floor shrinking from 10⁻¹ to
// 10⁻¹², then an exact basis-exchange descent (the LAD linear programme's
// simplex, as in Barrodale & Roberts): a basis of d rows with zero residual
// is optimal iff the subgradient condition Σ_{i∉basis} sign(r_i)x_i +
// Σ_{i∈basis} u_i x_i = 0 has a solution with |u_i| ≤ 1; otherwise the row
// with |u_j| > 1 leaves the basis along a descent edge, with an exact line
// search on the piecewise-linear objective (a weighted median). The fit is
// returned with that certificate.
//
// # DP-IRLS ("irls"): Park & Welling, corrected
//
// J iterations of IRLS with p = 1: with the previous (released) iterate ω,
// weights s_i = 1/max(η, |y_i − x_iᵀω|), where η = ResidualFloor (the
// seed's 1/δ; named so as not to be confused with the privacy δ), so
// 0 < s_i ≤ 1/η. Each iteration releases
//
//	A = (1/N)Σ s_i y_i x_i   with Gaussian or Laplace noise (user's choice),
//	B = (1/N)Σ s_i x_i x_iᵀ  with symmetric Gaussian noise on its upper
//	                          triangle (Dwork, Talwar, Thakurta & Zhang 2014),
//
// and the next iterate is the minimiser of ωᵀB̃ω − 2Ãᵀω after the ridge and
// spectral trimming of Quadratic.Minimize (post-processing): B̃⁻¹Ã when B̃
// is positive definite.
//
// Sensitivities, replace-one, ‖x‖ ≤ 1, |y| ≤ 1, s ≤ 1/η:
//
//	A, L2: ‖s y x − s'y'x'‖/N ≤ (s + s')/N ≤ 2/(ηN);
//	A, L1: (s‖x‖₁ + s'‖x'‖₁)/N ≤ 2√d/(ηN)  (the seed's Eq. 3);
//	B, L2 of the released upper triangle: with a = √s x, b = √s' x',
//	  ‖aaᵀ − bbᵀ‖_F² = ‖a‖⁴ + ‖b‖⁴ − 2(aᵀb)² ≤ 2/η², and the upper
//	  triangle's norm is at most the Frobenius norm: √2/(ηN).
//
// Accounting (PRIVACY-NOTES items 11 and 21), tightest valid accountant
// first. A Gaussian release with sensitivity Δ (plus noise.GaussianGridSlack)
// and noise σ is exactly a μ = Δ/σ Gaussian-DP mechanism (Dong, Roth & Su
// 2019), and the 2J adaptively chosen releases compose exactly to one
// Gaussian mechanism with μ = √(Σ μ_i²), whose (ε, δ) curve is the analytic
// Gaussian one (Balle & Wang 2018). With Gaussian noise on A (the default)
// the fit is calibrated by that composition: μ* is the largest μ whose curve
// meets the target (ε, δ), μ*² is split evenly over the J iterations and,
// within one, a share Split to A and the rest to B, and the report gives the
// exact ε (≤ the target). The zCDP figures (ρ = μ²/2; ε = ρ + 2√(ρ ln(1/δ)),
// Bun & Steinke 2016, and the conversion of Canonne, Kamath & Steinke 2020)
// are reported as secondary lines. With Laplace noise on A the releases are
// a mixture: an ε_A-DP Laplace release is ε_A²/2-zCDP, ρ adds up, and the
// fit is calibrated by the Canonne-Kamath-Steinke conversion of the total ρ
// (the tightest conversion implemented; ρ + 2√(ρ ln(1/δ)) is secondary).
// Both hold under replace-one neighbours, the relation of the sensitivities
// above.
//
// # Warm start (issue 16; the default)
//
// The seed starts from ω = 0, so its first weights 1/max(η, |y_i|) are not
// residual weights at all. By default a share WarmStart of the budget (of
// μ² for Gaussian A, of 2ρ for Laplace A) buys a Gaussian FM least-squares
// fit: Λ1 = −(2/N)Σ y·x and Λ2's upper triangle, each with half of the share,
// sensitivities 4/N and √2/N (SensitivitiesFor, rounding included), whose
// ridge-regularised, trimmed minimiser is the first iterate. Both releases
// are Gaussian, so they enter the same exact composition (μ² adds; ρ adds),
// and the plan is calibrated so the total meets (ε, δ). What each iteration
// then releases is IRLSOptions.Form (irls_forms.go): by default the
// preconditioned form, g = (1/N)Σψ_η(r)x and a scalar per iteration, with
// the warm start's Gram matrix as preconditioner, J and η by the public
// rules GradientIRLSIterations and GradientIRLSResidualFloor; with the
// seed's moments form one iteration (DefaultWarmIRLSIterations) with the
// floor of WarmIRLSResidualFloor(N, d, ε) did best (docs/mechanisms.md,
// "DP-IRLS that pays off"). WarmStart < 0 gives the seed's cold start
// (moments form, J = 2, η = 0.2).
//
// # Wishart reproduction ("irls-wishart"): NOT differentially private
//
// The seed's Algorithm 1 with B̃ = B + ZZᵀ, Z having d+1 columns of
// N(0, (1/η)/(2ε′N)·I) entries, ε′ = √(ε/J), and A with Laplace noise of
// scale 2√d/(ηNε′) or Gaussian noise with the classic calibration. Wishart
// noise is positive semi-definite, so the density ratio of neighbouring
// outputs is unbounded (PRIVACY-NOTES item 10); it exists only to reproduce
// the seed's Figure 1, and its report says "not DP".

// IRLSOptions are the public parameters of DP-IRLS.
type IRLSOptions struct {
	// Iterations is J; 0 means DefaultIRLSIterations.
	Iterations int
	// ResidualFloor is η in s_i = 1/max(η, |r_i|) (encoded target scale);
	// 0 means DefaultResidualFloor.
	ResidualFloor float64
	// FirstMoment is the noise on A: "gaussian" (default) or "laplace".
	FirstMoment string
	// Split is the share of each iteration's budget given to its first
	// release (A or g); 0 means DefaultPreconditionedSplit for the
	// preconditioned form and 0.5 otherwise.
	Split float64
	// WarmStart is the share of the budget (of μ² for Gaussian A, of ρ for
	// Laplace A) spent on a Gaussian FM least-squares fit that replaces
	// ω = 0 as the first iterate; 0 means DefaultPreconditionedWarmStart for
	// the preconditioned form and DefaultIRLSWarmStart otherwise, a negative
	// value a cold start from ω = 0 (the seed's).
	WarmStart float64
	// Form names what each iteration releases (irls_forms.go):
	// IRLSFormMoments (the seed's A and B), IRLSFormGradient (g and B) or
	// IRLSFormPreconditioned (g and the scalar m, with the warm start's
	// Gram matrix as preconditioner); "" means DefaultIRLSForm after a warm
	// start and the seed's moments after a cold start.
	Form string
}

// Defaults of DP-IRLS. Measured with TestIRLSErrorVsN (seed design, d = 10,
// ε = 0.9, δ = 1e-5, 10 datasets): test MAE at N = 10⁴ / 3·10⁴ / 10⁵ was
// 0.093 / 0.045 / 0.025 for (η = 0.2, J = 2), against 0.15 / 0.059 / 0.024
// for (0.1, 2), 0.13 / 0.059 / 0.028 for (0.2, 4), 0.09 / 0.047 / 0.027 for
// (0.5, 2) and ≥ 0.12 / 0.12 / 0.03 for η = 0.05 (non-private LAD 0.012).
// Each extra iteration costs budget; a larger floor lowers the sensitivity
// but makes the weights closer to least squares (less robust).
const (
	DefaultIRLSIterations = 2
	DefaultResidualFloor  = 0.2
	// DefaultIRLSWarmStart is the default share of the budget (of μ² or
	// ρ) spent on the Gaussian FM warm start, and DefaultWarmIRLSIterations
	// the default J after a warm start; see docs/mechanisms.md ("DP-IRLS").
	DefaultIRLSWarmStart      = 0.2
	DefaultWarmIRLSIterations = 1
)

// IRLSPlan is the calibration of one DP-IRLS fit.
type IRLSPlan struct {
	// N is the public divisor of every release: the number of rows, or
	// Units·K under a privacy unit (PlanIRLSUnits).
	N int64
	// RowsPerUnit is K under a privacy unit (neighbours differ in up to K
	// rows), 1 for the row-level guarantee.
	RowsPerUnit   int
	D             int
	Form          string
	Iterations    int
	ResidualFloor float64
	FirstMoment   string
	Split         float64
	// SensA is the L2 (Gaussian) or L1 (Laplace) sensitivity of the first
	// release of an iteration (A, or g in the gradient forms); SensB the L2
	// sensitivity of the second (B's upper triangle, or the scalar m of
	// the preconditioned form).
	SensA, SensB float64
	// ScaleA is the Gaussian σ or Laplace b of the first release's noise;
	// SigmaB the second's σ.
	ScaleA, SigmaB float64
	// RhoA and RhoB are the per-iteration zCDP costs (grid slack included).
	RhoA, RhoB float64
	// Rho is the total J(RhoA + RhoB).
	Rho float64
	// Epsilon is the guaranteed ε at Delta: the target, verified by the
	// tightest accountant (Accountant says which; EpsilonExact for Gaussian
	// A, EpsilonImproved for Laplace A, both ≤ the target).
	Epsilon, Delta float64
	// Accountant names the accountant behind Epsilon: "gaussian-dp" or
	// "zcdp-improved".
	Accountant string
	// EpsilonZCDP is ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016);
	// EpsilonImproved the Canonne-Kamath-Steinke 2020 conversion of ρ.
	EpsilonZCDP, EpsilonImproved float64
	// EpsilonExact (Gaussian A only) is the exact ε of the 2J composed
	// Gaussian releases: they are μ-Gaussian-DP with μ = √(Σ μ_i²) = √(2ρ)
	// (Dong, Roth & Su 2019), with the analytic-Gaussian (ε, δ) curve.
	EpsilonExact float64
	// Mu is that μ (Gaussian A only).
	Mu float64
	// last, when set, receives the last iteration's released objective
	// (for inference from released values; released.go), and lastStep
	// the iterate the last step started from (gradient forms, whose last
	// iterate is that start plus the released objective's minimiser).
	last     *Quadratic
	lastStep *irlsLastStep
	// warm, when set, receives the warm start's released objective with
	// its noise law, ridge and trimming (released.go).
	warm *Released
	// WarmStart is the share of the budget spent on the Gaussian FM warm
	// start (0: cold start). FMSens1, FMSens2 are the L2 sensitivities of
	// its Λ1 and Λ2's upper triangle (SensitivitiesFor, linear), FMTau1,
	// FMTau2 their noise, calibrated jointly (GaussianFMJointScalesMu,
	// split DefaultGaussianFMSplit).
	WarmStart                        float64
	FMSens1, FMSens2, FMTau1, FMTau2 float64
	// FMWhitened is the warm start's Gaussian-DP μ: the L2 sensitivity of
	// (Λ1/FMTau1, upper(Λ2)/FMTau2) by the joint supremum of joint.go,
	// grid slack and discrete-Gaussian margin included.
	FMWhitened float64
}

// RhoForEpsilon returns the largest ρ with ρ + 2√(ρ ln(1/δ)) ≤ ε.
func RhoForEpsilon(epsilon, delta float64) (float64, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return 0, fmt.Errorf("irls: ε must be finite and > 0, got %v", epsilon)
	}
	if !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("irls: zCDP accounting needs δ in (0, 1), got %v", delta)
	}
	l := math.Log(1 / delta)
	s := math.Sqrt(l+epsilon) - math.Sqrt(l)
	rho := s * s
	// Round down until the forward conversion meets ε.
	for z := (accounting.ZCDP{Rho: rho}); ; z.Rho = math.Nextafter(z.Rho, 0) {
		if e, err := z.Epsilon(delta); err == nil && e <= epsilon {
			return z.Rho, nil
		}
	}
}

// RhoForEpsilonImproved returns the largest ρ (relative precision 1e-12,
// rounded down) whose Canonne-Kamath-Steinke conversion meets ε at δ.
func RhoForEpsilonImproved(epsilon, delta float64) (float64, error) {
	lo, err := RhoForEpsilon(epsilon, delta) // the classic conversion is looser
	if err != nil {
		return 0, err
	}
	ok := func(r float64) bool {
		e, err := accounting.ZCDP{Rho: r}.EpsilonImproved(delta)
		return err == nil && e <= epsilon
	}
	if !ok(lo) {
		return 0, fmt.Errorf("irls: improved zCDP conversion looser than the classic one at ρ = %v", lo)
	}
	hi := 2 * lo
	for ok(hi) {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1e-12*lo {
		if mid := (lo + hi) / 2; ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// withDefaults validates the options and fills in the defaults, which
// depend on the public N, d and ε only (WarmIRLSResidualFloor).
func (opt IRLSOptions) withDefaults(n int64, d int, epsilon float64) (IRLSOptions, error) {
	if math.IsNaN(opt.WarmStart) || opt.WarmStart >= 1 {
		return opt, fmt.Errorf("irls: warm-start share must be < 1 (negative for none), got %v", opt.WarmStart)
	}
	cold := opt.WarmStart < 0
	if cold {
		opt.WarmStart = 0
	}
	if opt.Form == "" {
		opt.Form = DefaultIRLSForm
		if cold {
			opt.Form = IRLSFormMoments // the seed's algorithm
		}
	}
	if opt.WarmStart == 0 && !cold {
		opt.WarmStart = DefaultIRLSWarmStart
		if opt.Form == IRLSFormPreconditioned {
			opt.WarmStart = DefaultPreconditionedWarmStart
		}
	}
	if err := validateForm(opt); err != nil {
		return opt, err
	}
	warm := opt.WarmStart > 0
	if opt.Iterations == 0 {
		switch {
		case !warm:
			opt.Iterations = DefaultIRLSIterations
		case opt.Form == IRLSFormMoments:
			opt.Iterations = DefaultWarmIRLSIterations
		default:
			opt.Iterations = GradientIRLSIterations(opt.Form, n, d, epsilon)
		}
	}
	if opt.Iterations < 1 || opt.Iterations > 1000 {
		return opt, fmt.Errorf("irls: iterations must be in [1, 1000], got %d", opt.Iterations)
	}
	if math.IsNaN(opt.ResidualFloor) || math.IsInf(opt.ResidualFloor, 0) || opt.ResidualFloor < 0 {
		return opt, fmt.Errorf("irls: residual floor must be finite and > 0, got %v", opt.ResidualFloor)
	}
	if opt.ResidualFloor == 0 {
		switch {
		case !warm:
			opt.ResidualFloor = DefaultResidualFloor
		case opt.Form == IRLSFormMoments:
			opt.ResidualFloor = WarmIRLSResidualFloor(n, d, epsilon)
		default:
			opt.ResidualFloor = GradientIRLSResidualFloor(n, d, epsilon)
		}
	}
	switch opt.FirstMoment {
	case "":
		opt.FirstMoment = "gaussian"
	case "gaussian", "laplace":
	default:
		return opt, fmt.Errorf("irls: first-moment noise must be \"gaussian\" or \"laplace\", got %q", opt.FirstMoment)
	}
	if math.IsNaN(opt.Split) || opt.Split < 0 || opt.Split >= 1 {
		return opt, fmt.Errorf("irls: budget split must be in (0, 1), got %v", opt.Split)
	}
	if opt.Split == 0 {
		opt.Split = 0.5
		if opt.Form == IRLSFormPreconditioned {
			opt.Split = DefaultPreconditionedSplit
		}
	}
	return opt, nil
}

// WarmIRLSResidualFloor is the default residual floor of the warm-started
// DP-IRLS, a rule in the public N, d and ε only:
//
//	η = min(1, max(0.3, 3·√(d/(N·ε)))).
//
// Why this shape: B's sensitivity is √2/(ηN) and its noise σ_B ∝ 1/(ηNε),
// whose spectral norm grows like σ_B·√d; the signal B = (1/N)Σ s·xxᵀ grows
// like 1/η only while η is below the typical residual. A larger floor thus
// buys a better signal-to-noise ratio at the price of robustness (η ≥ 1
// is plain least squares, since |r| ≤ 2 and the weights are almost all
// 1/η), and it pays most when N·ε/d is small. The constants come from
// the sweep of docs/mechanisms.md ("DP-IRLS"): on CPS1988 (N ≈ 22,500,
// d = 9) η = 0.3 beat 0.2 and 0.5 at ε ∈ {0.5, 1}, with and without
// outliers; on diabetes (N ≈ 350, d = 11) η = 0.5 did best.
func WarmIRLSResidualFloor(n int64, d int, epsilon float64) float64 {
	if n < 1 || d < 1 || !(epsilon > 0) {
		return DefaultResidualFloor
	}
	return math.Min(1, math.Max(0.3, 3*math.Sqrt(float64(d)/(float64(n)*epsilon))))
}

// PlanIRLS calibrates DP-IRLS for a target (ε, δ) with the tightest valid
// accountant (see the package comment of this file): Gaussian DP when A's
// noise is Gaussian, the improved zCDP conversion when it is Laplace.
func PlanIRLS(epsilon, delta float64, n int64, d int, opt IRLSOptions) (IRLSPlan, error) {
	return planIRLS(epsilon, delta, n, 1, d, opt)
}

// PlanIRLSUnits calibrates DP-IRLS for a target (ε, δ) under a privacy
// unit: neighbouring datasets differ in all (at most k) kept rows of one of
// the public number of units, and every release is divided by the public
// N = units·k (not by the private number of kept rows).
//
// # Sensitivities under replace-one-unit
//
// Every release of an iteration is R = (1/N)Σ_rows f(z) with, for the row
// z at the (public) iterate ω, f(z) = s·y·x (A), upper(s·x·xᵀ) (B),
// ψ_η(r)·x (g) or η·s (m); PlanIRLS's row-level sensitivity is
// Δ/N = sup ‖f(z) − f(z')‖/N. Replacing one unit turns its r ≤ k kept rows
// into r' ≤ k rows; pair min(r, r') of them, the other |r − r'| stand
// against no row, so by the triangle inequality
//
//	‖R − R'‖ ≤ (min(r, r')·Δ + |r − r'|·M)/N ≤ k·max(Δ, M)/N = max(Δ, M)/units,
//
// with M = sup ‖f(z)‖. For every release M ≤ Δ (‖x‖ ≤ 1, |y| ≤ 1,
// s ≤ 1/η, |ψ| ≤ 1, 0 < η·s ≤ 1): A: M = 1/η ≤ 2/η (L1: √d/η ≤ 2√d/η);
// B: ‖upper(s xxᵀ)‖ ≤ s‖x‖² ≤ 1/η ≤ √2/η; g: M = 1 ≤ 2 (L1 √d ≤ 2√d);
// m: M = 1 = Δ. So the unit-level sensitivity is the row-level formula
// evaluated at units instead of N (irlsFormSensitivities(·, units, ·)),
// attained by k copies of the row-level extremal pairs (g: x = e1 with
// y = ±1 at ω = 0; B: e1 against e2 with residuals under η), approached for
// m, and for A reached to the same √2/2 as at row level
// (TestIRLSUnitSensitivityExtremalPairs). The warm start's Λ1 and Λ2 are the
// FM family's, calibrated at units as UnitStats derives (SensitivitiesFor
// and GaussianFMJointScalesMu at units). The iterate ω that defines the
// next weights is a released (post-processed) value, the same on both
// sides, so the adaptive composition of the releases is unchanged: μ² adds.
//
// Rounding (rounding.go): each computed release is a plain loop over at
// most N = units·k rows divided by N, so its per-entry error is
// loopSumError(N, bound, N), the same bound as PlanIRLS's at N; it enters
// once on each side, so roundedSensitivity adds 2·spread·e to the unit
// sensitivity unchanged. The public defaults of the form (J, η) follow the
// rules at units, the number of independent contributors.
func PlanIRLSUnits(epsilon, delta float64, units int64, k int, d int, opt IRLSOptions) (IRLSPlan, error) {
	if k < 1 || units < 1 {
		return IRLSPlan{}, fmt.Errorf("irls: privacy unit: need ≥ 1 unit and K ≥ 1 rows per unit, got %d units, K = %d", units, k)
	}
	if units > math.MaxInt64/int64(k) {
		return IRLSPlan{}, fmt.Errorf("irls: privacy unit: %d units × %d rows overflows", units, k)
	}
	return planIRLS(epsilon, delta, units*int64(k), k, d, opt)
}

// planIRLS calibrates DP-IRLS whose releases divide by the public n and in
// which neighbouring datasets differ in at most k rows (PlanIRLSUnits).
func planIRLS(epsilon, delta float64, n int64, k int, d int, opt IRLSOptions) (IRLSPlan, error) {
	p := IRLSPlan{N: n, D: d, Delta: delta, RowsPerUnit: k}
	if n < 1 || d < 1 {
		return p, fmt.Errorf("irls: need N ≥ 1 and d ≥ 1, got N=%d d=%d", n, d)
	}
	// sensN is the N at which the row-level sensitivity formulas are
	// evaluated: units = n/k (PlanIRLSUnits), n itself when k = 1.
	sensN := n / int64(k)
	opt, err := opt.withDefaults(sensN, d, epsilon)
	if err != nil {
		return p, err
	}
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return p, fmt.Errorf("irls: ε must be finite and > 0, got %v", epsilon)
	}
	if !(delta > 0 && delta < 1) {
		return p, fmt.Errorf("irls: δ must be in (0, 1), got %v", delta)
	}
	p.Form, p.Iterations, p.ResidualFloor, p.FirstMoment, p.Split, p.WarmStart = opt.Form, opt.Iterations, opt.ResidualFloor, opt.FirstMoment, opt.Split, opt.WarmStart
	N, J := float64(n), float64(p.Iterations)
	// Sensitivities of the computed releases (rounding.go): each row's term
	// is s·y·x_p, s·x_p·x_q, ψ·x_p or η·s with |·| ≤ the form's bound (1/η
	// or 1) up to four roundings, summed over the N rows in a plain loop
	// and divided by N (irls_forms.go derives the forms' bounds).
	sensFirst, sensSecond, nSecond, bound := irlsFormSensitivities(p.Form, sensN, d, p.ResidualFloor, p.FirstMoment == "laplace")
	termBound := bound * (1 + gamma(4))
	e := loopSumError(n, termBound, N)
	p.SensB = roundedSensitivity(sensSecond, 4, nSecond, e, false)
	// gaussSigma returns σ with GaussianCalibrationSensitivity(sens, σ, m)/σ ≤ mu.
	gaussSigma := func(sens, mu float64, m int) (float64, error) {
		sigma, err := gaussianStdAt(sens, mu, m)
		if err != nil {
			return 0, fmt.Errorf("irls: ε = %v: %w", epsilon, err)
		}
		return sigma, nil
	}
	// Per-iteration budgets, as squared Gaussian-DP μ (Gaussian A) or as
	// zCDP ρ = μ²/2 (Laplace A); the warm start takes the share WarmStart
	// of the total first, split evenly between its Λ1 and Λ2.
	var total2 float64 // μ² (Gaussian A) or 2ρ (Laplace A)
	if p.FirstMoment == "gaussian" {
		mu, err := accounting.GDPMuFor(epsilon, delta)
		if err != nil {
			return p, fmt.Errorf("irls: %w", err)
		}
		total2 = mu * mu
	} else {
		rho, err := RhoForEpsilonImproved(epsilon, delta)
		if err != nil {
			return p, err
		}
		total2 = 2 * rho
	}
	iter2 := (1 - p.WarmStart) * total2
	muA2, muB2 := p.Split*iter2/J, (1-p.Split)*iter2/J
	var rhoFM float64
	if p.WarmStart > 0 {
		sens, err := SensitivitiesFor(Linear, d, sensN)
		if err != nil {
			return p, err
		}
		p.FMSens1, p.FMSens2 = sens.Lambda1, sens.Lambda2
		// The two blocks are calibrated as one Gaussian mechanism by the
		// supremum of their whitened change (joint.go), as gaussian-fm is:
		// Gaussian DP μ_FM = √(WarmStart·μ²), split evenly.
		js, err := GaussianFMJointScalesMu(Linear, d, sensN, TaylorQuadratic, math.Sqrt(p.WarmStart*total2), DefaultGaussianFMSplit)
		if err != nil {
			return p, fmt.Errorf("irls: warm start: %w", err)
		}
		p.FMTau1, p.FMTau2, p.FMWhitened = js.Tau1, js.Tau2, js.Sensitivity
		if rhoFM, err = gaussianRho(js.Sensitivity); err != nil {
			return p, fmt.Errorf("irls: warm start: %w", err)
		}
	}
	if p.SigmaB, err = gaussSigma(p.SensB, math.Sqrt(muB2), nSecond); err != nil {
		return p, err
	}
	sb := noise.GaussianCalibrationSensitivity(p.SensB, p.SigmaB, nSecond)
	if p.RhoB, err = accounting.GaussianZCDP(p.SigmaB, sb); err != nil {
		return p, fmt.Errorf("irls: %w", err)
	}
	if p.FirstMoment == "gaussian" {
		p.SensA = roundedSensitivity(sensFirst, 4, d, e, false)
		if p.ScaleA, err = gaussSigma(p.SensA, math.Sqrt(muA2), d); err != nil {
			return p, err
		}
		sa := noise.GaussianCalibrationSensitivity(p.SensA, p.ScaleA, d)
		if p.RhoA, err = accounting.GaussianZCDP(p.ScaleA, sa); err != nil {
			return p, fmt.Errorf("irls: %w", err)
		}
	} else {
		p.SensA = roundedSensitivity(sensFirst, 4, d, e, true)
		epsA := math.Sqrt(muA2)
		if p.ScaleA, err = accounting.LaplaceScale(epsA, p.SensA); err != nil {
			return p, fmt.Errorf("irls: calibrate Laplace noise: %w", err)
		}
		za, err := accounting.PureToZCDP(epsA)
		if err != nil {
			return p, fmt.Errorf("irls: %w", err)
		}
		p.RhoA = za.Rho
	}
	// ρ = J(ρ_A + ρ_B) + ρ_FM, each term and the sum rounded up (the sum
	// exactly, accounting.ComposeZCDP).
	parts := make([]accounting.ZCDP, 0, 2*p.Iterations+1)
	for j := 0; j < p.Iterations; j++ {
		parts = append(parts, accounting.ZCDP{Rho: p.RhoA}, accounting.ZCDP{Rho: p.RhoB})
	}
	parts = append(parts, accounting.ZCDP{Rho: rhoFM})
	z, err := accounting.ComposeZCDP(parts...)
	if err != nil {
		return p, fmt.Errorf("irls: %w", err)
	}
	p.Rho = z.Rho
	if p.EpsilonZCDP, err = z.Epsilon(delta); err != nil {
		return p, fmt.Errorf("irls: %w", err)
	}
	if p.EpsilonImproved, err = z.EpsilonImproved(delta); err != nil {
		return p, fmt.Errorf("irls: %w", err)
	}
	if p.FirstMoment == "gaussian" {
		// Every release is Gaussian with μ_i = √(2ρ_i): the composition is
		// exactly μ = √(Σμ_i²) = √(2ρ) Gaussian DP (GDPMu sums exactly and
		// rounds up).
		ratios := make([]float64, 0, 2*p.Iterations+2)
		for j := 0; j < p.Iterations; j++ {
			ratios = append(ratios, math.Sqrt(2*p.RhoA), math.Sqrt(2*p.RhoB))
		}
		if p.WarmStart > 0 {
			ratios = append(ratios, p.FMWhitened)
		}
		if p.Mu, err = accounting.GDPMu(ratios...); err != nil {
			return p, fmt.Errorf("irls: %w", err)
		}
		if p.EpsilonExact, err = accounting.GDPEpsilon(p.Mu, delta); err != nil {
			return p, fmt.Errorf("irls: %w", err)
		}
		// Verify the target itself: δ(ε) of the composition is ≤ δ. The
		// bisected EpsilonExact may sit a relative 1e-12 above it.
		if d, err := accounting.GDPDelta(p.Mu, epsilon); err != nil || d > delta {
			return p, fmt.Errorf("irls: calibration failed: μ = %v gives δ = %v > %v at ε = %v", p.Mu, d, delta, epsilon)
		}
		p.EpsilonExact = math.Min(p.EpsilonExact, epsilon)
		p.Accountant = "gaussian-dp"
	} else {
		p.Accountant = "zcdp-improved"
		if p.EpsilonImproved > epsilon {
			return p, fmt.Errorf("irls: calibrated ε = %v exceeds the target %v", p.EpsilonImproved, epsilon)
		}
	}
	// The target itself is verified above; the figure computed back from the
	// noise (EpsilonExact or EpsilonImproved) lies a hair below it (the grid
	// slack and the rounding of σ upwards), so the guarantee stated is the
	// target.
	p.Epsilon = epsilon
	return p, nil
}

// moments returns A = (1/N)Σ s_i y_i x_i and the upper triangle of
// B = (1/N)Σ s_i x_i x_iᵀ (packed as Quadratic.Upper) at the iterate w.
func irlsMoments(rows []float64, k int, w []float64, floor float64) (a, upper []float64) {
	return irlsMomentsN(rows, k, w, floor, int64(len(rows)/k))
}

// irlsMomentsN is irlsMoments divided by the public divisor N (the number
// of rows, or Units·K under a privacy unit: PlanIRLSUnits).
func irlsMomentsN(rows []float64, k int, w []float64, floor float64, divisor int64) (a, upper []float64) {
	return irlsFirstAndB(rows, k, w, floor, divisor, func(_, y, den float64) float64 { return (1 / den) * y })
}

// irlsFirstAndB returns (1/N)Σ c_i x_i and the upper triangle of B at the
// iterate w in one pass, with c_i = coef(r_i, y_i, max(η, |r_i|)): s_i·y_i
// for A, ψ_η(r_i) for g. N is the public divisor (≥ the number of rows).
func irlsFirstAndB(rows []float64, k int, w []float64, floor float64, divisor int64, coef func(res, y, den float64) float64) (first, upper []float64) {
	d := k - 1
	n := len(rows) / k
	first = make([]float64, d)
	full := make([]float64, d*d)
	for i := 0; i < n; i++ {
		r := rows[i*k : (i+1)*k]
		x := r[:d]
		res := r[d] - dot(x, w)
		den := math.Max(floor, math.Abs(res))
		c := coef(res, r[d], den)
		s := 1 / den
		for p := 0; p < d; p++ {
			first[p] += c * x[p]
			sp := s * x[p]
			for q := p; q < d; q++ {
				full[p*d+q] += sp * x[q]
			}
		}
	}
	N := float64(divisor)
	upper = make([]float64, 0, d*(d+1)/2)
	for p := 0; p < d; p++ {
		first[p] /= N
		for q := p; q < d; q++ {
			upper = append(upper, full[p*d+q]/N)
		}
	}
	return first, upper
}

// irlsStep returns the minimiser of ωᵀB̃ω − 2Ãᵀω after ridge and trimming.
func irlsStep(a, upper []float64, lambda float64) ([]float64, int, error) {
	d := len(a)
	q := &Quadratic{D: d, Lambda1: make([]float64, d), Upper: upper}
	for j := range a {
		q.Lambda1[j] = -2 * a[j]
	}
	return q.Minimize(NoisyPostProcess(lambda))
}

// validateRobust checks the configuration of a robust fit.
func validateRobust(data Data, cfg Config, private bool) error {
	if cfg.Kind != Robust {
		return fmt.Errorf("regress: this mechanism fits robust (L1) regression only; got model %q (use --model robust)", cfg.Kind)
	}
	c := cfg
	c.Kind = Linear // same encoding and public parameters as linear
	return c.validate(data, private)
}

// irlsEstimator is DP-IRLS with Gaussian noise (symmetric on B), calibrated by exact composition.
type irlsEstimator struct{}

func (irlsEstimator) Name() string        { return "irls" }
func (irlsEstimator) NeedsRows(Kind) bool { return true }
func (irlsEstimator) Private() bool       { return true }

func (irlsEstimator) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	// Under a privacy unit the releases divide by the public Units·K and
	// are calibrated at Units (PlanIRLSUnits derives it).
	cfg.unitAware, cfg.unitRows = true, true
	if err := validateRobust(data, cfg, true); err != nil {
		return nil, err
	}
	if cfg.Delta <= 0 {
		return nil, errors.New("irls: zCDP accounting needs δ > 0")
	}
	rows, err := checkRows(data, Robust)
	if err != nil {
		return nil, fmt.Errorf("irls: %w", err)
	}
	k := data.Stats.K()
	d := k - 1
	var plan IRLSPlan
	unit, isUnit := unitOf(data.Stats)
	if isUnit {
		plan, err = PlanIRLSUnits(cfg.Epsilon, cfg.Delta, unit.Units, unit.MaxRows, d, cfg.IRLS)
	} else {
		plan, err = PlanIRLS(cfg.Epsilon, cfg.Delta, data.Stats.N(), d, cfg.IRLS)
	}
	if err != nil {
		return nil, err
	}
	lam := cfg.lambda(plan.SigmaB)
	plan.last = &Quadratic{}
	plan.lastStep = &irlsLastStep{}
	plan.warm = &Released{}
	var w0 []float64
	var lamFM float64
	var gram *Quadratic
	if plan.WarmStart > 0 {
		lamFM = cfg.lambda(plan.FMTau2)
		if w0, gram, err = plan.warmStart(data.Stats, cfg.Source, lamFM); err != nil {
			return nil, err
		}
	}
	var w []float64
	var trimmed int
	if plan.Form == IRLSFormPreconditioned {
		lam = lamFM // the step solves with the warm start's ridged Gram matrix
		w, trimmed, err = plan.runPreconditioned(ctx, rows, k, w0, gram, cfg.Source, lamFM)
	} else {
		w, trimmed, err = plan.run(ctx, rows, k, w0, cfg.Source, lam)
	}
	if err != nil {
		return nil, err
	}
	nameFirst, nameSecond, nSecond, normSecond := plan.releaseNames()
	p := report.Privacy{
		Mechanism: fmt.Sprintf("irls (DP-IRLS for L1 regression, Park & Welling, with %s noise on the first release%s, calibrated by %s: PRIVACY-NOTES items 10-11; %s form, J = %d, residual floor η = %s)",
			plan.FirstMoment, map[bool]string{true: " and symmetric Gaussian noise on B", false: " and Gaussian noise on m"}[plan.Form != IRLSFormPreconditioned],
			map[string]string{"gaussian-dp": "exact Gaussian-DP composition", "zcdp-improved": "zCDP"}[plan.Accountant], plan.Form, plan.Iterations, fmtG(plan.ResidualFloor)),
		Private:      true,
		Epsilon:      plan.Epsilon,
		Delta:        plan.Delta,
		Rho:          plan.Rho,
		Neighbouring: neighbouring(data.Stats),
		Accountant:   plan.accountantText(),
		Releases: []report.Release{
			{Name: nameFirst, Entries: d,
				Norm: map[string]string{"gaussian": "L2", "laplace": "L1"}[plan.FirstMoment], Sensitivity: plan.SensA, Noise: plan.FirstMoment, Scale: plan.ScaleA},
			{Name: nameSecond, Entries: nSecond,
				Norm: normSecond, Sensitivity: plan.SensB, Noise: "gaussian", Scale: plan.SigmaB},
		},
		PostProcessing: plan.stepPostProcessing(lam, trimmed),
		Notes:          plan.secondaryFigures(),
	}
	if plan.WarmStart > 0 {
		nb := d * (d + 1) / 2
		// The warm start comes first (it is released first); its two
		// blocks are one jointly calibrated Gaussian mechanism.
		p.Releases = append([]report.Release{
			{Name: "warm start: Gaussian FM least-squares Λ1 = −(2/N)Σ y·x (once)", Entries: d, Norm: "L2", Sensitivity: plan.FMSens1, Noise: "gaussian", Scale: plan.FMTau1},
			{Name: "warm start: Gaussian FM Λ2 = (1/N)Σ x·xᵀ upper triangle (once)", Entries: nb, Norm: "L2 (Frobenius)", Sensitivity: plan.FMSens2, Noise: "gaussian", Scale: plan.FMTau2},
		}, p.Releases...)
		p.WhitenedSensitivity, p.WhitenedReleases = plan.FMWhitened, 2
		p.PostProcessing = append([]string{fmt.Sprintf("first iterate: the Gaussian FM least-squares fit (share %.2f of the budget; ridge λ = %s, trimming as gaussian-fm) instead of ω = 0", plan.WarmStart, fmtG(lamFM))}, p.PostProcessing...)
	}
	p.Randomness, p.Insecure = randomness(cfg.Source)
	return &Result{Coef: w, Privacy: p, Trimmed: trimmed, Released: plan.released(data.Stats.N(), lam)}, nil
}

// warmStart releases the Gaussian FM least-squares objective with the
// plan's warm-start noise and returns its regularised minimiser and the
// released objective (whose Λ2 is the noisy Gram matrix (1/N)Σ x xᵀ).
func (plan IRLSPlan) warmStart(st Stats, src noise.Source, lam float64) ([]float64, *Quadratic, error) {
	q, err := Objective(Linear, st)
	if err != nil {
		return nil, nil, fmt.Errorf("irls: warm start: %w", err)
	}
	if err := noise.AddGaussian(src, q.Lambda1, plan.FMTau1); err != nil {
		return nil, nil, fmt.Errorf("irls: warm start: noise on Λ1: %w", err)
	}
	if err := noise.AddGaussian(src, q.Upper, plan.FMTau2); err != nil {
		return nil, nil, fmt.Errorf("irls: warm start: noise on Λ2: %w", err)
	}
	plan.recordWarm(q, st.N(), lam)
	w, _, err := q.Minimize(NoisyPostProcess(lam))
	if err != nil {
		return nil, nil, fmt.Errorf("irls: warm start: %w", err)
	}
	return w, q, nil
}

// accountantText describes the headline accountant.
func (plan IRLSPlan) accountantText() string {
	if plan.Accountant == "gaussian-dp" {
		return fmt.Sprintf("exact composition of the %d Gaussian releases (Gaussian DP, Dong, Roth & Su 2019): μ = √(Σ μ_i²) = %s, analytic Gaussian (ε, δ) curve (Balle & Wang 2018); grid slack included",
			2*plan.Iterations, report.Up(plan.Mu))
	}
	return fmt.Sprintf("zCDP (Bun & Steinke 2016): %d iterations × (ρ_A = %s (Laplace, ε_A²/2) + ρ_B = %s) = ρ = %s, converted by Canonne, Kamath & Steinke 2020",
		plan.Iterations, report.Up(plan.RhoA), report.Up(plan.RhoB), report.Up(plan.Rho))
}

// secondaryFigures lists the looser accountants' ε for the same noise.
func (plan IRLSPlan) secondaryFigures() []string {
	notes := []string{fmt.Sprintf("looser accountants for the same noise: zCDP ρ = %s gives ε = %s by ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016)",
		report.Up(plan.Rho), report.Up(plan.EpsilonZCDP))}
	if plan.Accountant == "gaussian-dp" {
		notes[0] += fmt.Sprintf(" and ε = %s by Canonne, Kamath & Steinke 2020", report.Up(plan.EpsilonImproved))
	}
	return notes
}

// run performs the J noisy IRLS iterations with ridge lam on the noisy B and
// returns the last iterate and its number of trimmed directions.
// w0, when non-nil, is the first iterate (the warm start).
func (plan IRLSPlan) run(ctx context.Context, rows []float64, k int, w0 []float64, src noise.Source, lam float64) ([]float64, int, error) {
	w := make([]float64, k-1)
	copy(w, w0)
	trimmed := 0
	for j := 0; j < plan.Iterations; j++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("irls: %w", err)
		}
		var a, upper []float64
		if plan.Form == IRLSFormGradient {
			a, upper = irlsGradientMomentsN(rows, k, w, plan.ResidualFloor, plan.N)
		} else {
			a, upper = irlsMomentsN(rows, k, w, plan.ResidualFloor, plan.N)
		}
		var err error
		if plan.FirstMoment == "gaussian" {
			err = noise.AddGaussian(src, a, plan.ScaleA)
		} else {
			err = noise.AddLaplace(src, a, plan.ScaleA)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("irls: iteration %d: noise on A: %w", j+1, err)
		}
		if err := noise.AddGaussian(src, upper, plan.SigmaB); err != nil {
			return nil, 0, fmt.Errorf("irls: iteration %d: noise on B: %w", j+1, err)
		}
		next, tr, err := irlsStep(a, upper, lam)
		if err != nil {
			return nil, 0, fmt.Errorf("irls: iteration %d: %w", j+1, err)
		}
		if plan.Form == IRLSFormGradient { // next is the step B̃⁻¹g̃
			if plan.lastStep != nil {
				plan.lastStep.Start = append([]float64(nil), w...)
			}
			for i := range next {
				next[i] += w[i]
			}
		}
		w, trimmed = next, tr
		if plan.last != nil {
			plan.last.setIRLS(a, upper)
		}
	}
	return w, trimmed, nil
}

// irlsWishart is the seed's Wishart variant: NOT differentially private.
type irlsWishart struct{}

func (irlsWishart) Name() string        { return "irls-wishart" }
func (irlsWishart) NeedsRows(Kind) bool { return true }
func (irlsWishart) Private() bool       { return false }

func (irlsWishart) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	if err := validateRobust(data, cfg, true); err != nil {
		return nil, err
	}
	rows, err := checkRows(data, Robust)
	if err != nil {
		return nil, fmt.Errorf("irls-wishart: %w", err)
	}
	seed := cfg.IRLS
	if seed.Form != "" && seed.Form != IRLSFormMoments {
		return nil, fmt.Errorf("irls-wishart: reproduces the seed's moments form only, not the %q form", seed.Form)
	}
	seed.WarmStart = -1 // the seed's algorithm: cold start
	plan, err := seed.withDefaults(data.Stats.N(), data.Stats.K()-1, cfg.Epsilon)
	if err != nil {
		return nil, err
	}
	k := data.Stats.K()
	d := k - 1
	N := float64(data.Stats.N())
	J := float64(plan.Iterations)
	sMax := 1 / plan.ResidualFloor
	epsP := math.Sqrt(cfg.Epsilon / J)
	wishartStd := math.Sqrt(sMax / (2 * epsP * N))
	var scaleA float64
	if plan.FirstMoment == "laplace" {
		scaleA = 2 * math.Sqrt(float64(d)) * sMax / (N * epsP)
	} else {
		if !(cfg.Delta > 0) {
			return nil, errors.New("irls-wishart: Gaussian noise on A needs δ > 0")
		}
		scaleA = math.Sqrt(2*math.Log(1.25/cfg.Delta)) * 2 * sMax / (N * epsP)
	}
	w := make([]float64, d)
	for j := 0; j < plan.Iterations; j++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("irls-wishart: %w", err)
		}
		a, upper := irlsMoments(rows, k, w, plan.ResidualFloor)
		if plan.FirstMoment == "laplace" {
			err = noise.AddLaplace(cfg.Source, a, scaleA)
		} else {
			err = noise.AddGaussian(cfg.Source, a, scaleA)
		}
		if err != nil {
			return nil, fmt.Errorf("irls-wishart: %w", err)
		}
		wn, err := noise.InsecureWishart(cfg.Source, d, d+1, wishartStd)
		if err != nil {
			return nil, fmt.Errorf("irls-wishart: %w", err)
		}
		pos := 0
		for p := 0; p < d; p++ {
			for q := p; q < d; q++ {
				upper[pos] += wn[p*d+q]
				pos++
			}
		}
		if w, _, err = irlsStep(a, upper, 0); err != nil {
			return nil, fmt.Errorf("irls-wishart: iteration %d: %w", j+1, err)
		}
	}
	p := report.Privacy{
		Mechanism:  "irls-wishart (DP-IRLS as published by Park & Welling, Wishart noise on B): NOT DIFFERENTIALLY PRIVATE, reproduction of the seed's Figure 1 only",
		Private:    false,
		Accountant: "none: Wishart noise is positive semi-definite, so neighbouring outputs have unbounded density ratio (PRIVACY-NOTES item 10); the seed's claimed (ε, √(2ε))-CDP does not hold",
		Releases: []report.Release{
			{Name: "A (first moment)", Entries: d, Norm: map[string]string{"gaussian": "L2", "laplace": "L1"}[plan.FirstMoment],
				Sensitivity: map[string]float64{"gaussian": 2 * sMax / N, "laplace": 2 * math.Sqrt(float64(d)) * sMax / N}[plan.FirstMoment],
				Noise:       plan.FirstMoment + " (seed calibration, ε′ = √(ε/J))", Scale: scaleA},
			{Name: "B (second moment)", Entries: d * d, Norm: "none", Noise: fmt.Sprintf("Wishart W_d(d+1, %.4g·I): not DP", wishartStd*wishartStd), Scale: wishartStd},
		},
		Notes: []string{"do not publish: this variant has no privacy guarantee; use --mechanism irls"},
	}
	p.Randomness, p.Insecure = randomness(cfg.Source)
	return &Result{Coef: w, Privacy: p, Warnings: []string{"irls-wishart is NOT differentially private (reproduction only)"}}, nil
}

// nonPrivateAny is the non-private reference for every kind: nonPrivate for
// linear and logistic, the exact LAD fit for robust.
type nonPrivateAny struct{ nonPrivate }

func (e nonPrivateAny) NeedsRows(k Kind) bool {
	return k == Robust || e.nonPrivate.NeedsRows(k)
}

func (e nonPrivateAny) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	if cfg.Kind != Robust {
		return e.nonPrivate.Fit(ctx, data, cfg)
	}
	if err := validateRobust(data, cfg, false); err != nil {
		return nil, err
	}
	rows, err := checkRows(data, Robust)
	if err != nil {
		return nil, fmt.Errorf("nonprivate robust: %w", err)
	}
	fit, err := LAD(ctx, rows, data.Stats.K())
	if err != nil {
		return nil, err
	}
	res := &Result{Coef: fit.Coef, Privacy: nonPrivateReport("nonprivate (exact least-absolute-deviations fit: IRLS, then simplex basis exchange with an optimality certificate)")}
	if !fit.Certified {
		res.Warnings = append(res.Warnings, fmt.Sprintf("LAD optimality not certified (max |u| = %.6g > 1 after %d basis exchanges); the best fit found is returned", fit.MaxDual, fit.Exchanges))
	}
	return res, nil
}

// boxFeasible reports whether some u ∈ [−1, 1]^Z has Σ_{i∈Z} u_i x_i = g
// (to 1e-10 relative), by accelerated projected gradient (FISTA) on
// ½‖Σ u_i x_i − g‖² over the box.
func boxFeasible(rows []float64, k int, z []int, g []float64) bool {
	d := k - 1
	L := 0.0
	for _, i := range z {
		x := rows[i*k : i*k+d]
		L += dot(x, x)
	}
	if L == 0 {
		return maxAbs(g) == 0
	}
	u := make([]float64, len(z))
	y := make([]float64, len(z))
	prev := make([]float64, len(z))
	res := make([]float64, d)
	tol := 1e-10 * (1 + math.Sqrt(dot(g, g)))
	tk := 1.0
	for it := 0; it < 20000; it++ {
		for j := range res {
			res[j] = -g[j]
		}
		for c, i := range z {
			for j := 0; j < d; j++ {
				res[j] += y[c] * rows[i*k+j]
			}
		}
		copy(prev, u)
		for c, i := range z {
			u[c] = math.Max(-1, math.Min(1, y[c]-dot(rows[i*k:i*k+d], res)/L))
		}
		tn := (1 + math.Sqrt(1+4*tk*tk)) / 2
		for c := range y {
			y[c] = u[c] + (tk-1)/tn*(u[c]-prev[c])
		}
		tk = tn
		if it%50 == 0 {
			for j := range res {
				res[j] = -g[j]
			}
			for c, i := range z {
				for j := 0; j < d; j++ {
					res[j] += u[c] * rows[i*k+j]
				}
			}
			if math.Sqrt(dot(res, res)) <= tol {
				return true
			}
		}
	}
	return false
}

// LADFit is an exact least-absolute-deviations fit.
type LADFit struct {
	Coef []float64
	// Objective is (1/N)Σ|y_i − x_iᵀω|.
	Objective float64
	// Basis holds the d rows interpolated exactly (zero residual).
	Basis []int
	// MaxDual is max |u_i| of the optimality certificate; Certified is
	// MaxDual ≤ 1 + 1e-9.
	MaxDual   float64
	Certified bool
	// IRLSIterations and Exchanges count the work done.
	IRLSIterations, Exchanges int
}

// LAD returns the least-absolute-deviations fit of the encoded rows
// (row-major, k per row, target last); see the package documentation of
// robust regression above for the method.
func LAD(ctx context.Context, rows []float64, k int) (*LADFit, error) {
	d := k - 1
	n := len(rows) / k
	if d < 1 || n < d || len(rows)%k != 0 {
		return nil, fmt.Errorf("lad: need at least d = %d rows of length %d, got %d values", d, k, len(rows))
	}
	fit := &LADFit{}
	// IRLS with a shrinking floor.
	w := make([]float64, d)
	for floor := 1e-1; floor >= 1e-12; floor /= 10 {
		for it := 0; it < 100; it++ {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("lad: %w", err)
			}
			fit.IRLSIterations++
			a, upper := irlsMoments(rows, k, w, floor)
			next, _, err := irlsStep(a, upper, 0)
			if err != nil {
				return nil, fmt.Errorf("lad: weighted least squares: %w", err)
			}
			change := 0.0
			for j := range w {
				change = math.Max(change, math.Abs(next[j]-w[j]))
			}
			w = next
			if change < 1e-10*(1+maxAbs(w)) {
				break
			}
		}
	}
	resid := func(w []float64) []float64 {
		r := make([]float64, n)
		for i := range r {
			row := rows[i*k : (i+1)*k]
			r[i] = row[d] - dot(row[:d], w)
		}
		return r
	}
	objective := func(r []float64) float64 {
		s := 0.0
		for _, v := range r {
			s += math.Abs(v)
		}
		return s / float64(n)
	}
	// Basis: the d rows with the smallest residuals that are linearly
	// independent.
	r := resid(w)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return math.Abs(r[order[a]]) < math.Abs(r[order[b]]) })
	basis := make([]int, 0, d)
	var ortho [][]float64
	for _, i := range order {
		if len(basis) == d {
			break
		}
		v := append([]float64(nil), rows[i*k:i*k+d]...)
		nv0 := math.Sqrt(dot(v, v))
		for _, u := range ortho {
			c := dot(v, u)
			for j := range v {
				v[j] -= c * u[j]
			}
		}
		if nv := math.Sqrt(dot(v, v)); nv > 1e-8*nv0 && nv > 0 {
			for j := range v {
				v[j] /= nv
			}
			ortho = append(ortho, v)
			basis = append(basis, i)
		}
	}
	if len(basis) < d {
		fit.Coef, fit.Objective = w, objective(r)
		return fit, nil // rank-deficient design: return the IRLS fit uncertified
	}
	bestW, bestObj := w, objective(r)
	xb := mat.NewDense(d, d, nil)
	for it := 0; it < 50*n+100; it++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("lad: %w", err)
		}
		yb := make([]float64, d)
		for p, i := range basis {
			xb.SetRow(p, rows[i*k:i*k+d])
			yb[p] = rows[i*k+d]
		}
		var lu mat.LU
		lu.Factorize(xb)
		var sol mat.VecDense
		if err := lu.SolveVecTo(&sol, false, mat.NewVecDense(d, yb)); err != nil {
			break
		}
		cur := make([]float64, d)
		for j := range cur {
			cur[j] = sol.AtVec(j)
		}
		r = resid(cur)
		obj := objective(r)
		if obj <= bestObj {
			bestW, bestObj = cur, obj
		}
		// Certificate. Z = rows with zero residual (to rounding), basis
		// included. Fast path: u = 0 on Z outside the basis and
		// X_bᵀu_b = −Σ_{i∉Z} sign(r_i) x_i with |u_b| ≤ 1. Degenerate
		// vertices (|Z| > d): a feasibility check over the whole box.
		inBasis := make(map[int]int, d)
		for p, i := range basis {
			inBasis[i] = p
		}
		const zeroTol = 1e-11
		s := make([]float64, d)
		var zRows []int
		for i := 0; i < n; i++ {
			if math.Abs(r[i]) <= zeroTol {
				zRows = append(zRows, i)
				continue
			}
			sg := math.Copysign(1, r[i])
			for j := 0; j < d; j++ {
				s[j] -= sg * rows[i*k+j]
			}
		}
		var u mat.VecDense
		if err := lu.SolveVecTo(&u, true, mat.NewVecDense(d, s)); err != nil {
			break
		}
		umax := 0.0
		for p := 0; p < d; p++ {
			umax = math.Max(umax, math.Abs(u.AtVec(p)))
		}
		fit.MaxDual, fit.Basis = umax, append([]int(nil), basis...)
		if umax <= 1+1e-9 || (len(zRows) > d && boxFeasible(rows, k, zRows, s)) {
			fit.Certified = true
			bestW, bestObj = cur, obj
			break
		}
		// Descent edge: row j with |u_j| > 1 leaves the basis along
		// X_b v = −sign(u_j) e_j. The slope at t = 0⁺ is 1 − |u_j| plus
		// Σ|x_iᵀv| over the zero-residual rows outside the basis.
		type bp struct {
			t, w float64
			i    int
		}
		var bps []bp
		jmax, slope := -1, 0.0
		var v mat.VecDense
		cands := make([]int, 0, d)
		for p := 0; p < d; p++ {
			if math.Abs(u.AtVec(p)) > 1+1e-9 {
				cands = append(cands, p)
			}
		}
		sort.Slice(cands, func(a, b int) bool { return math.Abs(u.AtVec(cands[a])) > math.Abs(u.AtVec(cands[b])) })
		for _, p := range cands {
			e := make([]float64, d)
			e[p] = -math.Copysign(1, u.AtVec(p))
			if err := lu.SolveVecTo(&v, false, mat.NewVecDense(d, e)); err != nil {
				continue
			}
			m0 := 1 - math.Abs(u.AtVec(p))
			bps = bps[:0]
			for i := 0; i < n; i++ {
				if _, ok := inBasis[i]; ok {
					continue
				}
				a := 0.0
				for j := 0; j < d; j++ {
					a += rows[i*k+j] * v.AtVec(j)
				}
				if math.Abs(r[i]) <= zeroTol {
					m0 += math.Abs(a)
					continue
				}
				if a == 0 {
					continue
				}
				if t := r[i] / a; t > 0 {
					bps = append(bps, bp{t, math.Abs(a), i})
				}
			}
			if m0 < 0 && len(bps) > 0 {
				jmax, slope = p, m0
				break
			}
		}
		if jmax < 0 {
			break // no descent edge from this (degenerate) vertex
		}
		sort.Slice(bps, func(a, b int) bool { return bps[a].t < bps[b].t })
		enter := bps[len(bps)-1].i
		for _, b := range bps {
			slope += 2 * b.w
			if slope >= 0 {
				enter = b.i
				break
			}
		}
		basis[jmax] = enter
		fit.Exchanges++
	}
	fit.Coef, fit.Objective = bestW, bestObj
	return fit, nil
}
