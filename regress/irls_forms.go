package regress

import (
	"context"
	"fmt"
	"math"

	"github.com/dplearn/dplearn/noise"
)

// What one DP-IRLS iteration releases (IRLSOptions.Form; issue 16).
//
// Noise-free, the seed's step is ω⁺ = B⁻¹A with A = (1/N)Σ s_i y_i x_i,
// B = (1/N)Σ s_i x_i x_iᵀ and s_i = 1/max(η, |r_i|), r_i = y_i − x_iᵀω
// (ω the previous, already released iterate). Since A − Bω =
// (1/N)Σ s_i r_i x_i,
//
//	ω⁺ = ω + B⁻¹g,   g = (1/N)Σ ψ_η(r_i) x_i,   ψ_η(r) = r/max(η, |r|) ∈ [−1, 1],
//
// the same iteration with the same fixed point, the Huber-type estimating
// equation Σ ψ_η(r_i) x_i = 0. The forms differ in what is released:
//
//   - IRLSFormMoments (the seed's): A and B. A's L2 sensitivity is
//     2/(ηN): η must stay large for A's noise to stay small.
//   - IRLSFormGradient: g and B; ω⁺ = ω + (B̃ + λI)⁻¹g̃ (trimmed). g's
//     sensitivity is 2/N, η times smaller than A's, whatever η, and B's
//     noise now only scales a step that shrinks to 0 at the fixed point.
//     The ridge λ shrinks the step toward the previous iterate, not the
//     coefficients toward 0.
//   - IRLSFormPreconditioned (needs the warm start): g and the scalar
//     m = (1/N)Σ η·s_i ∈ (0, 1]; ω⁺ = ω + (η/m̃)·(G̃ + λ_FM I)⁻¹g̃, with G̃
//     the warm start's released (noisy) Gram matrix Λ2 = (1/N)Σ x xᵀ, its
//     ridge λ_FM and trimming. When the residuals are independent of x,
//     B ≈ (m/η)·G, so the step is the IRLS step with B replaced by its
//     approximation from two cheap releases; the fixed point is still
//     Σψ_η(r_i)x_i = 0 (any positive definite preconditioner keeps it), and
//     an iteration costs a d-vector and a scalar instead of a d×d matrix.
//
// Sensitivities (replace-one, ‖x‖ ≤ 1, |y| ≤ 1, the iterate ω public):
//
//	g, L2: ‖ψx − ψ'x'‖/N ≤ (|ψ|‖x‖ + |ψ'|‖x'‖)/N ≤ 2/N, attained by
//	  x = x' = e1 with residuals ≥ η of opposite signs (ψ = 1, ψ' = −1);
//	g, L1 (Laplace): (‖x‖₁ + ‖x'‖₁)/N ≤ 2√d/N;
//	m: η·s ∈ (0, 1] (s ≤ 1/η), so |m − m'| ≤ 1/N, approached by a row with
//	  |r| ≤ η (η·s = 1) against one with a huge residual (η·s → 0); the
//	  largest residual is 1 + ‖ω‖, so the supremum is attained only in the
//	  limit and 1/N is a strict upper bound.
//
// Computed values: ψ = r/max(η, |r|) is a correctly rounded quotient of
// numbers with |r| ≤ max(η, |r|), so |ψ| ≤ 1 exactly, and likewise
// 0 < η/max(η, |r|) ≤ 1; each released term has one more rounding (ψ·x_p),
// and the sums are plain loops (rounding.go), so the same
// roundedSensitivity construction as A's applies with the bound 1 instead
// of 1/η. Every release is Gaussian (or Laplace on g), so the accounting of
// irls.go (exact Gaussian-DP composition, μ² adds) is unchanged; only the
// sensitivities and the release names differ.
const (
	IRLSFormMoments        = "moments"
	IRLSFormGradient       = "gradient"
	IRLSFormPreconditioned = "preconditioned"
)

