package inference

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/regress"
)

// UnlocatedLoading is how much of a coefficient may lie along directions
// that the released objective does not locate before the coefficient is
// reported as unidentified: coefficient i is unidentified when the encoded
// unit vector e_i has a loading |v_k[i]| ≥ UnlocatedLoading on some
// unlocated eigen-direction v_k (its component along v_k is then ≥ 5% of
// that direction's, which no interval can bound). Coefficients below it
// get intervals for the minimiser restricted to the located directions.
const UnlocatedLoading = 0.05

// locator is the intervals' rule for which eigen-directions of a released
// (structure-projected) Λ2 the objective locates. Along a unit eigenvector
// v with eigenvalue μ the coefficient component is −vᵀΛ1/(2μ): a ratio
// whose denominator μ carries the noise vᵀEv. By Fieller's theorem the
// 1 − α confidence set of such a ratio is bounded exactly when the
// denominator is significantly positive, μ̃ > z_{1−α/2}·s(v), where s(v) is
// the standard deviation of vᵀEv: the direction is located only then. s is
// a public function of the noise's per-entry variance and of the schema's
// Gram structure (the noise left after the projection onto the identities:
// s² = σ²·aᵀPa with a the packed coefficients of vᵀΛ2v, P the
// projection's linear part; σ²(2 − Σv_i⁴) without structure). The floor is
// per direction, not the fit's trimming floor TrimFraction·λ: that floor is
// applied by the fit after adding the ridge λ (it keeps every μ̃ > −¾λ), and
// applying it to the un-ridged Λ2 (as before issue 25) dropped directions
// that the projected noise left located many standard deviations above 0.
//
// The estimate and every bootstrap replicate apply the same rule, so a
// replicate in which a located direction falls below its floor drops it (its
// component becomes 0, a finite deviation) instead of failing; a replicate
// fails only when no direction is left.
type locator struct {
	z    float64
	sd2  float64 // per-entry noise variance of Λ2
	lin  *regress.GramStructure
	maxS float64 // upper bound of s(v): √2·σ
	// class is the structure projection's class of each packed entry
	// (−1: known), so noiseSD needs no projection per direction.
	class []int
	// tri is the tridiagonal path's workspace (reused across replicates).
	tri *triSolver
	// comp, when set with basis (setBasis), holds the orthonormal
	// complement of the located basis: solveTri then works in the full
	// space with those directions deflated instead of restricting Λ2 to
	// the basis (a d×d×r product per replicate).
	basis, comp *mat.Dense
}

// setBasis records the located basis of the released objective and its
// orthonormal complement (the directions it does not locate), so that
// solveTri's replicates in that basis deflate the complement (O(d²s),
// s its dimension) instead of restricting to the basis (O(d²r)).
func (l *locator) setBasis(basis, comp *mat.Dense) { l.basis, l.comp = basis, comp }

func newLocator(rel *regress.Released, level float64) *locator {
	l := &locator{z: NormalQuantile(0.5 + level/2), sd2: rel.VarLambda2, maxS: math.Sqrt(2 * rel.VarLambda2)}
	if rel.Structure != nil {
		l.lin = rel.Structure.Scaled(0) // the projection's linear part
		l.class = projectionClasses(l.lin, rel.Objective.D)
	}
	return l
}

// projectionClasses returns, for each packed entry of Λ2's upper
// triangle, its class under the structure's projection (entries the
// projection averages together share a class; −1 for known entries, which
// it sets to a constant), found by projecting one vector of distinct random
// values: the projection's linear part replaces each class by its mean and
// known entries by 0. nil when the probe fails (noiseSD then projects).
func projectionClasses(lin *regress.GramStructure, d int) []int {
	m := d * (d + 1) / 2
	rng := rand.New(rand.NewPCG(0x25, 0xc1a55)) // a probe of the projection's linear map, not noise
	a := make([]float64, m)
	for i := range a {
		a[i] = 1 + rng.Float64()
	}
	pa, err := lin.Project(&regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: a})
	if err != nil {
		return nil
	}
	class := make([]int, m)
	ids := map[float64]int{}
	for i, v := range pa.Upper {
		if v == 0 {
			class[i] = -1
			continue
		}
		id, ok := ids[v]
		if !ok {
			id = len(ids)
			ids[v] = id
		}
		class[i] = id
	}
	return class
}

