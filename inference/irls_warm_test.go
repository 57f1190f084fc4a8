package inference

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// TestIRLSFitNoiseWarmStart checks the forecast's model of a warm-started
// DP-IRLS fit's coefficient noise (irlsFitNoise: the last iteration's noise
// plus the warm start's carried in with gain f^J) against an independent
// Monte Carlo: the released objective and the released warm start are
// perturbed here with their public Gaussian noise, minimised as the fit
// does, and combined with the contraction f of the released residual
// summary. On a design with wide errors (Laplace, scale 2η, so f ≈ 0.4) the
// warm start's share must be material (≥ 6% of the spread, so the check is
// not vacuous) and the two must agree within 4% (20000 draws each: the
// robust SD's Monte Carlo error is about 0.8% each).
func TestIRLSFitNoiseWarmStart(t *testing.T) {
	if testing.Short() {
		t.Skip("20000 draws")
	}
	rd := wideRobustDesign()
	const n = 10000
	rng := rand.New(rand.NewPCG(21, 22))
	rows := rd.rows(rng, n)
	src := noise.NewInsecureSeeded(23)
	est, _ := regress.New("irls")
	fit, err := est.Fit(context.Background(), regress.Data{Stats: rowMoments(t, rows), Rows: rows},
		regress.Config{Kind: regress.Robust, Epsilon: 1, Delta: 1e-6, Lambda: -1, Source: src, IRLS: regress.IRLSOptions{Form: regress.IRLSFormMoments}})
	if err != nil {
		t.Fatal(err)
	}
	rel := fit.Released
	if rel.Warm == nil || rel.Iterations != 1 {
		t.Fatalf("warm-started moments fit recorded warm start %v, J = %d", rel.Warm != nil, rel.Iterations)
	}
	eta := rel.ResidualFloor
	rs, _, err := regress.ReleaseRobustScale(rows, 4, fit.Coef, eta, 10, src)
	if err != nil {
		t.Fatal(err)
	}
	const reps = 20000
	f := 1 - rs.Inside/(eta*rs.MeanWeight)
	if f < 0.3 || f > 0.6 {
		t.Fatalf("design gives f = %v, want a wide-error design with f in [0.3, 0.6]", f)
	}
	inflate, extra := irlsFitNoise(rel, f)
	if inflate != 1 || extra == nil {
		t.Fatalf("J = 1 warm start: inflation %v (want 1), warm term %v", inflate, extra != nil)
	}
	lastPP := regress.PostProcess{MinEigen: rel.MinEigen}
	w0, _, err := rel.Objective.Minimize(lastPP)
	if err != nil {
		t.Fatal(err)
	}
	d := len(w0)
	model := make([][]float64, d)
	prng := rand.New(rand.NewPCG(5, 6))
	star := &regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, len(rel.Objective.Upper))}
	for b := 0; b < reps; b++ {
		perturb(prng, rel.Objective, star, rel)
		w, _, err := star.Minimize(lastPP)
		if err != nil {
			t.Fatal(err)
		}
		dv := make([]float64, d)
		for i := range dv {
			dv[i] = (w[i] - w0[i]) * inflate
		}
		if !extra(prng, dv) {
			t.Fatal("warm-start draw failed")
		}
		for i := range dv {
			model[i] = append(model[i], dv[i])
		}
	}

	// Independent Monte Carlo.
	mc := rand.New(rand.NewPCG(99, 98))
	noisy := func(r *regress.Released) *regress.Quadratic {
		q := r.Objective
		s := &regress.Quadratic{D: q.D, Lambda1: make([]float64, q.D), Upper: make([]float64, len(q.Upper))}
		for i, v := range q.Lambda1 {
			s.Lambda1[i] = v + mc.NormFloat64()*math.Sqrt(r.VarLambda1)
		}
		for i, v := range q.Upper {
			s.Upper[i] = v + mc.NormFloat64()*math.Sqrt(r.VarLambda2)
		}
		return s
	}
	warmPP := regress.NoisyPostProcess(rel.Warm.Ridge)
	c0, _, err := rel.Warm.Objective.Minimize(warmPP)
	if err != nil {
		t.Fatal(err)
	}
	both, lastOnly := make([][]float64, d), make([][]float64, d)
	for b := 0; b < reps; b++ {
		w, tr, err := noisy(rel).Minimize(lastPP)
		if err != nil || tr > 0 {
			t.Fatalf("replicate %d trimmed a direction", b)
		}
		c, _, err := noisy(rel.Warm).Minimize(warmPP)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < d; i++ {
			lastOnly[i] = append(lastOnly[i], w[i]-w0[i])
			both[i] = append(both[i], w[i]-w0[i]+f*(c[i]-c0[i]))
		}
	}
	rsd := func(x []float64) float64 {
		sort.Float64s(x)
		return (x[int(0.841344746*float64(len(x)))] - x[int(0.158655254*float64(len(x)))]) / 2
	}
	for i := 0; i < d; i++ {
		want, without := rsd(both[i]), rsd(lastOnly[i])
		got := rsd(model[i])
		t.Logf("f = %.3f, coefficient %d: model %.4g, Monte Carlo %.4g (without the warm start %.4g)", f, i, got, want, without)
		if want < 1.06*without {
			t.Errorf("coefficient %d: the warm start adds only %.1f%% to the noise SE; the check would be vacuous", i, 100*(want/without-1))
		}
		if math.Abs(got/want-1) > 0.04 {
			t.Errorf("coefficient %d: modelled noise SD %.4g, independent Monte Carlo %.4g", i, got, want)
		}
	}
}
