package regress

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// Noisy gradient descent (mechanism "noisygd"): Song, Chaudhuri & Sarwate
// 2013 as used in the Gaussian FM seed (Section 3), with Rényi-DP accounting.
//
// # Algorithm
//
// Start at ω₀ = 0. For t = 0, …, T−1:
//
//	g_t = (1/N) Σ_i ∇ℓ(ω_t; x_i, y_i) + N(0, s²I)        (full batch), or
//	g_t = (1/(qN)) (Σ_{i∈S_t} ∇ℓ(ω_t; x_i, y_i) + N(0, s²I))  (Poisson batch S_t, rate q),
//	ω_{t+1} = Π_R(ω_t − η (g_t + λω_t)),
//
// where Π_R projects onto the public ball ‖ω‖ ≤ R and λ is an optional
// data-independent ridge. The output is the average of the iterates
// ω_{⌈T/2⌉}, …, ω_T (tail averaging, post-processing of the released
// gradients). The loss is, for linear models, Huber's loss with scale η
// (huber.go; the default) or the squared loss (y − xᵀω)² (Config.Huber <
// 0), and the logistic loss log(1 + e^{xᵀω}) − y·xᵀω for logistic models.
// With the Huber loss the projection is post-processing that the
// sensitivity does not depend on: it only regularises (default R:
// NoisyGDHuberBallFactor times the squared loss's).
//
// # Gradient sensitivity (‖x‖ ≤ 1, |y| ≤ 1 or y ∈ {0, 1}, ‖ω‖ ≤ R)
//
// Linear: ∇ℓ = −2(y − xᵀω)x. Per-example norm ≤ G = 2(1 + R). For two rows,
// ∇ℓ(d) − ∇ℓ(d') = −2[(yx − y'x') − (xxᵀ − x'x'ᵀ)ω]; ‖yx − y'x'‖ ≤ 2 and
// xxᵀ − x'x'ᵀ, a difference of two PSD matrices with eigenvalues in [0, 1],
// has spectral norm ≤ 1, so the difference is ≤ D = 2(R + 2). The bound is
// not tight, and we claim no tighter one: the difference can exceed
// 2(R + √2) (a numerical search finds 6.10 > 5.83 at R = 1.5;
// TestNoisyGDSensitivityBounds), so D = 2(R + 2) is what the code uses.
//
// Linear, Huber's loss with scale η (any ω, ball or none): ∇ℓ = −2·clamp(y − xᵀω, −η, η)·x
// = −c·x with |c| ≤ 2η whatever ω is, so the per-example norm is ≤ G = 2η
// and the difference of two is ‖c'x' − cx‖ ≤ |c| + |c'| ≤ D = 4η (attained
// at x' = −x, unit norm, residuals of opposite signs beyond ±η;
// TestNoisyGDHuberSensitivity). The loss is 2-smooth (ℓ'' ∈ {0, 2} times
// xxᵀ ⪯ I), as the squared loss, so the default learning rate is unchanged.
//
// Logistic, the clipped gradient with bound c ∈ (0, 1] (huber.go; the
// default, c = DefaultLogisticClip): ∇ℓ = (σ(xᵀω) − y)x·min(1, c/‖(σ(xᵀω) − y)x‖),
// of norm ≤ G = c for every ω, and two differ by ≤ D = 2c (x' = −x, unit
// norm, y = y' = 0, ω = 0 for c ≤ ½; TestNoisyGDLogisticClipSensitivity).
// No ball: the default has none, and a given --radius is post-processing.
//
// Logistic (Config.Huber < 0): ∇ℓ = (σ(xᵀω) − y)x. For y = 1 it equals σ((−x)ᵀω)(−x), so every
// per-example gradient has the form σ(uᵀω)u with ‖u‖ ≤ 1, of norm
// ≤ G = σ(R) (σ(‖u‖R)‖u‖ ≤ σ(R)); the difference of two is ≤ D = 2σ(R).
//
// Full batch (replace-one neighbours): the average gradient has L2
// sensitivity Δ = D/N. Poisson sampling: the accountant of Mironov, Talwar &
// Zhang 2019 is for add/remove-one neighbours with the sum's sensitivity G;
// replace-one is a removal followed by an addition, and Mironov 2017 Prop. 11
// (weak triangle inequality, p = q = 2) gives the per-step replace-one curve
// ε_r(α) = (α − ½)/(α − 1)·ε(2α) + ε(2α − 1), which composes over the T
// steps and converts to (ε, δ) like any RDP curve. In the triangle through
// the dataset D⁻ without the replaced record, the first term bounds
// D_{2α}(M(D) ‖ M(D⁻)), the output with the record against the output
// without it, which is the divergence MTZ's A_α computes; the second bounds
// D_{2α−1}(M(D⁻) ‖ M(D'')), the output without a record against the output
// with the new one, the reverse order, which MTZ's Theorem 5 shows is never
// larger, so both terms use MTZ's ε(α) (as Opacus and TF Privacy do for
// add/remove).
//
// # Accounting
//
// Sigma is the noise multiplier z: the noise standard deviation divided by
// the L2 sensitivity of the noised vector (Δ for full batch, G for Poisson
// batches), as in Opacus. noise.AddGaussian's rounding adds
// noise.GaussianGridSlack to the sensitivity, so the effective multiplier
// z_eff = s/(Δ + slack) is what the accountant uses. Full batch: T
// adaptively composed Gaussian steps are exactly √T/z_eff-Gaussian-DP (Dong,
// Roth & Su 2019), whose (ε, δ) curve is the analytic Gaussian one; that is
// the headline ε and what a target (ε, δ) is calibrated by (PRIVACY-NOTES
// item 21). The report adds, as looser secondary figures for the same noise,
// the improved RDP conversion (Canonne, Kamath & Steinke 2020), the seed's
// Eq. (7) at its Eq. (8) order, and ρ + 2√(ρ ln(1/δ)) with ρ = T/(2z_eff²).
// Poisson batches have no exact Gaussian form: the headline is the improved
// RDP conversion (Balle et al. 2020) on accounting.DefaultOrders, with the
// classic one (Mironov 2017) secondary. Given a target (ε, δ) instead of
// Sigma, the smallest z meeting the headline ε is found by bisection.

// # The data-scaled step (Huber's loss and the clipped logistic gradient, full batch, issue 26)
//
// The default step 1/L uses L = 2 (Huber) or ¼ (the clipped logistic
// gradient), the smoothness bound of the loss for ‖x‖ ≤ 1. A table whose rows use little of the unit ball has a much
// flatter loss: on the 229,000-row designs of `dplearn experiment
// utility-shapes` the Hessian's eigenvalues are 0.002–0.005, and 1,000
// steps of 1/2 leave the fit short of the minimiser whatever ε (its excess
// RMSE was flat in ε, 9.7–29× DP-IRLS's at ε = 0.1). Gradient descent from
// 0 with T steps of size η shrinks the directions of curvature h below
// about 1/(ηT) toward 0, like a ridge of that size; the shrinkage pays
// where those directions are noise-dominated and costs bias where they are
// not. The step is chosen by two bounds:
//
//   - a public ceiling from the noise: the gradients' noise, averaged over
//     the T/2 iterates of the tail, has per-coordinate size about s/√T (s
//     the noise per step) and spectral size ν = √d·s/√T over the d
//     directions. Keeping the implied ridge 1/(ηT) at least c·ν, c =
//     NoisyGDStepNoiseFactor, gives η ≤ 1/(c·√(dT)·s). Public (N, d, ε,
//     T): where it is at most 1/L, the step is 1/L and nothing more is
//     released, so the mechanism is the one without this section;
//   - a stability bound from the data: the smoothness of the average
//     loss is at most L·λ_max(XᵀX/N) ≤ L·tr(XᵀX/N) (lossSmoothness: for
//     the clipped logistic gradient too, whose per-row field is the
//     gradient of a convex ¼-smooth loss, below). The trace t =
//     (1/N)Σ‖x_i‖² is released once with Gaussian noise (share
//     NoisyGDTraceShare of μ², below), and t⁺ = min(1, t̃ +
//     NoisyGDTraceMargin·σ_t) bounds it above except with probability
//     Φ(−NoisyGDTraceMargin) ≈ 3·10⁻⁵. The step is
//     η = max(1/L, min(ceiling, 1/(L·t⁺ + λ))). Gradient descent on an
//     L'-smooth loss is stable for η < 2/L', so η ≤ 1/(L·t⁺) diverges
//     only when t⁺ < λ_max/2 ≤ t/2, below even the failure of the bound;
//     and Huber's ball (post-processing) bounds the iterates in any case.
//
// The clipped logistic gradient of a row is x·ψ(xᵀω) with ψ(z) =
// clip(σ(z) − y, ±c/‖x‖), c the clip: a clip of the nondecreasing
// σ(z) − y is nondecreasing with slope ≤ σ'(z) ≤ ¼, so the field is the
// gradient of φ(xᵀω), φ convex with φ' = ψ, and its Jacobian ψ'·xxᵀ ⪯
// xxᵀ/4: the average is (¼)λ_max(XᵀX/N)-smooth, and the same trace bounds
// it. Its ceiling has its own factor, NoisyGDLogisticStepNoiseFactor.
//
// Sensitivity of the trace (replace-one, ‖x‖² ∈ [0, 1 + encTol] as
// checkRows accepts): one row moves Σ‖x_i‖² by at most 1 + encTol, so
// Δ_t = (1 + encTol)/N; under a privacy unit of at most k rows, with the
// divisor N = units·k, Δ_t = k(1 + encTol)/N = (1 + encTol)/units. The sum
// is computed in a plain loop (rounding.go's loopSumError on terms ≤
// (1 + encTol)(1 + γ_d)).
//
// Accounting: the trace is one more Gaussian release of Gaussian-DP
// parameter μ_t = Δ_t/σ_t beside the T steps' √T/z; adaptive composition is
// √(T/z² + μ_t²)-GDP (Dong, Roth & Su 2019). The calibration splits a
// target μ (the one T steps alone would get) as μ_t² = share·μ² and
// T/z² = (1 − share)·μ², verifies the composed μ (grid slack included)
// against (ε, δ), and reports every figure (RDP, zCDP, the seed's Eq. 7)
// for the composed μ: each depends on the T Gaussian steps only through
// T/z², so the composition is that of T steps with the multiplier
// z' = √T/μ. `dplearn experiment utility-shapes` and paired pilots on the
// embedded tables chose c (docs/mechanisms.md). With c = 2 (the eighth
// pass) the ceiling fired on the embedded tables only on CPS1988 at
// ε ≥ 1 and cut the 60,000-row designs' excess to 0.04–0.81× at ε ≥ 0.5.
// Once the noise-walk ball reads the step actually used (below), c = 0.5
// also lifts ε = 0.1 on the 229,000-row designs (d = 24: 0.0021 → 0.00047
// excess RMSE, DP-IRLS 0.0004; d = 7: 0.0102 → 0.0037), at 0.91 / 1.12 /
// 1.01× c = 2's excess on CPS1988 at ε = 0.5 / 1 / 2 (100 paired splits;
// the only embedded cells where a ceiling of c ≥ 0.5 exceeds 1/L).

