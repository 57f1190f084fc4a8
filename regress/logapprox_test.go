package regress

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestLogisticQuadraticCoefficients checks the coefficients against
// independent computations: Taylor is (log 2, ½, ⅛); the least-squares
// quadratic has the normal-equation residual orthogonal to 1, z and z² on
// [−R, R] (checked by a separate trapezoid quadrature); the Chebyshev one
// has its error orthogonal to T0, T1, T2 under the Chebyshev weight; both
// beat Taylor's worst error on the range; a1 is ½ (odd part exact).
func TestLogisticQuadraticCoefficients(t *testing.T) {
	tq, err := NewLogisticQuadratic("", 0)
	if err != nil || tq != TaylorQuadratic || tq.A0 != math.Ln2 || tq.A1 != 0.5 || tq.A2 != 0.125 {
		t.Fatalf("taylor = %+v, %v", tq, err)
	}
	for _, c := range []struct {
		name string
		r    float64
	}{{ApproxLeastSquares, 1}, {ApproxLeastSquares, 4}, {ApproxLeastSquares, 10}, {ApproxChebyshev, 0.5}, {ApproxChebyshev, 4}, {ApproxChebyshev, 12}} {
		lq, err := NewLogisticQuadratic(c.name, c.r)
		if err != nil {
			t.Fatal(err)
		}
		if lq.A1 != 0.5 || !(lq.A2 > 0 && lq.A2 < 0.125) || lq.Range != c.r {
			t.Fatalf("%s R=%v: %+v", c.name, c.r, lq)
		}
		resid := func(z float64) float64 { return softplus(z) - lq.Eval(z) }
		const m = 200000
		var ip [3]float64
		for i := 0; i <= m; i++ {
			var z, w float64
			if c.name == ApproxLeastSquares {
				z = -c.r + 2*c.r*float64(i)/m
				w = 1.0
				if i == 0 || i == m {
					w = 0.5
				}
			} else {
				if i == m {
					break
				}
				th := (float64(i) + 0.5) * math.Pi / m
				z, w = c.r*math.Cos(th), 1
			}
			v := resid(z) * w
			ip[0] += v
			ip[1] += v * z / c.r
			ip[2] += v * z * z / (c.r * c.r)
		}
		scale := 0.0
		for i := 0; i <= m; i++ {
			scale += softplus(-c.r + 2*c.r*float64(i)/m)
		}
		for k, v := range ip {
			if math.Abs(v) > 1e-9*scale {
				t.Errorf("%s R=%v: residual not orthogonal to z^%d: %v", c.name, c.r, k, v/scale)
			}
		}
		worst := func(f func(float64) float64) float64 {
			w := 0.0
			for i := 0; i <= 1000; i++ {
				z := -c.r + 2*c.r*float64(i)/1000
				w = math.Max(w, math.Abs(softplus(z)-f(z)))
			}
			return w
		}
		if c.r >= 1 && worst(lq.Eval) >= worst(TaylorQuadratic.Eval) {
			t.Errorf("%s R=%v: worst error %v not below Taylor's %v", c.name, c.r, worst(lq.Eval), worst(TaylorQuadratic.Eval))
		}
	}
	for _, bad := range []struct {
		name string
		r    float64
	}{{"pade", 4}, {ApproxChebyshev, -1}, {ApproxChebyshev, math.NaN()}, {ApproxLeastSquares, 1e6}} {
		if _, err := NewLogisticQuadratic(bad.name, bad.r); err == nil {
			t.Errorf("%q R=%v accepted", bad.name, bad.r)
		}
	}
}

