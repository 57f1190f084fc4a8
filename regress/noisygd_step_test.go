package regress

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// TestNoisyGDDataStepPlan: the data-scaled step releases the trace only
// where its public ceiling 1/(c·√(dT)·s), recomputed here from the plan's
// noise, exceeds 1/L (Huber's loss: c = ½, 1/L = ½; the clipped logistic
// gradient: c = 0.2, 1/L = 4; full batch, a target ε, no learning rate
// given); the trace's sensitivity is (1 + encTol)/units;
// the gradients keep 1 − 2% of μ² (their noise 1/√0.98 times the plan
// without the trace); and the composition √(T/z² + μ_t²), recomputed from
// the two noises with the grid slack, meets (ε, δ) without wasting it.
func TestNoisyGDDataStepPlan(t *testing.T) {
	type plan func(opt NoisyGDOptions) (NoisyGDPlan, error)
	huber := func(eps, delta float64, n int64, d int) plan {
		return func(opt NoisyGDOptions) (NoisyGDPlan, error) { return PlanNoisyGDHuber(eps, delta, n, d, 0.5, opt) }
	}
	for _, c := range []struct {
		name  string
		plan  plan
		opt   NoisyGDOptions
		units int64
		fires bool
	}{
		{"N=3000 d=6 ε=2 T=50", huber(2, 1e-6, 3000, 6), NoisyGDOptions{Iterations: 50}, 3000, true},
		{"N=200000 d=24 ε=1", huber(1, 1e-6, 200000, 24), NoisyGDOptions{}, 200000, true},
		{"N=3000 d=6 ε=0.2 (ceiling below ½)", huber(0.2, 1e-5, 3000, 6), NoisyGDOptions{}, 3000, false},
		{"learning rate given", huber(2, 1e-6, 3000, 6), NoisyGDOptions{Iterations: 50, LearningRate: 0.5}, 3000, false},
		{"Poisson batches", huber(2, 1e-6, 3000, 6), NoisyGDOptions{Iterations: 50, BatchRate: 0.5}, 3000, false},
		{"noise multiplier given", huber(0, 1e-6, 3000, 6), NoisyGDOptions{Iterations: 50, Sigma: 3}, 3000, false},
		{"squared loss", func(opt NoisyGDOptions) (NoisyGDPlan, error) { return PlanNoisyGD(Linear, 2, 1e-6, 3000, 6, opt) }, NoisyGDOptions{Iterations: 50}, 3000, false},
		{"clipped logistic", func(opt NoisyGDOptions) (NoisyGDPlan, error) {
			return planNoisyGD(Logistic, 2, 1e-6, 3000, 1, 6, opt, DefaultLogisticClip)
		}, NoisyGDOptions{Iterations: 50}, 3000, true},
		{"clipped logistic N=200000 d=24 ε=1", func(opt NoisyGDOptions) (NoisyGDPlan, error) {
			return planNoisyGD(Logistic, 1, 1e-6, 200000, 1, 24, opt, DefaultLogisticClip)
		}, NoisyGDOptions{}, 200000, true},
		{"clipped logistic N=3000 d=6 ε=0.2 (ceiling below 4)", func(opt NoisyGDOptions) (NoisyGDPlan, error) {
			return planNoisyGD(Logistic, 0.2, 1e-5, 3000, 1, 6, opt, DefaultLogisticClip)
		}, NoisyGDOptions{}, 3000, false},
		{"unclipped logistic", func(opt NoisyGDOptions) (NoisyGDPlan, error) { return PlanNoisyGD(Logistic, 2, 1e-6, 3000, 6, opt) }, NoisyGDOptions{Iterations: 50}, 3000, false},
		{"privacy unit, 1000 units of 3", func(opt NoisyGDOptions) (NoisyGDPlan, error) {
			return planNoisyGDUnits(Linear, 2, 1e-6, 1000, 3, 6, opt, 0.5)
		}, NoisyGDOptions{Iterations: 20}, 1000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.plan(c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.TraceNoiseStd > 0; got != c.fires {
				t.Fatalf("trace released %v, want %v (ceiling %v, step %v)", got, c.fires, p.StepCeiling, p.LearningRate)
			}
			if !c.fires {
				if p.StepCeiling != 0 || p.TraceSensitivity != 0 {
					t.Errorf("no trace, but ceiling %v and trace sensitivity %v", p.StepCeiling, p.TraceSensitivity)
				}
				return
			}
			// c and 1/L by kind, written out here (not read from the code).
			cf, invL := 0.5, 0.5
			if p.Kind == Logistic {
				cf, invL = 0.2, 4
			}
			d, T := float64(p.D), float64(p.Steps)
			if want := 1 / (cf * math.Sqrt(d*T) * p.NoiseStd); math.Abs(p.StepCeiling-want) > 1e-12*want || !(p.StepCeiling > invL) {
				t.Errorf("ceiling %v, 1/(%v·√(dT)s) = %v, 1/L = %v", p.StepCeiling, cf, want, invL)
			}
			ts := 1 / float64(c.units)
			// Up to the rounding allowance of the N-term sum, 2γ_N·(1 + encTol).
			if !(p.TraceSensitivity >= ts*(1+encTol) && p.TraceSensitivity <= ts*(1+encTol)+2.01*gamma(float64(c.units*3))) {
				t.Errorf("trace sensitivity %v, want (1 + encTol)/units = %v", p.TraceSensitivity, ts*(1+encTol))
			}
			// The gradients' share: the plan with the step given has the
			// whole μ.
			opt := c.opt
			opt.LearningRate = invL
			q, err := c.plan(opt)
			if err != nil {
				t.Fatal(err)
			}
			// Up to the calibration's upward rounding (gaussianStdFor's
			// σ-dependent allowance, ~1e-6 relative at T = 4000): never
			// below 1/√0.98, which would spend more than 98% of μ².
			if r, w := p.NoiseStd/q.NoiseStd, 1/math.Sqrt(0.98); !(r >= w*(1-1e-12) && r <= w*(1+1e-5)) {
				t.Errorf("gradient noise %v× the plan without the trace, want 1/√0.98 = %v (up to +1e-5 relative)", r, w)
			}
			// The composition from the noises, independently of the plan.
			zg := p.NoiseStd / noise.GaussianCalibrationSensitivity(p.Sensitivity, p.NoiseStd, p.D)
			mt := noise.GaussianCalibrationSensitivity(ts*(1+encTol), p.TraceNoiseStd, 1) / p.TraceNoiseStd
			mu := math.Sqrt(T/(zg*zg) + mt*mt)
			eps := p.Privacy.Epsilon
			dl, err := accounting.AnalyticGaussianDelta(eps, 1, mu)
			if err != nil {
				t.Fatal(err)
			}
			if dl > p.Privacy.Delta || dl < 0.99*p.Privacy.Delta {
				t.Errorf("composed μ = %v gives δ = %v at ε = %v, printed δ = %v", mu, dl, eps, p.Privacy.Delta)
			}
			if r := mt * mt / (mu * mu); math.Abs(r-0.02) > 1e-3 {
				t.Errorf("the trace takes %v of μ², want 2%%", r)
			}
		})
	}
}

