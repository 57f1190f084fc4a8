package regress

import (
	"context"
	"math"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// TestReportedGuaranteeHolds recomputes each FM-family guarantee from the
// numbers its report prints (sensitivity, noise scale, entries), with the
// grid slack of the noise package, and checks that the printed (ε, δ) is
// met: a report can never claim more than its noise delivers.
func TestReportedGuaranteeHolds(t *testing.T) {
	rows, _ := xpRows(Linear, 3000, 6, 9)
	data := Data{Stats: stats(t, rows, 7)}
	for _, c := range []struct {
		mech       string
		eps, delta float64
	}{{"fm", 0.3, 0}, {"fm", 2, 0}, {"relaxed-fm", 0.5, 1e-6}, {"relaxed-fm", 3, 1e-5}, {"gaussian-fm", 0.1, 1e-5}, {"gaussian-fm", 4, 1e-7}} {
		est, _ := New(c.mech)
		res, err := est.Fit(context.Background(), data, Config{Kind: Linear, Epsilon: c.eps, Delta: c.delta, Lambda: -1, Source: noise.NewInsecureSeeded(1)})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
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
				e := (r.Sensitivity + noise.GaussianGridSlack(r.Scale, r.Entries)) / r.Scale
				s2 += e * e
			}
			d, err := accounting.AnalyticGaussianDelta(c.eps, 1, math.Sqrt(s2))
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
