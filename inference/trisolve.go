package inference

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"
)

// errTriFallback reports that the tridiagonal path could not finish (an
// exactly singular shifted tridiagonal); the caller then decomposes.
var errTriFallback = errors.New("inference: tridiagonal path fell back to the eigen-decomposition")

// triSolver computes the minimiser over the located eigen-directions of a
// symmetric n×n matrix A (the replicate's Λ2, or its restriction to the
// located basis) without its full eigen-decomposition (issue 24). It is the
// same minimiser as locator.solve, −½·Σ_{k located} v_k(v_kᵀg)/μ_k, computed
// in three steps:
//
//  1. A = QTQᵀ with T tridiagonal (Householder, LAPACK's sytrd, ≈ 4/3·n³
//     flops; Q is kept as its reflectors and applied in O(n²) per vector) and T's eigenvalues alone (sterf, O(n²)). A direction
//     with μ > z·√2·σ is above every possible floor and always located; only
//     the m "weak" eigenvalues μ ≤ z·√2·σ need a vector.
//  2. The weak vectors y_k of T by inverse iteration at their (accurate)
//     eigenvalues with reorthogonalisation among them (O(n·m²)), mapped
//     back v_k = Q·y_k; each gets its floor, and is dropped exactly as in
//     solve (μ ≤ 0 or μ ≤ floor).
//  3. With Y the weak vectors of T: h = Qᵀg, h' = h − YYᵀh, x the
//     tridiagonal solve Tx = h' (partial pivoting, O(n)), x ← x − YYᵀx
//     (removing the roundoff that T's near-singular weak directions
//     amplify, which lies along them), plus y_k(y_kᵀh)/μ_k for each weak
//     direction kept, and w = −½·Q·x. In exact arithmetic x =
//     Σ_{k kept} y_k(y_kᵀh)/μ_k, the located directions' solve.
//
// The eigen-decomposition with vectors that it replaces (syev: sytrd, orgtr
// and the implicit QL iteration accumulating every rotation into the
// vectors, ≈ 9n³ flops in gonum) cost about 4× as much at n = 200
// (BenchmarkIntervalsD200). TestTriSolveMatchesEigenSolve checks that both
// give the same minimiser and the same dropped directions.
type triSolver struct {
	n                int
	a, tau, work     []float64
	d, e, vals, eTmp []float64
	dl, dd, du, rhs  []float64
	h, x, y          []float64
	ys               [][]float64 // the weak vectors of T
	yvals            []float64   // their eigenvalues (ascending)
	kept             []float64   // their eigenvalues in the solve (0: dropped)
	// paths counts the solves by the weak vectors, by the strong ones and
	// the fallbacks (tests check which path ran).
	paths [3]int
}

func newTriSolver(n int) *triSolver {
	t := &triSolver{n: n, a: make([]float64, n*n), tau: make([]float64, max(n-1, 1)),
		d: make([]float64, n), e: make([]float64, max(n-1, 1)), vals: make([]float64, n), eTmp: make([]float64, max(n-1, 1)),
		dl: make([]float64, max(n-1, 1)), dd: make([]float64, n), du: make([]float64, max(n-1, 1)), rhs: make([]float64, n),
		h: make([]float64, n), x: make([]float64, n), y: make([]float64, n)}
	impl := gonum.Implementation{}
	q := make([]float64, 1)
	impl.Dsytrd(blas.Upper, n, t.a, n, t.d, t.e, t.tau, q, -1)
	lw := int(q[0])
	impl.Dorgtr(blas.Upper, n, t.a, n, t.tau, q, -1)
	t.work = make([]float64, max(lw, int(q[0]), 2*n, 1))
	return t
}

