package inference

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// categoricalSchema encodes one numeric feature and one three-level
// categorical feature with the intercept (B = 3).
const categoricalSchema = `{"target": {"name": "y", "range": [-1, 1]}, "features": [{"name": "u", "range": [-1, 1]}, {"name": "g", "categories": ["a", "b", "c"]}]}`

// categoricalDesign is a design encoded exactly as categoricalSchema
// encodes its rows: x = s·(1, u, 1{g=b}, 1{g=c}) with s =
// schema.UnitScale(3), u on the 5-point grid, the levels a, b, c with
// probabilities ½, 0.3, 0.2, independent of u. So its statistics satisfy the
// schema's Gram identities exactly.
func categoricalDesign(kind regress.Kind, beta []float64, sigma float64) *design {
	s := schema.UnitScale(3)
	dz := &design{kind: kind, beta: beta, sigma: sigma}
	for _, u := range []float64{-1, -0.5, 0, 0.5, 1} {
		for lvl, p := range []float64{0.5, 0.3, 0.2} {
			x := []float64{s, u * s, 0, 0}
			if lvl > 0 {
				x[1+lvl] = s
			}
			dz.xs = append(dz.xs, x)
			dz.probs = append(dz.probs, p/5)
		}
	}
	return dz
}

// TestCoverageWithStructure checks that the intervals of a fit that
// projected its released Λ2 onto the schema's Gram structure
// (Config.Structure; inference re-applies it to every replicate through
// Released.Structure) still cover the estimand 95% of the time: 400
// datasets per case, acceptance [366, 394] per coefficient as in
// TestCoverage (false alarm 0.12% per check at 95% true coverage, ≤ 1% over
// the 8 checks; the seeds are fixed, so the test is deterministic). It also
// checks that the structured intervals are not wider on average than those
// of the same releases without the projection (the projection removes
// noise), coefficient by coefficient, with a 2% allowance for the bootstrap's
// Monte Carlo error.
func TestCoverageWithStructure(t *testing.T) {
	s, err := schema.Parse([]byte(categoricalSchema))
	if err != nil {
		t.Fatal(err)
	}
	st, err := regress.GramStructureFor(s)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mech string
		kind regress.Kind
		eps  float64
		n    int64
		dz   *design
	}{
		{"gaussian-fm", regress.Linear, 1, 10000, categoricalDesign(regress.Linear, []float64{0.1, 0.4, -0.3, 0.2}, 0.15)},
		{"gaussian-fm", regress.Logistic, 1, 10000, categoricalDesign(regress.Logistic, []float64{-0.5, 1.5, -1.0, 0.5}, 0)},
	}
	if testing.Short() {
		cases = cases[:1]
	}
	const reps, boot, lo, hi = 400, 600, 366, 394
	for ci, c := range cases {
		truth := c.dz.truth()
		d := len(truth)
		est, err := regress.New(c.mech)
		if err != nil {
			t.Fatal(err)
		}
		covered := make([]int, d)
		width, width0 := make([]float64, d), make([]float64, d)
		seed := uint64(ci) + 101
		rng := rand.New(rand.NewPCG(seed, 7))
		src := noise.NewInsecureSeeded(seed)
		for r := 0; r < reps; r++ {
			stats := c.dz.sample(rng, c.n)
			cfg := regress.Config{Kind: c.kind, Epsilon: c.eps, Delta: 1e-6, Lambda: -1, Source: src, Structure: st}
			var y2 *TargetMoment
			if c.kind == regress.Linear {
				cfg.Epsilon = c.eps * (1 - testShare)
				v, _, err := regress.ReleaseTargetMoment(stats, c.eps*testShare, src)
				if err != nil {
					t.Fatal(err)
				}
				y2 = &TargetMoment{Value: v}
			}
			fit, err := est.Fit(context.Background(), regress.Data{Stats: stats}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if fit.Released.Structure == nil {
				t.Fatal("the fit recorded no structure")
			}
			iv, err := FM(fit.Released, y2, Options{Replicates: boot, Seed: uint64(r) + 1})
			if err != nil {
				t.Fatal(err)
			}
			plain := *fit.Released
			plain.Structure = nil
			iv0, err := FM(&plain, y2, Options{Replicates: boot, Seed: uint64(r) + 1})
			if err != nil {
				t.Fatal(err)
			}
			for i, co := range iv.Coefficients {
				if co.Identified && co.Lower <= truth[i] && truth[i] <= co.Upper {
					covered[i]++
				}
				width[i] += (co.Upper - co.Lower) / reps
				width0[i] += (iv0.Coefficients[i].Upper - iv0.Coefficients[i].Lower) / reps
			}
		}
		for i := range covered {
			t.Logf("%s %s coefficient %d: covered %d/%d, mean width %.4g (without the structure %.4g)", c.mech, c.kind, i, covered[i], reps, width[i], width0[i])
			if covered[i] < lo || covered[i] > hi {
				t.Errorf("%s %s coefficient %d: %d of %d intervals covered the truth, want %d–%d", c.mech, c.kind, i, covered[i], reps, lo, hi)
			}
			if width[i] > 1.02*width0[i] {
				t.Errorf("%s %s coefficient %d: structured intervals are wider (%.4g) than unstructured (%.4g)", c.mech, c.kind, i, width[i], width0[i])
			}
		}
	}
}