// irlsFormSensitivities returns the unrounded sensitivities of the two
// releases of one iteration of the form: the first (A or g; L1 when l1) and
// the second (B's upper triangle, L2, or the scalar m), the second's number
// of entries, and the bound on each summed term of both.
func irlsFormSensitivities(form string, n int64, d int, floor float64, l1 bool) (first, second float64, secondEntries int, termBound float64) {
	N := float64(n)
	sMax := 1 / floor
	spread := 2.0
	if l1 {
		spread = 2 * math.Sqrt(float64(d))
	}
	switch form {
	case IRLSFormGradient:
		return spread / N, math.Sqrt2 * sMax / N, d * (d + 1) / 2, sMax
	case IRLSFormPreconditioned:
		return spread / N, 1 / N, 1, 1
	default: // moments
		return spread * sMax / N, math.Sqrt2 * sMax / N, d * (d + 1) / 2, sMax
	}
}

// irlsGradient returns g = (1/N)Σ ψ_η(r_i) x_i and m = (1/N)Σ η/max(η, |r_i|)
// at the iterate w (rows row-major, k per row, target last).
func irlsGradient(rows []float64, k int, w []float64, floor float64) (g []float64, m float64) {
	return irlsGradientN(rows, k, w, floor, int64(len(rows)/k))
}

// irlsGradientN is irlsGradient divided by the public divisor N (the number
// of rows, or Units·K under a privacy unit: PlanIRLSUnits).
func irlsGradientN(rows []float64, k int, w []float64, floor float64, divisor int64) (g []float64, m float64) {
	d := k - 1
	n := len(rows) / k
	g = make([]float64, d)
	for i := 0; i < n; i++ {
		r := rows[i*k : (i+1)*k]
		x := r[:d]
		res := r[d] - dot(x, w)
		den := math.Max(floor, math.Abs(res))
		psi := res / den
		m += floor / den
		for p := 0; p < d; p++ {
			g[p] += psi * x[p]
		}
	}
	N := float64(divisor)
	for p := range g {
		g[p] /= N
	}
	return g, m / N
}

// irlsGradientMoments returns g (irlsGradient) and the upper triangle of B
// (irlsMoments) at w in one pass.
func irlsGradientMoments(rows []float64, k int, w []float64, floor float64) (g, upper []float64) {
	return irlsGradientMomentsN(rows, k, w, floor, int64(len(rows)/k))
}

// irlsGradientMomentsN is irlsGradientMoments divided by the public
// divisor N.
func irlsGradientMomentsN(rows []float64, k int, w []float64, floor float64, divisor int64) (g, upper []float64) {
	return irlsFirstAndB(rows, k, w, floor, divisor, func(res, _, den float64) float64 { return res / den })
}

// preconditionedScale post-processes the released m̃ into the public range
// of m at the iterate w: m ∈ [min(1, η/(1 + ‖w‖)), 1], since every residual
// has |r| ≤ |y| + ‖x‖‖w‖ ≤ 1 + ‖w‖. It returns η/m̃, the step's scale.
func preconditionedScale(m, floor float64, w []float64) float64 {
	lo := math.Min(1, floor/(1+math.Sqrt(dot(w, w))))
	return floor / math.Max(lo, math.Min(1, m))
}

// validateForm checks the form against the other options (after defaults).
func validateForm(opt IRLSOptions) error {
	switch opt.Form {
	case IRLSFormMoments, IRLSFormGradient:
	case IRLSFormPreconditioned:
		if !(opt.WarmStart > 0) {
			return fmt.Errorf("irls: the %q form preconditions with the warm start's Gram matrix and needs a warm start (irls-warm-start > 0)", opt.Form)
		}
	default:
		return fmt.Errorf("irls: unknown form %q (want %q, %q or %q)", opt.Form, IRLSFormMoments, IRLSFormGradient, IRLSFormPreconditioned)
	}
	return nil
}

