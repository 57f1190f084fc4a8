package regress

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestObjPertDeridgeKnownAnswers checks ObjPertDeridge against independent
// recomputations (issue 26: why the de-ridged prediction cannot change
// breast_cancer's accuracy). With every eigenvalue of hess/N at or below
// the floor the floored Hessian is floor·I and β = (1 + Λ/floor)ω exactly:
// a positive rescaling, which keeps every sign of xᵀβ. With eigenvalues
// above the floor β = ω + ΛH⁻¹ω, H solved by gonum's Cholesky on the
// matrix itself (no eigendecomposition).
func TestObjPertDeridgeKnownAnswers(t *testing.T) {
	omega := []float64{0.7, -1.3, 0.2}
	const n = 50
	// A symmetric matrix (average form), eigenvalues −0.079, 0.023, 0.056,
	// scaled to sum form by n.
	avgSmall := []float64{
		0.02, 0.05, -0.01,
		0.05, -0.03, 0.04,
		-0.01, 0.04, 0.01,
	}
	// Positive definite, eigenvalues well above the floor.
	avgBig := []float64{
		2.0, 0.3, -0.1,
		0.3, 1.5, 0.2,
		-0.1, 0.2, 1.0,
	}
	sum := func(a []float64) []float64 {
		out := make([]float64, len(a))
		for i, v := range a {
			out[i] = v * n
		}
		return out
	}
	const lambda = 0.01
	for _, tc := range []struct {
		name  string
		avg   []float64
		floor float64
		want  func() []float64
	}{
		{"all eigenvalues below the floor: rescaling", avgSmall, 0.1, func() []float64 {
			out := make([]float64, len(omega))
			for i, w := range omega {
				out[i] = (1 + lambda/0.1) * w
			}
			return out
		}},
		{"eigenvalues above the floor: one Newton step", avgBig, 0.1, func() []float64 {
			var ch mat.Cholesky
			if !ch.Factorize(mat.NewSymDense(3, append([]float64(nil), avgBig...))) {
				t.Fatal("test matrix not positive definite")
			}
			var x mat.VecDense
			if err := ch.SolveVecTo(&x, mat.NewVecDense(3, append([]float64(nil), omega...))); err != nil {
				t.Fatal(err)
			}
			out := make([]float64, len(omega))
			for i, w := range omega {
				out[i] = w + lambda*x.AtVec(i)
			}
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ObjPertDeridge(omega, sum(tc.avg), n, lambda, tc.floor)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.want() {
				if math.Abs(got[i]-w) > 1e-12 {
					t.Errorf("β[%d] = %.15g, want %.15g", i, got[i], w)
				}
			}
		})
	}
}