// solve returns the minimiser (in A's n-space) and the number of dropped
// directions, or errTriFallback, or errNoDirection when every direction is
// dropped. at(i, j) reads A; g is the linear term; every eigenvalue above
// weak is used as it is; an eigenvalue μ ≤ weak with unit eigenvector v
// (n-space) is replaced by keep(μ, v): 0 drops the direction (locator:
// μ itself when it is positive and above v's floor, else 0; the fit's
// post-processing: its clip or trimming).
//
// uniform ≥ 0 says that every weak direction is solved with the eigenvalue
// uniform (0: dropped) whatever its vector (the fit's clip or trimming;
// keep is then unused), so that when most directions are weak the few
// strong ones get the vectors instead: x = Σ_strong y(yᵀh)/μ +
// (h − Σ_strong y yᵀh)/uniform. uniform < 0: keep decides per vector.
// Each vector costs O(n) on T (inverse iteration, reorthogonalised only
// within its cluster of close eigenvalues, as LAPACK's stein does) plus
// O(n²) to map it back when keep needs it, so every split of weak and
// strong directions takes this path; solveAll (the eigen-decomposition,
// ≈ 9n³ flops) is left for the fallback. Before issue 24's second change
// more than n/3 vectors went to solveAll, which was 70% of the forecast's
// time at n = 200 (its clip makes about half the directions weak).
func (t *triSolver) solve(at func(i, j int) float64, g []float64, weak, uniform float64, keep func(mu float64, v []float64) float64) ([]float64, int, error) {
	// Without a uniform value keep is the locator's rule, which drops
	// every μ ≤ 0 without reading its vector.
	dropsNonPositive := uniform < 0
	if uniform >= 0 {
		keep = func(float64, []float64) float64 { return uniform }
	}
	n := t.n
	impl := gonum.Implementation{}
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			t.a[i*n+j] = at(i, j)
		}
	}
	if n == 1 {
		mu := t.a[0]
		if !(mu > weak) {
			mu = keep(mu, []float64{1})
		}
		if !(mu > 0) {
			return nil, 1, errNoDirection
		}
		return []float64{-g[0] / (2 * mu)}, 0, nil
	}
	impl.Dsytrd(blas.Upper, n, t.a, n, t.d, t.e, t.tau, t.work, len(t.work)) // t.a holds Q's reflectors
	copy(t.vals, t.d)
	copy(t.eTmp, t.e)
	if !impl.Dsterf(n, t.vals, t.eTmp) { // ascending
		return nil, 0, errTriFallback
	}
	tnorm := 0.0
	for i := 0; i < n; i++ {
		s := math.Abs(t.d[i])
		if i > 0 {
			s += math.Abs(t.e[i-1])
		}
		if i < n-1 {
			s += math.Abs(t.e[i])
		}
		tnorm = math.Max(tnorm, s)
	}
	// h = Qᵀg.
	copy(t.h, g)
	t.applyQ(t.h, true)
	m := 0
	for m < n && !(t.vals[m] > weak) {
		m++
	}
	if uniform >= 0 && n-m < m {
		t.paths[1]++
		return t.solveStrong(m, uniform, tnorm)
	}
	t.paths[0]++
	// The weak directions: their vectors, and the eigenvalue each is
	// solved with (0: dropped).
	t.ys, t.yvals = t.ys[:0], t.yvals[:0]
	t.kept = t.kept[:0]
	dropped := 0
	v := make([]float64, n)
	for k := 0; k < n && !(t.vals[k] > weak); k++ {
		y, ok := t.inverseIteration(t.vals[k], tnorm, k)
		if !ok {
			return nil, 0, errTriFallback
		}
		t.ys, t.yvals = append(t.ys, y), append(t.yvals, t.vals[k])
		// The vector in A's space only when keep reads it: not for a
		// uniform value, nor when keep drops a non-positive μ anyway
		// (locator; the deflated complement of solveDeflated sits there).
		var mu float64
		switch {
		case uniform >= 0:
			mu = uniform
		case !(t.vals[k] > 0) && dropsNonPositive:
			mu = 0
		default:
			copy(v, y)
			t.applyQ(v, false)
			mu = keep(t.vals[k], v)
		}
		if !(mu > 0) {
			mu = 0
			dropped++
		}
		t.kept = append(t.kept, mu)
	}
	if dropped == n {
		return nil, n, errNoDirection
	}
	// The strong directions by the tridiagonal solve of the right-hand
	// side without its weak components, the weak ones from their
	// eigenvalues.
	copy(t.rhs, t.h)
	project(t.rhs, t.ys)
	if len(t.ys) < n {
		copy(t.dd, t.d)
		copy(t.dl, t.e)
		copy(t.du, t.e)
		if !impl.Dgtsv(n, 1, t.dl, t.dd, t.du, t.rhs, 1) {
			return nil, 0, errTriFallback
		}
		project(t.rhs, t.ys)
	} else {
		for i := range t.rhs {
			t.rhs[i] = 0
		}
	}
	for k, y := range t.ys {
		if t.kept[k] == 0 {
			continue
		}
		c := 0.0
		for i := range y {
			c += y[i] * t.h[i]
		}
		c /= t.kept[k]
		for i := range y {
			t.rhs[i] += c * y[i]
		}
	}
	w := make([]float64, n)
	copy(w, t.rhs)
	t.applyQ(w, false)
	for i := range w {
		w[i] /= -2
		if math.IsNaN(w[i]) || math.IsInf(w[i], 0) {
			return nil, 0, errTriFallback
		}
	}
	return w, dropped, nil
}

