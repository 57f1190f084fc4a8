package experiment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/schema"
)

// Reference methods of issue 26: what a practitioner would pick instead of
// dplearn, re-implemented here (never copied) so that every method sees the
// same encoded rows, the same public bounds and the same (ε, δ):
//
//   - refSSPClip: sufficient-statistics perturbation with eigenvalue
//     clipping (Analyze-Gauss style, Dwork, Talwar, Thakurta & Zhang 2014);
//   - refAdaSSP: AdaSSP (Wang 2018, Algorithm 2);
//   - refDPGD: full-batch DP gradient descent for logistic regression with
//     per-example clipping;
//   - refDiffprivlibLinear, refDiffprivlibLogistic: IBM diffprivlib's
//     LinearRegression and LogisticRegression as its source implements them
//     (models/linear_regression.py, models/logistic_regression.py,
//     mechanisms/vector.py), with its known sensitivity and accounting bugs
//     fixed (IBM issues #104 and #105; see each function);
//   - refTukeyEM: TukeyEM (Amin, Joseph, Ribero & Vassilvitskii 2023).
//
// # Data, bounds, neighbours
//
// Rows are dplearn's encoded rows: x ∈ ℝ^d with ‖x‖₂ ≤ 1 (intercept
// included), each coordinate in the schema's public box (refBounds: |x_j| ≤
// s for numeric columns, x_j ∈ {0, s} for indicators and the intercept, s =
// schema.UnitScale(B)), and y ∈ [−1, 1] (linear) or y ∈ {0, 1} (logistic).
// Neighbouring datasets differ by replacing one row (N is public), as for
// dplearn's mechanisms. Sums below are over the N training rows.
//
// # Calibration
//
// The Gaussian references (SSP, AdaSSP, DP-GD) release k Gaussian vectors
// with L2 sensitivities Δ_i through noise.AddGaussian; they are calibrated
// exactly as dplearn's Gaussian mechanisms: μ = accounting.GDPMuFor(ε, δ)
// is split over the releases by shares of μ², σ_i is chosen with
// noise.GaussianCalibrationSensitivity(Δ_i, σ_i, n_i)/σ_i ≤ μ√share_i (the
// grid slack included), and the composition √Σ(…)² is verified against
// (ε, δ) with accounting.GDPMu and GDPDelta (Gaussian DP is exact for
// adaptively composed Gaussian releases; Dong, Roth & Su 2019). diffprivlib
// is pure ε-DP (Laplace, basic composition) as in its source; TukeyEM is
// (ε, δ)-DP by propose-test-release as in its paper.
//
// These are experiment references, not releases: their outputs are never
// printed as private models, and refDiffprivlibLogistic draws its noise
// with noise.ObjPert, which is documented as unsafe for a real release.

// refBounds are the public per-coordinate bounds of the encoded features.
type refBounds struct {
	lo, hi []float64
	// intercept is the column of the constant intercept (value s), or −1.
	intercept int
	s         float64
}

// boundsForSchema reads the public box of the encoded features off a schema
// (never off the data): intercept and indicators in [0, s], numeric columns
// in [−s, s].
func boundsForSchema(sc *schema.Schema) (refBounds, error) {
	d := sc.Dim()
	s := schema.UnitScale(sc.Bound())
	b := refBounds{lo: make([]float64, d), hi: make([]float64, d), intercept: -1, s: s}
	k := 0
	if sc.HasIntercept() {
		b.intercept = 0
		b.lo[0], b.hi[0] = 0, s
		k = 1
	}
	for _, f := range sc.Features {
		w, lo := 1, -s
		if f.Categorical() {
			w, lo = len(f.Categories)-1, 0
		}
		for j := k; j < k+w; j++ {
			if j >= d {
				return refBounds{}, fmt.Errorf("experiment: schema encodes more than %d columns", d)
			}
			b.lo[j], b.hi[j] = lo, s
		}
		k += w
	}
	if k != d {
		return refBounds{}, fmt.Errorf("experiment: schema features encode to %d columns, not %d", k, d)
	}
	return b, nil
}

// numericBounds is the box of a design whose column 0 is the intercept s
// and every other column is numeric in [−s, s] (the synthetic designs).
func numericBounds(d int, s float64) refBounds {
	b := refBounds{lo: make([]float64, d), hi: make([]float64, d), intercept: 0, s: s}
	for j := range b.lo {
		b.lo[j], b.hi[j] = -s, s
	}
	b.lo[0] = 0
	return b
}

// refParams are the public parameters of one reference fit. NoNoise gives
// the noise-free limit (every σ, scale and noise-dependent ridge set to 0):
// not private, used by the tests.
type refParams struct {
	Eps, Delta float64
	Src        noise.Source
	NoNoise    bool
	Bounds     refBounds
	// Iterations of DP-GD (0: refDPGDIters).
	Iterations int
}

