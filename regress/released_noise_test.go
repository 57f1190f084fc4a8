package regress

import (
	"context"
	"math"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// TestReleasedNoiseMatchesPrintedScale recovers the noise each mechanism
// actually added (released value minus the exact statistic, recomputed here
// from the rows at the released iterate) and checks that its empirical
// variance matches the scale the report prints: a noise drawn at half the
// printed scale (or the scale printed for a smaller sensitivity than the
// one used) fails, whatever the calibration code says. Per release the
// mean of noise²/variance over n samples has relative standard deviation
// at most √(5/n) (Laplace, kurtosis 6); the band [0.7, 1.4] is more than 4
// of them wide for every n used (n ≥ 300), while half the scale gives 0.25.
func TestReleasedNoiseMatchesPrintedScale(t *testing.T) {
	const n, d = 3000, 6
	rows, _ := xpRows(Linear, n, d, 21)
	data := Data{Stats: stats(t, rows, d+1), Rows: rows}
	exact, err := Objective(Linear, data.Stats)
	if err != nil {
		t.Fatal(err)
	}
	// acc sums noise²/variance per release name.
	type acc struct {
		sum float64
		n   int
	}
	variance := func(r report.Release) float64 {
		switch r.Noise {
		case "laplace":
			return 2 * r.Scale * r.Scale
		case "gaussian":
			return r.Scale * r.Scale
		}
		t.Fatalf("release %q: noise %q", r.Name, r.Noise)
		return 0
	}
	for _, c := range []struct {
		mech string
		kind Kind
		fits int
		opt  func(*Config)
	}{
		{"fm", Linear, 40, nil},
		{"relaxed-fm", Linear, 40, nil},
		{"gaussian-fm", Linear, 40, nil},
		{"irls", Robust, 80, func(c *Config) { c.IRLS.Form = IRLSFormGradient }},
		{"irls", Robust, 80, func(c *Config) { c.IRLS.Form = IRLSFormGradient; c.IRLS.FirstMoment = "laplace" }},
		{"irls", Robust, 300, nil}, // preconditioned: g and the scalar m
	} {
		sums := map[string]*acc{}
		add := func(r report.Release, noiseValues ...float64) {
			a := sums[r.Name]
			if a == nil {
				a = &acc{}
				sums[r.Name] = a
			}
			v := variance(r)
			for _, e := range noiseValues {
				a.sum += e * e / v
				a.n++
			}
		}
		for f := 0; f < c.fits; f++ {
			cfg := Config{Kind: c.kind, Epsilon: 1, Delta: 1e-6, Lambda: -1, Source: noise.NewInsecureSeeded(uint64(1000 + f))}
			if c.opt != nil {
				c.opt(&cfg)
			}
			est, _ := New(c.mech)
			res, err := est.Fit(context.Background(), data, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rel, rs := res.Released, res.Privacy.Releases
			if rel == nil {
				t.Fatalf("%s: no released objective", c.mech)
			}
			diff := func(got, want []float64, scale float64) []float64 {
				out := make([]float64, len(got))
				for i := range got {
					out[i] = (got[i] - want[i]) * scale
				}
				return out
			}
			switch c.kind {
			case Linear:
				l1 := diff(rel.Objective.Lambda1, exact.Lambda1, 1)
				up := diff(rel.Objective.Upper, exact.Upper, 1)
				if len(rs) == 1 { // one block over (Λ1, upper(Λ2))
					add(rs[0], append(l1, up...)...)
				} else {
					add(rs[0], l1...)
					add(rs[1], up...)
				}
			case Robust:
				// The warm start's release: the least-squares Λ1, Λ2.
				w := rel.Warm
				add(rs[0], diff(w.Objective.Lambda1, exact.Lambda1, 1)...)
				add(rs[1], diff(w.Objective.Upper, exact.Upper, 1)...)
				// The last iteration at its (released) start: Λ1 = −2g̃.
				g, m := irlsGradient(rows, d+1, rel.Start, rel.ResidualFloor)
				gt := make([]float64, d)
				for i, v := range rel.Objective.Lambda1 {
					gt[i] = -v / 2
				}
				add(rs[2], diff(gt, g, 1)...)
				if rel.Form == IRLSFormGradient {
					_, b := irlsGradientMoments(rows, d+1, rel.Start, rel.ResidualFloor)
					add(rs[3], diff(rel.Objective.Upper, b, 1)...)
					continue
				}
				// Preconditioned: Upper = G̃·m̃/η, so m̃ = η·Upper/G̃.
				mt := rel.ResidualFloor * rel.Objective.Upper[0] / w.Objective.Upper[0]
				if mt >= 1 || mt <= rel.ResidualFloor/(1+math.Sqrt(dot(rel.Start, rel.Start))) {
					t.Fatalf("%s: m̃ = %v clamped: the test needs a design with m inside its range", c.mech, mt)
				}
				add(rs[3], mt-m)
			}
		}
		for name, a := range sums {
			if r := a.sum / float64(a.n); r < 0.7 || r > 1.4 {
				t.Errorf("%s: release %q: the noise added has %.3g times the printed variance (%d samples)", c.mech, name, r, a.n)
			}
		}
		if len(sums) < 1 {
			t.Fatalf("%s: no release checked", c.mech)
		}
	}
}
