package regress

import (
	"bytes"
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/schema"
)

// loadExampleRows encodes an embedded example table with its schema.
func loadExampleRows(t *testing.T, file, name string) ([]float64, int) {
	t.Helper()
	b, err := exampledata.Schema(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exampledata.File(file)
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := dataset.LoadReader(context.Background(), bytes.NewReader(raw), file, s, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tb.Rows, tb.K
}

// ridgeLogitIRLS is an independent penalised logistic maximum-likelihood
// fit for the tests: argmin Σ_i log(1 + e^{−t_i ωᵀx_i}) + (c/2)‖ω‖² (sum
// form, t = 2y − 1) by plain iteratively reweighted least squares (full
// Newton steps solved by gonum's Cholesky, no line search), 100 steps or
// until the step is below 1e-13. c = 0 is the unpenalised MLE.
func ridgeLogitIRLS(t *testing.T, rows []float64, k int, c float64) []float64 {
	t.Helper()
	d := k - 1
	n := len(rows) / k
	w := make([]float64, d)
	for it := 0; it < 100; it++ {
		h := mat.NewSymDense(d, nil)
		g := mat.NewVecDense(d, nil)
		for i := 0; i < n; i++ {
			x := rows[i*k : i*k+d]
			z := 0.0
			for j := range x {
				z += x[j] * w[j]
			}
			p := 1 / (1 + math.Exp(-z))
			r := rows[i*k+d] - p
			for a := 0; a < d; a++ {
				g.SetVec(a, g.AtVec(a)+r*x[a])
				for b := a; b < d; b++ {
					h.SetSym(a, b, h.At(a, b)+p*(1-p)*x[a]*x[b])
				}
			}
		}
		for a := 0; a < d; a++ {
			g.SetVec(a, g.AtVec(a)-c*w[a])
			h.SetSym(a, a, h.At(a, a)+c)
		}
		var ch mat.Cholesky
		if !ch.Factorize(h) {
			t.Fatal("IRLS: Hessian not positive definite")
		}
		var s mat.VecDense
		if err := ch.SolveVecTo(&s, g); err != nil {
			t.Fatal(err)
		}
		step := 0.0
		for j := range w {
			w[j] += s.AtVec(j)
			step = math.Max(step, math.Abs(s.AtVec(j)))
		}
		if step < 1e-13 {
			return w
		}
	}
	t.Fatal("IRLS did not converge in 100 steps")
	return nil
}

// relDiff returns ‖a − b‖/‖b‖ and max_j |a_j − b_j|/|b_j| over the
// coefficients with |b_j| ≥ 0.05‖b‖_∞ (the relative error of a coefficient
// near zero says nothing; its absolute error is in the first figure).
func relDiff(a, b []float64) (norm, coord float64) {
	var num, den, bmax float64
	for j := range b {
		num += (a[j] - b[j]) * (a[j] - b[j])
		den += b[j] * b[j]
		bmax = math.Max(bmax, math.Abs(b[j]))
	}
	for j := range b {
		if math.Abs(b[j]) >= 0.05*bmax {
			coord = math.Max(coord, math.Abs(a[j]-b[j])/math.Abs(b[j]))
		}
	}
	return math.Sqrt(num / den), coord
}

// TestObjPertNoiseFreeIsMLE checks issue 25's estimand claim for the
// recommended logistic mechanism: objective perturbation with its noise
// switched off (b = 0, no output noise, the Hessian without noise; the
// plan's public Λ and γ) against an independent IRLS (ridgeLogitIRLS, not
// the mechanism's Newton code), within 2% in norm and on every coefficient
// above 5% of the largest.
//
// SmokeBan has an MLE. The fit itself minimises the objective with the
// regulariser (Λ/2)‖ω‖², which shrinks SmokeBan's weak encoded directions
// by several percent even at the cap of the Jacobian term (NΛ = β/(e − 1)
// = 0.146 in sum form) and by up to 60% at ε = 1 (NΛ = 2.4). The printed
// estimate is the de-ridged one, ObjPertDeridge with the released Hessian
// (floor Λ, the inference package's rule without noise): it must be within
// 2% of the MLE at ε = 20 and ε = 1. breast_cancer's classes are nearly
// separable under its schema (the MLE does not exist), so the fit is
// compared with the ridge-penalised MLE of the same penalty NΛ.
func TestObjPertNoiseFreeIsMLE(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		file, name string
		eps        float64
		deridge    bool // compare the de-ridged estimate with the MLE; else the fit with the ridge MLE
	}{
		{"SmokeBan.csv", "smokeban", 20, true},
		{"SmokeBan.csv", "smokeban", 1, true},
		{"breast_cancer.csv", "breast_cancer", 20, false},
		{"breast_cancer.csv", "breast_cancer", 1, false},
	} {
		rows, k := loadExampleRows(t, tc.file, tc.name)
		d := k - 1
		n := int64(len(rows) / k)
		plan, err := PlanObjPert(Logistic, tc.eps, 1e-6, n, d, ObjPertOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := objPertSolve(ctx, Data{Stats: suffstatFor(rows, k), Rows: rows}, rows, plan, make([]float64, d))
		if err != nil {
			t.Fatalf("%s ε=%g: %v", tc.name, tc.eps, err)
		}
		c := float64(n) * plan.Lambda
		what := "ridge MLE (same NΛ)"
		if tc.deridge {
			ridgeN, ridgeC := relDiff(w, ridgeLogitIRLS(t, rows, k, 0))
			t.Logf("%s ε=%g: the fit before de-ridging is %.3g (norm) / %.3g (coordinate) from the MLE", tc.name, tc.eps, ridgeN, ridgeC)
			if w, err = ObjPertDeridge(w, objPertHessianStat(rows, k, w), n, plan.Lambda, plan.Lambda); err != nil {
				t.Fatal(err)
			}
			c, what = 0, "MLE"
		}
		ref := ridgeLogitIRLS(t, rows, k, c)
		norm, coord := relDiff(w, ref)
		t.Logf("%s (N=%d, d=%d) ε=%g: NΛ = %.4g; noise-free objpert vs %s: ‖Δ‖/‖β‖ = %.2e, max coordinate rel. error %.2e",
			tc.name, n, d, tc.eps, float64(n)*plan.Lambda, what, norm, coord)
		if norm > 0.02 || coord > 0.02 {
			t.Errorf("%s ε=%g: noise-free objpert is %.3g (norm) / %.3g (largest coordinate) from the %s, want ≤ 2%%", tc.name, tc.eps, norm, coord, what)
		}
	}
}
