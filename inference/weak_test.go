package inference

import (
	"math"
	"testing"

	"github.com/dplearn/dplearn/regress"
)

// TestWeaklyLocatedFlagsLoadingCoefficients builds released objectives
// Λ2 = Σ μ_k v_k v_kᵀ (no structure, per-entry noise SD σ) whose direction
// v = (e1 − e2)/√2 sits a chosen number of noise SDs s(v) = σ√(2 − Σv_i⁴)
// above its Fieller floor z·s(v), the others at curvature 1, and checks
// that FM flags as WeaklyLocated exactly the identified coefficients
// loading on v (1 and 2) when the margin is below WeakLocationMargin and
// none when it is above it or when every direction is well located.
func TestWeaklyLocatedFlagsLoadingCoefficients(t *testing.T) {
	const d, sigma = 4, 0.01
	r := 1 / math.Sqrt2
	vecs := [][]float64{{1, 0, 0, 0}, {0, r, -r, 0}, {0, r, r, 0}, {0, 0, 0, 1}}
	z := NormalQuantile(0.975)
	s := sigma * math.Sqrt(2-2*math.Pow(r, 4))
	beta := []float64{0.5, 0.2, -0.3, 0.1}
	for _, c := range []struct {
		name string
		mu   float64 // curvature along v
		want []bool
	}{
		{"0.5 SD above the floor", (z + 0.5) * s, []bool{false, true, true, false}},
		{"1.5 SDs above the floor", (z + 1.5) * s, []bool{false, false, false, false}},
		{"well conditioned", 1, []bool{false, false, false, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mus := []float64{1, c.mu, 1, 1}
			q := &regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, d*(d+1)/2)}
			p := 0
			for i := 0; i < d; i++ {
				for j := i; j < d; j++ {
					for k, v := range vecs {
						q.Upper[p] += mus[k] * v[i] * v[j]
					}
					p++
				}
			}
			for i := 0; i < d; i++ { // Λ1 = −2Λ2β: the minimiser is β
				for j := 0; j < d; j++ {
					q.Lambda1[i] -= 2 * q.At(i, j) * beta[j]
				}
			}
			rel := &regress.Released{Kind: regress.Linear, N: 10_000, Objective: q,
				VarLambda1: sigma * sigma, VarLambda2: sigma * sigma, Noise1: "gaussian", Noise2: "gaussian"}
			iv, err := FM(rel, &TargetMoment{Value: 2}, Options{Replicates: 200})
			if err != nil {
				t.Fatal(err)
			}
			for i, co := range iv.Coefficients {
				if !co.Identified {
					t.Errorf("coefficient %d unidentified: %+v", i, co)
				}
				if co.WeaklyLocated != c.want[i] {
					t.Errorf("coefficient %d: WeaklyLocated = %v, want %v", i, co.WeaklyLocated, c.want[i])
				}
			}
		})
	}
}
