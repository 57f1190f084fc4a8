package fit

import (
	"fmt"

	"github.com/dplearn/dplearn/regress"
)

// UnitSamplingInflation is the public factor by which the intervals of a
// linear FM-family fit under a privacy unit with at most k rows per unit
// multiply the sampling part's variance: (k + 1)²/4 (1 at k = 1).
//
// # Derivation
//
// The sampling part (inference.FM) models the rows as independent:
// covariance s²·Λ2⁻¹/N with s² estimated by Λ0 − βᵀΛ2β. Under a unit the
// divisor is the public N = U·k (U units), while n = Σ_u n_u rows were
// kept (1 ≤ n_u ≤ k, private), so Λ2 ≈ (n/N)·S and Λ0 − βᵀΛ2β ≈ (n/N)·σ²
// (S = E[xxᵀ], σ² the per-row residual variance) and the model's covariance
// is σ²S⁻¹/N: the factor n/N cancels. The least-squares coefficient's
// sampling covariance with rows correlated within a unit is the cluster
// sandwich S_n⁻¹·Σ_u Var(Σ_{i∈u} x_i r_i)·S_n⁻¹, S_n = Σ_i x_i x_iᵀ ≈ n·S.
// For any direction a, by Cauchy-Schwarz, (Σ_{i∈u} aᵀx_i r_i)² ≤
// n_u·Σ_{i∈u}(aᵀx_i r_i)², so Var(Σ_{i∈u} x_i r_i) ⪯ n_u·σ²·n_u·S under
// the same homoskedastic model (x independent of the unit's size), whatever
// the correlation within the unit, and the covariance is at most
// σ²S⁻¹·Σ_u n_u²/n². Its ratio to the model's σ²S⁻¹/N is
//
//	r = U·k·Σ_u n_u² / (Σ_u n_u)².
//
// For a fixed mean n/U, Σ n_u² is largest when every n_u is 1 or k (a
// convex function of n_u on [1, k]); with a = n/U = 1 + p(k − 1), p the
// share of units with k rows, Σ n_u²/U = 1 + (a − 1)(k + 1), so
// r = k·((k + 1)·a − k)/a², maximal at a = 2k/(k + 1) ∈ [1, k], where
// r = (k + 1)²/4. The factor needs nothing private (not the kept count,
// not the sizes); it is conservative, and exact only for that worst mix of
// unit sizes. The estimand and method of the intervals say so.
func UnitSamplingInflation(k int) float64 {
	kf := float64(k)
	return (kf + 1) * (kf + 1) / 4
}

// checkUnitIntervals refuses confidence intervals under a privacy unit
// except where they are derived: linear fm, relaxed-fm and gaussian-fm
// (the target moment Λ0 is calibrated per unit, regress.TargetMomentSensitivity
// at N = units, and the sampling part inflated by UnitSamplingInflation),
// without zero rows (the dropped-share correction releases a row count with
// row-level sensitivity). irls's residual summary and logistic intervals
// have no unit-level derivation.
func checkUnitIntervals(req Request, data Data, zeroRows bool) error {
	u, ok := regress.UnitOf(data.Stats)
	if !ok {
		return nil
	}
	return CheckUnitIntervals(req, u.Column, zeroRows)
}

// CheckUnitIntervals is the rule for confidence intervals under privacy
// unit column (one source of truth for the CLI, Run and the Beam pipeline,
// which checks it before reading): derived for linear fm, relaxed-fm and
// gaussian-fm only, and not when records are dropped for a missing value
// or kept as zero rows (zeroRows: the schema drops records, or
// --skip-bad-rows). A request without intervals always passes.
func CheckUnitIntervals(req Request, column string, zeroRows bool) error {
	u := regress.PrivacyUnit{Column: column}
	if req.CIShare == 0 || !hasIntervals(req.Mechanism) {
		return nil
	}
	switch {
	case req.Kind != regress.Linear || (req.Mechanism != "fm" && req.Mechanism != "relaxed-fm" && req.Mechanism != "gaussian-fm"):
		return fmt.Errorf("privacy unit %q: confidence intervals are derived under a unit for linear fm, relaxed-fm and gaussian-fm only, not %s %s; use --ci-share 0", u.Column, req.Kind, req.Mechanism)
	case zeroRows:
		return fmt.Errorf("privacy unit %q: confidence intervals under a unit with records dropped for a missing value (or --skip-bad-rows) are not derived: their correction releases a row count with row-level sensitivity; use --ci-share 0", u.Column)
	}
	return nil
}

// unitIntervalNote is appended to the method and estimand of intervals
// under a privacy unit.
func unitIntervalNote(u regress.PrivacyUnit) string {
	return fmt.Sprintf("rows are correlated within a unit (privacy unit %q, at most K = %d rows kept per unit): the sampling part's variance is multiplied by the public design-effect bound (K + 1)²/4 = %.4g (fit.UnitSamplingInflation: the worst case over unit sizes and within-unit correlation, conservative)", u.Column, u.MaxRows, UnitSamplingInflation(u.MaxRows))
}
