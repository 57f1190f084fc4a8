package regress

import (
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// Released is what an FM-family fit (or the last iteration of DP-IRLS) put out, kept so that inference (standard
// errors, confidence intervals) can be computed from released values and
// public parameters only: the noisy polynomial coefficients exactly as
// released (Λ1 and the symmetric Λ2; Λ0 is not released by these
// mechanisms), the data-independent ridge λ and trimming floor of the
// post-processing, and the per-entry variance of the noise that was added to
// each released coefficient (a public function of ε, δ, N and d).
//
// Nothing here is an un-noised data quantity: the Quadratic holds the values
// after noise, and N is public under the replace-one neighbouring relation.
type Released struct {
	Kind Kind
	N    int64
	// Objective holds the released (noisy) Λ1 and upper triangle of Λ2;
	// Lambda0 is zero (not released).
	Objective *Quadratic
	// Ridge is the λ added to the diagonal of Λ2 before minimising, and
	// MinEigen the trimming floor (TrimFraction·λ). A fit that clips the
	// spectrum (Floor > 0) has Ridge 0 and keeps MinEigen as the
	// identification floor of inference (Unshrunk): TrimFraction times the
	// default ridge, below the clip floor, so it trims nothing in the fit.
	Ridge, MinEigen float64
	// Floor is the eigenvalue floor of the fit's clipping (EigenFloor), 0
	// when the fit used the ridge and trimming instead.
	Floor float64
	// VarLambda1 and VarLambda2 are the per-entry variances of the noise on
	// Λ1 and on each released entry of Λ2's upper triangle (2b² for Laplace
	// scale b, σ² for Gaussian σ). Entries are independent.
	VarLambda1, VarLambda2 float64
	// Noise1 and Noise2 name the noise distributions on Λ1 and Λ2:
	// "laplace" or "gaussian".
	Noise1, Noise2 string
	// ResidualFloor is DP-IRLS's η (Kind Robust only).
	ResidualFloor float64
	// Iterations is DP-IRLS's number of iterations J (Kind Robust only; 0
	// when not recorded, read as the cold start's).
	Iterations int
	// Structure is the public structure of Λ2 (in Λ2's units) that the
	// fit projected the released Λ2 onto before solving, nil when none
	// (Config.Structure); PostProcess and Projected re-apply it.
	Structure *GramStructure
	// Warm, for a warm-started DP-IRLS fit, is the released objective of
	// its Gaussian FM least-squares warm start (Kind Linear: the noisy Λ1
	// and Λ2, their Gaussian noise variances FMTau1², FMTau2², and the
	// warm start's ridge and trimming floor), so inference can propagate
	// the warm start's noise through the iterations; nil for a cold start.
	Warm *Released
	// Form is DP-IRLS's IRLSOptions.Form ("" read as the seed's moments).
	// Start, for the gradient forms, is the (released) iterate the last
	// step began from: the fit's last iterate is Start plus a minimiser of
	// Objective, whose Λ1 = −2g̃ and Λ2 = B̃ (gradient) or (m̃/η)·G̃
	// (preconditioned, G̃ the warm start's Gram matrix, whose noise
	// VarLambda2 then carries scaled by (m̃/η)²).
	Form  string
	Start []float64
}

// releasedFrom records the released objective of an FM-family fit. The
// per-entry noise variances are read from the report's releases, which list
// the noise blocks in release order over [Λ1, upper(Λ2)] (fm and relaxed-fm:
// one block; gaussian-fm: Λ1 then Λ2). It returns nil when the blocks do not
// tile the released vector with one variance per part, so a mechanism with a
// different layout gets no inference rather than a wrong one.
func releasedFrom(q *Quadratic, kind Kind, n int64, pp PostProcess, rs []report.Release) *Released {
	total := len(q.Lambda1) + len(q.Upper)
	varAt := make([]float64, 0, total)
	kinds := make([]string, 0, total)
	for _, r := range rs {
		var v float64
		switch r.Noise {
		case "laplace":
			v = 2 * r.Scale * r.Scale
		case "gaussian":
			v = r.Scale * r.Scale
		default:
			return nil
		}
		for i := 0; i < r.Entries; i++ {
			varAt = append(varAt, v)
			kinds = append(kinds, r.Noise)
		}
	}
	if len(varAt) != total || total == 0 {
		return nil
	}
	v1, v2 := varAt[0], varAt[len(varAt)-1]
	for i, v := range varAt {
		want := v2
		if i < len(q.Lambda1) {
			want = v1
		}
		if v != want || kinds[i] != kinds[min(i, len(q.Lambda1))] {
			return nil
		}
	}
	cp := &Quadratic{D: q.D, Lambda1: append([]float64(nil), q.Lambda1...), Upper: append([]float64(nil), q.Upper...)}
	return &Released{Kind: kind, N: n, Objective: cp, Ridge: pp.Lambda, MinEigen: pp.MinEigen, Floor: pp.Floor, VarLambda1: v1, VarLambda2: v2,
		Noise1: kinds[0], Noise2: kinds[len(kinds)-1]}
}

// fitPostProcess is the FM family's post-processing of the released
// objective, a function of public values only (the configuration, d, the
// per-entry noise standard deviation τ2 of Λ2 and the public structure st):
//
//   - clip (gaussian-fm, linear) with Config.Lambda < 0 and
//     Config.EigenFloor ≥ 0: eigenvalue clipping at EigenFloor(d, τ2, c)
//     and no ridge (docs/mechanisms.md, "Eigenvalue clipping"); MinEigen is
//     the identification floor min(TrimFraction·DefaultLambdaFactor·τ2,
//     Floor/2), below the floor, so the fit trims nothing;
//   - otherwise the ridge λ (Config.Lambda, or LambdaFactor·τ2) with
//     trimming at TrimFraction·λ.
//
// Both solve in the public ball Config.SolveRadius when it is > 0.
func fitPostProcess(cfg Config, clip bool, d int, tau2 float64, st *GramStructure) PostProcess {
	var pp PostProcess
	if clip && cfg.Lambda < 0 && cfg.EigenFloor >= 0 {
		f := EigenFloor(d, tau2, cfg.EigenFloor)
		pp = PostProcess{Floor: f, MinEigen: math.Min(TrimFraction*DefaultLambdaFactor*tau2, f/2)}
	} else {
		pp = NoisyPostProcess(cfg.lambda(tau2))
	}
	pp.Radius = cfg.SolveRadius
	pp.Structure = st
	return pp
}

// clipLine describes eigenvalue clipping in the privacy report. It quotes
// the public floor only (how many eigenvalues were raised is a function of
// released values too, but the report keeps to public figures beyond
// Result.Trimmed, TestReportIsPublic).
func clipLine(pp PostProcess) string {
	return fmt.Sprintf("eigenvalue clipping: every eigenvalue of the noisy Λ2 below the public floor %s = c·τ2·√d (about the noise's spectral norm; data-independent) raised to it, no ridge, nothing trimmed",
		fmtG(pp.Floor))
}

// PostProcess returns the post-processing the fit applied to the released
// objective (its public structure, ridge and trimming floor; not a solving
// ball), so that a re-noised copy of the objective can be solved the same
// way.
func (r *Released) PostProcess() PostProcess {
	return PostProcess{Lambda: r.Ridge, MinEigen: r.MinEigen, Floor: r.Floor, Structure: r.Structure}
}

// Unshrunk returns the fit's post-processing without its shrinkage (the
// ridge and the eigenvalue floor), keeping the public structure and the
// trimming floor MinEigen: what inference's bootstrap solves the released
// objective and every replicate with. The intervals are for the
// unregularised estimand; a ridge or a clip applied inside the replicates
// would shift every replicate like the released fit, so its bias (largest
// in the directions the noise swamps) would not show in the interval. The
// fit's own post-processing is PostProcess.
func (r *Released) Unshrunk() PostProcess {
	return PostProcess{MinEigen: r.MinEigen, Structure: r.Structure}
}

// Projected returns the released objective after the projection onto its
// public structure (a copy of the objective when there is none). The
// projection commutes with fresh noise (GramStructure.Project), so
// re-noising and re-projecting the projected objective draws replicates
// from the same law as re-noising the released one.
func (r *Released) Projected() (*Quadratic, error) {
	return r.Structure.Project(r.Objective)
}

// Validate checks a Released value for internal consistency (a caller may
// have built or decoded it by hand).
func (r *Released) Validate() error {
	if r == nil || r.Objective == nil {
		return fmt.Errorf("regress: no released objective")
	}
	q := r.Objective
	if q.D < 1 || len(q.Lambda1) != q.D || len(q.Upper) != q.D*(q.D+1)/2 {
		return fmt.Errorf("regress: released objective has inconsistent sizes (d=%d, %d order-1 and %d order-2 entries)", q.D, len(q.Lambda1), len(q.Upper))
	}
	if r.Kind != Linear && r.Kind != Logistic && r.Kind != Robust {
		return fmt.Errorf("regress: released objective of unknown model kind %q", r.Kind)
	}
	if r.N < 1 {
		return fmt.Errorf("regress: released objective with N = %d", r.N)
	}
	for _, v := range append(append([]float64{r.Ridge, r.MinEigen, r.Floor, r.VarLambda1, r.VarLambda2}, q.Lambda1...), q.Upper...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("regress: released objective holds a non-finite value")
		}
	}
	for _, n := range []string{r.Noise1, r.Noise2} {
		if n != "laplace" && n != "gaussian" {
			return fmt.Errorf("regress: released objective with unknown noise %q", n)
		}
	}
	if r.VarLambda1 < 0 || r.VarLambda2 < 0 || r.Ridge < 0 || r.Floor < 0 {
		return fmt.Errorf("regress: released objective with a negative noise variance, ridge or eigenvalue floor")
	}
	if st := r.Structure; st != nil {
		if err := st.validate(); err != nil {
			return err
		}
		if st.D != q.D {
			return fmt.Errorf("regress: released objective has d = %d but its Gram structure d = %d", q.D, st.D)
		}
	}
	if r.Iterations < 0 {
		return fmt.Errorf("regress: released objective with %d iterations", r.Iterations)
	}
	switch r.Form {
	case "", IRLSFormMoments:
		if r.Start != nil {
			return fmt.Errorf("regress: a released objective of the moments form has no step start")
		}
	case IRLSFormGradient, IRLSFormPreconditioned:
		if r.Kind != Robust || len(r.Start) != q.D {
			return fmt.Errorf("regress: released %s-form objective needs a robust fit and its step start of length %d, got model %q and %d values", r.Form, q.D, r.Kind, len(r.Start))
		}
		for _, v := range r.Start {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("regress: released step start holds a non-finite value")
			}
		}
		if r.Form == IRLSFormPreconditioned && r.Warm == nil {
			return fmt.Errorf("regress: released preconditioned-form objective without its warm start")
		}
	default:
		return fmt.Errorf("regress: released objective of unknown DP-IRLS form %q", r.Form)
	}
	if w := r.Warm; w != nil {
		if r.Kind != Robust {
			return fmt.Errorf("regress: only a robust (DP-IRLS) fit has a released warm start, not a %q fit", r.Kind)
		}
		if w.Warm != nil {
			return fmt.Errorf("regress: a released warm start cannot have a warm start of its own")
		}
		if err := w.Validate(); err != nil {
			return fmt.Errorf("warm start: %w", err)
		}
		if w.Kind != Linear || w.N != r.N || w.Objective.D != q.D {
			return fmt.Errorf("regress: released warm start does not match the fit (model %q, N=%d, d=%d against N=%d, d=%d)", w.Kind, w.N, w.Objective.D, r.N, q.D)
		}
	}
	return nil
}