// TestLogisticApproxSensitivity checks the sensitivities of logapprox.go:
// 2,000 random neighbouring pairs in the unit ball (500 with -short; per
// approximation and range) never exceed them, the
// extremal pairs (e1 with y = 0 against y = 1; e1 against e2) attain the
// Gaussian FM bounds, and fm's L1 and relaxed-fm's L2 bounds hold for the
// whole released vector. Every approximation is at most Taylor's.
func TestLogisticApproxSensitivity(t *testing.T) {
	const d = 5
	rng := rand.New(rand.NewPCG(16, 1))
	unit := func() []float64 { return inUnitBall(rng, d) }
	diff := func(lq LogisticQuadratic, a, b []float64) (d1, d2, l1 float64) {
		qa, err := ObjectiveApprox(Logistic, stats(t, a, d+1), lq)
		if err != nil {
			t.Fatal(err)
		}
		qb, _ := ObjectiveApprox(Logistic, stats(t, b, d+1), lq)
		for i := range qa.Lambda1 {
			v := qa.Lambda1[i] - qb.Lambda1[i]
			d1 += v * v
			l1 += math.Abs(v)
		}
		for i := range qa.Upper {
			v := qa.Upper[i] - qb.Upper[i]
			d2 += v * v
			l1 += math.Abs(v)
		}
		return math.Sqrt(d1), math.Sqrt(d2), l1
	}
	taylor, _ := SensitivitiesForApprox(Logistic, d, 1, TaylorQuadratic)
	pairs := 2000
	if testing.Short() {
		pairs = 500
	}
	for _, name := range []string{ApproxTaylor, ApproxChebyshev, ApproxLeastSquares} {
		for _, r := range []float64{2, DefaultLogisticRange, 8} {
			lq, _ := NewLogisticQuadratic(name, r)
			sens, err := SensitivitiesForApprox(Logistic, d, 1, lq)
			if err != nil {
				t.Fatal(err)
			}
			if sens.Lambda1 != taylor.Lambda1 || sens.Lambda2 > taylor.Lambda2 || sens.FM > taylor.FM || sens.Relaxed > taylor.Relaxed {
				t.Fatalf("%s R=%v: %+v exceeds Taylor's %+v", name, r, sens, taylor)
			}
			for i := 0; i < pairs; i++ {
				a, b := append(unit(), float64(rng.IntN(2))), append(unit(), float64(rng.IntN(2)))
				d1, d2, l1 := diff(lq, a, b)
				if d1 > sens.Lambda1 || d2 > sens.Lambda2 || l1 > sens.FM || math.Hypot(d1, d2) > sens.Relaxed {
					t.Fatalf("%s R=%v: rows %v %v give (%v, %v, L1 %v) > %+v", name, r, a, b, d1, d2, l1, sens)
				}
			}
			e1 := []float64{1, 0, 0, 0, 0}
			e2 := []float64{0, 1, 0, 0, 0}
			d1, _, _ := diff(lq, append(append([]float64{}, e1...), 0), append(append([]float64{}, e1...), 1))
			_, d2, _ := diff(lq, append(append([]float64{}, e1...), 0), append(append([]float64{}, e2...), 0))
			if math.Abs(d1-sens.Lambda1) > 1e-12 || math.Abs(d2-sens.Lambda2) > 1e-12 {
				t.Fatalf("%s R=%v: extremal pairs give %v, %v; sensitivities %v, %v are not attained", name, r, d1, d2, sens.Lambda1, sens.Lambda2)
			}
		}
	}
}

