package regress

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Quadratic is the polynomial objective f(ω) = Λ0 + Λ1ᵀω + ωᵀΛ2ω with Λ2
// symmetric, stored as its upper triangle (row-major packed: (0,0), (0,1),
// …, (0,d−1), (1,1), …).
type Quadratic struct {
	D       int
	Lambda0 float64
	Lambda1 []float64
	Upper   []float64 // len D(D+1)/2
}

// packedIndex returns the index of (i, j), i ≤ j, in a packed upper triangle.
func packedIndex(d, i, j int) int { return i*d - i*(i-1)/2 + (j - i) }

// At returns Λ2[i][j].
func (q *Quadratic) At(i, j int) float64 {
	if i > j {
		i, j = j, i
	}
	return q.Upper[packedIndex(q.D, i, j)]
}

// Eigen returns the eigenvalues (ascending) of Λ2 + shift·I and, when
// vectors is set, its eigenvectors as the columns of a matrix (nil
// otherwise).
func (q *Quadratic) Eigen(shift float64, vectors bool) ([]float64, *mat.Dense, error) {
	d := q.D
	sym := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := q.At(i, j)
			if i == j {
				v += shift
			}
			sym.SetSym(i, j, v)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, vectors) {
		return nil, nil, fmt.Errorf("regress: eigendecomposition of Λ2 did not converge")
	}
	if !vectors {
		return eig.Values(nil), nil, nil
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	return eig.Values(nil), &vecs, nil
}

// Eval returns f(ω).
func (q *Quadratic) Eval(w []float64) float64 {
	f := q.Lambda0
	for i := 0; i < q.D; i++ {
		f += q.Lambda1[i] * w[i]
		for j := 0; j < q.D; j++ {
			f += w[i] * q.At(i, j) * w[j]
		}
	}
	return f
}

// Objective computes the exact (noiseless) polynomial coefficients of the
// model's average objective from the sufficient statistics, with the FM
// seed's Taylor approximation for logistic regression. The encoded target is
// column K−1; the features are columns 0..K−2.
func Objective(kind Kind, s Stats) (*Quadratic, error) {
	return ObjectiveApprox(kind, s, TaylorQuadratic)
}

// ObjectiveApprox is Objective with the quadratic lq standing in for
// log(1 + e^z) in the logistic objective (logapprox.go); lq is ignored for
// linear regression.
func ObjectiveApprox(kind Kind, s Stats, lq LogisticQuadratic) (*Quadratic, error) {
	k := s.K()
	d := k - 1
	n := float64(s.N())
	if n < 1 {
		return nil, fmt.Errorf("regress: the dataset is empty")
	}
	t := d
	q := &Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, d*(d+1)/2)}
	var c2 float64
	switch kind {
	case Linear:
		q.Lambda0 = s.At(t, t) / n
		for j := 0; j < d; j++ {
			q.Lambda1[j] = -2 * s.At(t, j) / n
		}
		c2 = 1 / n
	case Logistic:
		if lq.A1 != 0.5 || !(lq.A2 > 0 && lq.A2 <= 0.125) {
			return nil, fmt.Errorf("regress: logistic approximation needs a1 = 1/2 and a2 in (0, 1/8], got a1=%v a2=%v", lq.A1, lq.A2)
		}
		q.Lambda0 = lq.A0
		for j := 0; j < d; j++ {
			q.Lambda1[j] = (0.5*s.Sum(j) - s.At(t, j)) / n
		}
		// For Taylor, 0.125/n is bitwise 1/(8n) (scaling by 2⁻³ commutes
		// with rounding).
		c2 = lq.A2 / n
	default:
		return nil, fmt.Errorf("regress: unknown model kind %q", kind)
	}
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			q.Upper[packedIndex(d, i, j)] = c2 * s.At(i, j)
		}
	}
	for _, v := range append(append([]float64{q.Lambda0}, q.Lambda1...), q.Upper...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("regress: statistics contain a non-finite value")
		}
	}
	return q, nil
}

// PostProcess configures Minimize.
type PostProcess struct {
	// Lambda is a data-independent ridge added to Λ2's diagonal.
	Lambda float64
	// RelTol drops eigen-directions with eigenvalue ≤ RelTol·max|eigenvalue|
	// (and always those ≤ 0).
	RelTol float64
	// MinEigen drops eigen-directions whose eigenvalue (after the ridge) is
	// ≤ MinEigen. It must be data-independent.
	MinEigen float64
	// Radius, when > 0, solves in the public ball ‖ω‖ ≤ Radius: the
	// minimiser of the (regularised, trimmed) quadratic over the ball, the
	// trust-region subproblem (Moré & Sorensen 1983). In the kept
	// eigen-space with eigenvalues λ_k > 0 and g_k = v_kᵀΛ1 the solution is
	// c_k = −g_k/(2(λ_k + μ)) with the smallest μ ≥ 0 giving ‖c‖ ≤ Radius;
	// ‖c(μ)‖ decreases in μ, so μ is found by bisection. It must be
	// data-independent.
	Radius float64
	// Structure, when non-nil, projects Λ2 onto public identities of its
	// entries before anything else (GramStructure.Project, in Λ2's units:
	// GramStructure.Scaled). It must be public.
	Structure *GramStructure
	// Floor, when > 0, clips the spectrum: every eigenvalue of Λ2 + λI
	// below Floor (negative ones included) is raised to Floor before the
	// trimming test, so no direction with MinEigen < Floor is trimmed
	// (EigenFloor derives gaussian-fm's public floor). It must be
	// data-independent.
	Floor float64
}