// NoisyGDStepNoiseFactor is c of the data-scaled step's public ceiling
// η ≤ 1/(c·√(dT)·s) (see above) for Huber's loss.
const NoisyGDStepNoiseFactor = 0.5

// NoisyGDLogisticStepNoiseFactor is c of the data-scaled step's public
// ceiling for the clipped logistic gradient, chosen by paired pilots
// (docs/mechanisms.md, "noisygd's data-scaled step").
const NoisyGDLogisticStepNoiseFactor = 0.2

// stepNoiseFactor is c of the data-scaled step's ceiling for kind.
func stepNoiseFactor(kind Kind) float64 {
	if kind == Logistic {
		return NoisyGDLogisticStepNoiseFactor
	}
	return NoisyGDStepNoiseFactor
}

// lossSmoothness is L of the step 1/L per unit of ‖x‖²: the Huber and
// squared losses' Hessian is at most 2xxᵀ, the logistic loss's
// σ'(xᵀω)xxᵀ ⪯ xxᵀ/4 (and the clipped logistic gradient's Jacobian, see
// the data-scaled step), so the average loss is L·λ_max(XᵀX/N)-smooth,
// at most L·tr(XᵀX/N) and at most L for ‖x‖ ≤ 1.
func lossSmoothness(kind Kind) float64 {
	if kind == Logistic {
		return 0.25 // σ' ≤ ¼
	}
	return 2 // Huber's and the squared loss's ℓ'' ≤ 2
}

// NoisyGDTraceShare is the share of the Gaussian-DP μ² that releases the
// trace of XᵀX/N for the data-scaled step (the gradients keep 1 − share:
// their noise grows by 1/√(1 − share) ≈ 1.01×).
const NoisyGDTraceShare = 0.02

// NoisyGDTraceMargin is the number of noise standard deviations added to
// the released trace to bound it above (see the data-scaled step).
const NoisyGDTraceMargin = 4

// NoisyGDOptions are the public parameters of noisy gradient descent.
type NoisyGDOptions struct {
	// Iterations is T; 0 means NoisyGDIterationsFor.
	Iterations int
	// Sigma is the noise multiplier z (noise std ÷ L2 sensitivity). 0 means
	// "solve for the smallest z that meets (Config.Epsilon, Config.Delta)".
	Sigma float64
	// BatchRate is the Poisson sampling rate q ∈ (0, 1]; 0 or 1 means full
	// batch.
	BatchRate float64
	// Radius is R, the public parameter ball; 0 means DefaultNoisyGDRadius.
	Radius float64
	// LearningRate is η; 0 means 1/L with L the smoothness bound of the
	// average loss (2 + λ linear, 1/4 + λ logistic), or, on Huber's loss
	// or the clipped logistic gradient with full batches and a target ε,
	// the data-scaled step where its public ceiling exceeds 1/L (see
	// above).
	LearningRate float64
	// Lambda is a data-independent ridge λ added to the objective (default
	// 0).
	Lambda float64
}

// NoisyGDHuberSensitivity returns, for Huber's loss with scale η (linear
// models, any ω), the per-example gradient norm bound G = 2η and the bound
// D = 4η on the difference of two per-example gradients (see the derivation
// above).
func NoisyGDHuberSensitivity(eta float64) (g, diff float64, err error) {
	return noisyGDClipSensitivity(Linear, eta)
}

// NoisyGDLogisticClipSensitivity returns, for the clipped logistic gradient
// with bound c ∈ (0, 1] (any ω), the per-example gradient norm bound G = c
// and the bound D = 2c on the difference of two (see the derivation
// above).
func NoisyGDLogisticClipSensitivity(c float64) (g, diff float64, err error) {
	return noisyGDClipSensitivity(Logistic, c)
}

// noisyGDClipSensitivity is G and D of the residual-bounded losses: 2η and
// 4η for the linear Huber loss (ℓ' = 2·clamp), c and 2c for the clipped
// logistic score.
func noisyGDClipSensitivity(kind Kind, eta float64) (g, diff float64, err error) {
	if kind == Logistic {
		if !(eta > 0) || eta > 1 {
			return 0, 0, fmt.Errorf("noisygd: logistic gradient clip c must be in (0, 1] (the unclipped gradient has norm < 1), got %v", eta)
		}
		return eta, 2 * eta, nil
	}
	if !(eta > 0) || math.IsInf(eta, 0) {
		return 0, 0, fmt.Errorf("noisygd: Huber scale η must be finite and > 0, got %v", eta)
	}
	return 2 * eta, 4 * eta, nil
}

// DefaultNoisyGDIterations is the default T when Nε/d is small; see
// NoisyGDIterationsFor.
const DefaultNoisyGDIterations = 100

// NoisyGDIterationsFor returns the default T of full-batch noisygd
// (Poisson batches keep DefaultNoisyGDIterations) for n rows (units under a
// privacy unit), d features and budget ε: linear T = min(1000, max(100,
// ⌊nε/(2d)⌋)), logistic DefaultNoisyGDIterations. With step 1/L the
// iterates approach the minimiser at rate 1 − λ/L per step, so an
// ill-conditioned design (λ/L ≈ 0.006 on CPS1988) needs several hundred
// steps; the noise of the tail average does not grow with T (the T steps
// share μ = √T/z, so each step's noise grows like √T, and the T/2
// averaged iterates divide its variance by T/2), but steps that have not
// converged act as shrinkage toward 0, which pays where nε/d is small.
// The rule keeps T = 100 there, and when no finite ε is given (a noise
// multiplier instead). Public quantities only.
func NoisyGDIterationsFor(kind Kind, d int, n int64, epsilon float64) int {
	if kind != Linear || !(epsilon > 0) || math.IsInf(epsilon, 0) || n < 1 || d < 1 {
		return DefaultNoisyGDIterations
	}
	return cappedSteps(float64(n)*epsilon/(2*float64(d)), 0, DefaultNoisyGDIterations, 1000)
}

// cappedSteps is the shape shared by the default step counts: with slope
// steps s and long steps l (each a public multiple of the signal-to-noise
// ratio), it returns
//
//	T = min(C, max(floor, ⌊s⌋)),  C = min(maxSteps, max(1000, ⌊l⌋)):
//
// T grows as s from floor, stops at 1000 until l passes 1000, then follows
// the cap C up to maxSteps. T is continuous where l ≤ s at l = 1000.
func cappedSteps(s, l float64, floor, maxSteps int) int {
	c := math.Min(float64(maxSteps), math.Max(1000, math.Floor(l)))
	return int(math.Min(c, math.Max(float64(floor), math.Floor(s))))
}