// noiseSD returns s(v), the standard deviation of the projected noise's
// vᵀEv for a unit vector v.
func (l *locator) noiseSD(v []float64) float64 {
	d := len(v)
	a := make([]float64, d*(d+1)/2)
	p := 0
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			if i == j {
				a[p] = v[i] * v[i]
			} else {
				a[p] = 2 * v[i] * v[j]
			}
			p++
		}
	}
	if l.lin == nil {
		s := 0.0
		for _, x := range a {
			s += x * x
		}
		return math.Sqrt(l.sd2 * s)
	}
	if l.class != nil && len(l.class) == len(a) {
		// aᵀPa = Σ over classes of (Σ_{p∈class} a_p)²/|class|.
		sums := make(map[int]float64)
		sizes := make(map[int]int)
		for p, c := range l.class {
			if c >= 0 {
				sums[c] += a[p]
				sizes[c]++
			}
		}
		s := 0.0
		for c, v := range sums {
			s += v * v / float64(sizes[c])
		}
		return math.Sqrt(l.sd2 * s)
	}
	pa, err := l.lin.Project(&regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: a})
	if err != nil {
		return l.maxS
	}
	s := 0.0
	for i, x := range a {
		s += x * pa.Upper[i]
	}
	return math.Sqrt(l.sd2 * math.Max(s, 0))
}

// floor returns the direction's identification floor z·s(v).
func (l *locator) floor(v []float64) float64 { return l.z * l.noiseSD(v) }

// solution is the minimiser over the located directions.
type solution struct {
	w []float64
	// vals and vecs are the eigen-decomposition used (vecs' columns in
	// the full space), located[k] whether direction k was kept.
	vals    []float64
	vecs    *mat.Dense
	located []bool
	floors  []float64
	dropped int
}

// solve returns the unregularised minimiser −½Λ2⁻¹Λ1 of q over its located
// eigen-directions, restricted to the column span of basis (d×r,
// orthonormal columns; nil: the whole space). It fails only when no
// direction is located.
func (l *locator) solve(q *regress.Quadratic, basis *mat.Dense) (*solution, error) {
	d := q.D
	var vals []float64
	var vecs *mat.Dense
	g := q.Lambda1
	if basis == nil {
		var err error
		if vals, vecs, err = q.Eigen(0, true); err != nil {
			return nil, err
		}
	} else {
		_, r := basis.Dims()
		sym := restrict(q, basis)
		var eig mat.EigenSym
		if !eig.Factorize(sym, true) {
			return nil, fmt.Errorf("inference: eigendecomposition of the restricted Λ2 did not converge")
		}
		vals = eig.Values(nil)
		var u mat.Dense
		eig.VectorsTo(&u)
		vecs = mat.NewDense(d, r, nil)
		vecs.Mul(basis, &u)
	}
	_, cols := vecs.Dims()
	s := &solution{w: make([]float64, d), vals: vals, vecs: vecs, located: make([]bool, cols), floors: make([]float64, cols)}
	v := make([]float64, d)
	for k := 0; k < cols; k++ {
		mu := vals[k]
		for i := 0; i < d; i++ {
			v[i] = vecs.At(i, k)
		}
		// Only directions near the largest possible floor z·√2·σ need
		// their own floor computed.
		if mu > l.z*l.maxS {
			s.floors[k] = math.NaN()
		} else {
			s.floors[k] = l.floor(v)
		}
		if !(mu > 0) || (!math.IsNaN(s.floors[k]) && mu <= s.floors[k]) {
			s.dropped++
			continue
		}
		s.located[k] = true
		proj := 0.0
		for i := 0; i < d; i++ {
			proj += v[i] * g[i]
		}
		c := -proj / (2 * mu)
		for i := 0; i < d; i++ {
			s.w[i] += c * v[i]
		}
	}
	if s.dropped == cols {
		return s, errNoDirection
	}
	return s, nil
}

// errNoDirection: the noisy Λ2 locates no direction (a failed replicate).
var errNoDirection = errors.New("inference: no eigen-direction of the noisy Λ2 is significantly positive")

// restrict returns Bᵀ·Λ2·B for the d×r basis B (orthonormal columns).
func restrict(q *regress.Quadratic, basis *mat.Dense) *mat.SymDense {
	d := q.D
	_, r := basis.Dims()
	full := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			full.SetSym(i, j, q.At(i, j))
		}
	}
	var tmp mat.Dense
	tmp.Mul(full, basis)
	var m mat.Dense
	m.Mul(basis.T(), &tmp)
	sym := mat.NewSymDense(r, nil)
	for i := 0; i < r; i++ {
		for j := i; j < r; j++ {
			sym.SetSym(i, j, (m.At(i, j)+m.At(j, i))/2)
		}
	}
	return sym
}

