package regress

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMinimizeInBall checks PostProcess.Radius against the optimality
// conditions of the trust-region subproblem (Moré & Sorensen 1983): the
// solution w has ‖w‖ ≤ R, and either ‖w‖ < R with zero gradient or
// ‖w‖ = R with gradient 2(Λ2 + λI)w + Λ1 = −2μw for some μ ≥ 0. It also
// compares with projected gradient descent, an independent solver.
func TestMinimizeInBall(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	trials := 200
	if testing.Short() {
		trials = 40
	}
	for trial := 0; trial < trials; trial++ {
		d := 1 + rng.IntN(6)
		q := &Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, d*(d+1)/2)}
		// Λ2 = MMᵀ/d (PSD), Λ1 random.
		m := make([]float64, d*d)
		for i := range m {
			m[i] = rng.NormFloat64()
		}
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				s := 0.0
				for k := 0; k < d; k++ {
					s += m[i*d+k] * m[j*d+k]
				}
				q.Upper[packedIndex(d, i, j)] = s / float64(d)
			}
			q.Lambda1[i] = 3 * rng.NormFloat64()
		}
		lam := 0.1
		r := 0.05 + 2*rng.Float64()
		w, trimmed, err := q.Minimize(PostProcess{Lambda: lam, MinEigen: 1e-3, Radius: r})
		if err != nil {
			t.Fatal(err)
		}
		if trimmed != 0 {
			t.Fatalf("trimmed %d directions of a positive definite matrix", trimmed)
		}
		grad := make([]float64, d)
		for i := 0; i < d; i++ {
			grad[i] = q.Lambda1[i] + 2*lam*w[i]
			for j := 0; j < d; j++ {
				grad[i] += 2 * q.At(i, j) * w[j]
			}
		}
		nw := math.Sqrt(dot(w, w))
		if nw > r*(1+1e-12) {
			t.Fatalf("‖w‖ = %v > R = %v", nw, r)
		}
		if nw < r*(1-1e-9) {
			if g := math.Sqrt(dot(grad, grad)); g > 1e-9 {
				t.Fatalf("interior solution with gradient norm %v", g)
			}
		} else {
			// grad = −2μ w: grad parallel to −w with a non-negative factor.
			mu := -dot(grad, w) / (2 * nw * nw)
			if mu < -1e-9 {
				t.Fatalf("boundary solution with μ = %v < 0", mu)
			}
			for i := range grad {
				if math.Abs(grad[i]+2*mu*w[i]) > 1e-7*(1+math.Abs(grad[i])) {
					t.Fatalf("gradient %v not parallel to −w %v", grad, w)
				}
			}
		}
		// Projected gradient descent on f(w) = Λ1ᵀw + wᵀ(Λ2+λI)w.
		f := func(v []float64) float64 { return q.Eval(v) + lam*dot(v, v) - q.Lambda0 }
		v := make([]float64, d)
		for it := 0; it < 20000; it++ {
			g := make([]float64, d)
			for i := 0; i < d; i++ {
				g[i] = q.Lambda1[i] + 2*lam*v[i]
				for j := 0; j < d; j++ {
					g[i] += 2 * q.At(i, j) * v[j]
				}
			}
			for i := range v {
				v[i] -= 0.02 * g[i]
			}
			if n := math.Sqrt(dot(v, v)); n > r {
				for i := range v {
					v[i] *= r / n
				}
			}
		}
		if f(w) > f(v)+1e-9*(1+math.Abs(f(v))) {
			t.Fatalf("ball solution f = %v worse than projected gradient's %v", f(w), f(v))
		}
	}
}