// solveAll finishes solve by the eigen-decomposition when more than n/3
// vectors are needed either way: Q from its reflectors (orgtr) and the
// implicit QL iteration on T accumulating into Q (steqr), the remaining
// work of syev, so the tridiagonal reduction already done is not repeated.
func (t *triSolver) solveAll(g []float64, weak float64, keep func(float64, []float64) float64) ([]float64, int, error) {
	n := t.n
	impl := gonum.Implementation{}
	impl.Dorgtr(blas.Upper, n, t.a, n, t.tau, t.work, len(t.work)) // t.a = Q
	copy(t.dd, t.d)
	copy(t.du, t.e)
	if !impl.Dsteqr(lapack.EVOrig, n, t.dd, t.du, t.a, n, t.work) {
		return nil, 0, errTriFallback
	}
	w := make([]float64, n)
	v := make([]float64, n)
	dropped := 0
	for k := 0; k < n; k++ {
		mu := t.dd[k]
		for i := 0; i < n; i++ {
			v[i] = t.a[i*n+k]
		}
		if !(mu > weak) {
			mu = keep(mu, v)
		}
		if !(mu > 0) {
			dropped++
			continue
		}
		c := 0.0
		for i := range v {
			c += v[i] * g[i]
		}
		c /= -2 * mu
		for i := range v {
			w[i] += c * v[i]
		}
	}
	if dropped == n {
		return nil, n, errNoDirection
	}
	for _, x := range w {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, 0, errTriFallback
		}
	}
	return w, dropped, nil
}

// solveStrong is solve's uniform case when the m weak directions are the
// majority: vectors only for the n − m strong ones.
func (t *triSolver) solveStrong(m int, uniform, tnorm float64) ([]float64, int, error) {
	n := t.n
	dropped := 0
	if uniform == 0 {
		dropped = m
	}
	if dropped == n {
		return nil, n, errNoDirection
	}
	t.ys, t.yvals = t.ys[:0], t.yvals[:0]
	for i := range t.rhs {
		t.rhs[i] = 0
	}
	for k := m; k < n; k++ {
		y, ok := t.inverseIteration(t.vals[k], tnorm, k)
		if !ok {
			return nil, 0, errTriFallback
		}
		t.ys, t.yvals = append(t.ys, y), append(t.yvals, t.vals[k])
		c := 0.0
		for i := range y {
			c += y[i] * t.h[i]
		}
		c /= t.vals[k]
		for i := range y {
			t.rhs[i] += c * y[i]
		}
	}
	if uniform > 0 {
		copy(t.x, t.h)
		project(t.x, t.ys)
		for i := range t.rhs {
			t.rhs[i] += t.x[i] / uniform
		}
	}
	w := make([]float64, n)
	copy(w, t.rhs)
	t.applyQ(w, false)
	for i := range w {
		w[i] /= -2
		if math.IsNaN(w[i]) || math.IsInf(w[i], 0) {
			return nil, 0, errTriFallback
		}
	}
	return w, dropped, nil
}