// NoisyGDHuberIterationsFor returns the default T of full-batch noisygd on
// Huber's loss for n rows (units under a privacy unit), d coefficients and
// budget ε, with r = nε/d:
//
//	T = min(C, max(100, ⌊NoisyGDHuberStepsPerSNR·r⌋)) = min(C, max(100, ⌊2r⌋)),
//	C = min(NoisyGDHuberMaxSteps, max(1000, ⌊NoisyGDHuberLongStepsPerSNR·r⌋))
//	  = min(4000, max(1000, ⌊r⌋)),
//
// four times NoisyGDIterationsFor's linear slope. The squared loss's rule
// was chosen with its ball, which bounded the iterates; on Huber's loss
// the ball is twice as large and only post-processing, so at moderate
// nε/d the unconverged steps no longer shrink usefully and the slow
// directions of an ill-conditioned design are left short. `dplearn
// experiment huber-sweep` (the "T=" series, docs/mechanisms.md) chose the
// slope on the linear tables: on CPS1988 at ε = 0.1 (nε/d ≈ 250) the old
// rule's T = 125 is 3.2× the excess RMSE of T = 500, while at nε/d ≤ 50
// T = 100 stays best.
//
// The cap C (issue 26, fourteenth pass). T stopped at 1000 from r = 500
// on. Beyond r ≈ 1000 the noise per step, ∝ √T/r, is small and 1000 steps
// of the step 1/L leave the slow directions short, as on the clipped
// logistic gradient: on utility-shapes' N = 229,000, d = 7 collinear
// design (r = 13,000 to 52,000) T = 4000 took the excess test RMSE ratio
// from 0.0033–0.0041 to −0.0004–0.0002 (2 paired splits), and on the
// embedded collinear design at r = 1467 and 5867 from 0.064 to 0.052 and
// from 0.014 to 0.009 (4 splits); at r ≤ 257 (diabetes at ε = 8) more
// steps cost (0.022 at T = 514 against 0.049 at T = 4000, 8 splits). C
// grows as r from 1000 at r = 1000 to 4000 at r = 4000, so T is
// continuous in r, and 4000 bounds the time (T passes over the rows).
// Public quantities only; logistic models and fits given a noise
// multiplier keep NoisyGDIterationsFor.
func NoisyGDHuberIterationsFor(d int, n int64, epsilon float64) int {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) || n < 1 || d < 1 {
		return DefaultNoisyGDIterations
	}
	r := float64(n) * epsilon / float64(d)
	return cappedSteps(NoisyGDHuberStepsPerSNR*r, NoisyGDHuberLongStepsPerSNR*r, DefaultNoisyGDIterations, NoisyGDHuberMaxSteps)
}

// NoisyGDLogisticClipIterationsFor returns the default T of full-batch
// noisygd on the clipped logistic gradient (huber.go) for n rows (units
// under a privacy unit), d coefficients and budget ε:
//
//	T = min(C, max(NoisyGDLogisticMinSteps, ⌊nε/NoisyGDLogisticRowsPerStep⌋))
//	  = min(C, max(25, ⌊nε/4⌋)),
//	C = min(NoisyGDLogisticMaxSteps, max(1000, ⌊nε/NoisyGDLogisticRowsPerLongStep⌋))
//	  = min(4000, max(1000, ⌊nε/20⌋)).
//
// The logistic loss is ¼-smooth and the step 4 is 1/L, so T trades, as for
// the linear rules, convergence along the slow directions against the
// noise per step (√T larger at fixed ε): the best T grows with the
// signal-to-noise ratio nε. DP-GD's rule (experiment/refs.go, ⌊nε/8⌋ with
// the unclipped bound 2) was the starting point; with the clip c = ½ each
// step's noise is half as large, and twice its steps did best on
// breast_cancer (N ≈ 455, d = 31; 60 paired splits, `dplearn experiment
// utility-refs-logistic`): at ε = 0.5 / 1 / 2 log-loss 0.380 / 0.300 /
// 0.228 against ⌊nε/8⌋'s 0.458 / 0.380 / 0.291 and DP-GD's 0.481 / 0.400
// / 0.308, equal on SmokeBan (docs/mechanisms.md).
//
// The cap C (issue 26, thirteenth pass). Up to nε = 20,000, the range of
// the embedded tables, T stops at 1000: there, more steps did not pay
// (paired pilot, 4 splits: SmokeBan at ε = 1 and 2 and CPS1988's high-wage
// task at ε ≥ 0.5 moved by −0.1% to +0.3% in log-loss with T up to 4000).
// Beyond it the noise per step, ∝ √T/(nε), is small, and on a collinear
// design the step held by the stability bound 4/t⁺ (the data-scaled step)
// leaves the slow directions short after 1000 steps: on utility-shapes'
// N = 229,000, d = 7 collinear design T = 4000 took log-loss from 1.0%
// above the non-private fit's to within 0.04% at ε ≥ 0.5 (2 paired
// splits). C grows as nε/20 from 1000 at nε = 20,000 to 4000 at
// nε = 80,000, so T is continuous in nε, and 4000 bounds the time (T
// passes over the rows). Public quantities only.
func NoisyGDLogisticClipIterationsFor(d int, n int64, epsilon float64) int {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) || n < 1 || d < 1 {
		return DefaultNoisyGDIterations
	}
	snr := float64(n) * epsilon
	return cappedSteps(snr/NoisyGDLogisticRowsPerStep, snr/NoisyGDLogisticRowsPerLongStep, NoisyGDLogisticMinSteps, NoisyGDLogisticMaxSteps)
}

// NoisyGDLogisticMinSteps, NoisyGDLogisticRowsPerStep,
// NoisyGDLogisticRowsPerLongStep and NoisyGDLogisticMaxSteps are the
// constants of NoisyGDLogisticClipIterationsFor.
const (
	NoisyGDLogisticMinSteps        = 25
	NoisyGDLogisticRowsPerStep     = 4
	NoisyGDLogisticRowsPerLongStep = 20
	NoisyGDLogisticMaxSteps        = 4000
)

// NoisyGDHuberStepsPerSNR is the slope of NoisyGDHuberIterationsFor: T
// steps per unit of the signal-to-noise ratio nε/d. Its cap C grows by
// NoisyGDHuberLongStepsPerSNR steps per unit of nε/d from 1000 to
// NoisyGDHuberMaxSteps.
const (
	NoisyGDHuberStepsPerSNR     = 2
	NoisyGDHuberLongStepsPerSNR = 1
	NoisyGDHuberMaxSteps        = 4000
)

// DefaultNoisyGDRadius returns the default parameter bound: for linear
// regression the rule of DefaultObjPertRadius (√d/2 while nε/d is below
// RadiusRuleScale, then growing like (nε/d)^(1/4): the sensitivity
// 2(R+2)/N grows with R), and R = 2√d for logistic regression (the
// sensitivity 2σ(R)/N is nearly flat in R). n and ε as for
// DefaultObjPertRadius. Measured on CPS1988, diabetes and the collinear
// design (linear) and breast_cancer (logistic); docs/mechanisms.md.
func DefaultNoisyGDRadius(kind Kind, d int, n int64, epsilon float64) float64 {
	if kind == Logistic {
		return 2 * math.Sqrt(float64(d))
	}
	return radiusRule(d, n, epsilon)
}

// NoisyGDHuberBallFactor is the factor of the default ball of the Huber
// loss over the squared loss's (DefaultNoisyGDRadius). With the Huber loss
// the ball is post-processing (the gradient bound 2η holds for every ω),
// so R trades only the bias of capping the fit against the shrinkage that
// steadies it at small N·ε/d; twice the squared loss's rule did best in
// `dplearn experiment huber-sweep` (docs/mechanisms.md).
const NoisyGDHuberBallFactor = 2

// NoisyGDBallFor returns noisygd's default ball R for cfg on n rows (units
// under a privacy unit) with d coefficients, and, where the noise-walk rule
// applies (Huber's loss, full batch, a target ε; see "The noise-walk
// ball"), R₀ and the noise's walk W it was grown from (0, 0 otherwise).
// It is the plan's own default, before the run: the plan is calibrated
// here as the fit calibrates it, with W taken at the largest step the
// data-scaled rule can give. The run decides the ball again from the step
// it uses, which can be smaller (Result.Radius reports that R).
func NoisyGDBallFor(cfg Config, d int, n int64) (r, base, walk float64) {
	eta := NoisyGDHuberScale(cfg, n, d)
	r = defaultNoisyGDRadius(cfg.Kind, eta, d, n, cfg.Epsilon)
	if cfg.Kind != Linear || eta <= 0 || cfg.NoisyGD.Sigma > 0 || !(cfg.Epsilon > 0) || math.IsInf(cfg.Epsilon, 0) {
		return r, 0, 0
	}
	opt := cfg.NoisyGD
	opt.Radius = 0
	p, err := planNoisyGD(Linear, cfg.Epsilon, cfg.Delta, n, 1, d, opt, eta)
	if err != nil || p.NoiseWalk == 0 {
		return r, 0, 0
	}
	return p.Radius, p.BaseRadius, p.NoiseWalk
}

