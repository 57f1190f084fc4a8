package regress

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// TestReportedGuaranteeHolds recomputes each FM-family guarantee from the
// numbers its report prints (sensitivity, noise scale, entries), with the
// grid slack of the noise package, and checks that the printed (ε, δ) is
// met: a report can never claim more than its noise delivers.
func TestReportedGuaranteeHolds(t *testing.T) {
	rows, _ := xpRows(Linear, 3000, 6, 9)
	data := Data{Stats: stats(t, rows, 7)}
	logRows, _ := xpRows(Logistic, 3000, 6, 9)
	logData := Data{Stats: stats(t, logRows, 7)}
	for _, c := range []struct {
		mech       string
		eps, delta float64
		approx     string // logistic approximation; "" means linear data
	}{{"fm", 0.3, 0, ""}, {"fm", 2, 0, ""}, {"relaxed-fm", 0.5, 1e-6, ""}, {"relaxed-fm", 3, 1e-5, ""}, {"gaussian-fm", 0.1, 1e-5, ""}, {"gaussian-fm", 4, 1e-7, ""},
		{"fm", 1, 0, ApproxChebyshev}, {"relaxed-fm", 0.5, 1e-6, ApproxLeastSquares}, {"gaussian-fm", 0.1, 1e-5, ApproxChebyshev}, {"gaussian-fm", 1, 1e-6, ApproxTaylor}} {
		est, _ := New(c.mech)
		cfg := Config{Kind: Linear, Epsilon: c.eps, Delta: c.delta, Lambda: -1, Source: noise.NewInsecureSeeded(1)}
		d := data
		if c.approx != "" {
			cfg.Kind, cfg.LogisticApprox, d = Logistic, c.approx, logData
		}
		res, err := est.Fit(context.Background(), d, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
		if c.approx != "" {
			// The printed sensitivities are the approximation's.
			lq, _ := NewLogisticQuadratic(c.approx, 0)
			want, _ := SensitivitiesForApprox(Logistic, 6, 3000, lq)
			got := map[string]float64{"fm": want.FM, "relaxed-fm": want.Relaxed, "gaussian-fm": want.Lambda2}[c.mech]
			if r := p.Releases[len(p.Releases)-1]; r.Sensitivity != got {
				t.Errorf("%s %s: printed sensitivity %v, the approximation's is %v", c.mech, c.approx, r.Sensitivity, got)
			}
		}
		if p.Epsilon != c.eps || p.Delta != c.delta {
			t.Fatalf("%s: report says (%v, %v), asked (%v, %v)", c.mech, p.Epsilon, p.Delta, c.eps, c.delta)
		}
		switch c.mech {
		case "fm":
			r := p.Releases[0]
			eff := r.Sensitivity + noise.LaplaceGridSlack(r.Scale, r.Entries)
			if eff/r.Scale > c.eps {
				t.Errorf("fm: Δ/b = %v > ε = %v", eff/r.Scale, c.eps)
			}
		default:
			// One Gaussian mechanism: whitened sensitivity over the blocks.
			s2 := 0.0
			for _, r := range p.Releases {
				e := noise.GaussianCalibrationSensitivity(r.Sensitivity, r.Scale, r.Entries) / r.Scale
				s2 += e * e
			}
			mu := math.Sqrt(s2)
			if c.mech == "gaussian-fm" {
				// Calibrated by the joint supremum (joint.go): the printed
				// whitened sensitivity must be at least the joint figure
				// recomputed from the printed blocks (grid search over
				// t = |xᵀx'|, plus the whitened grid slack and the
				// discrete margin), below the separate sum, and meet δ.
				r1, r2 := p.Releases[0], p.Releases[1]
				sl := math.Hypot(noise.GaussianGridSlack(r1.Scale, r1.Entries)/r1.Scale, noise.GaussianGridSlack(r2.Scale, r2.Entries)/r2.Scale)
				joint := (maxF(r1.Sensitivity/r1.Scale, r2.Sensitivity/r2.Scale) + sl) * (1 + noise.DiscreteGaussianMargin)
				if p.WhitenedReleases != 2 || p.WhitenedSensitivity < joint || p.WhitenedSensitivity >= mu {
					t.Errorf("gaussian-fm: printed whitened sensitivity %v, recomputed joint %v, separate %v", p.WhitenedSensitivity, joint, mu)
				}
				var b strings.Builder
				if err := p.WriteText(&b); err != nil || !strings.Contains(b.String(), "L2 sensitivity "+report.Up(p.WhitenedSensitivity)) {
					t.Errorf("gaussian-fm: the report text does not print the whitened sensitivity:\n%s", b.String())
				}
				mu = p.WhitenedSensitivity
			}
			d, err := accounting.AnalyticGaussianDelta(c.eps, 1, mu)
			if err != nil {
				t.Fatal(err)
			}
			if d > c.delta {
				t.Errorf("%s: printed (%v, %v) but the noise gives δ = %v", c.mech, c.eps, c.delta, d)
			}
			if d < 0.5*c.delta {
				t.Errorf("%s: δ achieved %v is far below %v: budget wasted", c.mech, d, c.delta)
			}
		}
	}
}

// TestPrintedGuaranteeIsExactProfile backs the claim of every Gaussian
// mechanism outside the FM family by the exact privacy profile of the noise
// its report prints (PRIVACY-NOTES items 21-22): each release is a Gaussian
// with μ_i = (Δ_i + grid slack)/σ_i, repeated `reps` times; the composition
// is √(Σ reps·μ_i²)-Gaussian-DP, whose analytic-Gaussian δ at the printed ε
// must not exceed the printed δ. The profile is computed here from the
// report's numbers alone, independently of the calibration code. The same
// computation with every printed scale halved must fail: the test can fail.
func TestPrintedGuaranteeIsExactProfile(t *testing.T) {
	linRows, _ := xpRows(Linear, 3000, 6, 9)
	logRows, _ := xpRows(Logistic, 3000, 6, 9)
	lin := Data{Stats: stats(t, linRows, 7), Rows: linRows}
	logi := Data{Stats: stats(t, logRows, 7), Rows: logRows}
	for _, c := range []struct {
		mech       string
		kind       Kind
		data       Data
		eps, delta float64
		reps       int
		opt        func(*Config)
	}{
		{"irls", Robust, lin, 1, 1e-5, 0, nil},                                               // the default preconditioned form, J from the release names
		{"irls", Robust, lin, 1, 1e-5, 1, func(c *Config) { c.IRLS.Form = IRLSFormMoments }}, // warm start, J = 1
		{"irls", Robust, lin, 0.5, 1e-6, 3, func(c *Config) { c.IRLS.Form = IRLSFormGradient; c.IRLS.Iterations = 3 }},
		{"irls", Robust, lin, 0.5, 1e-6, 4, func(c *Config) { c.IRLS.Iterations = 4; c.IRLS.Split = 0.6; c.IRLS.WarmStart = 0.5 }},
		{"irls", Robust, lin, 1, 1e-5, 2, func(c *Config) { c.IRLS.WarmStart = -1 }},
		{"irls", Robust, lin, 0.3, 1e-6, 5, func(c *Config) { c.IRLS.Iterations = 5; c.IRLS.Split = 0.2; c.IRLS.WarmStart = -1 }},
		{"noisygd", Linear, lin, 1, 1e-5, 100, nil},
		{"noisygd", Logistic, logi, 0.5, 1e-6, 40, func(c *Config) { c.NoisyGD.Iterations = 40 }},
		// The warm start's two Gaussian FM releases happen once ("(once)"
		// in their names), the J iterations' releases reps times.
		{"irls", Robust, lin, 1, 1e-5, 2, func(c *Config) { c.IRLS.WarmStart = 0.3; c.IRLS.Iterations = 2 }},
		{"irls", Robust, lin, 0.5, 1e-6, 3, func(c *Config) { c.IRLS.WarmStart = 0.5; c.IRLS.Iterations = 3; c.IRLS.Split = 0.7 }},
	} {
		cfg := Config{Kind: c.kind, Epsilon: c.eps, Delta: c.delta, Lambda: -1, Source: noise.NewInsecureSeeded(3)}
		if c.opt != nil {
			c.opt(&cfg)
		}
		est, _ := New(c.mech)
		res, err := est.Fit(context.Background(), c.data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
		if p.Epsilon > c.eps || p.Delta != c.delta {
			t.Fatalf("%s: report says (%v, %v), asked (%v, %v)", c.mech, p.Epsilon, p.Delta, c.eps, c.delta)
		}
		profile := func(scaleFactor float64) float64 {
			s2 := 0.0
			releases := p.Releases
			if k := p.WhitenedReleases; k > 0 {
				// Jointly calibrated blocks (joint.go): one Gaussian
				// mechanism whose whitened sensitivity the report prints;
				// scaling every noise by f scales it by about 1/f (the
				// grid slack is a vanishing part of it).
				if c.mech != "irls" {
					t.Fatalf("%s: unexpected whitened releases", c.mech)
				}
				w := p.WhitenedSensitivity / scaleFactor
				s2, releases = w*w, releases[k:]
			}
			for _, r := range releases {
				if r.Noise != "gaussian" {
					t.Fatalf("%s: release %q has %s noise", c.mech, r.Name, r.Noise)
				}
				sc := r.Scale * scaleFactor
				e := noise.GaussianCalibrationSensitivity(r.Sensitivity, sc, r.Entries) / sc
				reps := c.reps
				if i := strings.Index(r.Name, "each of "); reps == 0 && i >= 0 { // "each of J iterations"
					if _, err := fmt.Sscanf(r.Name[i:], "each of %d iterations", &reps); err != nil {
						t.Fatalf("%s: release %q: %v", c.mech, r.Name, err)
					}
				}
				if strings.HasSuffix(r.Name, "(once)") {
					reps = 1
				}
				s2 += float64(reps) * e * e
			}
			d, err := accounting.AnalyticGaussianDelta(p.Epsilon, 1, math.Sqrt(s2))
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		if d := profile(1); d > c.delta || d < 0.5*c.delta {
			t.Errorf("%s %s (ε=%v, δ=%v): the printed noise gives δ = %v at the printed ε = %v", c.mech, c.kind, c.eps, c.delta, d, p.Epsilon)
		}
		if d := profile(0.5); d <= c.delta {
			t.Errorf("%s: half the printed noise still meets δ (%v): the check has no power", c.mech, d)
		}
	}
}

// TestReportIsPublic checks PRIVACY-NOTES item 23 for every private
// mechanism: a report may depend only on public parameters and on
// post-processing of released values. Fitting two different datasets of the
// same size with the same (seeded) randomness must give reports that differ
// at most in the lines that are functions of the released noisy values (the
// number of directions spectral trimming removed). An optimiser diagnostic,
// a clipping count or any other data-dependent figure makes them differ.
func TestReportIsPublic(t *testing.T) {
	const n, d = 2000, 5
	for _, c := range []struct {
		mech  string
		kind  Kind
		delta float64
		opt   func(*Config)
	}{
		{"fm", Linear, 0, nil}, {"fm", Logistic, 0, nil}, {"relaxed-fm", Linear, 1e-6, nil}, {"gaussian-fm", Linear, 1e-6, nil},
		{"gaussian-fm", Logistic, 1e-6, nil}, {"noisygd", Linear, 1e-6, nil}, {"noisygd", Logistic, 1e-6, nil}, {"irls", Robust, 1e-6, nil},
		{"objpert", Linear, 1e-6, nil}, {"objpert", Logistic, 1e-6, nil},
		{"gaussian-fm", Logistic, 1e-6, func(c *Config) { c.LogisticApprox = ApproxChebyshev }},
		{"fm", Logistic, 0, func(c *Config) { c.LogisticApprox = ApproxLeastSquares; c.LogisticRange = 3 }},
		{"gaussian-fm", Linear, 1e-6, func(c *Config) { c.SolveRadius = 0.5 }},
		{"irls", Robust, 1e-6, func(c *Config) { c.IRLS.WarmStart = 0.3 }},
	} {
		var texts [2]string
		for i, seed := range []uint64{1, 2} {
			kind := c.kind
			if kind == Robust {
				kind = Linear
			}
			rows, _ := xpRows(kind, n, d, seed)
			est, err := New(c.mech)
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Kind: c.kind, Epsilon: 1, Delta: c.delta, Lambda: -1, Source: noise.NewInsecureSeeded(7)}
			if c.opt != nil {
				c.opt(&cfg)
			}
			res, err := est.Fit(context.Background(), xpData(t, rows, d+1), cfg)
			if err != nil {
				t.Fatalf("%s %s: %v", c.mech, c.kind, err)
			}
			var b strings.Builder
			if err := res.Privacy.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			texts[i] = trimmingCounts.ReplaceAllString(b.String(), "K of")
		}
		if texts[0] != texts[1] {
			t.Errorf("%s %s: the report depends on the data:\n%s\n---\n%s", c.mech, c.kind, texts[0], texts[1])
		}
	}
}

// trimmingCounts matches "k of" in the spectral-trimming lines, the only
// report figure computed from released values rather than public ones.
var trimmingCounts = regexp.MustCompile(`\b\d+ of`)