// keptBasis returns the located directions as the columns of a d×r matrix.
func (s *solution) keptBasis() *mat.Dense { return s.basisOf(true) }

// droppedBasis returns the directions not located as the columns of a d×s
// matrix (the orthonormal complement of keptBasis when vecs is square).
func (s *solution) droppedBasis() *mat.Dense { return s.basisOf(false) }

func (s *solution) basisOf(located bool) *mat.Dense {
	d, _ := s.vecs.Dims()
	r := 0
	for _, ok := range s.located {
		if ok == located {
			r++
		}
	}
	b := mat.NewDense(d, r, nil)
	c := 0
	for k, ok := range s.located {
		if ok != located {
			continue
		}
		for i := 0; i < d; i++ {
			b.Set(i, c, s.vecs.At(i, k))
		}
		c++
	}
	return b
}

// cholSolve returns the solution w of (Λ2 + shift·I)w = −½Λ1 when
// Λ2 + (shift − margin)·I is positive definite, i.e. when every eigenvalue
// of Λ2 + shift·I exceeds margin, so that no direction would be dropped by
// a floor of at most margin and the minimiser over all directions is the
// plain solve; ok is false otherwise (the caller then decomposes). Two
// Cholesky factorisations (LAPACK's potrf, d³/3 flops each, no condition
// estimate) replace an eigen-decomposition with vectors, several times the
// cost.
func cholSolve(q *regress.Quadratic, shift, margin float64) (w []float64, ok bool) {
	d := q.D
	fill := func(buf []float64, diag float64) blas64.Symmetric {
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				v := q.At(i, j)
				if i == j {
					v += diag
				}
				buf[i*d+j] = v
			}
		}
		return blas64.Symmetric{Uplo: blas.Upper, N: d, Stride: d, Data: buf}
	}
	buf := make([]float64, d*d)
	if margin != 0 {
		if _, ok := lapack64.Potrf(fill(buf, shift-margin)); !ok {
			return nil, false
		}
	}
	t, ok := lapack64.Potrf(fill(buf, shift))
	if !ok {
		return nil, false
	}
	w = make([]float64, d)
	for i := range w {
		w[i] = -q.Lambda1[i] / 2
	}
	lapack64.Potrs(t, blas64.General{Rows: d, Cols: 1, Stride: 1, Data: w})
	for _, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
	}
	return w, true
}

// solveFast is solve for a bootstrap replicate whose decomposition is not
// needed: when every eigenvalue of Λ2 exceeds the largest floor any
// direction can have (z·√2·σ), nothing is dropped and the minimiser is the
// Cholesky solve; otherwise the tridiagonal path (triSolver: vectors only
// for the directions near a floor), and solve only where that path cannot
// finish. All three return the same minimiser and dropped count.
func (l *locator) solveFast(q *regress.Quadratic, basis *mat.Dense) (*solution, error) {
	if basis == nil {
		if w, ok := cholSolve(q, 0, l.z*l.maxS); ok {
			return &solution{w: w}, nil
		}
	}
	s, err := l.solveTri(q, basis)
	if errors.Is(err, errTriFallback) {
		return l.solve(q, basis)
	}
	return s, err
}