// TargetMomentSensitivity returns the L1 sensitivity of Λ0 = (1/N)Σy² of a
// linear model's encoded target as the code computes it: y ∈ [−1, 1], so
// replacing one row changes Σy² by at most 1 and Λ0 by 1/N, plus twice the
// per-entry floating-point error of a linear Λ2 entry (Λ0 is read from the
// same suffstat sums and divided the same way; rounding.go).
func TargetMomentSensitivity(n int64) (float64, error) {
	if n < 1 {
		return 0, fmt.Errorf("regress: target moment needs N ≥ 1, got %d", n)
	}
	_, e2 := objectiveEntryErrors(Linear, n, 0) // a2 is unused for linear models
	return roundedSensitivity(1/float64(n), 2, 1, e2, true), nil
}

// ReleaseTargetMoment releases Λ0 = (1/N)Σy², the second moment of a linear
// model's encoded target (column K−1 of the statistics), with the Laplace
// mechanism: ε-DP under replace-one neighbours with the sensitivity of
// TargetMomentSensitivity. FM-family fits do not release Λ0 (it does not move
// the minimiser); inference needs it for the residual variance, so it is a
// separate release whose ε the caller must compose with the fit's.
func ReleaseTargetMoment(s Stats, epsilon float64, src noise.Source) (float64, report.Release, error) {
	if s == nil || s.K() < 2 {
		return 0, report.Release{}, fmt.Errorf("regress: target moment: no statistics")
	}
	if src == nil {
		return 0, report.Release{}, fmt.Errorf("regress: target moment: no randomness source")
	}
	sens, err := TargetMomentSensitivity(sensitivityN(s)) // units.go
	if err != nil {
		return 0, report.Release{}, err
	}
	b, err := accounting.LaplaceScale(epsilon, sens)
	if err != nil {
		return 0, report.Release{}, fmt.Errorf("regress: target moment: calibrate Laplace noise: %w", err)
	}
	t := s.K() - 1
	v := []float64{s.At(t, t) / float64(s.N())}
	if math.IsNaN(v[0]) || math.IsInf(v[0], 0) {
		return 0, report.Release{}, fmt.Errorf("regress: target moment: statistics contain a non-finite value")
	}
	if err := noise.AddLaplace(src, v, b); err != nil {
		return 0, report.Release{}, fmt.Errorf("regress: target moment: add noise: %w", err)
	}
	return v[0], report.Release{Name: "Λ0 = (1/N)Σy² (target second moment, for the residual variance of the confidence intervals)",
		Entries: 1, Norm: "L1", Sensitivity: sens, Noise: "laplace", Scale: b}, nil
}

