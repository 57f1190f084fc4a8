package regress

import (
	"errors"
	"fmt"
	"math"

	"github.com/dplearn/dplearn/report"
)

// PrivacyUnit is the public description of a person-level (unit-level)
// guarantee: rows are grouped by Column, at most MaxRows = K rows of each
// unit enter the statistics (dataset.UnitMoments), and Units (the number of
// units, N) is public. The number of rows per unit, and so the number of
// rows, is not.
type PrivacyUnit struct {
	Column  string
	MaxRows int
	Units   int64
}

// UnitNeighbouring returns the neighbouring relation of a unit-level
// guarantee, for report.Privacy.Neighbouring.
func UnitNeighbouring(u PrivacyUnit) string {
	return fmt.Sprintf("replace-one-unit (bounded DP on persons): neighbouring datasets differ in all rows of one person (privacy unit %q, at most K = %d rows per unit kept, a uniformly random subset); the number of units N = %d is public, the number of rows per unit is not released",
		u.Column, u.MaxRows, u.Units)
}

// UnitStats wraps the statistics of unit-bounded rows (at most u.MaxRows
// per unit) for the FM family. Its N() is the public Units·K; Sum and At
// are the exact sums of the kept rows.
//
// # Sensitivities under replace-one-unit (the one central place)
//
// Every FM-family release is a map Λ = (1/n)·Σ_rows f(z) of the rows, with
// n = N() = Units·K here, and each mechanism derives for "one row replaced"
// a sensitivity Δ/n (Δ in the release's norm: L1 for fm, L2 for
// relaxed-fm, the two L2 blocks and the whitened joint J for gaussian-fm,
// |·| for the target moment of the confidence intervals). Replace one unit:
// its r ≤ K kept rows R become r' ≤ K rows R'. Pair min(r, r') of them;
// the rest appear on one side only. By the triangle inequality
//
//	‖ΔΛ‖ ≤ (1/n)·(min(r, r')·Δ + |r − r'|·M) ≤ (K/n)·max(Δ, M) = max(Δ, M)/Units,
//
// with M = sup_z ‖f(z)‖ (a row against no row). For every FM release M ≤ Δ
// (‖x‖ ≤ 1, |y| ≤ 1):
//   - linear Λ1 = −(2/n)Σyx: M = 2 ≤ Δ1 = 4; Λ2 = (1/n)Σxxᵀ, upper triangle:
//     M ≤ ‖x‖² ≤ 1 ≤ Δ2 = √2;
//   - logistic Λ1 = (1/n)Σ(½−y)x: M = ½ ≤ Δ1 = 1; Λ2 = (a2/n)Σxxᵀ:
//     M ≤ a2 ≤ Δ2 = √2·a2;
//   - gaussian-fm's whitened pair (Λ1/τ1, Λ2/τ2) with a = (Δ1/τ1)²,
//     b = (Δ2/τ2)²: M² ≤ a/4 + b/2, and J² = a/2 + b + a²/(16b) (a ≤ 4b) or
//     a (a ≥ 4b, where b/2 ≤ a/8) is at least that (joint.go);
//   - fm (L1 over all released coefficients): linear M ≤ 2‖x‖₁ +
//     Σ_{i≤j}|x_i x_j| ≤ 2√d + (d+1)/2 ≤ 2(d+1)², logistic M ≤ ½√d + (d+1)/16
//     ≤ d²/4 + 3d (a2 ≤ ⅛);
//   - relaxed-fm (L2 over all): linear M² ≤ 4 + 1 ≤ 4(1+4d+d²), logistic
//     M² ≤ ¼ + 1/64 ≤ d²/16 + d;
//   - the target moment (1/n)Σy² (y ∈ [−1, 1]): M = 1 = Δ.
//
// So each unit-level sensitivity is the row-level formula evaluated at
// Units instead of n: sensitivityN returns Units, and the mechanisms
// calibrate with it while computing Λ with N() = Units·K. The floating-point
// terms of the sensitivities (rounding.go) stay valid: the per-entry error
// bound at Units is e_S = ErrorBound(Units)/Units + O(u), and the statistics
// of r ≤ Units·K rows divided by Units·K err by at most
// ErrorBound(Units·K)/(Units·K), the same (ErrorBound is linear in n).
// Of the other mechanisms, irls (PlanIRLSUnits), noisygd
// (PlanNoisyGDUnits) and linear objpert (PlanObjPertUnits) derive their
// unit-level guarantees, with every release or objective divided by the
// public N() = Units·K; logistic objpert, dpme and filter-priority have
// none, and they refuse unit statistics (UnitSupported says why;
// docs/privacy-units.md).
func UnitStats(s Stats, u PrivacyUnit) (Stats, error) {
	if s == nil {
		return nil, errors.New("regress: privacy unit: no statistics")
	}
	if u.MaxRows < 1 {
		return nil, fmt.Errorf("regress: privacy unit: at most %d rows per unit; need ≥ 1", u.MaxRows)
	}
	if u.Units < 1 {
		return nil, errors.New("regress: privacy unit: no units")
	}
	if u.Units > math.MaxInt64/int64(u.MaxRows) {
		return nil, fmt.Errorf("regress: privacy unit: %d units × %d rows overflows", u.Units, u.MaxRows)
	}
	if s.N() > u.Units*int64(u.MaxRows) {
		// The statistics cannot come from rows bounded to K per unit.
		return nil, fmt.Errorf("regress: privacy unit: the statistics hold more rows than %d units × %d rows each: were the rows bounded per unit (dataset.UnitMoments)?", u.Units, u.MaxRows)
	}
	return unitStats{Stats: s, u: u}, nil
}

