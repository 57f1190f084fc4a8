package regress

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestReleasedRecordsTheNoise checks that every FM-family fit and DP-IRLS
// record their released objective with the per-entry noise variance of their
// report, and that the recorded objective is the one the fit minimised (its
// ridged minimiser is the fitted coefficient vector).
func TestReleasedRecordsTheNoise(t *testing.T) {
	rows, _ := xpRows(Linear, 3000, 3, 1)
	data := xpData(t, rows, 4)
	for _, c := range []struct {
		mech   string
		kind   Kind
		noises [2]string
		vars   func(p []float64) (float64, float64) // from the report's scales
		form   string                               // DP-IRLS form
	}{
		{"fm", Linear, [2]string{"laplace", "laplace"}, func(s []float64) (float64, float64) { return 2 * s[0] * s[0], 2 * s[0] * s[0] }, ""},
		{"relaxed-fm", Linear, [2]string{"gaussian", "gaussian"}, func(s []float64) (float64, float64) { return s[0] * s[0], s[0] * s[0] }, ""},
		{"gaussian-fm", Linear, [2]string{"gaussian", "gaussian"}, func(s []float64) (float64, float64) { return s[0] * s[0], s[1] * s[1] }, ""},
		// DP-IRLS lists the warm start's two releases first (they come
		// first), then the iterations' first and second moments.
		{"irls", Robust, [2]string{"gaussian", "gaussian"}, func(s []float64) (float64, float64) { return 4 * s[2] * s[2], s[3] * s[3] }, IRLSFormMoments},
		{"irls", Robust, [2]string{"gaussian", "gaussian"}, func(s []float64) (float64, float64) { return 4 * s[2] * s[2], s[3] * s[3] }, IRLSFormGradient},
		// Preconditioned: Λ2 = G̃/scale, so its noise is the warm start's Λ2
		// noise (the second release) over scale, and so is the ridge.
		{"irls", Robust, [2]string{"gaussian", "gaussian"}, func(s []float64) (float64, float64) { return 4 * s[2] * s[2], s[1] * s[1] }, ""},
	} {
		est, _ := New(c.mech)
		res, err := est.Fit(context.Background(), data, Config{Kind: c.kind, Epsilon: 1, Delta: 1e-6, Lambda: -1, Source: noise.NewInsecureSeeded(2), IRLS: IRLSOptions{Form: c.form}})
		if err != nil {
			t.Fatal(err)
		}
		rel := res.Released
		if err := rel.Validate(); err != nil {
			t.Fatalf("%s: %v", c.mech, err)
		}
		var scales []float64
		for _, r := range res.Privacy.Releases {
			scales = append(scales, r.Scale)
		}
		v1, v2 := c.vars(scales)
		tol := 0.0 // bitwise
		if rel.Form == IRLSFormPreconditioned {
			scale := DefaultLambdaFactor * scales[1] / rel.Ridge // the fit's ridge is λ_FM/scale
			v2 /= scale * scale
			tol = 1e-12
		}
		if rel.Noise1 != c.noises[0] || rel.Noise2 != c.noises[1] || rel.VarLambda1 != v1 || math.Abs(rel.VarLambda2-v2) > tol*v2 || rel.N != 3000 {
			t.Errorf("%s %s: recorded %+v, want noises %v and variances %v, %v", c.mech, rel.Form, rel, c.noises, v1, v2)
		}
		w, _, err := rel.Objective.Minimize(NoisyPostProcess(rel.Ridge))
		if err != nil {
			t.Fatal(err)
		}
		if (rel.Start != nil) != (c.mech == "irls" && rel.Form != IRLSFormMoments) {
			t.Errorf("%s %s: recorded step start %v", c.mech, rel.Form, rel.Start)
		}
		for i := range w {
			if rel.Start != nil {
				w[i] += rel.Start[i]
			}
			if math.Abs(w[i]-res.Coef[i]) > tol*(1+math.Abs(res.Coef[i])) {
				t.Errorf("%s %s: the recorded objective's minimiser (plus the step start) %v is not the fit %v", c.mech, rel.Form, w, res.Coef)
				break
			}
		}
	}
	// Non-FM mechanisms record nothing.
	est, _ := New("nonprivate")
	res, err := est.Fit(context.Background(), data, Config{Kind: Linear})
	if err != nil || res.Released != nil {
		t.Errorf("nonprivate recorded a release: %v %v", res.Released, err)
	}
}