// setIRLS stores one DP-IRLS iteration's released moments as the objective
// ωᵀB̃ω − 2Ãᵀω: Λ1 = −2Ã, Λ2 = B̃.
func (q *Quadratic) setIRLS(a, upper []float64) {
	q.D = len(a)
	q.Lambda1 = make([]float64, len(a))
	for j, v := range a {
		q.Lambda1[j] = -2 * v
	}
	q.Upper = append([]float64(nil), upper...)
}

// released returns the last iteration's released objective of a DP-IRLS
// fit with its noise variances (Λ1 = −2Ã carries 4 times Ã's variance), or
// nil when none was recorded.
func (plan IRLSPlan) released(n int64, lam float64) *Released {
	if plan.last == nil || plan.last.D == 0 {
		return nil
	}
	v1 := plan.ScaleA * plan.ScaleA
	if plan.FirstMoment == "laplace" {
		v1 *= 2
	}
	r := &Released{Kind: Robust, N: n, Objective: plan.last, Ridge: lam, MinEigen: TrimFraction * lam,
		VarLambda1: 4 * v1, VarLambda2: plan.SigmaB * plan.SigmaB, Noise1: plan.FirstMoment, Noise2: "gaussian",
		ResidualFloor: plan.ResidualFloor, Iterations: plan.Iterations, Form: plan.Form}
	if plan.Form != IRLSFormMoments {
		if plan.lastStep == nil || len(plan.lastStep.Start) != plan.D {
			return nil // a step whose start was not recorded: no inference rather than a wrong one
		}
		r.Start = plan.lastStep.Start
	}
	if plan.Form == IRLSFormPreconditioned {
		// Λ2 = G̃/scale with scale = η/m̃: G̃'s noise and the fit's ridge
		// (lam = the warm start's λ_FM) scale by 1/scale.
		sc := plan.lastStep.Scale
		r.VarLambda2 = plan.FMTau2 * plan.FMTau2 / (sc * sc)
		r.Ridge, r.MinEigen = lam/sc, TrimFraction*lam/sc
	}
	if plan.WarmStart > 0 {
		if plan.warm == nil || plan.warm.Objective == nil {
			return nil // a warm start whose release was not recorded: no inference rather than a wrong one
		}
		r.Warm = plan.warm
	}
	return r
}