// TestNoisyGDTraceSensitivity: on extremal neighbouring pairs (replace a
// row of norm² 1 + encTol, the most checkRows accepts, by the zero row)
// the computed trace moves by (1 + encTol)/N, which the plan's sensitivity
// must cover and nearly equal, at row level and under a privacy unit (all k
// rows of one unit replaced).
func TestNoisyGDTraceSensitivity(t *testing.T) {
	const d = 3
	k := d + 1
	big := make([]float64, k)
	for j := 0; j < d; j++ {
		big[j] = math.Sqrt((1 + 0.999*encTol) / d)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	// Small N, large ε and few steps release the trace where the rounding
	// allowance (≈ 2N²u relative) is far below encTol.
	for _, c := range []struct {
		units int64
		per   int
		eps   float64
		steps int
	}{{7, 1, 8, 1}, {12, 1, 8, 2}, {5000, 1, 2, 10}, {4, 3, 10, 1}} {
		n := c.units * int64(c.per)
		rows := make([]float64, int(n)*k)
		for i := range rows {
			if i%k != d {
				rows[i] = (rng.Float64() - 0.5) / 2
			}
		}
		other := append([]float64(nil), rows...)
		for r := 0; r < c.per; r++ {
			copy(rows[r*k:], big)
			for j := 0; j < k; j++ {
				other[r*k+j] = 0
			}
		}
		p, err := planNoisyGDUnits(Linear, c.eps, 1e-6, c.units, c.per, d, NoisyGDOptions{Iterations: c.steps}, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		if p.TraceNoiseStd == 0 {
			t.Fatalf("%d units of %d: the step's trace is not released", c.units, c.per)
		}
		moved := math.Abs(traceOf(rows, k, n) - traceOf(other, k, n))
		if moved > p.TraceSensitivity || moved < p.TraceSensitivity*(1-1e-6) {
			t.Errorf("%d units of %d: the pair moves the trace by %v, sensitivity %v", c.units, c.per, moved, p.TraceSensitivity)
		}
	}
}

// TestNoisyGDDataStepBound: the step never exceeds 1/(L·t) for the true
// trace t (so the descent is stable, t ≥ λ_max of XᵀX/N; L = 2 for Huber's
// loss, ¼ for the clipped logistic gradient) in 400 draws of the released
// trace where its noise is 5× the trace itself, never falls below 1/L, and
// meets the ceiling where the trace is negligible: the margin of 4
// standard deviations at work (Φ(−4)·400 ≈ 0.013 expected failures; the
// seeds are fixed).
func TestNoisyGDDataStepBound(t *testing.T) {
	const d = 2
	k := d + 1
	rows := make([]float64, 1000*k)
	for i := 0; i < 1000; i++ {
		rows[i*k], rows[i*k+1] = 0.02, 0.01*float64(i%3)
	}
	tr := traceOf(rows, k, 1000)
	for _, kind := range []struct {
		kind Kind
		L    float64
	}{{Linear, 2}, {Logistic, 0.25}} {
		base := 1 / kind.L
		// The last case: a ceiling a hair below 1/L (the plan's ceiling
		// is decided before the 1% more gradient noise) leaves the step
		// at 1/L.
		for _, c := range []struct{ noise, ceiling float64 }{{5 * tr, 1e6}, {tr / 10, 1e6}, {tr / 10, 6 * base}, {tr / 10, 0.98 * base}} {
			p := NoisyGDPlan{Kind: kind.kind, N: 1000, LearningRate: base, TraceNoiseStd: c.noise, StepCeiling: c.ceiling}
			src := noise.NewInsecureSeeded(9)
			for i := 0; i < 400; i++ {
				step, err := p.dataStep(rows, k, src)
				if err != nil {
					t.Fatal(err)
				}
				if step > 1/(kind.L*tr) || step < base || step > math.Max(base, c.ceiling) {
					t.Fatalf("%s, noise %v, ceiling %v: draw %d gives step %v; 1/(L·t) = %v", kind.kind, c.noise, c.ceiling, i, step, 1/(kind.L*tr))
				}
				if c.ceiling == 6*base && step != c.ceiling {
					t.Fatalf("%s, draw %d: step %v below the ceiling %v with t = %v", kind.kind, i, step, c.ceiling, tr)
				}
			}
		}
	}
}

// TestNoisyGDDataStepConverges: on rows that use a sixth of the unit ball
// (x = (0.15, u), |u| ≤ 0.1), where T steps of 1/L stop short (the
// Hessian's eigenvalues near 0.007 for Huber's loss, below 0.006 for the
// logistic loss), the data-scaled step brings the fit at least twice as
// close to the estimand as the fixed step 1/L, on the same noise, at each
// of three seeds; and the report lists the trace release and the step
// 1/(L·t⁺ + λ). The estimands are computed independently of noisygd:
// Huber's M-estimate (huberMEstimate's IRLS), and for the clipped
// logistic gradient the MLE (nonPrivate's Newton fit), its estimating
// equation's root because no row reaches the clip ½.
func TestNoisyGDDataStepConverges(t *testing.T) {
	ctx := context.Background()
	const n, k = 20000, 3
	for _, c := range []struct {
		kind   Kind
		seed   uint64
		target func(rng *rand.Rand, u float64) float64
		invL   float64
		step   string // the step's bound as the report prints it
	}{
		{Linear, 11, func(rng *rand.Rand, u float64) float64 {
			return math.Max(-1, math.Min(1, 0.15*1+u*2.5+0.05*rng.NormFloat64()))
		}, 0.5, "1/(2·t⁺ + λ)"},
		{Logistic, 13, func(rng *rand.Rand, u float64) float64 {
			if rng.Float64() < 1/(1+math.Exp(-(0.15*2+u*15))) {
				return 1
			}
			return 0
		}, 4, "1/(0.25·t⁺ + λ)"},
	} {
		rng := rand.New(rand.NewPCG(c.seed, c.seed+1))
		rows := make([]float64, n*k)
		for i := 0; i < n; i++ {
			r := rows[i*k : (i+1)*k]
			r[0], r[1] = 0.15, (rng.Float64()-0.5)/5
			r[2] = c.target(rng, r[1])
		}
		data := xpData(t, rows, k)
		want := huberMEstimate(rows, k, DefaultHuberEta, 0)
		if c.kind == Logistic {
			mle, err := nonPrivate{}.Fit(ctx, data, Config{Kind: Logistic})
			if err != nil {
				t.Fatal(err)
			}
			want = mle.Coef
		}
		for seed := uint64(1); seed <= 3; seed++ {
			fit := func(lr float64) ([]float64, []string, int) {
				// T pinned at 1000 (the default grows with N·ε, and given
				// 4000 steps the fixed step 1/L catches up): the test is of
				// the step at a fixed number of steps.
				res, err := noisyGD{}.Fit(ctx, data, Config{Kind: c.kind, Epsilon: 2, Delta: 1e-6, Source: noise.NewInsecureSeeded(seed),
					NoisyGD: NoisyGDOptions{LearningRate: lr, Iterations: 1000}})
				if err != nil {
					t.Fatal(err)
				}
				return res.Coef, res.Privacy.PostProcessing, len(res.Privacy.Releases)
			}
			scaled, post, nrel := fit(0)
			fixed, _, _ := fit(c.invL)
			es, ef := dist(scaled, want), dist(fixed, want)
			if !(es <= ef/2) {
				t.Errorf("%s, seed %d: ‖ω − ω*‖ = %.4g with the data-scaled step, %.4g with 1/L = %v (ω* = %v)", c.kind, seed, es, ef, c.invL, want)
			}
			if all := strings.Join(post, "; "); nrel != 2 || !strings.Contains(all, "data-scaled step") || !strings.Contains(all, c.step) {
				t.Errorf("%s, seed %d: %d releases, post-processing %q: the trace and the step %s are not reported", c.kind, seed, nrel, post, c.step)
			}
		}
	}
}