type unitStats struct {
	Stats
	u PrivacyUnit
}

// N returns the public Units·K, never the number of kept rows.
func (s unitStats) N() int64 { return s.u.Units * int64(s.u.MaxRows) }

// unitOf returns the privacy unit of unit statistics.
func unitOf(s Stats) (PrivacyUnit, bool) {
	us, ok := s.(unitStats)
	return us.u, ok
}

// UnitOf returns the privacy unit of statistics made by UnitStats.
func UnitOf(s Stats) (PrivacyUnit, bool) { return unitOf(s) }

// sensitivityN is the N at which a mechanism evaluates its row-level
// sensitivity formulas: N() for row-level statistics, Units for unit
// statistics (see UnitStats for the derivation: the one rows-per-unit
// factor K of the package).
func sensitivityN(s Stats) int64 {
	if u, ok := unitOf(s); ok {
		return s.N() / int64(u.MaxRows)
	}
	return s.N()
}

// UnitLevelRows reports whether est reads the rows (Estimator.NeedsRows)
// and has a unit-level derivation for them, so that it accepts unit
// statistics (UnitStats) with Data.Rows holding the at most K kept rows
// per unit: irls (PlanIRLSUnits) and noisygd (noisygd.go). The FM family
// needs no rows and always accepts unit statistics.
func UnitLevelRows(est Estimator) bool {
	_, ok := est.(interface{ unitLevelRows() })
	return ok
}

func (irlsEstimator) unitLevelRows() {}
func (noisyGD) unitLevelRows()       {}

// UnitSupported returns nil when est can fit kind under a privacy unit
// (the FM family, irls, noisygd, linear objpert), and otherwise an error that says why no
// unit-level guarantee is derived for it (docs/privacy-units.md).
func UnitSupported(est Estimator, kind Kind) error {
	if !est.Private() {
		return fmt.Errorf("--mechanism %s is not differentially private: a privacy unit has nothing to scale", est.Name())
	}
	if est.Name() == "objpert" {
		if kind == Logistic {
			return fmt.Errorf("--mechanism objpert has no unit-level guarantee for logistic regression: its proof (regress/objpert.go) bounds the Gaussian term over the parallelogram of one replaced row's gradient difference; for K rows it becomes a maximum over the 2^(2K) vertices of a zonotope, which the calibration does not compute (linear objpert is derived: PlanObjPertUnits); use gaussian-fm or noisygd")
		}
		return nil // linear: PlanObjPertUnits
	}
	if !est.NeedsRows(kind) || UnitLevelRows(est) {
		return nil
	}
	why := "no sensitivity is derived for a unit of K rows"
	switch est.Name() {
	case "dpme":
		why = "its histogram is fitted on cells weighted by the noisy counts with the row-level L1 sensitivity 2; a unit moves up to 2K cells, and its synthetic-data weighting has no unit-level derivation here"
	case "filter-priority":
		why = "its exact ε-DP proof (threshold θ, geometric noise, priority sampling of empty cells) is for cells that change by one; a unit changes up to 2K cells by up to K each"
	}
	return fmt.Errorf("--mechanism %s has no unit-level guarantee: %s; use fm, relaxed-fm, gaussian-fm, irls (robust) or noisygd", est.Name(), why)
}

// neighbouring returns the neighbouring relation of a fit on s: the unit
// relation for unit statistics, the row-level one otherwise.
func neighbouring(s Stats) string {
	if u, ok := unitOf(s); ok {
		return UnitNeighbouring(u)
	}
	return report.Neighbouring
}

// withoutNonzeroKnown returns st without its known non-zero entries (the
// intercept's diagonal): under a privacy unit the rows are fewer than N()
// by a private amount, so only homogeneous identities still hold.
func (st *GramStructure) withoutNonzeroKnown() *GramStructure {
	if st == nil {
		return nil
	}
	out := &GramStructure{D: st.D, Equal: st.Equal}
	for _, v := range st.Known {
		if v.Value == 0 {
			out.Known = append(out.Known, v)
		}
	}
	if len(out.Known) == 0 && len(out.Equal) == 0 {
		return nil
	}
	return out
}