func defaultNoisyGDRadius(kind Kind, eta float64, d int, n int64, epsilon float64) float64 {
	if kind == Logistic && eta > 0 {
		return 0 // the clipped logistic gradient: no default ball (huber.go)
	}
	r := DefaultNoisyGDRadius(kind, d, n, epsilon)
	if eta > 0 {
		r *= NoisyGDHuberBallFactor
	}
	return r
}

// NoisyGDSensitivity returns, for parameters in the ball of radius R, the
// per-example gradient norm bound G and the bound D on the difference of two
// per-example gradients (see the derivation above).
func NoisyGDSensitivity(kind Kind, radius float64) (g, diff float64, err error) {
	if !(radius > 0) || math.IsInf(radius, 0) {
		return 0, 0, fmt.Errorf("noisygd: radius R must be finite and > 0, got %v", radius)
	}
	switch kind {
	case Linear:
		return 2 * (1 + radius), 2 * (radius + 2), nil
	case Logistic:
		s := sigmoid(radius)
		return s, 2 * s, nil
	}
	return 0, 0, fmt.Errorf("noisygd: model %q not supported (want linear or logistic)", kind)
}

// NoisyGDPrivacy is the guarantee of T noisy gradient steps.
type NoisyGDPrivacy struct {
	Steps     int     `json:"steps"`
	BatchRate float64 `json:"batch_rate"` // 1 for full batch
	// Multiplier is the effective noise multiplier used by the accountant.
	Multiplier float64 `json:"multiplier"`
	Delta      float64 `json:"delta"`
	// Epsilon is the headline, by the tightest accountant: EpsilonExact for
	// full batch, the improved RDP conversion for Poisson batches.
	Epsilon float64 `json:"epsilon"`
	// EpsilonRDP is the improved RDP conversion (Canonne, Kamath & Steinke
	// 2020 for full batch; Balle et al. 2020 on the RDP curve for Poisson).
	EpsilonRDP float64 `json:"epsilon_rdp"`
	// EpsilonSeed is the seed's Eq. (7) at its Eq. (8) order (full batch) or
	// the classic RDP conversion ε(α) + ln(1/δ)/(α−1) (Poisson).
	EpsilonSeed float64 `json:"epsilon_seed"`
	// AlphaSeed is the order of EpsilonSeed.
	AlphaSeed float64 `json:"alpha_seed"`
	// EpsilonZCDP is ρ + 2√(ρ ln(1/δ)) (full batch only) and Rho its ρ.
	EpsilonZCDP float64 `json:"epsilon_zcdp,omitempty"`
	Rho         float64 `json:"rho,omitempty"`
	// EpsilonExact (full batch only) is the exact ε at δ of T adaptively
	// composed Gaussian steps: they are √T/z-Gaussian-DP (Dong, Roth & Su
	// 2019, composition theorem), whose (ε, δ) curve is the analytic
	// Gaussian one (Balle & Wang 2018) with Δ/σ = √T/z. The headline.
	EpsilonExact float64 `json:"epsilon_exact,omitempty"`
}

// NoisyGDEpsilon accounts T noisy gradient steps with noise multiplier z
// (relative to the replace-one sensitivity for full batch, q = 1, or to the
// per-example bound G for Poisson batches, q < 1) at δ.
func NoisyGDEpsilon(z float64, steps int, q, delta float64) (NoisyGDPrivacy, error) {
	if !(z > 0) || math.IsInf(z, 0) {
		return NoisyGDPrivacy{}, fmt.Errorf("noisygd: noise multiplier must be finite and > 0, got %v", z)
	}
	if steps < 1 {
		return NoisyGDPrivacy{}, fmt.Errorf("noisygd: iterations must be ≥ 1, got %d", steps)
	}
	if !(q > 0 && q <= 1) {
		return NoisyGDPrivacy{}, fmt.Errorf("noisygd: batch rate must be in (0, 1], got %v", q)
	}
	if !(delta > 0 && delta < 1) {
		return NoisyGDPrivacy{}, fmt.Errorf("noisygd: δ must be in (0, 1), got %v", delta)
	}
	p := NoisyGDPrivacy{Steps: steps, BatchRate: q, Multiplier: z, Delta: delta}
	if q == 1 {
		r, err := accounting.GaussianSteps(z, 1, steps, delta)
		if err != nil {
			return p, fmt.Errorf("noisygd: %w", err)
		}
		p.EpsilonRDP, p.EpsilonSeed, p.AlphaSeed = r.EpsilonRDP, r.EpsilonRDPClassic, r.AlphaClassic
		p.EpsilonZCDP, p.Rho = r.EpsilonZCDP, r.Rho
		if p.EpsilonExact, err = accounting.GDPEpsilon(math.Sqrt(float64(steps))/z, delta); err != nil {
			return p, fmt.Errorf("noisygd: %w", err)
		}
		p.Epsilon = p.EpsilonExact
		return p, nil
	}
	curve, err := accounting.SubsampledGaussianRDPReplaceOne(q, z, steps, accounting.DefaultOrders())
	if err != nil {
		return p, err
	}
	if p.EpsilonRDP, _, err = curve.Epsilon(delta); err != nil {
		return p, fmt.Errorf("noisygd: %w", err)
	}
	p.Epsilon = p.EpsilonRDP
	if p.EpsilonSeed, p.AlphaSeed, err = curve.EpsilonClassic(delta); err != nil {
		return p, fmt.Errorf("noisygd: %w", err)
	}
	return p, nil
}

