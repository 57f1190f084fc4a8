package regress

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// TestObjPertHessianPrintedProfile fits logistic objpert with a Hessian
// share and recomputes the guarantee from the printed report alone,
// independently of the plan's code: the three releases' whitened
// sensitivities (the objective gradient's 2 from its formula, the output's
// and the Hessian's printed figures with the grid margin of
// noise.GaussianCalibrationSensitivity) in δ ≤ 2δ_G(ε − J; √(μ1² + μ2² +
// μ3²)) + 2δ_G(ε − J; √(μ1²/2 + μ2² + μ3²)). It must not exceed the printed
// δ, must equal the plan's achieved δ (relative 1e-6: the plan also inflates by the encoding tolerance), and halving the
// Hessian's noise must break the target (the Hessian release is in the
// bound). The Hessian's printed sensitivity is √2/4 up to the encoding
// tolerance and the summation slack.
func TestObjPertHessianPrintedProfile(t *testing.T) {
	const n, d, eps, delta = 3000, 5, 0.7, 1e-6
	rows, _ := xpRows(Logistic, n, d, 3)
	cfg := Config{Kind: Logistic, Epsilon: eps, Delta: delta, ObjPert: ObjPertOptions{HessianShare: 0.1}, Source: noise.NewInsecureSeeded(3)}
	res, err := objPert{}.Fit(context.Background(), xpData(t, rows, d+1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Privacy
	if len(p.Releases) != 3 || res.ObjPert == nil || len(res.ObjPert.Hessian) != d*d {
		t.Fatalf("want three releases and the Hessian: %+v", p)
	}
	if !strings.Contains(p.Accountant, "μ3") {
		t.Errorf("the accountant text does not name the Hessian's μ3: %s", p.Accountant)
	}
	r0, r1, r3 := p.Releases[0], p.Releases[1], p.Releases[2]
	if want := math.Sqrt2 / 4; !(r3.Sensitivity >= want && r3.Sensitivity <= want*(1+1e-8)) {
		t.Errorf("Hessian sensitivity %v, formula √2/4 = %v", r3.Sensitivity, want)
	}
	if r3.Entries != d*(d+1)/2 {
		t.Errorf("Hessian release has %d entries, want %d", r3.Entries, d*(d+1)/2)
	}
	lambda := DefaultObjPertLambda(Logistic, eps, n)
	indep := func(s0, s1, s3 float64) float64 {
		e := eps - math.Log1p(0.25*(1+1e-9)/(n*lambda))
		mu1 := 2 / s0
		mu2 := noise.GaussianCalibrationSensitivity(r1.Sensitivity, s1, d) / s1
		mu3 := noise.GaussianCalibrationSensitivity(r3.Sensitivity, s3, d*(d+1)/2) / s3
		h := func(mu float64) float64 {
			v, err := accounting.AnalyticGaussianDelta(e, 1, mu)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		return 2*h(math.Sqrt(mu1*mu1+mu2*mu2+mu3*mu3)) + 2*h(math.Sqrt(mu1*mu1/2+mu2*mu2+mu3*mu3))
	}
	got := indep(r0.Scale, r1.Scale, r3.Scale)
	if got > p.Delta {
		t.Errorf("the printed noise gives δ = %v > printed δ = %v", got, p.Delta)
	}
	if a := res.ObjPert.Plan.AchievedDelta; math.Abs(got-a) > 1e-6*a {
		t.Errorf("recomputed δ = %.12g, the plan's achieved δ = %.12g", got, a)
	}
	if dh := indep(r0.Scale, r1.Scale, r3.Scale/2); dh <= p.Delta {
		t.Errorf("half the Hessian noise still gives δ = %v ≤ %v: the release is not in the bound", dh, p.Delta)
	}
	// The same fit without a Hessian share: two releases, more objective
	// noise budget (smaller σ1).
	res0, err := objPert{}.Fit(context.Background(), xpData(t, rows, d+1), Config{Kind: Logistic, Epsilon: eps, Delta: delta, Source: noise.NewInsecureSeeded(3)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res0.Privacy.Releases) != 2 || res0.ObjPert != nil || !(res0.Privacy.Releases[0].Scale < r0.Scale) {
		t.Errorf("without a Hessian share: %d releases, σ1 %v (with: %v)", len(res0.Privacy.Releases), res0.Privacy.Releases[0].Scale, r0.Scale)
	}
}

// TestObjPertHessianSensitivityExtremal runs the extremal neighbours of
// the Hessian release: the replaced row x = e1 and its replacement x' = e2
// at a point where both weights are ¼ (xᵀω = 0), so S(D) − S(D') =
// ¼(e1e1ᵀ − e2e2ᵀ) with upper-triangle norm exactly √2/4. The computed
// difference must be within the sensitivity and reach it (to 1e-8; the encoding tolerance is 1e-9): the
// bound is tight, and any smaller constant fails here.
func TestObjPertHessianSensitivityExtremal(t *testing.T) {
	const d = 4
	k := d + 1
	rows, _ := xpRows(Logistic, 200, d, 7)
	w := []float64{0, 0, 0.3, -0.2}
	a := append([]float64(nil), rows...)
	b := append([]float64(nil), rows...)
	copy(a[:k], []float64{1, 0, 0, 0, 1})
	copy(b[:k], []float64{0, 1, 0, 0, 0})
	sa, sb := objPertHessianStat(a, k, w), objPertHessianStat(b, k, w)
	var s2 float64
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := sa[i*d+j] - sb[i*d+j]
			s2 += v * v
		}
	}
	sens := objPertHessianSensitivity(200, d)
	if diff := math.Sqrt(s2); diff > sens || diff < sens*(1-1e-8) {
		t.Errorf("extremal pair moves the upper triangle by %.15g, sensitivity %.15g", diff, sens)
	}
}
