package regress

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestGaussianFMPostProcessIsTheFits checks GaussianFMPostProcess against
// what a default gaussian-fm fit actually applied (its Released record,
// written by fitFM): the same PostProcess for the fit's d and the τ2 its
// report prints for Λ2, and the known answers of the two rules: the floor
// 2·τ2·√d with no ridge (linear), the ridge 4·τ2 with trimming at τ2
// (logistic). Its clip line is the fit's own report line.
func TestGaussianFMPostProcessIsTheFits(t *testing.T) {
	for _, kind := range []Kind{Linear, Logistic} {
		t.Run(string(kind), func(t *testing.T) {
			const d = 6
			rows, _ := xpRows(kind, 4000, d, 3)
			data := xpData(t, rows, d+1)
			res, err := gaussianFM{}.Fit(context.Background(), data, Config{Kind: kind, Epsilon: 0.5, Delta: 1e-6, Lambda: -1,
				Source: noise.NewInsecureSeeded(5)})
			if err != nil {
				t.Fatal(err)
			}
			tau2 := res.Privacy.Releases[1].Scale // Λ2's block
			if !(tau2 > 0) || res.Released == nil || math.Sqrt(res.Released.VarLambda2) != tau2 {
				t.Fatalf("Λ2's τ2 %v, released %+v", tau2, res.Released)
			}
			pp, err := GaussianFMPostProcess(kind, d, tau2)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Released.PostProcess(); !reflect.DeepEqual(pp, got) {
				t.Errorf("GaussianFMPostProcess = %+v, the fit applied %+v", pp, got)
			}
			switch kind {
			case Linear:
				if want := 2 * tau2 * math.Sqrt(d); math.Abs(pp.Floor-want) > 1e-15*want || pp.Lambda != 0 || pp.MinEigen != math.Min(tau2, want/2) {
					t.Errorf("linear: %+v, want floor 2·τ2·√d = %v, no ridge, MinEigen min(τ2, F/2)", pp, want)
				}
				found := false
				for _, l := range res.Privacy.PostProcessing {
					found = found || l == ClipLine(pp)
				}
				if !found {
					t.Errorf("clip line %q not in the fit's report %q", ClipLine(pp), res.Privacy.PostProcessing)
				}
			case Logistic:
				if want := 4 * tau2; math.Abs(pp.Lambda-want) > 1e-15*want || pp.Floor != 0 || pp.MinEigen != pp.Lambda/4 {
					t.Errorf("logistic: %+v, want ridge 4·τ2 = %v trimmed at λ/4, no floor", pp, want)
				}
			}
		})
	}
	for _, bad := range []struct {
		kind Kind
		d    int
		tau2 float64
	}{{Robust, 3, 1}, {Linear, 0, 1}, {Linear, 3, 0}, {Linear, 3, math.NaN()}, {Logistic, 3, math.Inf(1)}, {Linear, 3, -1}} {
		if _, err := GaussianFMPostProcess(bad.kind, bad.d, bad.tau2); err == nil {
			t.Errorf("GaussianFMPostProcess(%q, %d, %v) accepted", bad.kind, bad.d, bad.tau2)
		}
	}
}