// NoisyGDMultiplier returns the smallest noise multiplier z (relative
// precision 1e-9, rounded up) with which T steps meet (ε, δ) by
// NoisyGDEpsilon's headline ε.
func NoisyGDMultiplier(epsilon, delta float64, steps int, q float64) (float64, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return 0, fmt.Errorf("noisygd: target ε must be finite and > 0, got %v", epsilon)
	}
	ok := func(z float64) (bool, error) { return noisyGDMeets(z, steps, q, epsilon, delta) }
	hi := 1.0
	for {
		good, err := ok(hi)
		if err != nil {
			return 0, err
		}
		if good {
			break
		}
		if hi *= 2; hi > 1e8 {
			return 0, fmt.Errorf("noisygd: no noise multiplier ≤ 1e8 meets (ε=%g, δ=%g) in %d steps", epsilon, delta, steps)
		}
	}
	lo := hi / 2
	for {
		good, err := ok(lo)
		if err != nil {
			return 0, err
		}
		if !good {
			break
		}
		hi = lo
		if lo /= 2; lo < 1e-6 {
			return hi, nil
		}
	}
	for hi-lo > 1e-9*hi {
		mid := (lo + hi) / 2
		good, err := ok(mid)
		if err != nil {
			return 0, err
		}
		if good {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// noisyGDMeets reports whether T steps with multiplier z are (ε, δ)-DP by the
// headline accountant. For full batch it evaluates δ(ε) of the exact
// Gaussian-DP composition directly, a predicate monotone in z, rather than
// comparing a bisected ε with the target.
func noisyGDMeets(z float64, steps int, q, epsilon, delta float64) (bool, error) {
	if q == 1 {
		if !(z > 0) || math.IsInf(z, 0) || steps < 1 {
			return false, fmt.Errorf("noisygd: need a finite noise multiplier > 0 and ≥ 1 step, got z=%v T=%d", z, steps)
		}
		d, err := accounting.GDPDelta(math.Sqrt(float64(steps))/z, epsilon)
		if err != nil {
			return false, fmt.Errorf("noisygd: %w", err)
		}
		return d <= delta, nil
	}
	p, err := NoisyGDEpsilon(z, steps, q, delta)
	if err != nil {
		return false, err
	}
	return p.Epsilon <= epsilon, nil
}

// NoisyGDPlan is the calibration of one noisy gradient descent run.
type NoisyGDPlan struct {
	Kind Kind
	// N is the public divisor of the gradients: the number of rows, or
	// Units·K under a privacy unit (PlanNoisyGDUnits).
	N int64
	// RowsPerUnit is K under a privacy unit, 1 at row level.
	RowsPerUnit int
	D           int
	Steps       int
	BatchRate   float64 // 1 for full batch
	// Huber is η of the linear Huber loss, 0 for the squared or logistic
	// loss.
	Huber float64
	// Radius is R of the parameter ball, 0 for none (the Huber loss).
	Radius       float64
	LearningRate float64
	Lambda       float64
	// Sensitivity is the L2 sensitivity of the noised vector (Δ = D/N full
	// batch; G for the Poisson sum).
	Sensitivity float64
	// NoiseStd is s, the standard deviation added to each coordinate.
	NoiseStd float64
	// Multiplier is the gradients' effective noise multiplier
	// s/(Sensitivity + grid slack) (Privacy.Multiplier is the composed
	// one when the trace is released).
	Multiplier float64
	// StepCeiling is the data-scaled step's public ceiling 1/(c·√(dT)·s),
	// and TraceSensitivity and TraceNoiseStd those of the released trace
	// of XᵀX/N; all 0 when the step is LearningRate (nothing released).
	StepCeiling      float64
	TraceSensitivity float64
	TraceNoiseStd    float64
	// BaseRadius and NoiseWalk are R₀, the Huber loss's default ball
	// before the noise-walk rule, and W = h·s·√(T·d), the distance the
	// noise alone walks in T steps of the largest step h (see "The
	// noise-walk ball"); both 0 when the rule does not apply (a given
	// --radius, another loss, Poisson batches, a given σ).
	BaseRadius float64
	NoiseWalk  float64
	Privacy    NoisyGDPrivacy
}

// PlanNoisyGD calibrates noisy gradient descent: with opt.Sigma > 0 it
// reports the ε at δ; otherwise it solves for the multiplier that meets
// (ε, δ).
func PlanNoisyGD(kind Kind, epsilon, delta float64, n int64, d int, opt NoisyGDOptions) (NoisyGDPlan, error) {
	return planNoisyGD(kind, epsilon, delta, n, 1, d, opt, 0)
}

// PlanNoisyGDHuber calibrates noisy gradient descent on Huber's loss with
// scale η > 0 (linear models; no parameter ball, opt.Radius must be 0):
// PlanNoisyGD with the sensitivities of NoisyGDHuberSensitivity.
func PlanNoisyGDHuber(epsilon, delta float64, n int64, d int, eta float64, opt NoisyGDOptions) (NoisyGDPlan, error) {
	return planNoisyGD(Linear, epsilon, delta, n, 1, d, opt, eta)
}

// PlanNoisyGDUnits calibrates full-batch noisy gradient descent under a
// privacy unit: neighbouring datasets differ in all (at most k) kept rows
// of one of the public number of units, and each step's average gradient is
// divided by the public N = units·k.
//
// # Sensitivity under replace-one-unit (the per-unit K·D bound)
//
// The average gradient is (1/N)Σ_rows ∇ℓ(ω; z) at the released (public)
// iterate ω. Replacing one unit turns its r ≤ k kept rows into r' ≤ k
// rows: pair min(r, r') of them (each pair moves the sum by at most D, the
// per-row difference bound) and let the other |r − r'| stand against no
// row (each moves it by at most G, the per-row norm bound), so
//
//	‖Δg‖ ≤ (min(r, r')·D + |r − r'|·G)/N ≤ k·max(D, G)/N = D/units,
//
// since G ≤ D (linear G = 2(1 + R) ≤ 2(R + 2) = D; logistic
// G = σ(R) ≤ 2σ(R) = D; Huber G = 2η ≤ 4η = D). So the unit-level Δ is the row-level formula
// D/N evaluated at N = units, attained up to the row-level pair's own
// tightness by k copies of the row-level extremal pair. (A standard
// alternative, clipping each unit's summed gradient at a public C_u, needs
// the unit of every row inside the mechanism and changes the estimator; the
// K·D bound needs neither, and at K = 1 it is the row-level mechanism.)
// The T steps compose adaptively exactly as at row level (the iterates are
// post-processing of released gradients): μ = √T/z_eff Gaussian DP.
//
// Rounding: the sum runs over at most N = units·k rows and is divided by
// N, so the per-entry error loopSumError(N, ·, N) is PlanNoisyGD's at N,
// entering once per side.
//
// Poisson mini-batches are refused: their accountant (Mironov, Talwar &
// Zhang 2019) amplifies by sampling each row independently, and a unit's
// k rows are sampled independently of each other, which is not the
// sampled-Gaussian mixture that accountant bounds; no unit-level analysis is
// derived here.
func PlanNoisyGDUnits(kind Kind, epsilon, delta float64, units int64, k int, d int, opt NoisyGDOptions) (NoisyGDPlan, error) {
	return planNoisyGDUnits(kind, epsilon, delta, units, k, d, opt, 0)
}

// planNoisyGDUnits is PlanNoisyGDUnits on Huber's loss with scale eta > 0
// (linear) or, with eta = 0, the model's own loss: the unit's checks, then
// one calibration at N = units·k.
func planNoisyGDUnits(kind Kind, epsilon, delta float64, units int64, k int, d int, opt NoisyGDOptions, eta float64) (NoisyGDPlan, error) {
	if k < 1 || units < 1 {
		return NoisyGDPlan{}, fmt.Errorf("noisygd: privacy unit: need ≥ 1 unit and K ≥ 1 rows per unit, got %d units, K = %d", units, k)
	}
	if units > math.MaxInt64/int64(k) {
		return NoisyGDPlan{}, fmt.Errorf("noisygd: privacy unit: %d units × %d rows overflows", units, k)
	}
	if opt.BatchRate > 0 && opt.BatchRate < 1 {
		return NoisyGDPlan{}, fmt.Errorf("noisygd: privacy unit: Poisson batches (rate %v) have no unit-level derivation (the subsampled-Gaussian accountant samples rows, not persons); use the full batch", opt.BatchRate)
	}
	return planNoisyGD(kind, epsilon, delta, units*int64(k), k, d, opt, eta)
}

// planNoisyGD calibrates noisy gradient descent whose gradients divide by
// the public n and in which neighbours differ in at most k rows
// (PlanNoisyGDUnits; k = 1 is the row-level PlanNoisyGD), on Huber's loss
// with scale eta > 0 (linear, no ball) or, with eta = 0, the model's own
// loss on the ball.
func planNoisyGD(kind Kind, epsilon, delta float64, n int64, k int, d int, opt NoisyGDOptions, eta float64) (NoisyGDPlan, error) {
	p := NoisyGDPlan{Kind: kind, N: n, RowsPerUnit: k, D: d, Steps: opt.Iterations, BatchRate: opt.BatchRate,
		Huber: eta, Radius: opt.Radius, LearningRate: opt.LearningRate, Lambda: opt.Lambda}
	if n < 1 || d < 1 {
		return p, fmt.Errorf("noisygd: need N ≥ 1 and d ≥ 1, got N=%d d=%d", n, d)
	}
	if eta != 0 && kind != Linear && kind != Logistic {
		return p, fmt.Errorf("noisygd: the Huber loss is for linear and logistic models, not %q", kind)
	}
	if p.Steps == 0 {
		p.Steps = DefaultNoisyGDIterations
		if (opt.BatchRate == 0 || opt.BatchRate == 1) && opt.Sigma == 0 {
			p.Steps = NoisyGDIterationsFor(kind, d, n/int64(k), epsilon)
			switch {
			case eta > 0 && kind == Logistic:
				p.Steps = NoisyGDLogisticClipIterationsFor(d, n/int64(k), epsilon)
			case eta > 0:
				p.Steps = NoisyGDHuberIterationsFor(d, n/int64(k), epsilon)
			}
		}
	}
	if p.Steps < 1 || p.Steps > 1e7 {
		return p, fmt.Errorf("noisygd: iterations must be in [1, 10⁷], got %d", opt.Iterations)
	}
	if math.IsNaN(p.BatchRate) || p.BatchRate < 0 || p.BatchRate > 1 || (p.BatchRate > 0 && p.BatchRate < 0x1p-11) {
		return p, fmt.Errorf("noisygd: batch rate must be in [2⁻¹¹, 1], got %v", opt.BatchRate)
	}
	if p.BatchRate == 0 {
		p.BatchRate = 1
	}
	if math.IsNaN(p.Radius) || math.IsInf(p.Radius, 0) || p.Radius < 0 {
		return p, fmt.Errorf("noisygd: radius must be finite and > 0, got %v", opt.Radius)
	}
	if p.Radius == 0 {
		// The clipped logistic gradient's default is no ball: the rule
		// returns 0 for it (defaultNoisyGDRadius).
		// With a noise multiplier given, ε is an output, not a target: the
		// rule takes no ε (its base √d/2).
		rEps := epsilon
		if opt.Sigma > 0 {
			rEps = 0
		}
		p.Radius = defaultNoisyGDRadius(kind, eta, d, n/int64(k), rEps)
	}
	if math.IsNaN(p.Lambda) || math.IsInf(p.Lambda, 0) || p.Lambda < 0 {
		return p, fmt.Errorf("noisygd: ridge λ must be finite and ≥ 0, got %v", opt.Lambda)
	}
	if math.IsNaN(p.LearningRate) || math.IsInf(p.LearningRate, 0) || p.LearningRate < 0 {
		return p, fmt.Errorf("noisygd: learning rate must be finite and > 0, got %v", opt.LearningRate)
	}
	if p.LearningRate == 0 {
		p.LearningRate = 1 / (lossSmoothness(kind) + p.Lambda)
	}
	if math.IsNaN(opt.Sigma) || math.IsInf(opt.Sigma, 0) || opt.Sigma < 0 {
		return p, fmt.Errorf("noisygd: noise multiplier must be finite and > 0, got %v", opt.Sigma)
	}
	var g, diff float64
	var err error
	if eta != 0 {
		g, diff, err = noisyGDClipSensitivity(kind, eta)
	} else {
		g, diff, err = NoisyGDSensitivity(kind, p.Radius)
	}
	if err != nil {
		return p, err
	}
	// The bounds assume ‖x‖ ≤ 1 and |y| ≤ 1; checkRows accepts ‖x‖² and |y|
	// up to 1 + encTol, so xb = √(1 + encTol) ≤ 1 + encTol/2 and yb =
	// 1 + encTol. Huber: 2η·xb per row, 4η·xb for a pair: factor
	// 1 + 2encTol. Squared loss: 2(yb·xb + R·xb²) and 2(2·yb·xb + R·xb²),
	// at most (1 + 2encTol) times the formulas. Logistic (y exact):
	// σ(R·xb)·xb ≤ σ(R)·e^{R·encTol/2}·xb ≤ σ(R)(1 + 2(1 + R)encTol) when
	// R·encTol ≤ 1, and for larger R the factor exceeds 2 ≥ σ(R·xb)/σ(R).
	// One factor covers the three: 1 + 2encTol (Huber), 1 + 2(1 + R)encTol.
	// The clipped logistic gradient: ≤ c per row whatever ‖x‖ (the clip
	// reads the row's own norm), so 1 + 2encTol is more than it needs.
	encSlack := 1 + 2*encTol
	if eta == 0 {
		encSlack = 1 + 2*(1+p.Radius)*encTol
	}
	g, diff = g*encSlack, diff*encSlack
	// Sensitivity of the computed gradient (rounding.go): each row's term
	// c·x_j has |·| ≤ G up to d + 4 roundings (the dot product, c, the
	// product), summed over at most N rows in a plain loop; full batch
	// divides the sum by N before the noise, Poisson batches noise the sum.
	termBound := g * (1 + gamma(float64(d+4)))
	if p.BatchRate < 1 {
		p.Sensitivity = roundedSensitivity(g, float64(d+8), d, loopSumError(n, termBound, 1), false)
	} else {
		// Row level: D/N. Unit level: D at N/k = units (PlanNoisyGDUnits).
		units := n / int64(k)
		p.Sensitivity = roundedSensitivity(diff/float64(units), float64(d+8), d, loopSumError(n, termBound, float64(n)), false)
	}
	if opt.Sigma > 0 {
		p.NoiseStd = opt.Sigma * p.Sensitivity
	} else {
		z, err := NoisyGDMultiplier(epsilon, delta, p.Steps, accountingRate(p.BatchRate))
		if err != nil {
			return p, err
		}
		if opt.LearningRate == 0 && p.BatchRate == 1 && eta > 0 {
			// The data-scaled step (see above): its ceiling at the
			// noise of the whole budget decides, publicly, whether the
			// trace is released at all.
			c := stepNoiseFactor(kind)
			ceil := func(s float64) float64 {
				return 1 / (c * math.Sqrt(float64(d)*float64(p.Steps)) * s)
			}
			if ceil(z*p.Sensitivity) > p.LearningRate {
				mu := math.Sqrt(float64(p.Steps)) / z
				muT := mu * math.Sqrt(NoisyGDTraceShare)
				z /= math.Sqrt(1 - NoisyGDTraceShare)
				// One row moves (1/N)Σ‖x‖² by ≤ (1 + encTol)/units; the
				// loop's terms are ≤ (1 + encTol)(1 + γ_d).
				p.TraceSensitivity = roundedSensitivity((1+encTol)/float64(n/int64(k)), 2, 1, loopSumError(n, (1+encTol)*(1+gamma(float64(d+1))), float64(n)), false)
				if p.TraceNoiseStd, err = gaussianStdFor(p.TraceSensitivity, 1/muT, 1); err != nil {
					return p, fmt.Errorf("noisygd: trace: %w", err)
				}
			}
			if p.NoiseStd, err = gaussianStdFor(p.Sensitivity, z, d); err != nil {
				return p, fmt.Errorf("noisygd: %w", err)
			}
			if p.TraceNoiseStd > 0 {
				p.StepCeiling = ceil(p.NoiseStd)
			}
		} else if p.NoiseStd, err = gaussianStdFor(p.Sensitivity, z, d); err != nil {
			return p, fmt.Errorf("noisygd: %w", err)
		}
	}
	if opt.Radius == 0 && eta > 0 && kind == Linear && opt.Sigma == 0 && p.BatchRate == 1 {
		p.BaseRadius = p.Radius
		p.noiseWalkBall(math.Max(p.LearningRate, p.StepCeiling))
	}
	p.Multiplier = p.NoiseStd / noise.GaussianCalibrationSensitivity(p.Sensitivity, p.NoiseStd, d)
	zEff := p.Multiplier
	if p.TraceNoiseStd > 0 {
		// √(T/z² + μ_t²)-GDP as T steps with the multiplier √T/μ.
		muT := noise.GaussianCalibrationSensitivity(p.TraceSensitivity, p.TraceNoiseStd, 1) / p.TraceNoiseStd
		zEff = math.Sqrt(float64(p.Steps)) / math.Sqrt(float64(p.Steps)/(zEff*zEff)+muT*muT)
	}
	if opt.Sigma == 0 {
		good, err := noisyGDMeets(zEff, p.Steps, accountingRate(p.BatchRate), epsilon, delta)
		if err != nil {
			return p, err
		}
		if !good {
			return p, fmt.Errorf("noisygd: calibration failed: multiplier %v does not meet (ε=%v, δ=%v)", zEff, epsilon, delta)
		}
	}
	if p.Privacy, err = NoisyGDEpsilon(zEff, p.Steps, accountingRate(p.BatchRate), delta); err != nil {
		return p, err
	}
	if opt.Sigma == 0 {
		// The target was verified above. The ε computed back from the noise
		// lies a hair below it (grid slack, σ rounded up) or, bisected, a
		// relative 1e-12 above it: the guarantee stated is the target.
		p.Privacy.Epsilon = epsilon
		if p.BatchRate == 1 {
			p.Privacy.EpsilonExact = math.Min(p.Privacy.EpsilonExact, epsilon)
		}
	}
	return p, nil
}

// # The noise-walk ball (issue 26, ninth pass)
//
// With Huber's loss the ball ‖ω‖ ≤ R is post-processing: the gradient
// bound 2η holds for every ω, so R costs no noise, and it only
// regularises. It pays where the noise can carry the iterates far along
// the directions the data barely constrain (diabetes at ε ≤ 0.5 in
// `dplearn experiment huber-sweep`: 3.6× the excess RMSE without a ball),
// and it only caps the fit where it cannot: on the 229,000-row design
// with d = 24 of `utility-shapes` at ε = 0.1 the rule's R₀ = 4.9 is below
// the coefficients' norm (5.9), and the fit stayed at 5.5 times the
// excess RMSE it reaches with R = 10 or 20 (a paired pilot, identical
// between 10 and 20, so nothing but the cap).
//
// How far the noise can walk is public. Each step adds h·ξ_t with ξ_t ~
// N(0, s²I_d) (h the step, s = NoiseStd), so along a flat direction the
// noise alone reaches ‖Σ_t h·ξ_t‖ ≈ W = h·s·√(T·d) in T steps, h the step
// the descent uses: 1/L, or the data-scaled step, which is post-processing
// of the released trace, so the run decides R from it after that release
// and before the first iteration, and reports the step and R. (The plan,
// before any release, states the largest R the rule can give, with h =
// max(1/L, StepCeiling): NoisyGDBallFor.) The default ball grows when R₀
// is more than NoisyGDBallWalkFactor = κ times that walk:
//
//	R = min(R₀·max(1, R₀/(κ·W)), max(R₀, 2η·h·T)),
//
// R₀ = DefaultNoisyGDRadius·NoisyGDHuberBallFactor. Where the noise can
// reach a fraction 1/κ of R₀ or more, R = R₀ exactly (every cell of
// diabetes, CPS1988 at ε = 0.1); where it cannot, R grows like R₀/W, so
// the ball steps out of the signal's way as the noise shrinks. The cap
// 2η·h·T is how far T steps of a gradient of norm ≤ 2η can go without
// noise, beyond which no ball binds on the signal; it keeps R finite as
// the noise vanishes. Everything in the rule (N, d, ε, δ, T, s, L, the
// ceiling and the released trace) is public, so the ball stays
// post-processing.

// NoisyGDBallWalkFactor is κ of the noise-walk ball: the default ball
// grows once R₀ exceeds κ times the noise's walk W (see above).
const NoisyGDBallWalkFactor = 2

// noiseWalkBall sets p.Radius by the noise-walk rule from R₀ =
// p.BaseRadius, the plan's noise and steps, and the step bound h: at
// planning h = max(1/L, StepCeiling), the largest step the data-scaled
// rule can give; in the run, once the trace is released, the step itself
// (post-processing of that release).
func (p *NoisyGDPlan) noiseWalkBall(h float64) {
	p.NoiseWalk = h * p.NoiseStd * math.Sqrt(float64(p.Steps)*float64(p.D))
	r := p.BaseRadius
	if g := r / (NoisyGDBallWalkFactor * p.NoiseWalk); g > 1 {
		r *= g
	}
	p.Radius = math.Min(r, math.Max(p.BaseRadius, 2*p.Huber*h*float64(p.Steps)))
}

// noisyGD is noisy (projected) gradient descent.
type noisyGD struct{}

func (noisyGD) Name() string        { return "noisygd" }
func (noisyGD) NeedsRows(Kind) bool { return true }
func (noisyGD) Private() bool       { return true }

func (noisyGD) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	if cfg.Kind == Robust {
		return nil, errors.New("noisygd: robust regression is not supported (use --mechanism irls)")
	}
	requested := cfg.Epsilon
	if cfg.NoisyGD.Sigma > 0 && cfg.Epsilon == 0 {
		cfg.Epsilon = math.MaxFloat64 // ε is an output when σ is given
	}
	// Under a privacy unit the gradients divide by the public Units·K and
	// are calibrated at Units (PlanNoisyGDUnits derives it).
	cfg.unitAware, cfg.unitRows = true, true
	if err := cfg.validate(data, true); err != nil {
		return nil, err
	}
	if cfg.Delta <= 0 {
		return nil, errors.New("noisygd: the Gaussian mechanism needs δ > 0")
	}
	rows, err := checkRows(data, cfg.Kind)
	if err != nil {
		return nil, fmt.Errorf("noisygd: %w", err)
	}
	k := data.Stats.K()
	d := k - 1
	if cfg.Kind != Logistic { // logistic: --huber is the gradient clip c
		if err := checkHuberKind(cfg); err != nil {
			return nil, fmt.Errorf("noisygd: %w", err)
		}
	}
	var plan NoisyGDPlan
	if unit, ok := unitOf(data.Stats); ok {
		// The rules read the number of units, as the radius rule does.
		plan, err = planNoisyGDUnits(cfg.Kind, cfg.Epsilon, cfg.Delta, unit.Units, unit.MaxRows, d, cfg.NoisyGD, NoisyGDHuberScale(cfg, unit.Units, d))
	} else {
		plan, err = planNoisyGD(cfg.Kind, cfg.Epsilon, cfg.Delta, data.Stats.N(), 1, d, cfg.NoisyGD, NoisyGDHuberScale(cfg, data.Stats.N(), d))
	}
	if err != nil {
		return nil, err
	}
	if requested > 0 && plan.Privacy.Epsilon > requested {
		return nil, fmt.Errorf("noisygd: noise multiplier σ = %v with %d steps gives ε = %s at δ = %v, more than the ε = %v asked for (give σ or ε, not both)",
			cfg.NoisyGD.Sigma, plan.Steps, report.Up(plan.Privacy.Epsilon), cfg.Delta, requested)
	}
	w, err := plan.run(ctx, rows, k, cfg.Source)
	if err != nil {
		return nil, err
	}
	pr := plan.report(cfg)
	pr.Neighbouring = neighbouring(data.Stats)
	return &Result{Coef: w, Privacy: pr, Radius: plan.Radius}, nil
}

// run performs the descent. With the data-scaled step it releases the
// trace first and sets p.LearningRate to the step and, under the
// noise-walk rule, p.Radius to the ball of that step, so that the report
// states what was used.
func (p *NoisyGDPlan) run(ctx context.Context, rows []float64, k int, src noise.Source) ([]float64, error) {
	d := k - 1
	n := len(rows) / k
	w := make([]float64, d)
	avg := make([]float64, d)
	g := make([]float64, d)
	var sampler *poissonSampler
	if p.BatchRate < 1 {
		var err error
		if sampler, err = newPoissonSampler(src, p.BatchRate, n); err != nil {
			return nil, err
		}
	}
	if p.TraceNoiseStd > 0 {
		step, err := p.dataStep(rows, k, src)
		if err != nil {
			return nil, err
		}
		p.LearningRate = step
		if p.BaseRadius > 0 {
			p.noiseWalkBall(step)
		}
	}
	start := p.Steps / 2
	for t := 0; t < p.Steps; t++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("noisygd: %w", err)
		}
		for j := range g {
			g[j] = 0
		}
		var take []bool
		if sampler != nil {
			var err error
			if take, err = sampler.next(); err != nil {
				return nil, fmt.Errorf("noisygd: sample batch: %w", err)
			}
		}
		if sampler != nil {
			p.addGradients(g, rows, k, w, take)
			// Noise on the sum, then the public normalisation by qN.
			denom := p.BatchRate * float64(p.N)
			if err := noise.AddGaussian(src, g, p.NoiseStd); err != nil {
				return nil, fmt.Errorf("noisygd: add noise: %w", err)
			}
			for j := range g {
				g[j] /= denom
			}
		} else {
			p.averageGradient(g, rows, k, w)
			if err := noise.AddGaussian(src, g, p.NoiseStd); err != nil {
				return nil, fmt.Errorf("noisygd: add noise: %w", err)
			}
		}
		for j := range w {
			w[j] -= p.LearningRate * (g[j] + p.Lambda*w[j])
		}
		if p.Radius > 0 {
			projectBall(w, p.Radius)
		}
		if t+1 > start {
			for j := range avg {
				avg[j] += w[j]
			}
		}
	}
	cnt := float64(p.Steps - start)
	for j := range avg {
		avg[j] /= cnt
	}
	return avg, nil
}