// gaussCalibrate returns σ_i for Gaussian releases of n_i coordinates with
// L2 sensitivities sens_i, each made reps_i times (nil: once), with shares
// share_i of μ² per release (Σ reps_i·share_i ≤ 1), such that together
// they are (ε, δ)-DP by Gaussian-DP composition with the grid slack of
// noise.AddGaussian; the composition of all Σ reps_i releases is verified.
func gaussCalibrate(eps, delta float64, sens []float64, n []int, share []float64, reps []int) ([]float64, error) {
	mu, err := accounting.GDPMuFor(eps, delta)
	if err != nil {
		return nil, fmt.Errorf("experiment: calibration: %w", err)
	}
	sig := make([]float64, len(sens))
	for i := range sens {
		mi := mu * math.Sqrt(share[i])
		s := sens[i] / mi
		for k := 0; k < 8; k++ {
			s = noise.GaussianCalibrationSensitivity(sens[i], s, n[i]) / mi
		}
		for k := 0; noise.GaussianCalibrationSensitivity(sens[i], s, n[i])/s > mi; k++ {
			if k > 1000 {
				return nil, fmt.Errorf("experiment: calibration of release %d does not converge", i)
			}
			s *= 1 + 1e-12
		}
		sig[i] = s
	}
	for k := 0; ; k++ {
		var ratios []float64
		for i := range sens {
			r := noise.GaussianCalibrationSensitivity(sens[i], sig[i], n[i]) / sig[i]
			k := 1
			if reps != nil {
				k = reps[i]
			}
			for ; k > 0; k-- {
				ratios = append(ratios, r)
			}
		}
		tot, err := accounting.GDPMu(ratios...)
		if err != nil {
			return nil, fmt.Errorf("experiment: calibration: %w", err)
		}
		dl, err := accounting.GDPDelta(tot, eps)
		if err != nil {
			return nil, fmt.Errorf("experiment: calibration: %w", err)
		}
		if dl <= delta {
			return sig, nil
		}
		if k > 100 {
			return nil, fmt.Errorf("experiment: calibration does not verify (δ=%g > %g)", dl, delta)
		}
		for i := range sig {
			sig[i] *= 1 + 1e-9
		}
	}
}

// rowsDim returns d and N of row-major rows with k columns (target last).
func rowsDim(rows []float64, k int) (int, int) { return k - 1, len(rows) / k }

// sspStats returns S = Σ x xᵀ (row-major d×d) and b = Σ y x.
func sspStats(rows []float64, k int) (S, b []float64) {
	d, n := rowsDim(rows, k)
	S, b = make([]float64, d*d), make([]float64, d)
	for r := 0; r < n; r++ {
		z := rows[r*k : (r+1)*k]
		y := z[d]
		for i := 0; i < d; i++ {
			xi := z[i]
			if xi == 0 {
				continue
			}
			b[i] += y * xi
			row := S[i*d:]
			for j := i; j < d; j++ {
				row[j] += xi * z[j]
			}
		}
	}
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			S[i*d+j] = S[j*d+i]
		}
	}
	return S, b
}

// SSP sensitivities (replace-one, ‖x‖ ≤ 1, |y| ≤ 1):
//
//	S: the released upper triangle of S − S' = xxᵀ − x'x'ᵀ has L2 norm at
//	   most the Frobenius norm, and ‖xxᵀ − x'x'ᵀ‖_F² = ‖x‖⁴ + ‖x'‖⁴ −
//	   2(xᵀx')² ≤ 2, so Δ_S = √2 (attained by orthogonal unit x, x': the
//	   difference is diagonal in their basis, e.g. x = e1, x' = e2).
//	b: ‖yx − y'x'‖ ≤ |y|‖x‖ + |y'|‖x'‖ ≤ 2 = Δ_b (attained by x = x' a unit
//	   vector, y = 1, y' = −1).
//	λ_min(S): Weyl's inequality, |λ_min(S) − λ_min(S')| ≤ ‖xxᵀ − x'x'ᵀ‖₂,
//	   and a difference of two PSD matrices with eigenvalues in [0, 1] has
//	   eigenvalues in [−1, 1]: Δ_λ = 1 (attained in d = 1: x = 1, x' = 0).
const (
	sspSensS      = math.Sqrt2
	sspSensB      = 2.0
	adaSensLamMin = 1.0
)

// symEigen returns the eigenvalues (ascending) and eigenvectors of the
// symmetric row-major d×d matrix m.
func symEigen(m []float64, d int) ([]float64, *mat.Dense, error) {
	var es mat.EigenSym
	if !es.Factorize(mat.NewSymDense(d, append([]float64(nil), m...)), true) {
		return nil, nil, errors.New("experiment: eigendecomposition failed")
	}
	var v mat.Dense
	es.VectorsTo(&v)
	return es.Values(nil), &v, nil
}

// eigSolve returns Σ_{k: vals_k > 0} v_k v_kᵀ b / vals_k.
func eigSolve(vals []float64, vecs *mat.Dense, b []float64) []float64 {
	d := len(b)
	w := make([]float64, d)
	for k, l := range vals {
		if !(l > 0) {
			continue
		}
		var c float64
		for i := 0; i < d; i++ {
			c += vecs.At(i, k) * b[i]
		}
		c /= l
		for i := 0; i < d; i++ {
			w[i] += c * vecs.At(i, k)
		}
	}
	return w
}

