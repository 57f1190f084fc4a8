package inference

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// gridSchema declares p numeric features on [−1, 1] and a target on [−1, 1]
// (linear) or a binary target, so that it encodes the rows of newDesign.
func gridSchema(t testing.TB, kind regress.Kind, p int) *schema.Schema {
	js := `{"target": {"name": "y", "range": [-1, 1]}, "features": [`
	if kind == regress.Logistic {
		js = `{"target": {"name": "y"}, "features": [`
	}
	for i := 0; i < p; i++ {
		if i > 0 {
			js += ","
		}
		js += fmt.Sprintf(`{"name": "x%d", "range": [-1, 1]}`, i)
	}
	s, err := schema.Parse([]byte(js + "]}"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestForecastWithinFactorOfRealisedNoise compares the forecast noise
// standard deviation of every coefficient with the realised noise (the
// standard deviation of the private fit minus the non-private fit on the
// same data; the mean of that difference is the ridge's shrinkage, which
// the forecast reports separately) over 300 simulated
// datasets whose design differs from the forecast's reference design
// (5-point grid instead of uniform features, non-zero coefficients). The
// stated factor is 2: realised/forecast must lie in [1/2, 2]. With 300
// datasets the realised standard deviation is within ±10% of its expectation
// (≈ 2.5 standard errors), so only a forecast off by more than ×1.8 can fail.
func TestForecastWithinFactorOfRealisedNoise(t *testing.T) {
	for _, c := range []struct {
		mech string
		dz   *design
		n    int64
		eps  float64
	}{
		{"gaussian-fm", linearDesign(), 10000, 1},
		{"fm", linearDesign(), 100000, 1},
		{"relaxed-fm", newDesign(regress.Linear, []float64{0, 0, 0, 0}, 0.3), 10000, 2},
		{"gaussian-fm", logisticDesign(), 10000, 1},
	} {
		kind := c.dz.kind
		s := gridSchema(t, kind, len(c.dz.beta)-1)
		cfg := regress.Config{Kind: kind, Epsilon: c.eps, Delta: 1e-6, Lambda: -1}
		f, err := NoiseForecast(c.mech, cfg, s, c.n, Options{})
		if err != nil {
			t.Fatal(err)
		}
		est, _ := regress.New(c.mech)
		np, _ := regress.New("nonprivate")
		if kind == regress.Logistic {
			np, _ = regress.New("truncated") // FM's noise-free counterpart
		}
		rng := rand.New(rand.NewPCG(5, 6))
		cfg.Source = noise.NewInsecureSeeded(9)
		d := len(c.dz.beta)
		ss, mean := make([]float64, d), make([]float64, d)
		const reps = 300
		for r := 0; r < reps; r++ {
			st := c.dz.sample(rng, c.n)
			pf, err := est.Fit(context.Background(), regress.Data{Stats: st}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			nf, err := np.Fit(context.Background(), regress.Data{Stats: st}, regress.Config{Kind: kind})
			if err != nil {
				t.Fatal(err)
			}
			addDeviation(ss, mean, pf.Coef, nf.Coef, reps)
		}
		for i := range ss {
			ss[i] -= mean[i] * mean[i] // the spread; the ridge's bias is Forecast.Shrinkage
			ratio := math.Sqrt(ss[i]) / f.CoefSD[i]
			t.Logf("%s %s N=%d ε=%g coefficient %d: realised %.4g, forecast %.4g, ratio %.2f", c.mech, kind, c.n, c.eps, i, math.Sqrt(ss[i]), f.CoefSD[i], ratio)
			if ratio < 0.5 || ratio > 2 {
				t.Errorf("%s %s N=%d ε=%g coefficient %d: realised noise %.4g is not within a factor 2 of the forecast %.4g", c.mech, kind, c.n, c.eps, i, math.Sqrt(ss[i]), f.CoefSD[i])
			}
		}
	}
}

// TestForecastPublicOnly checks that the forecast is a function of the public
// quantities: the same for equal inputs, and it moves the right way with ε
// and N. (It has no data argument at all; the CLI test checks that two
// datasets with the same N and schema print the same forecast.)
func TestForecastPublicOnly(t *testing.T) {
	s := gridSchema(t, regress.Linear, 3)
	cfg := regress.Config{Kind: regress.Linear, Epsilon: 1, Delta: 1e-6, Lambda: -1}
	a, err := NoiseForecast("gaussian-fm", cfg, s, 20000, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NoiseForecast("gaussian-fm", cfg, s, 20000, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two forecasts with the same public inputs differ")
	}
	cfg2 := cfg
	cfg2.Epsilon = 2
	c, _ := NoiseForecast("gaussian-fm", cfg2, s, 20000, Options{})
	e, _ := NoiseForecast("gaussian-fm", cfg, s, 80000, Options{})
	if !(c.PredictionRMS < a.PredictionRMS && e.PredictionRMS < a.PredictionRMS) {
		t.Errorf("forecast does not fall with ε or N: %v (ε=1), %v (ε=2), %v (4N)", a.PredictionRMS, c.PredictionRMS, e.PredictionRMS)
	}
	if _, err := NoiseForecast("objpert", cfg, s, 20000, Options{}); err == nil {
		t.Error("forecast for objpert accepted")
	}
}

// TestForecastWarns checks the warning on the example (PSID-like:
// N = 3,332, 18 coefficients, ε = 1) and its absence on CPS1988's shape.
func TestForecastWarns(t *testing.T) {
	for _, c := range []struct {
		p     int
		n     int64
		swamp bool
	}{{17, 3332, true}, {7, 28155, false}} {
		s := gridSchema(t, regress.Linear, c.p)
		f, err := NoiseForecast("gaussian-fm", regress.Config{Kind: regress.Linear, Epsilon: 1, Delta: 1e-5, Lambda: -1}, s, c.n, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if f.Swamped != c.swamp || (f.Warning != "") != c.swamp {
			t.Errorf("p=%d N=%d: swamped=%v (prediction noise %.3g, shrinkage %.2f), want %v", c.p, c.n, f.Swamped, f.PredictionRMS, f.Shrinkage, c.swamp)
		}
	}
}

// TestForecastIRLSWithinFactor compares the irls forecast with the realised
// noise spread (private fit minus a fit whose noise is negligible, ε = 10⁶,
// on the same rows) over 150 simulated datasets (robustDesign: non-zero
// coefficients, Laplace errors, unlike the reference), for the default
// (preconditioned form after a warm start, η = 0.1 here) and the seed's cold
// start, on the narrow-error design (Laplace scale 0.05) and the wide-error
// one (scale 0.6, six times the default η, where the warm start's noise
// reaches the fit). Stated factor 2, as for the FM family; the realised SD
// is within ±15% of its expectation. With the default's small η the noise
// depends on the residuals' spread, which a forecast cannot know: measured
// ratios 0.55-0.62 (narrow) and 1.68-1.94 (wide) for the default, 0.75-0.93
// and 1.42-1.62 for the cold start, the two designs bracketing
// ReferenceResidualSpread (0.33; at 0.3, after the warm start's joint
// calibration lowered its noise, the wide design reached 2.08).
func TestForecastIRLSWithinFactor(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates rows")
	}
	const n, reps = 10000, 150
	s := gridSchema(t, regress.Linear, 2)
	for _, tc := range []struct {
		name string
		warm float64
		rd   robustDesign
	}{
		{"warm start (default)", 0, defaultRobustDesign()},
		{"cold start", -1, defaultRobustDesign()},
		{"warm start, wide errors", 0, wideRobustDesign()},
		{"cold start, wide errors", -1, wideRobustDesign()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := regress.Config{Kind: regress.Robust, Epsilon: 1, Delta: 1e-6, Lambda: -1, IRLS: regress.IRLSOptions{WarmStart: tc.warm}}
			f, err := NoiseForecast("irls", cfg, s, n, Options{})
			if err != nil {
				t.Fatal(err)
			}
			est, _ := regress.New("irls")
			rd := tc.rd
			rng := rand.New(rand.NewPCG(8, 8))
			src := noise.NewInsecureSeeded(8)
			ss, mean := make([]float64, 3), make([]float64, 3)
			for r := 0; r < reps; r++ {
				rows := rd.rows(rng, n)
				data := regress.Data{Stats: rowMoments(t, rows), Rows: rows}
				c := cfg
				c.Source = src
				pf, err := est.Fit(context.Background(), data, c)
				if err != nil {
					t.Fatal(err)
				}
				if (pf.Released.Warm != nil) != (tc.warm >= 0) {
					t.Fatalf("warm start %v, but the fit released a warm start: %v", tc.warm, pf.Released.Warm != nil)
				}
				c.Epsilon = 1e6
				nf, err := est.Fit(context.Background(), data, c)
				if err != nil {
					t.Fatal(err)
				}
				addDeviation(ss, mean, pf.Coef, nf.Coef, reps)
			}
			for i := range ss {
				sd := math.Sqrt(ss[i] - mean[i]*mean[i])
				ratio := sd / f.CoefSD[i]
				t.Logf("irls %s N=%d ε=1 coefficient %d: realised %.4g, forecast %.4g, ratio %.2f", tc.name, n, i, sd, f.CoefSD[i], ratio)
				if ratio < 0.5 || ratio > 2 {
					t.Errorf("irls %s coefficient %d: realised noise %.4g is not within a factor 2 of the forecast %.4g", tc.name, i, sd, f.CoefSD[i])
				}
			}
		})
	}
}

// addDeviation adds the deviation e = private − reference of one fit to the
// running mean square ss and mean over reps fits.
func addDeviation(ss, mean, private, reference []float64, reps float64) {
	for i := range ss {
		e := private[i] - reference[i]
		ss[i] += e * e / reps
		mean[i] += e / reps
	}
}