// TestLogisticApproxIsRescaledTaylor checks the consequence derived in
// logapprox.go: the noise-free fit with a symmetric-range approximation is
// the Taylor fit times 1/(8·a2), and Gaussian FM's noise on Λ2 shrinks by
// 8·a2 while Λ1's is unchanged.
func TestLogisticApproxIsRescaledTaylor(t *testing.T) {
	rows, _ := xpRows(Logistic, 4000, 6, 3)
	data := xpData(t, rows, 7)
	for _, mech := range []string{"truncated", "gaussian-fm", "relaxed-fm", "fm"} {
		est, _ := New(mech)
		fit := func(approx string) (*Result, LogisticQuadratic) {
			cfg := Config{Kind: Logistic, Epsilon: 1, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(11), LogisticApprox: approx}
			if mech == "fm" {
				cfg.Delta = 0
			}
			if !est.Private() {
				cfg.Epsilon, cfg.Delta, cfg.Source = 0, 0, nil
			}
			res, err := est.Fit(context.Background(), data, cfg)
			if err != nil {
				t.Fatal(err)
			}
			lq, _ := cfg.logisticQuadratic()
			return res, lq
		}
		tr, _ := fit("")
		for _, approx := range []string{ApproxChebyshev, ApproxLeastSquares} {
			res, lq := fit(approx)
			// Without noise the fits are rescaled copies, so trimming agrees;
			// with noise the draws for different σ are not coupled, so a
			// borderline direction may be trimmed in one fit and not the other.
			if !est.Private() && res.Trimmed != tr.Trimmed {
				t.Fatalf("%s %s: trimmed %d, Taylor %d", mech, approx, res.Trimmed, tr.Trimmed)
			}
			s := 1 / (8 * lq.A2)
			if !est.Private() {
				for j := range res.Coef {
					if math.Abs(res.Coef[j]-s*tr.Coef[j]) > 1e-9*(1+math.Abs(s*tr.Coef[j])) {
						t.Fatalf("%s %s: coef %d = %v, Taylor×%.4f = %v", mech, approx, j, res.Coef[j], s, s*tr.Coef[j])
					}
				}
			} else {
				// With noise the claim is in distribution: the Λ2 part of
				// every scale shrinks by 8·a2 and Λ1's is unchanged (the
				// sampler's draws for different σ are not coupled).
				rp, tp := res.Privacy.Releases, tr.Privacy.Releases
				if mech == "gaussian-fm" {
					if rp[0].Scale != tp[0].Scale || math.Abs(rp[1].Scale*s/tp[1].Scale-1) > 1e-6 {
						t.Fatalf("%s %s: scales %v, %v; Taylor %v, %v; want Λ1 equal and Λ2 × %v", mech, approx, rp[0].Scale, rp[1].Scale, tp[0].Scale, tp[1].Scale, 1/s)
					}
				} else if !(rp[0].Scale < tp[0].Scale) {
					t.Fatalf("%s %s: scale %v not below Taylor's %v", mech, approx, rp[0].Scale, tp[0].Scale)
				}
			}
			if est.Private() && !strings.Contains(strings.Join(res.Privacy.PostProcessing, "\n"), approx) {
				t.Errorf("%s %s: report does not name the approximation: %v", mech, approx, res.Privacy.PostProcessing)
			}
		}
	}
}

// TestLogisticApproxDefaultIsPublic: the approximation (and so every
// sensitivity and noise scale) is the same for two datasets of equal N and
// d that differ in every row, and depends only on the configuration.
func TestLogisticApproxDefaultIsPublic(t *testing.T) {
	a, _ := xpRows(Logistic, 3000, 6, 1)
	b, _ := xpRows(Logistic, 3000, 6, 2)
	for _, approx := range []string{"", ApproxChebyshev, ApproxLeastSquares} {
		var scales [2][]float64
		for i, rows := range [][]float64{a, b} {
			est, _ := New("gaussian-fm")
			res, err := est.Fit(context.Background(), xpData(t, rows, 7), Config{Kind: Logistic, Epsilon: 0.5, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(1), LogisticApprox: approx})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Privacy.Releases {
				scales[i] = append(scales[i], r.Sensitivity, r.Scale)
			}
		}
		for j := range scales[0] {
			if scales[0][j] != scales[1][j] {
				t.Fatalf("%q: released sensitivity/scale %d differs between datasets: %v vs %v", approx, j, scales[0], scales[1])
			}
		}
	}
	if _, err := (&Config{LogisticApprox: ApproxChebyshev, LogisticRange: math.Inf(1)}).logisticQuadratic(); err == nil {
		t.Error("infinite range accepted")
	}
}

// ExampleNewLogisticQuadratic compares the seed's Taylor quadratic with the
// Chebyshev one on the default public range |xᵀω| ≤ 4, and the Gaussian FM
// sensitivities they give for d = 10 features and N = 10,000 rows.
func ExampleNewLogisticQuadratic() {
	for _, name := range []string{ApproxTaylor, ApproxChebyshev, ApproxLeastSquares} {
		lq, err := NewLogisticQuadratic(name, 0)
		if err != nil {
			fmt.Println(err)
			return
		}
		s, _ := SensitivitiesForApprox(Logistic, 10, 10000, lq)
		fmt.Printf("%-13s a1 = %.2f, a2 = %.4f, Δ1 = %.3g, Δ2 = %.3g\n", name, lq.A1, lq.A2, s.Lambda1, s.Lambda2)
	}
	// Output:
	// taylor        a1 = 0.50, a2 = 0.1250, Δ1 = 0.0001, Δ2 = 1.77e-05
	// chebyshev     a1 = 0.50, a2 = 0.0817, Δ1 = 0.0001, Δ2 = 1.15e-05
	// least-squares a1 = 0.50, a2 = 0.0857, Δ1 = 0.0001, Δ2 = 1.21e-05
}