// refSSPClip is sufficient-statistics perturbation with eigenvalue
// clipping: release Ŝ = S + E (E symmetric, upper triangle i.i.d.
// N(0, σ_S²)) and b̂ = b + N(0, σ_b²I), half of μ² each (sensitivities
// above); then, as post-processing, floor every eigenvalue of Ŝ at
// 2σ_S√d (about the spectral norm of E) and return Ŝ_clip⁻¹ b̂.
func refSSPClip(rows []float64, k int, p refParams) ([]float64, error) {
	d, _ := rowsDim(rows, k)
	S, b := sspStats(rows, k)
	var floor float64
	if !p.NoNoise {
		sig, err := gaussCalibrate(p.Eps, p.Delta, []float64{sspSensS, sspSensB}, []int{d * (d + 1) / 2, d}, []float64{0.5, 0.5}, nil)
		if err != nil {
			return nil, err
		}
		if err := noise.AddGaussianSymmetric(p.Src, S, d, sig[0]); err != nil {
			return nil, fmt.Errorf("experiment: ssp: %w", err)
		}
		if err := noise.AddGaussian(p.Src, b, sig[1]); err != nil {
			return nil, fmt.Errorf("experiment: ssp: %w", err)
		}
		floor = 2 * sig[0] * math.Sqrt(float64(d))
	}
	vals, vecs, err := symEigen(S, d)
	if err != nil {
		return nil, err
	}
	for i := range vals {
		vals[i] = math.Max(vals[i], floor)
	}
	return eigSolve(vals, vecs, b), nil
}

// adaSSPRho is AdaSSP's failure probability ρ of the ridge rule.
const adaSSPRho = 0.05

// refAdaSSP is AdaSSP (Wang 2018, Algorithm 2) with the bounds ‖x‖ ≤ 1,
// |y| ≤ 1 and the three Gaussian releases calibrated jointly by GDP, a third
// of μ² each: λ_min(S) (Δ = 1), S (Δ = √2, upper triangle) and b (Δ = 2).
// As in Wang's algorithm, λ̃_min = max(λ_min + σ_λ Z − σ_λ√ln(6/δ), 0) is a
// high-probability lower bound and the ridge is λ = max(0, σ_S√(d
// ln(2d²/ρ)) − λ̃_min) (Wang's constants with his σ's replaced by ours);
// ω = (Ŝ + λI)⁻¹ b̂, directions with a non-positive eigenvalue dropped.
func refAdaSSP(rows []float64, k int, p refParams) ([]float64, error) {
	d, _ := rowsDim(rows, k)
	S, b := sspStats(rows, k)
	vals, _, err := symEigen(S, d)
	if err != nil {
		return nil, err
	}
	lmin := vals[0]
	var lam float64
	if !p.NoNoise {
		sig, err := gaussCalibrate(p.Eps, p.Delta, []float64{adaSensLamMin, sspSensS, sspSensB}, []int{1, d * (d + 1) / 2, d}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, nil)
		if err != nil {
			return nil, err
		}
		z, err := noise.Gaussian(p.Src, sig[0])
		if err != nil {
			return nil, fmt.Errorf("experiment: adassp: %w", err)
		}
		lt := math.Max(lmin+z-sig[0]*math.Sqrt(math.Log(6/p.Delta)), 0)
		lam = math.Max(0, sig[1]*math.Sqrt(float64(d)*math.Log(2*float64(d*d)/adaSSPRho))-lt)
		if err := noise.AddGaussianSymmetric(p.Src, S, d, sig[1]); err != nil {
			return nil, fmt.Errorf("experiment: adassp: %w", err)
		}
		if err := noise.AddGaussian(p.Src, b, sig[2]); err != nil {
			return nil, fmt.Errorf("experiment: adassp: %w", err)
		}
	}
	for i := 0; i < d; i++ {
		S[i*d+i] += lam
	}
	v2, vecs, err := symEigen(S, d)
	if err != nil {
		return nil, err
	}
	return eigSolve(v2, vecs, b), nil
}

// DP-GD defaults: clipping norm C, step η = 1/L with L = ¼ the smoothness
// of the logistic loss for ‖x‖ ≤ 1, the output the mean of the last half of
// the iterates, and T = refDPGDIters(N, ε) full-batch steps.
const (
	refDPGDClip = 1.0
	refDPGDStep = 4.0
	// refDPGDSens is the replace-one L2 sensitivity of the clipped gradient
	// sum (clippedGradSum).
	refDPGDSens = 2 * refDPGDClip
)

// refDPGDIters is DP-GD's public iteration rule T = min(1000, max(25,
// ⌊Nε/8⌋)) (N and ε are public). It was chosen by a sweep of T ∈ {25, 50,
// 100, 200, 400, 1000} on the four logistic tasks of utility-refs (5
// splits each): the best T grows with Nε, from 25 at Nε ≈ 50 to 1000 and
// beyond at Nε ≥ 8,000; a fixed T = 50 left the reference 10% above its
// best log-loss on CPS1988 (> $500) at every ε. Tuned on the evaluation
// tables, so it favours the reference: the comparison is conservative for
// dplearn.
func refDPGDIters(n int, eps float64) int {
	return int(math.Min(1000, math.Max(25, math.Floor(float64(n)*eps/8))))
}