// releaseNames returns the report names of the two releases of one
// iteration of the plan's form.
func (plan IRLSPlan) releaseNames() (first, second string, secondEntries int, secondNorm string) {
	d := plan.D
	switch plan.Form {
	case IRLSFormGradient:
		return fmt.Sprintf("g = (1/N)Σ ψ_η(r)·x, ψ_η(r) = r/max(η, |r|), each of %d iterations", plan.Iterations),
			fmt.Sprintf("B = (1/N)Σ s·x·xᵀ upper triangle, each of %d iterations", plan.Iterations), d * (d + 1) / 2, "L2 (Frobenius)"
	case IRLSFormPreconditioned:
		return fmt.Sprintf("g = (1/N)Σ ψ_η(r)·x, ψ_η(r) = r/max(η, |r|), each of %d iterations", plan.Iterations),
			fmt.Sprintf("m = (1/N)Σ η/max(η, |r|), each of %d iterations", plan.Iterations), 1, "L2"
	default:
		return fmt.Sprintf("A = (1/N)Σ s·y·x, each of %d iterations", plan.Iterations),
			fmt.Sprintf("B = (1/N)Σ s·x·xᵀ upper triangle, each of %d iterations", plan.Iterations), d * (d + 1) / 2, "L2 (Frobenius)"
	}
}

// Defaults of the gradient forms (docs/mechanisms.md, "DP-IRLS that pays
// off", and the sweeps of experiment/utility.go). DefaultIRLSForm is the
// form when IRLSOptions.Form is empty (a cold start keeps the seed's
// moments); DefaultPreconditionedWarmStart the preconditioned form's share
// of μ² for the warm start (whose Gram matrix it reuses at every step), and
// DefaultPreconditionedSplit the share of each iteration's μ² given to g
// (the rest to the scalar m, whose relative noise is far smaller).
const (
	DefaultIRLSForm                = IRLSFormPreconditioned
	DefaultPreconditionedWarmStart = 0.3
	DefaultPreconditionedSplit     = 0.8
)

// GradientIRLSIterations is the default J of a gradient form after the
// warm start, a rule in the public N, d and ε only. The preconditioned
// form's iterations cost a d-vector and a scalar each, so more of them pay
// than of the d×d releases of the others, but each one's share of the
// budget shrinks like 1/J while the noise of the steps adds up in the
// directions the iteration contracts slowly; so J grows with the signal to
// noise ratio N·ε/d:
//
//	J = min(12, max(1, ⌊2·ln(N·ε/d)⌋))   (preconditioned),   3 (gradient).
//
// CPS1988 (N·ε/d ≥ 250) gets 11 at ε = 0.1 and 12 at ε ≥ 0.5; diabetes
// (N ≈ 350, d = 11) 6 at ε = 1, 5 at ε = 0.5 and 2 at ε = 0.1
// (docs/mechanisms.md, "Public tuning rules").
func GradientIRLSIterations(form string, n int64, d int, epsilon float64) int {
	if form != IRLSFormPreconditioned {
		return 3
	}
	if n < 1 || d < 1 || !(epsilon > 0) {
		return 1
	}
	j := math.Floor(2 * math.Log(float64(n)*epsilon/float64(d)))
	return int(math.Min(12, math.Max(1, j)))
}

// GradientIRLSResidualFloor is the default residual floor of the gradient
// forms, a rule in the public N, d and ε only:
//
//	η = min(1, max(0.1, 1.5·√(d/(N·ε)))).
//
// Why this shape: g's sensitivity 2/N no longer depends on η, so η is no
// longer held up by the noise of A. A smaller η is closer to LAD (the
// fixed point solves Σψ_η(r_i)x_i = 0, which is LAD's subgradient equation
// as η → 0) but the iteration contracts more slowly (f = 1 − P(|r| < η)/
// (η·E[1/max(η, |r|)]) → 1), so with J fixed the floor must rise when the
// noise of each step is large, i.e. when N·ε/d is small. CPS1988
// (N ≈ 22,500, d = 9) gets 0.1 at every ε; diabetes (N ≈ 350, d = 11) gets
// 0.26 at ε = 1, 0.37 at ε = 0.5 and 0.84 at ε = 0.1.
func GradientIRLSResidualFloor(n int64, d int, epsilon float64) float64 {
	if n < 1 || d < 1 || !(epsilon > 0) {
		return DefaultResidualFloor
	}
	return math.Min(1, math.Max(0.1, 1.5*math.Sqrt(float64(d)/(float64(n)*epsilon))))
}

