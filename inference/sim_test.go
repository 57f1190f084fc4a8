package inference

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dplearn/dplearn/regress"
)

// design is a synthetic population with a discrete feature distribution, so
// that its population parameters are known exactly and the sufficient
// statistics of N rows can be drawn exactly without generating the rows
// (multinomial counts per support point, then the target's sums per point).
type design struct {
	kind  regress.Kind
	xs    [][]float64 // support points (encoded, intercept first, ‖x‖ ≤ 1)
	probs []float64   // their probabilities
	beta  []float64   // linear: E[y|x] = xᵀβ; logistic: P(y=1|x) = σ(xᵀβ)
	sigma float64     // linear: error standard deviation
}

// newDesign returns a design with p numeric features on a 5-point grid
// (u ∈ {−1, −½, 0, ½, 1}, equal probabilities, independent), encoded as
// x = u/√(p+1) with the intercept.
func newDesign(kind regress.Kind, beta []float64, sigma float64) *design {
	p := len(beta) - 1
	s := 1 / math.Sqrt(float64(p+1))
	grid := []float64{-1, -0.5, 0, 0.5, 1}
	dz := &design{kind: kind, beta: beta, sigma: sigma}
	idx := make([]int, p)
	for {
		x := []float64{s}
		for _, i := range idx {
			x = append(x, grid[i]*s)
		}
		dz.xs = append(dz.xs, x)
		j := 0
		for ; j < p; j++ {
			idx[j]++
			if idx[j] < len(grid) {
				break
			}
			idx[j] = 0
		}
		if j == p {
			break
		}
	}
	for range dz.xs {
		dz.probs = append(dz.probs, 1/float64(len(dz.xs)))
	}
	return dz
}

func (dz *design) mean(x []float64) float64 {
	z := 0.0
	for i, b := range dz.beta {
		z += x[i] * b
	}
	if dz.kind == regress.Logistic {
		return 1 / (1 + math.Exp(-z))
	}
	return z
}

// truth returns the estimand: β for linear designs; for logistic designs the
// population minimiser of the truncated loss, 4·S⁻¹E[x(y − ½)].
func (dz *design) truth() []float64 {
	if dz.kind == regress.Linear {
		return dz.beta
	}
	d := len(dz.beta)
	S := mat.NewDense(d, d, nil)
	r := mat.NewVecDense(d, nil)
	for k, x := range dz.xs {
		pk := dz.probs[k]
		m := dz.mean(x)
		for i := 0; i < d; i++ {
			r.SetVec(i, r.AtVec(i)+pk*x[i]*(m-0.5))
			for j := 0; j < d; j++ {
				S.Set(i, j, S.At(i, j)+pk*x[i]*x[j])
			}
		}
	}
	var g mat.VecDense
	if err := g.SolveVec(S, r); err != nil {
		panic(err)
	}
	out := make([]float64, d)
	for i := range out {
		out[i] = 4 * g.AtVec(i)
	}
	return out
}

// nonPrivateSE returns the exact sampling standard errors of the
// non-private estimator of the estimand at N rows (sandwich with the true
// conditional variances), for the width comparison.
func (dz *design) nonPrivateSE(n int64) []float64 {
	d := len(dz.beta)
	S := mat.NewSymDense(d, nil)
	M := mat.NewSymDense(d, nil)
	tr := dz.truth()
	for k, x := range dz.xs {
		pk := dz.probs[k]
		var v float64
		if dz.kind == regress.Linear {
			v = dz.sigma * dz.sigma
		} else {
			m := dz.mean(x)
			g := 0.0
			for i := range x {
				g += x[i] * tr[i] / 4
			}
			v = 16 * (m*(1-m) + (m-0.5-g)*(m-0.5-g))
		}
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				S.SetSym(i, j, S.At(i, j)+pk*x[i]*x[j])
				M.SetSym(i, j, M.At(i, j)+pk*v*x[i]*x[j])
			}
		}
	}
	var si mat.Dense
	if err := si.Inverse(S); err != nil {
		panic(err)
	}
	var tmp, V mat.Dense
	tmp.Mul(&si, M)
	V.Mul(&tmp, &si)
	out := make([]float64, d)
	for i := range out {
		out[i] = math.Sqrt(V.At(i, i) / float64(n))
	}
	return out
}

// simStats are exact sufficient statistics of N rows z = (x, y).
type simStats struct {
	k   int
	n   int64
	sum []float64
	m   []float64 // k×k
}

func (s *simStats) K() int              { return s.k }
func (s *simStats) N() int64            { return s.n }
func (s *simStats) Sum(i int) float64   { return s.sum[i] }
func (s *simStats) At(i, j int) float64 { return s.m[i*s.k+j] }

// sample draws the statistics of n rows.
func (dz *design) sample(rng *rand.Rand, n int64) *simStats {
	d := len(dz.beta)
	k := d + 1
	st := &simStats{k: k, n: n, sum: make([]float64, k), m: make([]float64, k*k)}
	left, pleft := float64(n), 1.0
	for idx, x := range dz.xs {
		var nk float64
		if idx == len(dz.xs)-1 {
			nk = left
		} else if left > 0 {
			nk = distuv.Binomial{N: left, P: math.Min(1, dz.probs[idx]/pleft), Src: rng}.Rand()
		}
		left -= nk
		pleft -= dz.probs[idx]
		if nk == 0 {
			continue
		}
		mu := dz.mean(x)
		var sy, syy float64
		if dz.kind == regress.Logistic {
			sy = distuv.Binomial{N: nk, P: mu, Src: rng}.Rand()
			syy = sy
		} else {
			e := rng.NormFloat64() * dz.sigma * math.Sqrt(nk)
			sy = nk*mu + e
			var chi float64
			if nk > 1 {
				chi = distuv.ChiSquared{K: nk - 1, Src: rng}.Rand()
			}
			syy = sy*sy/nk + dz.sigma*dz.sigma*chi
		}
		for i := 0; i < d; i++ {
			st.sum[i] += nk * x[i]
			st.m[i*k+d] += x[i] * sy
			for j := 0; j < d; j++ {
				st.m[i*k+j] += nk * x[i] * x[j]
			}
		}
		st.sum[d] += sy
		st.m[d*k+d] += syy
	}
	for i := 0; i < d; i++ {
		st.m[d*k+i] = st.m[i*k+d]
	}
	return st
}