// recordWarm keeps the warm start's released (noisy) objective q, fitted
// with ridge lam, when the plan records releases for inference: Λ1 and Λ2
// carry Gaussian noise of σ = FMTau1 and FMTau2 per entry.
func (plan IRLSPlan) recordWarm(q *Quadratic, n int64, lam float64) {
	if plan.warm == nil {
		return
	}
	cp := &Quadratic{D: q.D, Lambda1: append([]float64(nil), q.Lambda1...), Upper: append([]float64(nil), q.Upper...)}
	*plan.warm = Released{Kind: Linear, N: n, Objective: cp, Ridge: lam, MinEigen: TrimFraction * lam,
		VarLambda1: plan.FMTau1 * plan.FMTau1, VarLambda2: plan.FMTau2 * plan.FMTau2, Noise1: "gaussian", Noise2: "gaussian"}
}

// RobustScale is the released (noisy) summary of the residuals of a DP-IRLS
// fit at its released coefficients ω̂, which the standard errors of the
// Huber-type fixed point need (inference.IRLS): with r_i = y_i − x_iᵀω̂,
// s_i = 1/max(η, |r_i|) and ψ_i = r_i·s_i ∈ [−1, 1],
//
//	MeanWeight = (1/N)Σ s_i,  Inside = (1/N)Σ 1{|r_i| < η},  MeanPsi2 = (1/N)Σ ψ_i².
//
// The mean weight is released as the mean of η·s_i ∈ (0, 1] and divided by
// η afterwards (post-processing), so all three released means lie in
// [0, 1]. NoiseScale is the Laplace scale b of the noise on Inside and
// MeanPsi2, and b/η is that on MeanWeight (public: the sensitivity over the
// ε spent), so inference can account for it; 0 when unknown.
type RobustScale struct {
	MeanWeight, Inside, MeanPsi2 float64
	NoiseScale                   float64
}