// clippedGradSum returns Σ_i clip_C(∇ℓ(ω; x_i, y_i)), ∇ℓ = (σ(xᵀω) − y)x,
// clip_C(g) = g·min(1, C/‖g‖): the statistic DP-GD releases each step.
//
// Sensitivity (replace-one): the sums differ by clip(g) − clip(g'), two
// vectors of norm ≤ C, so Δ = 2C. It is approached for C = 1: x =
// (cos θ, sin θ), x' = (−cos θ, sin θ), y = y' = 0 and ω = (0, M) give
// σ(M sin θ)(x − x'), of norm 2cos θ·σ(M sin θ) → 2.
func clippedGradSum(rows []float64, k int, w []float64, c float64) []float64 {
	d, n := rowsDim(rows, k)
	g := make([]float64, d)
	for r := 0; r < n; r++ {
		z := rows[r*k : (r+1)*k]
		var s float64
		for j := 0; j < d; j++ {
			s += z[j] * w[j]
		}
		a := 1/(1+math.Exp(-s)) - z[d]
		var nx float64
		for j := 0; j < d; j++ {
			nx += z[j] * z[j]
		}
		if gn := math.Abs(a) * math.Sqrt(nx); gn > c {
			a *= c / gn
		}
		for j := 0; j < d; j++ {
			g[j] += a * z[j]
		}
	}
	return g
}

// refDPGD is full-batch DP gradient descent for logistic regression: T
// steps ω ← ω − η(Σ clip_C ∇ℓ + N(0, σ²I))/N from ω = 0, no projection,
// the output the average of the iterates T/2+1…T (post-processing). The T
// Gaussian releases (Δ = 2C each) compose exactly to √T·Δ/σ-GDP
// (gaussCalibrate with T equal shares).
func refDPGD(rows []float64, k int, p refParams) ([]float64, error) {
	d, n := rowsDim(rows, k)
	T := p.Iterations
	if T <= 0 {
		T = refDPGDIters(n, p.Eps)
	}
	var sigma float64
	if !p.NoNoise {
		sig, err := gaussCalibrate(p.Eps, p.Delta, []float64{refDPGDSens}, []int{d}, []float64{1 / float64(T)}, []int{T})
		if err != nil {
			return nil, err
		}
		sigma = sig[0]
	}
	w := make([]float64, d)
	avg := make([]float64, d)
	tail := 0
	for t := 1; t <= T; t++ {
		g := clippedGradSum(rows, k, w, refDPGDClip)
		if !p.NoNoise {
			if err := noise.AddGaussian(p.Src, g, sigma); err != nil {
				return nil, fmt.Errorf("experiment: dp-gd: %w", err)
			}
		}
		for j := range w {
			w[j] -= refDPGDStep * g[j] / float64(n)
		}
		if t > T/2 {
			tail++
			for j := range w {
				avg[j] += w[j]
			}
		}
	}
	for j := range avg {
		avg[j] /= float64(tail)
	}
	return avg, nil
}