// TestReleasedIRLSWarmStart checks what DP-IRLS records for inference with
// the default warm start and with the seed's cold start: the iteration
// count, the floor, and, for the warm start, exactly the noisy objective it
// released (recomputed with the same seeded draws, which the warm start
// takes first) with its noise variances and ridge; Validate rejects a warm
// start that does not match the fit.
func TestReleasedIRLSWarmStart(t *testing.T) {
	rows, _ := xpRows(Linear, 3000, 3, 1)
	data := xpData(t, rows, 4)
	est, _ := New("irls")
	for _, c := range []struct {
		name  string
		warm  float64
		iters int
		form  string
	}{{"default warm start", 0, GradientIRLSIterations(IRLSFormPreconditioned, 3000, 3, 1), ""},
		{"moments warm start", 0, DefaultWarmIRLSIterations, IRLSFormMoments},
		{"cold start", -1, DefaultIRLSIterations, ""}} {
		cfg := Config{Kind: Robust, Epsilon: 1, Delta: 1e-6, Lambda: -1, Source: noise.NewInsecureSeeded(5), IRLS: IRLSOptions{WarmStart: c.warm, Form: c.form}}
		res, err := est.Fit(context.Background(), data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rel := res.Released
		if err := rel.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		plan, err := PlanIRLS(1, 1e-6, 3000, 3, cfg.IRLS)
		if err != nil {
			t.Fatal(err)
		}
		if rel.Iterations != c.iters || rel.ResidualFloor != plan.ResidualFloor {
			t.Errorf("%s: recorded J = %d, η = %v; want %d, %v", c.name, rel.Iterations, rel.ResidualFloor, c.iters, plan.ResidualFloor)
		}
		if c.warm < 0 {
			if rel.Warm != nil {
				t.Errorf("%s: recorded a warm start", c.name)
			}
			continue
		}
		w := rel.Warm
		if w == nil {
			t.Fatalf("%s: no warm start recorded", c.name)
		}
		lam := cfg.lambda(plan.FMTau2)
		if w.Kind != Linear || w.N != 3000 || w.VarLambda1 != plan.FMTau1*plan.FMTau1 || w.VarLambda2 != plan.FMTau2*plan.FMTau2 ||
			w.Noise1 != "gaussian" || w.Noise2 != "gaussian" || w.Ridge != lam || w.MinEigen != TrimFraction*lam || w.Objective.Lambda0 != 0 {
			t.Errorf("%s: warm start recorded as %+v", c.name, w)
		}
		q, err := Objective(Linear, data.Stats)
		if err != nil {
			t.Fatal(err)
		}
		src := noise.NewInsecureSeeded(5)
		if err := noise.AddGaussian(src, q.Lambda1, plan.FMTau1); err != nil {
			t.Fatal(err)
		}
		if err := noise.AddGaussian(src, q.Upper, plan.FMTau2); err != nil {
			t.Fatal(err)
		}
		for i, v := range append(append([]float64(nil), q.Lambda1...), q.Upper...) {
			got := append(append([]float64(nil), w.Objective.Lambda1...), w.Objective.Upper...)[i]
			if got != v {
				t.Fatalf("%s: recorded warm-start entry %d = %v, released %v", c.name, i, got, v)
			}
		}
		bad := *rel
		wb := *w
		wb.N++
		bad.Warm = &wb
		if bad.Validate() == nil {
			t.Errorf("%s: a warm start of another N passed Validate", c.name)
		}
		bad.Warm, bad.Kind = w, Linear
		if bad.Validate() == nil {
			t.Errorf("%s: a linear fit with a warm start passed Validate", c.name)
		}
	}
}

// TestExtraReleaseSensitivities checks the sensitivities of the two extra
// releases of the confidence intervals on neighbouring datasets built to
// maximise the change (the extreme row replaced by its opposite), and that
// the stated sensitivity is the exact bound plus at most a relative 1e-8.
func TestExtraReleaseSensitivities(t *testing.T) {
	const n = 2000
	rng := rand.New(rand.NewPCG(3, 4))
	rows := make([]float64, 0, 4*n)
	s := 1 / math.Sqrt(3)
	for i := 0; i < n; i++ {
		rows = append(rows, s, s*(2*rng.Float64()-1), s*(2*rng.Float64()-1), 0.5*(2*rng.Float64()-1))
	}
	// Target moment: y = 0 against y = ±1 in the first row changes Σy² by 1.
	a, b := append([]float64(nil), rows...), append([]float64(nil), rows...)
	a[3], b[3] = 0, 1
	sens, err := TargetMomentSensitivity(n)
	if err != nil {
		t.Fatal(err)
	}
	ma, mb := stats(t, a, 4), stats(t, b, 4)
	ma.Flush()
	mb.Flush()
	diff := math.Abs(ma.At(3, 3)/n - mb.At(3, 3)/n)
	if diff > sens || sens < 1.0/n || sens > 1.0/n*(1+1e-8) {
		t.Errorf("target moment: neighbour difference %v, sensitivity %v (exact 1/N = %v)", diff, sens, 1.0/n)
	}
	// Robust scale at w = 0, η = 0.2: a residual of 0 (η·s = 1, inside, ψ² = 0)
	// against one of 1 (η·s = η, outside, ψ² = 1).
	const eta = 0.2
	a[3], b[3] = 0, 1
	w := []float64{0, 0, 0}
	means := func(r []float64) []float64 {
		var m0, m1, m2 float64
		for i := 0; i < n; i++ {
			res := r[i*4+3]
			sw := 1 / math.Max(eta, math.Abs(res))
			m0 += eta * sw
			if math.Abs(res) < eta {
				m1++
			}
			m2 += res * sw * res * sw
		}
		return []float64{m0 / n, m1 / n, m2 / n}
	}
	rs, err := RobustScaleSensitivity(n, eta)
	if err != nil {
		t.Fatal(err)
	}
	exact := 3.0 / n
	pa, pb := means(a), means(b)
	l1 := 0.0
	for i := range pa {
		l1 += math.Abs(pa[i] - pb[i])
	}
	// This pair attains (1 − η) + 1 + 1 = 3 − η of the bound 3.
	if l1 > rs || math.Abs(l1-(3-eta)/n) > 1e-12 || rs < exact || rs > exact*(1+1e-8) {
		t.Errorf("robust scale: neighbour L1 difference %v, sensitivity %v (exact bound %v)", l1, rs, exact)
	}
	// The releases run and refuse bad input.
	src := noise.NewInsecureSeeded(5)
	if _, rel, err := ReleaseRobustScale(a, 4, w, eta, 1, src); err != nil || rel.Sensitivity != rs || rel.Entries != 3 {
		t.Errorf("ReleaseRobustScale: %+v %v", rel, err)
	}
	if _, _, err := ReleaseRobustScale(a, 4, []float64{0, 0}, eta, 1, src); err == nil {
		t.Error("ReleaseRobustScale accepted 2 coefficients for 3 features")
	}
	if _, _, err := ReleaseTargetMoment(ma, 0, src); err == nil {
		t.Error("ReleaseTargetMoment accepted ε = 0")
	}
}