// dataStep releases the trace t = (1/N)Σ‖x_i‖² (N the public p.N) with
// noise p.TraceNoiseStd and returns the data-scaled step
// max(1/L, min(ceiling, 1/(L·t⁺ + λ))), t⁺ = min(1, t̃ + margin·σ_t) (see
// the data-scaled step above). A t⁺ ≤ 0 (the noise far below a tiny trace)
// leaves the ceiling.
func (p NoisyGDPlan) dataStep(rows []float64, k int, src noise.Source) (float64, error) {
	t := []float64{traceOf(rows, k, p.N)}
	if err := noise.AddGaussian(src, t, p.TraceNoiseStd); err != nil {
		return 0, fmt.Errorf("noisygd: trace: add noise: %w", err)
	}
	step := p.StepCeiling
	if up := math.Min(1, t[0]+NoisyGDTraceMargin*p.TraceNoiseStd); up > 0 {
		step = math.Min(step, 1/(lossSmoothness(p.Kind)*up+p.Lambda))
	}
	return math.Max(p.LearningRate, step), nil
}

// traceOf is (1/n)Σ‖x_i‖² over the rows (k entries each, the last the
// target), summed in a plain loop: the statistic whose sensitivity
// PlanNoisyGD derives for the data-scaled step.
func traceOf(rows []float64, k int, n int64) float64 {
	d := k - 1
	var tr float64
	for i := 0; i*k < len(rows); i++ {
		x := rows[i*k : i*k+d]
		tr += dot(x, x)
	}
	return tr / float64(n)
}