// dplMaxSens is diffprivlib's get_max_sensitivity: the range of the
// product of two coordinates over their box, max − min of the four corners
// (the replace-one sensitivity of Σ x_i x_j or Σ y x_j).
func dplMaxSens(alo, ahi, blo, bhi float64) float64 {
	c := []float64{alo * blo, alo * bhi, ahi * blo, ahi * bhi}
	lo, hi := c[0], c[0]
	for _, v := range c[1:] {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi - lo
}

// dplDiagSens is the sensitivity of Σ x_i² with x_i ∈ [lo, hi], as fixed
// by IBM issues #104 (item 1) and #105: max(|lo|, |hi|)². The released
// source computes max(|lo|, |lo|)², which is 0 for an indicator (lo = 0)
// whatever hi, i.e. no noise on that coefficient.
func dplDiagSens(lo, hi float64) float64 {
	m := math.Max(math.Abs(lo), math.Abs(hi))
	return m * m
}

// laplaceScalar releases v + Laplace(Δ/ε) on dplearn's grid sampler
// (accounting.LaplaceScale includes the grid slack); folded at lower (the
// reflection of diffprivlib's LaplaceFolded) when fold is set.
func laplaceScalar(src noise.Source, v, eps, sens float64, fold bool, lower float64) (float64, error) {
	if sens == 0 {
		return v, nil
	}
	b, err := accounting.LaplaceScale(eps, sens)
	if err != nil {
		return 0, fmt.Errorf("experiment: laplace: %w", err)
	}
	z, err := noise.Laplace(src, b)
	if err != nil {
		return 0, fmt.Errorf("experiment: laplace: %w", err)
	}
	v += z
	if fold && v < lower {
		v = 2*lower - v
	}
	return v, nil
}

// refDiffprivlibLinear is diffprivlib's LinearRegression (fit_intercept =
// True, the default; the intercept column is removed and the other columns
// centred, as sklearn does), pure ε-DP by basic composition:
//
//  1. Centring: ε_c = ε/(p+1) (p features). diffprivlib computes the
//     column means of X with ε_c (ε_c/p per column) and the mean of y with
//     another ε_c but charges ε_c once (IBM issue #104 item 2). Fixed here:
//     X's means share ε_c/2 (ε_c/(2p) each), y's mean gets ε_c/2. Each mean
//     is Laplace with sensitivity (hi − lo)/N, truncated to [lo, hi].
//  2. The rest ε_o = ε − ε_c is split evenly over the 1 + p + p(p+1)/2
//     coefficients of Σ(y − xᵀω)² on the centred data (bounds shifted by
//     the noisy means): Σy² (folded Laplace, Δ = max|y bound|²), Σ y x_j
//     (Δ = dplMaxSens), Σ x_i² (folded, Δ = dplDiagSens, fixed: issue #105)
//     and Σ x_i x_j (Δ = dplMaxSens).
//  3. scipy's minimize from 0 of the noisy quadratic; an indefinite noisy
//     Hessian makes that objective unbounded below and BFGS stops
//     somewhere along a descending direction. We take instead the
//     minimiser in the span of the positive eigen-directions (charitable:
//     never worse than a divergent run). The intercept is ȳ − x̄ᵀω.
func refDiffprivlibLinear(rows []float64, k int, p refParams) ([]float64, error) {
	d, n := rowsDim(rows, k)
	bd := p.Bounds
	var cols []int
	for j := 0; j < d; j++ {
		if j != bd.intercept {
			cols = append(cols, j)
		}
	}
	pp := len(cols)
	epsX, epsY, local := dplLinearBudgets(p.Eps, pp, bd.intercept >= 0)
	xo := make([]float64, pp)
	var yo float64
	if bd.intercept >= 0 {
		for a, j := range cols {
			var s float64
			for r := 0; r < n; r++ {
				s += rows[r*k+j]
			}
			m := s / float64(n)
			if !p.NoNoise {
				var err error
				if m, err = laplaceScalar(p.Src, m, epsX, (bd.hi[j]-bd.lo[j])/float64(n), false, 0); err != nil {
					return nil, err
				}
				m = math.Max(bd.lo[j], math.Min(bd.hi[j], m))
			}
			xo[a] = m
		}
		var s float64
		for r := 0; r < n; r++ {
			s += rows[r*k+d]
		}
		yo = s / float64(n)
		if !p.NoNoise {
			var err error
			if yo, err = laplaceScalar(p.Src, yo, epsY, 2/float64(n), false, 0); err != nil {
				return nil, err
			}
			yo = math.Max(-1, math.Min(1, yo))
		}
	}
	lo, hi := make([]float64, pp), make([]float64, pp)
	for a, j := range cols {
		lo[a], hi[a] = bd.lo[j]-xo[a], bd.hi[j]-xo[a]
	}
	ylo, yhi := -1-yo, 1-yo
	A, bv := make([]float64, pp*pp), make([]float64, pp)
	xc := make([]float64, pp)
	for r := 0; r < n; r++ {
		z := rows[r*k : (r+1)*k]
		for a, j := range cols {
			xc[a] = z[j] - xo[a]
		}
		y := z[d] - yo
		for a := 0; a < pp; a++ {
			bv[a] += y * xc[a]
			for c := a; c < pp; c++ {
				A[a*pp+c] += xc[a] * xc[c]
			}
		}
	}
	if !p.NoNoise {
		// Σy² is released too (and paid for) but does not move the minimiser.
		if _, err := laplaceScalar(p.Src, 0, local, math.Pow(math.Max(math.Abs(ylo), math.Abs(yhi)), 2), true, 0); err != nil {
			return nil, err
		}
		for a := 0; a < pp; a++ {
			var err error
			if bv[a], err = laplaceScalar(p.Src, bv[a], local, dplMaxSens(ylo, yhi, lo[a], hi[a]), false, 0); err != nil {
				return nil, err
			}
			if A[a*pp+a], err = laplaceScalar(p.Src, A[a*pp+a], local, dplDiagSens(lo[a], hi[a]), true, 0); err != nil {
				return nil, err
			}
			for c := a + 1; c < pp; c++ {
				if A[a*pp+c], err = laplaceScalar(p.Src, A[a*pp+c], local, dplMaxSens(lo[a], hi[a], lo[c], hi[c]), false, 0); err != nil {
					return nil, err
				}
			}
		}
	}
	for a := 0; a < pp; a++ {
		for c := 0; c < a; c++ {
			A[a*pp+c] = A[c*pp+a]
		}
	}
	vals, vecs, err := symEigen(A, pp)
	if err != nil {
		return nil, err
	}
	om := eigSolve(vals, vecs, bv)
	w := make([]float64, d)
	icpt := yo
	for a, j := range cols {
		w[j] = om[a]
		icpt -= xo[a] * om[a]
	}
	if bd.intercept >= 0 {
		w[bd.intercept] = icpt / bd.s
	}
	return w, nil
}

// dplLinearBudgets splits ε over diffprivlib's linear-regression releases
// (basic composition): with an intercept, ε_c = ε/(p+1) for the centring,
// of which each of the p column means of X gets ε_c/(2p) and the mean of y
// ε_c/2 (the fix of IBM #104 item 2: the released code gives X's means ε_c
// in all and y's mean another ε_c, and charges ε_c); the rest ε − ε_c goes
// evenly to the 1 + p + p(p+1)/2 objective coefficients (local each).
// Σ = p·epsX + epsY + (1 + p + p(p+1)/2)·local = ε.
func dplLinearBudgets(eps float64, p int, intercept bool) (epsX, epsY, local float64) {
	epsC := 0.0
	if intercept {
		epsC = eps / float64(p+1)
		epsX, epsY = epsC/2/float64(p), epsC/2
	}
	local = (eps - epsC) / float64(1+p+p*(p+1)/2)
	return epsX, epsY, local
}

// diffprivlib LogisticRegression defaults: C = 1 (so α = 1/C = 1) and
// fit_intercept = False here, since dplearn's encoded x already contains
// the intercept inside ‖x‖ ≤ 1 (diffprivlib would append a 1 and use the
// data norm √(q² + 1)).
const refDplC = 1.0

// refDiffprivlibLogistic is diffprivlib's LogisticRegression: objective
// perturbation of Chaudhuri, Monteleoni & Sarwate 2011 (Algorithm 2) through
// diffprivlib's Vector mechanism, pure ε-DP, with data norm q = 1 (the
// public bound), the loss's smoothness c = ¼ and α = 1/C:
//
//	ε' = ε − 2 ln(1 + c·q/α);  if ε' ≤ 0: Δ = (c·q/(e^{ε/4} − 1) − α)/N, ε' = ε/2;
//	b with density ∝ exp(−ε'‖b‖/(2q));
//	ω = argmin (1/N)Σℓ(ω; x, y) + (1/(2CN))‖ω‖² + bᵀω/N + (Δ/2)‖ω‖².
//
// Sensitivity: the perturbed objective's gradient sum changes by ∇ℓ(x) −
// ∇ℓ(x') with ‖∇ℓ‖ = |σ(xᵀω) − y|‖x‖ ≤ q, so by at most 2q (the 2 in the
// density), and ℓ” ≤ c makes the Jacobian term ≤ 2 ln(1 + cq/α) for q = 1
// (Chaudhuri et al., Theorem 9; with q ≠ 1 the Hessian bound is c·q², not
// diffprivlib's c·q, which is why q = 1 here). No sensitivity bug of #104
// or #105 concerns this estimator; its noise is drawn by noise.ObjPert
// (exact up to the grid; unsafe for a real release, fine for utility).
func refDiffprivlibLogistic(rows []float64, k int, p refParams) ([]float64, error) {
	d, n := rowsDim(rows, k)
	const c, q = 0.25, 1.0
	alpha := 1 / refDplC
	lin := make([]float64, d)
	extra := 0.0
	if !p.NoNoise {
		ep := p.Eps - 2*math.Log(1+c*q/alpha)
		if ep <= 0 {
			extra = (c*q/math.Expm1(p.Eps/4) - alpha) / float64(n)
			ep = p.Eps / 2
		}
		bvec, err := noise.ObjPert(p.Src, d, ep/(2*q))
		if err != nil {
			return nil, fmt.Errorf("experiment: diffprivlib logistic: %w", err)
		}
		for j := range lin {
			lin[j] = bvec[j] / float64(n)
		}
	}
	return logisticNewtonRef(rows, k, 1/(refDplC*float64(n))+extra, lin)
}

// logisticNewtonRef minimises (1/N)Σℓ + (mu/2)‖ω‖² + linᵀω by damped
// Newton steps (mu > 0 makes it strongly convex).
func logisticNewtonRef(rows []float64, k int, mu float64, lin []float64) ([]float64, error) {
	d, n := rowsDim(rows, k)
	N := float64(n)
	obj := func(w []float64) float64 {
		var s float64
		for r := 0; r < n; r++ {
			z := rows[r*k : (r+1)*k]
			var t float64
			for j := 0; j < d; j++ {
				t += z[j] * w[j]
			}
			s += softplus(t) - z[d]*t
		}
		s /= N
		for j := range w {
			s += mu/2*w[j]*w[j] + lin[j]*w[j]
		}
		return s
	}
	w := make([]float64, d)
	f := obj(w)
	for it := 0; it < 100; it++ {
		g := make([]float64, d)
		H := make([]float64, d*d)
		for r := 0; r < n; r++ {
			z := rows[r*k : (r+1)*k]
			var t float64
			for j := 0; j < d; j++ {
				t += z[j] * w[j]
			}
			pr := 1 / (1 + math.Exp(-t))
			a, h := pr-z[d], pr*(1-pr)
			for i := 0; i < d; i++ {
				g[i] += a * z[i]
				for j := i; j < d; j++ {
					H[i*d+j] += h * z[i] * z[j]
				}
			}
		}
		var gn float64
		for i := 0; i < d; i++ {
			g[i] = g[i]/N + mu*w[i] + lin[i]
			gn += g[i] * g[i]
			for j := i; j < d; j++ {
				H[i*d+j] /= N
				H[j*d+i] = H[i*d+j]
			}
			H[i*d+i] += mu
		}
		if math.Sqrt(gn) < 1e-10 {
			break
		}
		vals, vecs, err := symEigen(H, d)
		if err != nil {
			return nil, err
		}
		step := eigSolve(vals, vecs, g)
		t := 1.0
		for ; t > 1e-10; t /= 2 {
			cand := make([]float64, d)
			for j := range cand {
				cand[j] = w[j] - t*step[j]
			}
			if fc := obj(cand); fc <= f {
				w, f = cand, fc
				break
			}
		}
		if t <= 1e-10 {
			break
		}
	}
	return w, nil
}

func softplus(t float64) float64 {
	if t > 30 {
		return t
	}
	return math.Log1p(math.Exp(t))
}

// srcUniform returns a uniform draw in (0, 1) from the privacy source (53
// random bits, never 0).
func srcUniform(src noise.Source) (float64, error) {
	var b [8]byte
	if _, err := src.Read(b[:]); err != nil {
		return 0, fmt.Errorf("experiment: randomness: %w", err)
	}
	return (float64(binary.LittleEndian.Uint64(b[:])>>11) + 0.5) / (1 << 53), nil
}

// racingSample returns k with probability ∝ exp(logw_k) (the racing
// sampler of Medina & Gillenwater 2022: argmin log(log(1/U_k)) − logw_k).
func racingSample(src noise.Source, logw []float64) (int, error) {
	best, bi := math.Inf(1), -1
	for i, lw := range logw {
		if math.IsInf(lw, -1) || math.IsNaN(lw) {
			continue
		}
		u, err := srcUniform(src)
		if err != nil {
			return 0, err
		}
		if v := math.Log(math.Log(1/u)) - lw; v < best {
			best, bi = v, i
		}
	}
	if bi < 0 {
		return 0, errors.New("experiment: racing sample over nothing")
	}
	return bi, nil
}

// tukeyModels is TukeyEM's number of models m: as many disjoint batches as
// leave 2d rows each, at most 1000 (Amin et al. need N ≥ m·d).
func tukeyModels(n, d int) int { return min(1000, n/(2*d)) }

// ErrTukeyPTR is returned when TukeyEM's propose-test-release check
// fails: the mechanism then outputs nothing (here: the zero model).
var ErrTukeyPTR = errors.New("TukeyEM: propose-test-release check failed")

// tukeyProjections fits OLS on m disjoint consecutive batches of the rows
// (the caller shuffles; the batches are a public function of the order)
// and returns, per coordinate j, the m models' j-th coefficients sorted.
// Replace-one changes one batch, hence one model: the approximate Tukey
// depth of any point (the minimum over coordinates of the number of models
// on each side) changes by at most 1. That is TukeyEM's sensitivity.
func tukeyProjections(rows []float64, k, m int, jitter *rand.Rand) ([][]float64, error) {
	d, n := rowsDim(rows, k)
	bs := n / m
	proj := make([][]float64, d)
	for j := range proj {
		proj[j] = make([]float64, m)
	}
	for i := 0; i < m; i++ {
		S, b := sspStats(rows[i*bs*k:(i+1)*bs*k], k)
		vals, vecs, err := symEigen(S, d)
		if err != nil {
			return nil, err
		}
		tol := 1e-10 * math.Max(vals[d-1], 1e-300)
		for t := range vals {
			if vals[t] < tol {
				vals[t] = 0
			}
		}
		w := eigSolve(vals, vecs, b)
		for j := range w {
			// Tie-breaking jitter of 1e-10 as in the authors' code (not
			// privacy noise: it only makes every interval non-empty).
			proj[j][i] = w[j] + 1e-10*jitter.Float64()
		}
	}
	for j := range proj {
		sort.Float64s(proj[j])
	}
	return proj, nil
}

// tukeyLogVolumes returns L[i] = log volume of the box of depth ≥ i+1:
// Σ_j log(proj_j[m−1−i] − proj_j[i]), i < ⌈m/2⌉.
func tukeyLogVolumes(proj [][]float64) []float64 {
	m := len(proj[0])
	md := (m + 1) / 2
	L := make([]float64, md)
	for i := 0; i < md; i++ {
		for _, pj := range proj {
			L[i] += math.Log(pj[m-1-i] - pj[i])
		}
	}
	return L
}

// tukeyDistance is the PTR check's lower bound on the replace-one distance
// to an unsafe dataset (Amin et al. 2023, after Brown et al. 2021): the
// largest k ∈ [0, t−1] such that for every g ≥ 1, V_{t−k−1}/V_{t+k+g+1} ·
// e^{−εg/2} ≤ δ/(8e^ε) fails to be violated (bisection as in the authors'
// code; the condition is monotone in k).
func tukeyDistance(L []float64, eps, delta float64, t int) int {
	ok := func(k int) bool {
		if t-k-2 < 0 {
			return false
		}
		lv := L[t-k-2]
		thr := math.Log(delta / (8 * math.Exp(eps)))
		mn := math.Inf(1)
		for g, i := 1, t+k+1; i < len(L)-1; g, i = g+1, i+1 {
			mn = math.Min(mn, lv-L[i]-eps/2*float64(g))
		}
		return mn <= thr
	}
	lo, hi := -1, t-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if ok(hi) {
		return hi
	}
	return lo
}

// refTukeyEM is TukeyEM (Amin et al. 2023): m OLS models on disjoint
// batches; with ε/2, the PTR check (distance + Laplace(2/ε) >
// ln(1/(2δ))/(ε/2), else fail); with ε/2, the exponential mechanism over
// the approximate Tukey depth restricted to depth ≥ t = ⌊⌊m/2⌋/2⌋,
// weights exp((ε/2)·depth) × volume of the region of that exact depth,
// then a uniform point of that region. The authors' code draws the PTR
// noise as Laplace with scale ε/2 instead of 1/(ε/2) (too little noise for
// ε/2 < 1), and samples the final point one depth level deeper than the
// level its exponential mechanism chose (an index offset between two
// slices of the projections); we use 1/(ε/2) and the chosen level. rng orders the rows into batches and breaks
// ties (not privacy noise); all private randomness comes from p.Src.
// Returns ErrTukeyPTR (and the zero model) when the check fails.
func refTukeyEM(rows []float64, k int, p refParams, rng *rand.Rand) ([]float64, error) {
	d, n := rowsDim(rows, k)
	m := tukeyModels(n, d)
	if m < 8 {
		return make([]float64, d), ErrTukeyPTR
	}
	perm := rng.Perm(n)
	sh := make([]float64, 0, m*(n/m)*k)
	for _, r := range perm[:m*(n/m)] {
		sh = append(sh, rows[r*k:(r+1)*k]...)
	}
	proj, err := tukeyProjections(sh, k, m, rng)
	if err != nil {
		return nil, err
	}
	L := tukeyLogVolumes(proj)
	t := (m / 2) / 2
	if p.NoNoise {
		// Noise-free limit: the coordinate-wise median of the models.
		w := make([]float64, d)
		for j := range w {
			w[j] = (proj[j][(m-1)/2] + proj[j][m/2]) / 2
		}
		return w, nil
	}
	eh := p.Eps / 2
	dist := tukeyDistance(L, eh, p.Delta, t)
	lz, err := noise.Laplace(p.Src, 1/eh)
	if err != nil {
		return nil, fmt.Errorf("experiment: tukey: %w", err)
	}
	if !(float64(dist)+lz > math.Log(1/(2*p.Delta))/eh) {
		return make([]float64, d), ErrTukeyPTR
	}
	// Restricted exponential mechanism over depths t … ⌈m/2⌉.
	var logw []float64
	for i := t; i <= len(L); i++ {
		vi := L[i-1]
		var ve float64
		if i < len(L) {
			// log(V_i − V_{i+1}).
			ve = vi + math.Log1p(-math.Exp(L[i]-vi))
		} else {
			ve = vi
		}
		logw = append(logw, ve+eh*float64(i))
	}
	ki, err := racingSample(p.Src, logw)
	if err != nil {
		return nil, err
	}
	depth := t + ki
	return tukeySampleExact(p.Src, proj, depth)
}

// tukeySampleExact draws a uniform point of the region of approximate
// Tukey depth exactly depth: the box of depth ≥ depth minus the box of
// depth ≥ depth+1, by choosing the first coordinate j whose value lies in
// the depth-exact slabs (volume-weighted), coordinates before j in the
// inner box and after j in the outer box.
func tukeySampleExact(src noise.Source, proj [][]float64, depth int) ([]float64, error) {
	d, m := len(proj), len(proj[0])
	outer := func(j int) (float64, float64) { return proj[j][depth-1], proj[j][m-depth] }
	inner := func(j int) (float64, float64) {
		if depth >= m-depth {
			return 0, 0
		}
		return proj[j][depth], proj[j][m-1-depth]
	}
	lenO, lenI := make([]float64, d), make([]float64, d)
	for j := 0; j < d; j++ {
		a, b := outer(j)
		lenO[j] = b - a
		a, b = inner(j)
		lenI[j] = math.Max(b-a, 0)
	}
	logw := make([]float64, d)
	for j := 0; j < d; j++ {
		lw := math.Log(lenO[j] - lenI[j])
		for i := 0; i < j; i++ {
			lw += math.Log(lenI[i])
		}
		for i := j + 1; i < d; i++ {
			lw += math.Log(lenO[i])
		}
		logw[j] = lw
	}
	js, err := racingSample(src, logw)
	if err != nil {
		return nil, err
	}
	w := make([]float64, d)
	for j := 0; j < d; j++ {
		u, err := srcUniform(src)
		if err != nil {
			return nil, err
		}
		oa, ob := outer(j)
		ia, ib := inner(j)
		switch {
		case j < js:
			w[j] = ia + u*(ib-ia)
		case j > js:
			w[j] = oa + u*(ob-oa)
		default:
			left, right := ia-oa, ob-ib
			if lenI[j] == 0 {
				w[j] = oa + u*(ob-oa)
				break
			}
			if x := u * (left + right); x < left {
				w[j] = oa + x
			} else {
				w[j] = ib + (x - left)
			}
		}
	}
	return w, nil
}