// solveTri is solve's minimiser and dropped count by the tridiagonal path
// (triSolver), in the column span of basis (nil: the whole space).
func (l *locator) solveTri(q *regress.Quadratic, basis *mat.Dense) (*solution, error) {
	d := q.D
	at, g, n := q.At, q.Lambda1, d
	floor := l.floor
	if basis != nil && basis == l.basis && l.comp != nil {
		// Deflating costs ≈ 4d²s + 4/3·d³ flops, restricting ≈ 2d²r +
		// 2dr² + 4/3·r³ (r + s = d): take the cheaper.
		_, s := l.comp.Dims()
		fd, fs, fr := float64(d), float64(s), float64(d-s)
		if 4*fd*fd*fs+4*fd*fd*fd/3 < 2*fd*fd*fr+2*fd*fr*fr+4*fr*fr*fr/3 {
			return l.solveDeflated(q)
		}
	}
	if basis != nil {
		_, n = basis.Dims()
		sym := restrict(q, basis)
		at = sym.At
		gr := make([]float64, n)
		for k := 0; k < n; k++ {
			for i := 0; i < d; i++ {
				gr[k] += basis.At(i, k) * g[i]
			}
		}
		g = gr
		full := make([]float64, d)
		floor = func(u []float64) float64 {
			for i := range full {
				s := 0.0
				for k, x := range u {
					s += basis.At(i, k) * x
				}
				full[i] = s
			}
			return l.floor(full)
		}
	}
	if l.tri == nil || l.tri.n != n {
		l.tri = newTriSolver(n)
	}
	keep := func(mu float64, v []float64) float64 {
		if !(mu > 0) || mu <= floor(v) {
			return 0
		}
		return mu
	}
	x, dropped, err := l.tri.solve(at, g, l.z*l.maxS, -1, keep)
	if err != nil {
		return &solution{dropped: dropped}, err
	}
	if basis == nil {
		return &solution{w: x, dropped: dropped}, nil
	}
	w := make([]float64, d)
	for i := 0; i < d; i++ {
		for k, c := range x {
			w[i] += basis.At(i, k) * c
		}
	}
	return &solution{w: w, dropped: dropped}, nil
}

// solveDeflated is solveTri in the located basis B of the released
// objective (setBasis) without restricting Λ2 to it: with U the
// orthonormal complement of B (d×s) and P = I − UUᵀ, the matrix
//
//	A' = PΛ2P − K·UUᵀ = Λ2 − UYᵀ − YUᵀ,  Y = Λ2U − ½U(UᵀΛ2U) + ½K·U,
//
// (a rank-2s update, O(d²s)) has the eigenvalues of BᵀΛ2B with the
// eigenvectors B·u, and −K < 0 on the span of U. Solving A' in the full
// space with the locator's rule therefore drops the s directions of U
// (as non-positive) and treats every other direction exactly as solve
// does in the basis: the same minimiser in exact arithmetic, and the same
// dropped count once the s deflated directions are taken off it. K is
// the trace of |diag Λ2| plus the largest floor, above every eigenvalue's
// magnitude, so the deflated directions are separated from the others by
// at least K. TestTriSolveMatchesEigenSolve checks it against solve in
// the basis.
func (l *locator) solveDeflated(q *regress.Quadratic) (*solution, error) {
	d := q.D
	u := l.comp
	_, s := u.Dims()
	a := mat.NewSymDense(d, nil)
	k := l.z * l.maxS
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			a.SetSym(i, j, q.At(i, j))
		}
		k += math.Abs(q.At(i, i))
	}
	var w, y mat.Dense
	w.Mul(a, u) // Λ2U
	var sm mat.Dense
	sm.Mul(u.T(), &w) // UᵀΛ2U
	y.Mul(u, &sm)
	y.Scale(-0.5, &y)
	y.Add(&y, &w)
	var ku mat.Dense
	ku.Scale(0.5*k, u)
	y.Add(&y, &ku)
	// A' = Λ2 − UYᵀ − YUᵀ (symmetric rank-2s update).
	raw := a.RawSymmetric()
	ud, yd := u.RawMatrix(), y.RawMatrix()
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := 0.0
			for c := 0; c < s; c++ {
				v += ud.Data[i*ud.Stride+c]*yd.Data[j*yd.Stride+c] + yd.Data[i*yd.Stride+c]*ud.Data[j*ud.Stride+c]
			}
			raw.Data[i*raw.Stride+j] -= v
		}
	}
	if l.tri == nil || l.tri.n != d {
		l.tri = newTriSolver(d)
	}
	keep := func(mu float64, v []float64) float64 {
		if !(mu > 0) || mu <= l.floor(v) {
			return 0
		}
		return mu
	}
	x, dropped, err := l.tri.solve(func(i, j int) float64 { return raw.Data[i*raw.Stride+j] }, q.Lambda1, l.z*l.maxS, -1, keep)
	dropped -= s // the deflated complement is not part of the basis
	if err != nil {
		return &solution{dropped: dropped}, err
	}
	// Remove the roundoff left along U: w = Px.
	for c := 0; c < s; c++ {
		p := 0.0
		for i := 0; i < d; i++ {
			p += ud.Data[i*ud.Stride+c] * x[i]
		}
		for i := 0; i < d; i++ {
			x[i] -= p * ud.Data[i*ud.Stride+c]
		}
	}
	return &solution{w: x, dropped: dropped}, nil
}