// RobustScaleSensitivity returns the L1 sensitivity of the three released
// means under replace-one neighbours: η·s ∈ (0, 1], the indicator and
// ψ² ∈ [0, 1] each move their mean by at most 1/N, so 3/N (approached by
// a residual of 0 against one of 1: (1 − η) + 1 + 1), plus twice the
// floating-point error of a plain-loop mean per entry (rounding.go). It
// does not depend on η: releasing the mean of η·s instead of s (1/η times
// less noise on the mean weight than its own sensitivity 1/(ηN) would need)
// keeps the summary usable at the small floors of the gradient forms. The
// floor argument is validated only.
func RobustScaleSensitivity(n int64, floor float64) (float64, error) {
	if n < 1 || !(floor > 0) {
		return 0, fmt.Errorf("regress: robust scale needs N ≥ 1 and η > 0, got N=%d η=%v", n, floor)
	}
	N := float64(n)
	e := loopSumError(n, 1, N)
	return roundedSensitivity(3/N, 8, 3, e, true), nil
}

// ReleaseRobustScale computes RobustScale on the encoded rows (K per row,
// target last) at the released coefficients w and releases it with the
// Laplace mechanism: ε-DP under replace-one neighbours (w is public, so the
// release composes with the fit's).
func ReleaseRobustScale(rows []float64, k int, w []float64, floor, epsilon float64, src noise.Source) (RobustScale, report.Release, error) {
	if k < 2 || len(rows) == 0 || len(rows)%k != 0 || len(w) != k-1 {
		return RobustScale{}, report.Release{}, fmt.Errorf("regress: robust scale: rows of length %d do not match K = %d and %d coefficients", len(rows), k, len(w))
	}
	if src == nil {
		return RobustScale{}, report.Release{}, fmt.Errorf("regress: robust scale: no randomness source")
	}
	n := int64(len(rows) / k)
	sens, err := RobustScaleSensitivity(n, floor)
	if err != nil {
		return RobustScale{}, report.Release{}, err
	}
	b, err := accounting.LaplaceScale(epsilon, sens)
	if err != nil {
		return RobustScale{}, report.Release{}, fmt.Errorf("regress: robust scale: calibrate Laplace noise: %w", err)
	}
	var s0, s1, s2 float64
	for i := 0; i < int(n); i++ {
		r := rows[i*k : (i+1)*k]
		res := r[k-1] - dot(r[:k-1], w)
		den := math.Max(floor, math.Abs(res))
		s0 += floor / den // η·s ∈ (0, 1]
		if math.Abs(res) < floor {
			s1++
		}
		psi := res / den
		s2 += psi * psi
	}
	v := []float64{s0 / float64(n), s1 / float64(n), s2 / float64(n)}
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return RobustScale{}, report.Release{}, fmt.Errorf("regress: robust scale: rows contain a non-finite value")
		}
	}
	if err := noise.AddLaplace(src, v, b); err != nil {
		return RobustScale{}, report.Release{}, fmt.Errorf("regress: robust scale: add noise: %w", err)
	}
	return RobustScale{MeanWeight: v[0] / floor, Inside: v[1], MeanPsi2: v[2], NoiseScale: b},
		report.Release{Name: "residual summary at the fitted ω: mean of η·weight, share within η, mean ψ² (for the standard errors of the confidence intervals)",
			Entries: 3, Norm: "L1", Sensitivity: sens, Noise: "laplace", Scale: b}, nil
}
