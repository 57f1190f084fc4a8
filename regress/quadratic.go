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