// runPreconditioned performs the plan's J iterations of the preconditioned
// form from the warm start w0: each releases g̃ and m̃ and steps
// ω ← ω + (η/m̃)·(G̃ + λI)⁻¹g̃ with gram's Λ2 as G̃ (ridge lam, trimmed). It
// returns the last iterate and the number of directions trimmed from G̃.
func (plan IRLSPlan) runPreconditioned(ctx context.Context, rows []float64, k int, w0 []float64, gram *Quadratic, src noise.Source, lam float64) ([]float64, int, error) {
	if gram == nil || len(w0) != k-1 {
		return nil, 0, fmt.Errorf("irls: the preconditioned form needs the warm start")
	}
	w := append([]float64(nil), w0...)
	trimmed := 0
	for j := 0; j < plan.Iterations; j++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("irls: %w", err)
		}
		g, m := irlsGradientN(rows, k, w, plan.ResidualFloor, plan.N)
		var err error
		if plan.FirstMoment == "gaussian" {
			err = noise.AddGaussian(src, g, plan.ScaleA)
		} else {
			err = noise.AddLaplace(src, g, plan.ScaleA)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("irls: iteration %d: noise on g: %w", j+1, err)
		}
		mv := []float64{m}
		if err := noise.AddGaussian(src, mv, plan.SigmaB); err != nil {
			return nil, 0, fmt.Errorf("irls: iteration %d: noise on m: %w", j+1, err)
		}
		step, tr, err := irlsStep(g, gram.Upper, lam)
		if err != nil {
			return nil, 0, fmt.Errorf("irls: iteration %d: %w", j+1, err)
		}
		scale := preconditionedScale(mv[0], plan.ResidualFloor, w)
		if plan.lastStep != nil {
			plan.lastStep.Start = append([]float64(nil), w...)
			plan.lastStep.Scale = scale
		}
		if plan.last != nil {
			// The step is the minimiser of δᵀ(m̃/η)G̃δ − 2g̃ᵀδ.
			up := make([]float64, len(gram.Upper))
			for i, v := range gram.Upper {
				up[i] = v / scale
			}
			plan.last.setIRLS(g, up)
		}
		for i := range w {
			w[i] += scale * step[i]
		}
		trimmed = tr
	}
	return w, trimmed, nil
}

// stepPostProcessing describes the post-processing of the plan's form.
func (plan IRLSPlan) stepPostProcessing(lam float64, trimmed int) []string {
	d := plan.D
	switch plan.Form {
	case IRLSFormGradient:
		return []string{
			"B noised on its upper triangle and mirrored (symmetric)",
			fmt.Sprintf("ridge λ = %s added to the diagonal of the noisy B (data-independent)", fmtG(lam)),
			fmt.Sprintf("spectral trimming of the noisy B (last iteration: %d of %d directions removed); ω ← ω + B̃⁻¹g̃ in the kept space", trimmed, d),
		}
	case IRLSFormPreconditioned:
		return []string{
			"m̃ clamped to its public range [min(1, η/(1 + ‖ω‖)), 1]",
			fmt.Sprintf("the warm start's noisy Gram matrix G̃ (its Λ2) with its ridge λ = %s and trimming (%d of %d directions removed) as preconditioner; ω ← ω + (η/m̃)·G̃⁻¹g̃", fmtG(lam), trimmed, d),
		}
	default:
		return []string{
			"B noised on its upper triangle and mirrored (symmetric)",
			fmt.Sprintf("ridge λ = %s added to the diagonal of the noisy B (data-independent)", fmtG(lam)),
			fmt.Sprintf("spectral trimming of the noisy B (last iteration: %d of %d directions removed); ω = B̃⁻¹Ã in the kept space", trimmed, d),
		}
	}
}

// irlsLastStep records where the last step of a gradient form started and,
// for the preconditioned form, its scale η/m̃.
type irlsLastStep struct {
	Start []float64
	Scale float64
}
