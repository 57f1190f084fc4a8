package inference

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestExtrapolationPerDirection checks the fixed-point extrapolation of the
// gradient forms against an independent matrix computation: with Λ2's
// eigenvectors V (a rotation by 30°) and damping d_k, the contraction is
// F = V diag(f_k) Vᵀ, f_k = 1 − (1 − f)·d_k, and the estimate is
// (I − F^J)⁻¹(offset + w − F^J·start); the noise scale is
// V diag(√((1 − f_k^{2J})/(1 − f_k²))/(1 − f_k^J)) Vᵀ. Without damping the
// map is the scalar one, (w − f^J·start)/(1 − f^J).
func TestExtrapolationPerDirection(t *testing.T) {
	c, s := math.Cos(math.Pi/6), math.Sin(math.Pi/6)
	v := mat.NewDense(2, 2, []float64{c, -s, s, c})
	const f, j = 0.6, 3.0
	w, start, off := []float64{0.3, -0.2}, []float64{0.5, 0.1}, []float64{0.05, 0.02}
	for _, tc := range []struct {
		name string
		damp []float64
	}{{"no ridge", []float64{1, 1}}, {"ridge", []float64{0.9, 0.4}}} {
		ex := &extrapolation{f: f, j: j, start: start, offset: off, damp: tc.damp, vecs: v}
		// Independent: build F^J and the scale matrix explicitly.
		fj, sc := mat.NewDense(2, 2, nil), mat.NewDense(2, 2, nil)
		for k, dk := range tc.damp {
			fk := 1 - (1-f)*dk
			col := mat.NewVecDense(2, []float64{v.At(0, k), v.At(1, k)})
			var outer mat.Dense
			outer.Outer(1, col, col)
			var a, b mat.Dense
			a.Scale(math.Pow(fk, j), &outer)
			b.Scale(math.Sqrt((1-math.Pow(fk, 2*j))/(1-fk*fk))/(1-math.Pow(fk, j)), &outer)
			fj.Add(fj, &a)
			sc.Add(sc, &b)
		}
		var imf mat.Dense
		imf.Sub(mat.NewDiagDense(2, []float64{1, 1}), fj)
		rhs := mat.NewVecDense(2, []float64{off[0] + w[0], off[1] + w[1]})
		var fs mat.VecDense
		fs.MulVec(fj, mat.NewVecDense(2, start))
		rhs.SubVec(rhs, &fs)
		var want mat.VecDense
		if err := want.SolveVec(&imf, rhs); err != nil {
			t.Fatal(err)
		}
		got := ex.at(w, f)
		var wantScale mat.VecDense
		wantScale.MulVec(sc, mat.NewVecDense(2, w))
		gotScale := ex.scale(w)
		for i := range got {
			if math.Abs(got[i]-want.AtVec(i)) > 1e-12 || math.Abs(gotScale[i]-wantScale.AtVec(i)) > 1e-12 {
				t.Errorf("%s: estimate %v, want %v; scale %v, want %v", tc.name, got, mat.Formatted(&want), gotScale, mat.Formatted(&wantScale))
			}
		}
	}
	// Without damping: the scalar map.
	ex := &extrapolation{f: f, j: j, start: start}
	g := math.Pow(f, j)
	for i, x := range ex.at(w, f) {
		if want := (w[i] - g*start[i]) / (1 - g); math.Abs(x-want) > 1e-15 {
			t.Errorf("scalar map: %v, want %v", x, want)
		}
	}
}