// DefaultEigenFloorFactor is c in gaussian-fm's public eigenvalue floor
// c·τ2·√d for linear regression (EigenFloor): the expected spectral norm of
// the symmetric noise matrix on Λ2 is at most 2τ2√d (derivation at
// EigenFloor), and the sweep in docs/mechanisms.md ("Eigenvalue clipping")
// chose c = 2 from {1.5, …, 3} on the embedded linear tables and the
// collinear synthetic design.
const DefaultEigenFloorFactor = 2.0

// EigenFloor returns the public eigenvalue floor c·τ2·√d for the released
// Λ2 of d features with per-entry Gaussian noise τ2 (c = factor, 0 meaning
// DefaultEigenFloorFactor).
//
// Why √d: the noise on the released Λ2 is a symmetric d×d matrix E whose
// upper triangle (diagonal included) is i.i.d. N(0, τ2²). Its spectral norm
// concentrates at 2τ2√d: E‖E‖ ≤ 2σ + C·σ*·√(log d) with σ = max_i
// (Σ_j E[E_ij²])^{1/2} = τ2√d and σ* = max|E_ij|'s scale τ2 (Bandeira & van
// Handel 2016, Theorem 1.1), and ‖E‖ exceeds its mean by t·τ2 with
// probability at most e^{−t²/4} (Gaussian concentration of the
// √2τ2-Lipschitz map to the norm). An eigenvalue of Λ2 + E below ‖E‖ is
// indistinguishable from noise: by Weyl's inequality the exact eigenvalue
// it estimates can be anywhere in [0, λ̃ + ‖E‖]. Inverting it as it is
// (or after a ridge that does not grow with √d, the fixed factor 4 of
// FM) lets a near-singular direction blow up; raising it to the noise
// level bounds that direction's coefficient by |g_k|/(2·Floor) and
// leaves the directions above the noise untouched (a ridge shrinks
// those too). Post-processing of released values with public (d, τ2):
// no privacy cost.
func EigenFloor(d int, tau2, factor float64) float64 {
	if factor == 0 {
		factor = DefaultEigenFloorFactor
	}
	return factor * tau2 * math.Sqrt(float64(d))
}

// Shrinkage returns the share by which the post-processing shrinks the
// coefficient along an eigen-direction of Λ2 with eigenvalue mu > 0 (noise
// aside): the minimiser's component is divided by max(mu, Floor) + Lambda
// instead of mu, so the share is 1 − mu/(max(mu, Floor) + Lambda): λ/(mu + λ)
// for a ridge, 1 − mu/Floor below an eigenvalue floor and 0 above it. It
// returns 1 for mu ≤ 0 (the direction is not determined).
func (pp PostProcess) Shrinkage(mu float64) float64 {
	if !(mu > 0) {
		return 1
	}
	return 1 - mu/(math.Max(mu, pp.Floor)+pp.Lambda)
}

// NoisyPostProcess is the post-processing of a released (noisy) quadratic:
// the data-independent ridge lambda and the trimming floor TrimFraction·λ.
func NoisyPostProcess(lambda float64) PostProcess {
	return PostProcess{Lambda: lambda, MinEigen: TrimFraction * lambda}
}

// Minimize returns the minimiser of the (possibly noisy) quadratic after
// regularisation and spectral trimming, and the number of trimmed
// eigen-directions. It fails only when every direction is trimmed.
func (q *Quadratic) Minimize(pp PostProcess) ([]float64, int, error) {
	if pp.Structure != nil {
		p, err := pp.Structure.Project(q)
		if err != nil {
			return nil, 0, err
		}
		q = p
	}
	d := q.D
	vals, vecs, err := q.Eigen(pp.Lambda, true)
	if err != nil {
		return nil, 0, err
	}
	maxAbs := 0.0
	for _, v := range vals {
		maxAbs = math.Max(maxAbs, math.Abs(v))
	}
	tol := math.Max(pp.RelTol*maxAbs, pp.MinEigen)
	var kept, grad []float64
	var keptIdx []int
	for k, lam := range vals {
		if pp.Floor > 0 {
			lam = math.Max(lam, pp.Floor)
		}
		if !(lam > tol) || lam <= 0 {
			continue
		}
		proj := 0.0
		for i := 0; i < d; i++ {
			proj += vecs.At(i, k) * q.Lambda1[i]
		}
		kept, grad, keptIdx = append(kept, lam), append(grad, proj), append(keptIdx, k)
	}
	trimmed := d - len(kept)
	if trimmed == d {
		return nil, trimmed, fmt.Errorf("regress: every eigenvalue of the noisy Λ2 + λI is non-positive; the noise overwhelms the data (raise ε or λ)")
	}
	// Component of the minimiser along eigenvector v_k: −(v_kᵀΛ1)/(2(λ_k+μ)).
	norm := func(mu float64) float64 {
		s := 0.0
		for k := range kept {
			c := grad[k] / (2 * (kept[k] + mu))
			s += c * c
		}
		return math.Sqrt(s)
	}
	mu := 0.0
	if pp.Radius > 0 && norm(0) > pp.Radius {
		lo, hi := 0.0, 1.0
		for norm(hi) > pp.Radius {
			hi *= 2
		}
		for it := 0; it < 200 && hi-lo > 1e-15*hi; it++ {
			if m := (lo + hi) / 2; norm(m) > pp.Radius {
				lo = m
			} else {
				hi = m
			}
		}
		mu = hi // ‖c(hi)‖ ≤ Radius
	}
	w := make([]float64, d)
	for k, lam := range kept {
		c := -grad[k] / (2 * (lam + mu))
		for i := 0; i < d; i++ {
			w[i] += c * vecs.At(i, keptIdx[k])
		}
	}
	return w, trimmed, nil
}