// applyQ sets x to Q·x (or Qᵀ·x with trans) for the Q of the last
// Dsytrd (upper: Q = H_{n−2}⋯H_0, H_i = I − τ_i·u·uᵀ with u[i] = 1,
// u[i+1:] = 0 and u[:i] stored in column i+1 of t.a above the diagonal),
// applying the reflectors directly (O(n²), no explicit Q).
func (t *triSolver) applyQ(x []float64, trans bool) {
	n := t.n
	apply := func(i int) {
		tau := t.tau[i]
		if tau == 0 {
			return
		}
		s := x[i]
		for j := 0; j < i; j++ {
			s += t.a[j*n+i+1] * x[j]
		}
		s *= tau
		x[i] -= s
		for j := 0; j < i; j++ {
			x[j] -= s * t.a[j*n+i+1]
		}
	}
	if trans {
		for i := n - 2; i >= 0; i-- {
			apply(i)
		}
		return
	}
	for i := 0; i <= n-2; i++ {
		apply(i)
	}
}

// project removes from x its components along the orthonormal ys.
func project(x []float64, ys [][]float64) {
	for _, y := range ys {
		s := 0.0
		for i := range x {
			s += y[i] * x[i]
		}
		for i := range x {
			x[i] -= s * y[i]
		}
	}
}

// clusterGap is LAPACK stein's ORTOL: eigenvalues of T closer than
// clusterGap·‖T‖₁ form a cluster whose inverse-iteration vectors are
// orthogonalised against each other; vectors of eigenvalues farther apart
// come out orthogonal to O(ε‖T‖/gap) ≤ O(10³ε) by themselves.
const clusterGap = 1e-3

// inverseIteration returns the unit eigenvector of the tridiagonal T
// (t.d, t.e) at its eigenvalue mu (t.vals[k]), orthogonal to the vectors
// found before it (t.ys, computed in ascending order of eigenvalue) whose
// eigenvalues lie in its cluster (as LAPACK's stein does for close
// eigenvalues): three solves of (T − μ'I)y = y with μ' = μ perturbed by a
// few units of roundoff.
func (t *triSolver) inverseIteration(mu, tnorm float64, seq int) ([]float64, bool) {
	n := t.n
	impl := gonum.Implementation{}
	// The cluster: the previous vectors back to the last gap above
	// clusterGap·‖T‖ (t.yvals holds their eigenvalues, ascending).
	first, prev := len(t.ys), mu
	for first > 0 && prev-t.yvals[first-1] <= clusterGap*tnorm {
		first--
		prev = t.yvals[first]
	}
	cluster := t.ys[first:]
	y := make([]float64, n)
	for i := range y {
		// A fixed start with components along every eigenvector
		// (deterministic, not noise).
		y[i] = 1 + 0.5*math.Sin(float64((i+1)*(seq+3)))
	}
	shift := mu + 4*1.1102230246251565e-16*math.Max(tnorm, 1e-300)*float64(seq%3+1)
	for it := 0; it < 3; it++ {
		project(y, cluster)
		copy(t.dd, t.d)
		copy(t.dl, t.e)
		copy(t.du, t.e)
		for i := range t.dd {
			t.dd[i] -= shift
		}
		if !impl.Dgtsv(n, 1, t.dl, t.dd, t.du, y, 1) {
			return nil, false
		}
		project(y, cluster)
		nrm := 0.0
		for _, v := range y {
			nrm += v * v
		}
		nrm = math.Sqrt(nrm)
		if !(nrm > 0) || math.IsInf(nrm, 0) {
			return nil, false
		}
		for i := range y {
			y[i] /= nrm
		}
	}
	return y, true
}