// averageGradient sets g to the full-batch average gradient
// (1/N)Σ_i ∇ℓ(w; z_i), N the public p.N (Units·K under a privacy unit, not
// the private number of kept rows). g must be zero on entry.
func (p NoisyGDPlan) averageGradient(g, rows []float64, k int, w []float64) {
	p.addGradients(g, rows, k, w, nil)
	denom := float64(p.N)
	for j := range g {
		g[j] /= denom
	}
}

// addGradients adds Σ_i ∇ℓ(w; z_i) over the rows (those with take[i] when
// take is non-nil) to g, in a plain loop.
func (p NoisyGDPlan) addGradients(g, rows []float64, k int, w []float64, take []bool) {
	d := k - 1
	for i := 0; i*k < len(rows); i++ {
		if take != nil && !take[i] {
			continue
		}
		r := rows[i*k : (i+1)*k]
		x := r[:d]
		z := dot(x, w)
		var c float64
		switch {
		case p.Kind == Logistic && p.Huber > 0:
			// The per-row gradient (σ(z) − y)x clipped to norm c.
			c = sigmoid(z) - r[d]
			if g := math.Abs(c) * math.Sqrt(dot(x, x)); g > p.Huber {
				c *= p.Huber / g
			}
		case p.Kind == Logistic:
			c = sigmoid(z) - r[d]
		case p.Huber > 0:
			c = -2 * math.Max(-p.Huber, math.Min(p.Huber, r[d]-z))
		default:
			c = -2 * (r[d] - z)
		}
		for j := range g {
			g[j] += c * x[j]
		}
	}
}

func (p NoisyGDPlan) report(cfg Config) report.Privacy {
	pr := p.Privacy
	batch := "full batch"
	if p.BatchRate < 1 {
		batch = fmt.Sprintf("Poisson batches with rate q = %s", fmtG(p.BatchRate))
	}
	mech := fmt.Sprintf("noisygd (noisy projected gradient descent, Song, Chaudhuri & Sarwate 2013; %d steps, %s, ball ‖ω‖ ≤ %s)", p.Steps, batch, fmtG(p.Radius))
	post := fmt.Sprintf("projection onto ‖ω‖ ≤ %s after each step; output = average of the last %d iterates", fmtG(p.Radius), p.Steps-p.Steps/2)
	switch {
	case p.Huber > 0 && p.Kind == Logistic:
		mech = fmt.Sprintf("noisygd (noisy gradient descent, Song, Chaudhuri & Sarwate 2013; %d steps, %s) on the logistic loss with each row's gradient clipped to norm c = %s: gradient norm ≤ c for every ω, no parameter ball; estimand: the clipped-gradient (bounded-influence, Huberised) logistic M-estimator, not the maximum-likelihood one (use objpert for that)", p.Steps, batch, fmtG(p.Huber))
		post = fmt.Sprintf("output = average of the last %d iterates", p.Steps-p.Steps/2)
		if p.Radius > 0 {
			mech += fmt.Sprintf("; the given ball ‖ω‖ ≤ %s is post-processing", fmtG(p.Radius))
			post = fmt.Sprintf("projection onto ‖ω‖ ≤ %s after each step; %s", fmtG(p.Radius), post)
		}
	case p.Huber > 0:
		mech = fmt.Sprintf("noisygd (noisy projected gradient descent, Song, Chaudhuri & Sarwate 2013; %d steps, %s) on Huber's loss with scale η = %s: gradient norm ≤ 2η for every ω, so the ball ‖ω‖ ≤ %s is post-processing; estimand: the Huber M-estimator (least squares' coefficients when the errors are symmetric)", p.Steps, batch, fmtG(p.Huber), fmtG(p.Radius))
	}
	r := report.Privacy{
		Mechanism:    mech,
		Private:      true,
		Epsilon:      pr.Epsilon,
		Delta:        pr.Delta,
		Neighbouring: report.Neighbouring,
		Releases: []report.Release{{
			Name:        fmt.Sprintf("noisy gradient, each of %d steps", p.Steps),
			Entries:     p.D,
			Norm:        "L2",
			Sensitivity: p.Sensitivity,
			Noise:       "gaussian",
			Scale:       p.NoiseStd,
		}},
		PostProcessing: []string{post},
	}
	if p.TraceNoiseStd > 0 {
		r.Releases = append(r.Releases, report.Release{
			Name:        "trace (1/N)Σ‖x_i‖² for the step size (once)",
			Entries:     1,
			Norm:        "L2",
			Sensitivity: p.TraceSensitivity,
			Noise:       "gaussian",
			Scale:       p.TraceNoiseStd,
		})
		r.PostProcessing = append(r.PostProcessing, fmt.Sprintf("step size max(1/L, min(%s, 1/(%g·t⁺ + λ))) = %s with t⁺ = min(1, released trace + %g·%s) (the data-scaled step)",
			fmtG(p.StepCeiling), lossSmoothness(p.Kind), fmtG(p.LearningRate), float64(NoisyGDTraceMargin), fmtG(p.TraceNoiseStd)))
	}
	if p.BaseRadius > 0 {
		r.PostProcessing = append(r.PostProcessing, fmt.Sprintf("ball R = min(R₀·max(1, R₀/(%g·W)), max(R₀, 2η·h·T)) = %s with R₀ = %s and W = h·s·√(T·d) = %s at the step h = %s (the noise-walk ball: public once the step is)",
			float64(NoisyGDBallWalkFactor), fmtG(p.Radius), fmtG(p.BaseRadius), fmtG(p.NoiseWalk), fmtG(p.LearningRate)))
	}
	r.Randomness, r.Insecure = randomness(cfg.Source)
	if p.BatchRate == 1 {
		r.Rho = pr.Rho
		r.Accountant = fmt.Sprintf("exact composition of %d Gaussian steps (Gaussian DP, Dong, Roth & Su 2019: μ = √T/z = %s with effective noise multiplier z = %s, grid slack included), analytic Gaussian (ε, δ) curve (Balle & Wang 2018)",
			p.Steps, report.Up(math.Sqrt(float64(p.Steps))/pr.Multiplier), report.Down(pr.Multiplier))
		if p.TraceNoiseStd > 0 {
			muT := noise.GaussianCalibrationSensitivity(p.TraceSensitivity, p.TraceNoiseStd, 1) / p.TraceNoiseStd
			r.Accountant = fmt.Sprintf("exact composition of %d Gaussian steps and the trace's Gaussian release (Gaussian DP, Dong, Roth & Su 2019: μ = √(T/z² + μ_t²) = %s with the gradients' effective noise multiplier z = %s and the trace's μ_t = %s, grid slack included), analytic Gaussian (ε, δ) curve (Balle & Wang 2018)",
				p.Steps, report.Up(math.Sqrt(float64(p.Steps))/pr.Multiplier), report.Down(p.Multiplier), report.Up(muT))
		}
		r.Notes = append(r.Notes, fmt.Sprintf("looser accountants for the same noise: Rényi DP with the improved conversion (Canonne, Kamath & Steinke 2020) gives ε = %s; zCDP ρ = %s gives ε = %s by ρ + 2√(ρ ln(1/δ)); the seed's Eq. (7) at Eq. (8) α = %s gives ε = %s",
			report.Up(pr.EpsilonRDP), report.Up(pr.Rho), report.Up(pr.EpsilonZCDP), fmtG(pr.AlphaSeed), report.Up(pr.EpsilonSeed)))
	} else {
		r.Accountant = fmt.Sprintf("Rényi DP of %d Poisson-subsampled Gaussian steps (Mironov, Talwar & Zhang 2019; q = %s, effective noise multiplier %s), made replace-one by Mironov 2017 Prop. 11, improved conversion (Balle et al. 2020) on the Opacus orders",
			p.Steps, fmtG(p.BatchRate), report.Down(pr.Multiplier))
		r.Notes = append(r.Notes, fmt.Sprintf("looser accountant for the same noise: the classic RDP conversion gives ε = %s at α = %s", report.Up(pr.EpsilonSeed), fmtG(pr.AlphaSeed)),
			"batch membership is drawn from the same randomness source as the noise")
	}
	return r
}

// accountingRate is the sampling rate the accountant uses for a requested
// rate q (see poissonSampler).
func accountingRate(q float64) float64 {
	if q >= 1 {
		return 1
	}
	return math.Min(math.Nextafter(q, 2), 1)
}

// projectBall projects w onto {‖w‖ ≤ r} in place.
func projectBall(w []float64, r float64) {
	if n := math.Sqrt(dot(w, w)); n > r {
		s := r / n
		for j := range w {
			w[j] *= s
		}
	}
}

// poissonSampler draws Poisson batches: each row independently with
// probability q' = ⌈q·2⁶⁴⌉/2⁶⁴ (compare a uniform 64-bit word from the
// randomness source with the threshold). q ≤ q' < q + 2⁻⁶⁴, so the
// accountant uses accountingRate(q), the next float64 above q (its spacing
// exceeds 2⁻⁶⁴ for every q ≥ 2⁻¹¹).
type poissonSampler struct {
	src       noise.Source
	threshold uint64 // take when word < threshold
	all       bool
	buf       []byte
	take      []bool
}

func newPoissonSampler(src noise.Source, q float64, n int) (*poissonSampler, error) {
	if src == nil {
		return nil, errors.New("noisygd: nil randomness source")
	}
	s := &poissonSampler{src: src, buf: make([]byte, 8*n), take: make([]bool, n)}
	if q >= 1 {
		s.all = true
	} else {
		t := math.Ceil(math.Ldexp(q, 64))
		if t >= math.Ldexp(1, 64) {
			s.all = true
		} else {
			s.threshold = uint64(t)
		}
	}
	return s, nil
}

func (s *poissonSampler) next() ([]bool, error) {
	if s.all {
		for i := range s.take {
			s.take[i] = true
		}
		return s.take, nil
	}
	for off := 0; off < len(s.buf); {
		m, err := s.src.Read(s.buf[off:])
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return nil, errors.New("randomness source returned no bytes")
		}
		off += m
	}
	for i := range s.take {
		s.take[i] = binary.LittleEndian.Uint64(s.buf[8*i:]) < s.threshold
	}
	return s.take, nil
}
